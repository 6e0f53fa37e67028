//! fencelock's events for Python's `logging`: the core's `observe` listener feeds a queue,
//! and a Python daemon thread (`fencelock/_logging.py`) drains it into the logger
//! `"fencelock"`.
//!
//! The listener runs on whatever thread emitted the event (a runtime thread, mostly) and must
//! not block: it never takes the GIL, it only pushes onto a bounded queue (dropping, and
//! counting, what does not fit). Only the draining thread enters Python, and it waits for
//! events with the GIL released through [`shutdown::detach`], so it parks, rather than
//! retaking the GIL, once the interpreter is closing.
//!
//! Nothing is registered until the first manager is created (at the level the `"fencelock"`
//! logger has then) or `fencelock.enable_logging()` is called; with no listener the core's
//! events are disabled at their call sites and cost nothing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, MutexGuard};

use fencelock::ffi_support::measure::{self, SpanRecord};
use fencelock::ffi_support::observe::{add_listener, remove_listener, Event, EventLevel};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::to_py;
use crate::shutdown;

/// Most events kept waiting for the Python thread; more are dropped (and counted).
const CAPACITY: usize = 10_000;

struct Pending {
    events: VecDeque<Event>,
    /// Span records for `fencelock.metrics`' tracer (`spans`), on the same thread.
    spans: VecDeque<SpanRecord>,
    dropped: u64,
}

/// The queue between the listener and the Python thread.
struct Queue {
    pending: Mutex<Pending>,
    ready: Condvar,
}

impl Queue {
    fn new() -> Queue {
        Queue {
            pending: Mutex::new(Pending {
                events: VecDeque::new(),
                spans: VecDeque::new(),
                dropped: 0,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, event: &Event) {
        let mut p = self.lock();
        if p.events.len() >= CAPACITY {
            p.dropped += 1;
            return;
        }
        p.events.push_back(event.clone());
        drop(p);
        self.ready.notify_one();
    }

    fn push_span(&self, record: SpanRecord) {
        let mut p = self.lock();
        if p.spans.len() >= CAPACITY {
            p.dropped += 1;
            return;
        }
        p.spans.push_back(record);
        drop(p);
        self.ready.notify_one();
    }
}

/// Queues a span record for the fencelock thread (`spans::emit` makes it Python's).
fn push_span(record: SpanRecord) {
    queue().push_span(record);
}

/// Attaches (`capture`: a function returning the caller's current OpenTelemetry context) or
/// detaches (`None`) the tracer: from now on acquisitions capture their caller's context
/// (`spans::parent`) and their span records are queued for the fencelock thread.
#[pyfunction]
#[pyo3(signature = (capture))]
pub fn _set_span_capture(capture: Option<Py<PyAny>>) {
    let attach = capture.is_some();
    crate::spans::set_capture(capture);
    let sink: Option<measure::SpanSink> = if attach {
        Some(std::sync::Arc::new(push_span))
    } else {
        None
    };
    measure::set_span_sink(sink);
}

/// The current queue. Replaced (the old one leaked) in a child after `fork()`, whose copy of
/// the mutex may have been held by a parent thread that does not exist in the child.
static QUEUE: AtomicPtr<Queue> = AtomicPtr::new(std::ptr::null_mut());

fn queue() -> &'static Queue {
    let q = QUEUE.load(SeqCst);
    if !q.is_null() {
        // SAFETY: queues are leaked, never freed.
        return unsafe { &*q };
    }
    let fresh = Box::into_raw(Box::new(Queue::new()));
    match QUEUE.compare_exchange(std::ptr::null_mut(), fresh, SeqCst, SeqCst) {
        Ok(_) => unsafe { &*fresh },
        Err(current) => {
            // SAFETY: `fresh` was never shared.
            drop(unsafe { Box::from_raw(fresh) });
            unsafe { &*current }
        }
    }
}

/// The registered core listener: its id and level.
static LISTENER: Mutex<Option<(u64, EventLevel)>> = Mutex::new(None);
/// Set once the first manager has decided the initial level (or `enable_logging` was called).
static CONFIGURED: AtomicBool = AtomicBool::new(false);

fn parse_level(level: &str) -> PyResult<EventLevel> {
    Ok(match level {
        "trace" => EventLevel::Trace,
        "debug" => EventLevel::Debug,
        "info" => EventLevel::Info,
        "warn" => EventLevel::Warn,
        "error" => EventLevel::Error,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown fencelock event level {other:?}"
            )))
        }
    })
}

/// Forwards events at `level` or more severe to the queue (`None`: none at all). Replaces
/// the previous listener, and makes the core's call sites re-check whether they are enabled.
#[pyfunction]
#[pyo3(signature = (level))]
pub fn _set_event_level(py: Python<'_>, level: Option<&str>) -> PyResult<()> {
    let level = level.map(parse_level).transpose()?;
    CONFIGURED.store(true, SeqCst);
    let mut current = LISTENER.lock().unwrap_or_else(|e| e.into_inner());
    if current.map(|(_, l)| l) == level {
        return Ok(());
    }
    if let Some((id, _)) = current.take() {
        remove_listener(id);
    }
    if let Some(level) = level {
        let id = add_listener(level, |event| queue().push(event)).map_err(|e| to_py(py, e))?;
        *current = Some((id, level));
    }
    Ok(())
}

/// The level events are forwarded at (`None`: not forwarded).
#[pyfunction]
pub fn _event_level() -> Option<&'static str> {
    LISTENER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map(|(_, l)| l.as_str())
}

/// Called by every manager constructor: the first one sets the initial level from the
/// `"fencelock"` logger (see `fencelock/_logging.py`); later ones cost an atomic load.
pub fn on_manager_created(py: Python<'_>) {
    if CONFIGURED.load(SeqCst) {
        return;
    }
    let started = py
        .import("fencelock._logging")
        .and_then(|m| m.call_method0("_on_first_manager"));
    if let Err(e) = started {
        // Logging is not worth failing the manager for: report it as unraisable.
        e.write_unraisable(py, None);
    }
}

type Lines = Vec<(&'static str, String, Vec<(String, String)>)>;
type Batch<'py> = (Lines, u64, Vec<Bound<'py, PyAny>>);

/// Empties the queue; the lines are made after the mutex is released, so that the emitting
/// threads never wait for that.
fn take(mut p: MutexGuard<'_, Pending>) -> (Lines, u64, VecDeque<SpanRecord>) {
    let events = std::mem::take(&mut p.events);
    let spans = std::mem::take(&mut p.spans);
    let dropped = std::mem::take(&mut p.dropped);
    drop(p);
    let events = events
        .into_iter()
        .map(|e| (e.level.as_str(), e.to_line(), e.fields))
        .collect();
    (events, dropped, spans)
}

/// A taken batch with its span records made Python's (with the GIL).
fn batch(
    py: Python<'_>,
    (events, dropped, spans): (Lines, u64, VecDeque<SpanRecord>),
) -> PyResult<Batch<'_>> {
    let spans = spans
        .into_iter()
        .map(|r| crate::spans::to_python(py, r))
        .collect::<PyResult<_>>()?;
    Ok((events, dropped, spans))
}

/// For the draining thread: waits (GIL released) for events and span records and returns
/// them with the count of those dropped since the last call, as
/// `([(level, line, [(field, value)])], dropped, [span record])`. Returns `None` when the
/// interpreter is closing (or parks: see `shutdown`).
#[pyfunction]
pub fn _next_events(py: Python<'_>) -> PyResult<Option<Batch<'_>>> {
    let taken = shutdown::detach(py, || {
        let q = queue();
        let mut p = q.lock();
        loop {
            if shutdown::closing() {
                return None;
            }
            if !p.events.is_empty() || !p.spans.is_empty() || p.dropped > 0 {
                return Some(take(p));
            }
            p = q.ready.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    });
    taken.map(|t| batch(py, t)).transpose()
}

/// What is queued now, without waiting (the `atexit` flush and tests).
#[pyfunction]
pub fn _take_events(py: Python<'_>) -> PyResult<Batch<'_>> {
    batch(py, take(queue().lock()))
}

/// Wakes the draining thread (the interpreter is closing).
pub fn wake() {
    let q = queue();
    drop(q.lock());
    q.ready.notify_all();
}

/// In a child after `fork()`: a fresh queue (the old one may be locked forever).
pub fn after_fork_in_child() {
    let fresh = Box::into_raw(Box::new(Queue::new()));
    QUEUE.store(fresh, SeqCst);
}
