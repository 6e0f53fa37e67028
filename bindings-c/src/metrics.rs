//! fencelock's measurements for C (docs/observability.md): a callback that receives every
//! sample (`fl_set_metric_callback`), with the same names, values and labels as the other
//! languages' exporters, on the core's `fencelock::ffi_support::measure` sinks; and the names let into the
//! `name` label (`fl_manager_options_add_metric_name`).

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::sync::{LazyLock, Mutex, RwLock};

use fencelock::ffi_support::measure::{self, Instrument, Sample, MEASURES};

use crate::error::boundary;
use crate::error::fl_status;
use crate::ffi;
use crate::options::{fl_manager_options, set};

/// How a measurement is reported. The numbers are stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_metric_instrument {
    /// A count that only grows: the value is the amount added.
    FL_METRIC_COUNTER = 0,
    /// A distribution: the value is one observation (seconds, or a count of attempts).
    FL_METRIC_HISTOGRAM = 1,
    /// A level that goes up and down: the value is a change, +1 or -1.
    FL_METRIC_GAUGE = 2,
}

/// Receives one sample of a measurement: its name (`fencelock_acquire_wait_seconds`, ...: the
/// table of docs/observability.md), how it is reported, its value, and its labels
/// (`label_count` names and values: `kind`, `outcome`, `name`, ...; never a token, a password
/// or a server's address). Every string is valid only during the call.
///
/// Called on the library's own threads or on the thread inside a fencelock call, possibly on
/// several threads at once: it must be thread-safe, must return quickly without blocking (it
/// delays the lock operation measured), and must not call any fencelock function.
pub type fl_metric_callback = Option<
    unsafe extern "C" fn(
        name: *const c_char,
        instrument: fl_metric_instrument,
        value: f64,
        label_names: *const *const c_char,
        label_values: *const *const c_char,
        label_count: usize,
        user_data: *mut c_void,
    ),
>;

type Callback = unsafe extern "C" fn(
    *const c_char,
    fl_metric_instrument,
    f64,
    *const *const c_char,
    *const *const c_char,
    usize,
    *mut c_void,
);

struct Sink {
    callback: Callback,
    user_data: *mut c_void,
}

// SAFETY: `user_data` is the caller's; the header asks for a callback (and data) usable from
// any thread.
unsafe impl Send for Sink {}
// SAFETY: as above.
unsafe impl Sync for Sink {}

/// The callback: read (shared) while it is called, written by `fl_set_metric_callback`, which
/// therefore waits for calls in progress to return.
static SINK: RwLock<Option<Sink>> = RwLock::new(None);
/// The core sink feeding `SINK`.
static CORE_SINK: Mutex<Option<u64>> = Mutex::new(None);

thread_local! {
    /// Set while this thread runs the callback (catches a callback calling back in).
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Each measure's name and label names as C strings, made once.
static NAMES: LazyLock<Vec<(CString, Vec<CString>)>> = LazyLock::new(|| {
    MEASURES
        .iter()
        .map(|m| {
            let labels = m.labels.iter().map(|l| c_string(l)).collect();
            (c_string(m.name), labels)
        })
        .collect()
});

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

fn deliver(sample: &Sample<'_>) {
    let sink = SINK.read().unwrap_or_else(|e| e.into_inner());
    let Some(sink) = sink.as_ref() else { return };
    let (name, label_names) = &NAMES[sample.measure.index()];
    let values: Vec<CString> = sample.labels.iter().map(|v| c_string(v)).collect();
    let names: Vec<*const c_char> = label_names.iter().map(|n| n.as_ptr()).collect();
    let values: Vec<*const c_char> = values.iter().map(|v| v.as_ptr()).collect();
    let instrument = instrument_of(sample.measure.instrument);
    IN_CALLBACK.with(|c| c.set(true));
    // SAFETY: a C function pointer given to fl_set_metric_callback, with its user_data; the
    // strings and arrays live until it returns.
    unsafe {
        (sink.callback)(
            name.as_ptr(),
            instrument,
            sample.value,
            names.as_ptr(),
            values.as_ptr(),
            names.len(),
            sink.user_data,
        )
    };
    IN_CALLBACK.with(|c| c.set(false));
}

/// Registers `callback` to receive every sample of fencelock's measurements, replacing any
/// callback registered before; `callback` NULL unregisters it. `user_data` is passed to every
/// call.
///
/// When this returns, the previous callback is no longer running and will not be called
/// again, so its `user_data` may be freed. One callback per process. Measurements cost no
/// call while no callback is registered.
///
/// The callback runs on library threads: see `fl_metric_callback` for what it must not do.
///
/// Errors: `FL_INVALID_ARGUMENT` when called from inside the metric callback.
#[no_mangle]
pub unsafe extern "C" fn fl_set_metric_callback(
    callback: fl_metric_callback,
    user_data: *mut c_void,
) -> fl_status {
    boundary(|| {
        if IN_CALLBACK.with(Cell::get) {
            return Err(ffi::invalid(
                "fl_set_metric_callback cannot be called from inside the metric callback",
            ));
        }
        let sink = callback.map(|callback| Sink {
            callback,
            user_data,
        });
        let registered = sink.is_some();
        let mut core = CORE_SINK.lock().unwrap_or_else(|e| e.into_inner());
        // Waits for calls of the old callback in progress.
        *SINK.write().unwrap_or_else(|e| e.into_inner()) = sink;
        match (core.is_some(), registered) {
            (false, true) => *core = Some(measure::add_sink(std::sync::Arc::new(deliver))),
            (true, false) => {
                if let Some(id) = core.take() {
                    measure::remove_sink(id);
                }
            }
            _ => {}
        }
        Ok(())
    })
}

/// What one measurement is (`fl_metric_describe`): the table of docs/observability.md, for
/// exporters that declare their metrics before the first sample (help text, buckets). Every
/// pointer is static: valid for the life of the process.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fl_metric_description {
    /// Its name, as samples carry it (`fencelock_acquire_wait_seconds`, ...).
    pub name: *const c_char,
    /// How it is reported.
    pub instrument: fl_metric_instrument,
    /// `"seconds"`, or `"1"` for a count.
    pub unit: *const c_char,
    /// What it means, one sentence.
    pub help: *const c_char,
    /// Its labels' names, in the order samples give their values.
    pub label_names: *const *const c_char,
    /// How many labels.
    pub label_count: usize,
    /// A histogram's bucket upper bounds, ascending (none for a counter or a gauge).
    pub buckets: *const f64,
    /// How many buckets.
    pub bucket_count: usize,
}

/// Each measure's name, unit and help text as C strings, made once.
static TEXTS: LazyLock<Vec<(CString, CString, CString)>> = LazyLock::new(|| {
    MEASURES
        .iter()
        .map(|m| (c_string(m.name), c_string(m.unit), c_string(m.help)))
        .collect()
});

/// Each measure's label names as an array of pointers into [`NAMES`].
struct LabelPointers(Vec<Vec<*const c_char>>);

// SAFETY: the pointers point into NAMES's strings, made once and never changed or freed.
unsafe impl Sync for LabelPointers {}
// SAFETY: as above.
unsafe impl Send for LabelPointers {}

static LABELS: LazyLock<LabelPointers> = LazyLock::new(|| {
    LabelPointers(
        NAMES
            .iter()
            .map(|(_, labels)| labels.iter().map(|l| l.as_ptr()).collect())
            .collect(),
    )
});

/// How many measurements there are (`fl_metric_describe` takes 0 to this minus one).
#[no_mangle]
pub extern "C" fn fl_metric_count() -> usize {
    MEASURES.len()
}

/// Describes measurement `index` (0 to `fl_metric_count() - 1`) into `*out`.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL `out` or an index out of range.
#[no_mangle]
pub unsafe extern "C" fn fl_metric_describe(
    index: usize,
    out: *mut fl_metric_description,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let m = MEASURES.get(index).ok_or_else(|| {
            ffi::invalid(format!(
                "index {index} is out of range: there are {} measurements",
                MEASURES.len()
            ))
        })?;
        let (name, unit, help) = &TEXTS[index];
        let labels = &LABELS.0;
        *out = fl_metric_description {
            name: name.as_ptr(),
            instrument: instrument_of(m.instrument),
            unit: unit.as_ptr(),
            help: help.as_ptr(),
            label_names: labels[index].as_ptr(),
            label_count: labels[index].len(),
            buckets: m.buckets.as_ptr(),
            bucket_count: m.buckets.len(),
        };
        Ok(())
    })
}

fn instrument_of(i: Instrument) -> fl_metric_instrument {
    match i {
        Instrument::Counter => fl_metric_instrument::FL_METRIC_COUNTER,
        Instrument::Histogram => fl_metric_instrument::FL_METRIC_HISTOGRAM,
        Instrument::Gauge => fl_metric_instrument::FL_METRIC_GAUGE,
    }
}

/// Lets lock `name` into the `name` label of the measurements of managers made with these
/// options (by default the label is empty: names are often unbounded). Call it once per name;
/// the string (any bytes but NUL) is copied.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` or `name` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_add_metric_name(
    opts: *mut fl_manager_options,
    name: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: name is NULL or a NUL-terminated string, by contract.
        o.metric_names
            .push(unsafe { ffi::bytes(name, "name") }?.to_vec());
        Ok(())
    })
}
