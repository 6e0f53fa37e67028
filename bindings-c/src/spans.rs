//! fencelock's trace spans for C (docs/observability.md, "Traces"): a callback that receives
//! one record per span when it ends (`fl_set_span_callback`), the core's `SpanRecord` with the
//! caller's parent number (`fl_trace_next`) in place of a context. A caller with a tracer
//! (the Go binding's OpenTelemetry module) keeps its contexts by number and makes the spans.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use fencelock::ffi_support::measure::{self, SpanRecord, SpanValue, TraceParent};

use crate::error::boundary;
use crate::error::fl_status;
use crate::ffi;

/// What an attribute's value is. The numbers are stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_span_value_kind {
    /// Text, in `text`: the lock's name, the kind, the outcome.
    FL_SPAN_TEXT = 0,
    /// A count, a fencing token or milliseconds, in `number`.
    FL_SPAN_INT = 1,
    /// A flag, in `flag`.
    FL_SPAN_BOOL = 2,
}

/// One attribute of a span: `key` (`lock`, `kind`, `outcome`, `fencing_token`, ...: the
/// attributes of docs/observability.md; never a token, a password or a server's address) and
/// its value, in the field `kind` names.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fl_span_attribute {
    pub key: *const c_char,
    pub kind: fl_span_value_kind,
    /// The text (`FL_SPAN_TEXT`), NUL-terminated; NULL otherwise.
    pub text: *const c_char,
    /// The number (`FL_SPAN_INT`); 0 otherwise.
    pub number: u64,
    /// The flag (`FL_SPAN_BOOL`); false otherwise.
    pub flag: bool,
}

/// One span that ended.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fl_span {
    /// `fencelock.acquire` (around an acquire call) or `fencelock.hold` (from the grant to the
    /// end of the hold).
    pub name: *const c_char,
    /// The number `fl_trace_next` gave the acquire call: the span's parent.
    pub parent: u64,
    /// When the call started (acquire) or the lock was granted (hold), in nanoseconds since
    /// the Unix epoch.
    pub start_unix_ns: i64,
    /// When it ended, as `start_unix_ns`.
    pub end_unix_ns: i64,
    pub attributes: *const fl_span_attribute,
    pub attribute_count: usize,
    /// No further span has this parent (an acquire that granted nothing, or a hold's end):
    /// a caller that keeps parents by number may forget this one.
    pub last: bool,
}

/// Receives one span when it ends. The span and every string in it are valid only during the
/// call.
///
/// Called on the library's own threads or on the thread inside a fencelock call, possibly on
/// several threads at once: it must be thread-safe, must return quickly without blocking, and
/// must not call any fencelock function.
pub type fl_span_callback =
    Option<unsafe extern "C" fn(span: *const fl_span, user_data: *mut c_void)>;

type Callback = unsafe extern "C" fn(*const fl_span, *mut c_void);

struct Sink {
    callback: Callback,
    user_data: *mut c_void,
}

// SAFETY: `user_data` is the caller's; the header asks for a callback (and data) usable from
// any thread.
unsafe impl Send for Sink {}
// SAFETY: as above.
unsafe impl Sync for Sink {}

/// The callback: read (shared) while it is called, written by `fl_set_span_callback`, which
/// therefore waits for calls in progress to return.
static SINK: RwLock<Option<Sink>> = RwLock::new(None);
/// Serializes `fl_set_span_callback` (the callback and the core's sink change together).
static SETTING: Mutex<()> = Mutex::new(());

thread_local! {
    /// The parent number of the next acquire call started on this thread (0: none).
    static NEXT: Cell<u64> = const { Cell::new(0) };
    /// Set while this thread runs the callback (catches a callback calling back in).
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// The caller's parent for the acquire call starting now on this thread (taken: one per
/// call), when a span callback is registered.
pub(crate) fn parent() -> Option<TraceParent> {
    let id = NEXT.with(|n| n.replace(0));
    (id != 0 && measure::spans_wanted()).then(|| TraceParent::new(id))
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn deliver(record: SpanRecord) {
    let sink = SINK.read().unwrap_or_else(|e| e.into_inner());
    let Some(sink) = sink.as_ref() else { return };
    let Some(&parent) = record.parent.get::<u64>() else {
        return;
    };
    let name = c_string(record.name);
    let keys: Vec<CString> = record.attributes.iter().map(|(k, _)| c_string(k)).collect();
    let texts: Vec<Option<CString>> = record
        .attributes
        .iter()
        .map(|(_, v)| match v {
            SpanValue::Text(t) => Some(c_string(t)),
            _ => None,
        })
        .collect();
    let attributes: Vec<fl_span_attribute> = record
        .attributes
        .iter()
        .zip(keys.iter().zip(&texts))
        .map(|((_, value), (key, text))| {
            let (kind, number, flag) = match value {
                SpanValue::Text(_) => (fl_span_value_kind::FL_SPAN_TEXT, 0, false),
                SpanValue::Int(n) => (fl_span_value_kind::FL_SPAN_INT, *n, false),
                SpanValue::Bool(b) => (fl_span_value_kind::FL_SPAN_BOOL, 0, *b),
            };
            fl_span_attribute {
                key: key.as_ptr(),
                kind,
                text: text.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
                number,
                flag,
            }
        })
        .collect();
    let span = fl_span {
        name: name.as_ptr(),
        parent,
        start_unix_ns: unix_ns(record.start),
        end_unix_ns: unix_ns(record.end),
        attributes: attributes.as_ptr(),
        attribute_count: attributes.len(),
        last: record.last,
    };
    IN_CALLBACK.with(|c| c.set(true));
    // SAFETY: a C function pointer given to fl_set_span_callback, with its user_data; the span
    // and its strings live until it returns.
    unsafe { (sink.callback)(&span, sink.user_data) };
    IN_CALLBACK.with(|c| c.set(false));
}

/// Registers `callback` to receive every span of an acquire call made with a parent number
/// (`fl_trace_next`), replacing any callback registered before; `callback` NULL unregisters
/// it. `user_data` is passed to every call.
///
/// When this returns, the previous callback is no longer running and will not be called
/// again, so its `user_data` may be freed. One callback per process. While none is
/// registered, no span is recorded (and `fl_trace_next` is forgotten).
///
/// The callback runs on library threads: see `fl_span_callback` for what it must not do.
///
/// Errors: `FL_INVALID_ARGUMENT` when called from inside the span callback.
#[no_mangle]
pub unsafe extern "C" fn fl_set_span_callback(
    callback: fl_span_callback,
    user_data: *mut c_void,
) -> fl_status {
    boundary(|| {
        if IN_CALLBACK.with(Cell::get) {
            return Err(ffi::invalid(
                "fl_set_span_callback cannot be called from inside the span callback",
            ));
        }
        let _setting = SETTING.lock().unwrap_or_else(|e| e.into_inner());
        let sink = callback.map(|callback| Sink {
            callback,
            user_data,
        });
        let registered = sink.is_some();
        // Waits for calls of the old callback in progress.
        *SINK.write().unwrap_or_else(|e| e.into_inner()) = sink;
        measure::set_span_sink(registered.then(|| Arc::new(deliver) as measure::SpanSink));
        Ok(())
    })
}

/// Gives the next acquire call this thread starts the parent number `parent` (0: none): its
/// spans, `fencelock.acquire` and, when it is granted, `fencelock.hold`, reach the span
/// callback with that number. Taken by that call (one number per call); forgotten while no
/// span callback is registered. A caller keeps its own context (an OpenTelemetry span) under
/// the number until a span marked `last` arrives. A call refused for its arguments before it
/// starts may leave the number to the next acquire call: `fl_trace_next(0)` after the call
/// clears it.
#[no_mangle]
pub extern "C" fn fl_trace_next(parent: u64) {
    NEXT.with(|n| n.set(parent));
}
