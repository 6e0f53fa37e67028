//! The core's span records for `metrics.js`' OpenTelemetry tracer.
//!
//! While a tracer is attached (`__traceStart`), each acquisition's JavaScript wrapper
//! (`scope.js`) keeps the caller's active OpenTelemetry context under a number and names it
//! (`__traceNext`) just before the native call, which hands it to the core as the call's
//! [`TraceParent`]. The core's records of the call's and its hold's spans are queued on the
//! thread where they end, never calling into JavaScript; `metrics.js` takes them
//! (`__traceRecords`) on a timer of the JavaScript thread, or when asked, and makes the spans as
//! children of the kept contexts. With no tracer attached nothing is kept or queued.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use fencelock::ffi_support::measure::{self, SpanRecord, SpanValue, TraceParent};
use napi_derive::napi;

/// Most records kept waiting for the JavaScript thread; more are dropped (and counted).
const CAPACITY: usize = 10_000;

struct Pending {
    records: VecDeque<SpanRecord>,
    dropped: u32,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    records: VecDeque::new(),
    dropped: 0,
});

fn pending() -> std::sync::MutexGuard<'static, Pending> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// The context number `scope.js` gave for the acquisition it is about to start.
    static NEXT: Cell<u32> = const { Cell::new(0) };
}

/// Starts queueing span records (a tracer was attached).
#[napi(catch_unwind, js_name = "__traceStart", skip_typescript)]
pub fn trace_start() {
    measure::set_span_sink(Some(Arc::new(|record: SpanRecord| {
        let mut p = pending();
        if p.records.len() >= CAPACITY {
            p.dropped = p.dropped.saturating_add(1);
        } else {
            p.records.push_back(record);
        }
    })));
}

/// Stops queueing span records and forgets those queued.
#[napi(catch_unwind, js_name = "__traceStop", skip_typescript)]
pub fn trace_stop() {
    measure::set_span_sink(None);
    let mut p = pending();
    p.records.clear();
    p.dropped = 0;
}

/// The context number of the acquisition about to start on this thread (0: none).
#[napi(catch_unwind, js_name = "__traceNext", skip_typescript)]
pub fn trace_next(id: u32) {
    NEXT.with(|n| n.set(id));
}

/// The caller's context for the acquisition starting now (taken: one per call).
pub(crate) fn parent() -> Option<TraceParent> {
    let id = NEXT.with(|n| n.replace(0));
    (id != 0 && measure::spans_wanted()).then(|| TraceParent::new(id))
}

/// One attribute: exactly one of `text`, `number` and `flag` is set.
#[napi(object, js_name = "SpanAttribute")]
pub struct AttributeInfo {
    pub key: String,
    pub text: Option<String>,
    pub number: Option<f64>,
    pub flag: Option<bool>,
}

/// One span that ended: its context's number, start and end in milliseconds since the epoch,
/// and whether no further record has that context.
#[napi(object, js_name = "SpanRecord")]
pub struct RecordInfo {
    pub name: String,
    pub parent: u32,
    pub start: f64,
    pub end: f64,
    pub attributes: Vec<AttributeInfo>,
    pub last: bool,
}

fn epoch_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn info(r: SpanRecord) -> RecordInfo {
    let attributes = r
        .attributes
        .into_iter()
        .map(|(key, v)| {
            let mut a = AttributeInfo {
                key: key.into(),
                text: None,
                number: None,
                flag: None,
            };
            match v {
                SpanValue::Text(t) => a.text = Some(t.into_owned()),
                SpanValue::Int(n) => a.number = Some(n as f64),
                SpanValue::Bool(b) => a.flag = Some(b),
            }
            a
        })
        .collect();
    RecordInfo {
        name: r.name.into(),
        parent: r.parent.get::<u32>().copied().unwrap_or(0),
        start: epoch_ms(r.start),
        end: epoch_ms(r.end),
        attributes,
        last: r.last,
    }
}

/// The records queued, and how many were dropped since the last call.
#[napi(object, js_name = "SpanRecords")]
pub struct Records {
    pub records: Vec<RecordInfo>,
    pub dropped: u32,
}

/// Takes the queued records.
#[napi(catch_unwind, js_name = "__traceRecords", skip_typescript)]
pub fn trace_records() -> Records {
    let (records, dropped) = {
        let mut p = pending();
        (
            std::mem::take(&mut p.records),
            std::mem::take(&mut p.dropped),
        )
    };
    Records {
        records: records.into_iter().map(info).collect(),
        dropped,
    }
}
