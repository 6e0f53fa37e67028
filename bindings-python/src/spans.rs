//! The core's span records for OpenTelemetry (`fencelock/metrics.py`'s tracer).
//!
//! While a tracer is attached (`events::_set_span_capture`), each acquisition captures the caller's
//! OpenTelemetry context when it is called, on the caller's thread or asyncio task (the
//! `capture` function: `opentelemetry.context.get_current`), and hands it to the core
//! ([`TraceParent`]). The core's records of the call's and its hold's spans come back on the
//! thread where they ended, which only queues them (the events queue, no GIL); the fencelock
//! thread (`fencelock/_logging.py`) turns them into spans, children of that context. With no
//! tracer attached nothing is captured or queued.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use fencelock::ffi_support::measure::{self, SpanRecord, SpanValue, TraceParent};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A captured OpenTelemetry context.
struct PyParent(Py<PyAny>);

/// The function that returns the caller's current context (`None`: no tracer attached).
static CAPTURE: Mutex<Option<Py<PyAny>>> = Mutex::new(None);

/// Sets (`capture`: a function returning the caller's current OpenTelemetry context) or
/// clears (`None`) what acquisitions call to capture their caller's context.
pub fn set_capture(capture: Option<Py<PyAny>>) {
    *CAPTURE.lock().unwrap_or_else(|e| e.into_inner()) = capture;
}

/// The caller's context for an acquisition starting now, when a tracer is attached.
pub fn parent(py: Python<'_>) -> PyResult<Option<TraceParent>> {
    if !measure::spans_wanted() {
        return Ok(None);
    }
    let capture = CAPTURE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|c| c.clone_ref(py));
    let Some(capture) = capture else {
        return Ok(None);
    };
    let context = capture.call0(py)?;
    Ok(Some(TraceParent::new(PyParent(context))))
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A record as Python sees it: `(name, context, start_ns, end_ns, attributes)`, times in
/// nanoseconds since the epoch (OpenTelemetry's), attributes a dict of str, int or bool.
pub fn to_python(py: Python<'_>, r: SpanRecord) -> PyResult<Bound<'_, PyAny>> {
    let context = match r.parent.get::<PyParent>() {
        Some(p) => p.0.clone_ref(py).into_bound(py),
        None => py.None().into_bound(py),
    };
    let attributes = PyDict::new(py);
    for (k, v) in r.attributes {
        match v {
            SpanValue::Text(t) => attributes.set_item(k, t.as_ref())?,
            SpanValue::Int(n) => attributes.set_item(k, n)?,
            SpanValue::Bool(b) => attributes.set_item(k, b)?,
        }
    }
    let row = (
        r.name,
        context,
        unix_ns(r.start),
        unix_ns(r.end),
        attributes,
    );
    Ok(row.into_pyobject(py)?.into_any())
}
