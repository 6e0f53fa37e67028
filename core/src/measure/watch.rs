//! The measurements of one acquire call and of one hold ([`super`]).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::{
    record, Measure, Value, ACQUIRE_ATTEMPTS, ACQUIRE_WAIT, EXTENSIONS, HANDOFFS, HELD, HOLD, LOST,
    WAITING,
};

/// Adds `delta` to a gauge of `kind`.
fn gauge(m: &'static Measure, kind: &Value, delta: f64) {
    record(m, delta, std::slice::from_ref(kind));
}

/// The measurements of one acquire call: counted among the callers waiting while it may wait;
/// its time, attempts and outcome recorded once when it ends, `cancelled` when it is dropped
/// first (a caller that stopped waiting for it).
pub(crate) struct AcquireWatch {
    kind: Value,
    name: Value,
    waits: bool,
    started: Instant,
    /// Attempts so far.
    pub attempts: u32,
    done: bool,
}

impl AcquireWatch {
    pub fn new(kind: Value, name: Value, waits: bool) -> AcquireWatch {
        if waits {
            gauge(&WAITING, &kind, 1.0);
        }
        AcquireWatch {
            kind,
            name,
            waits,
            started: Instant::now(),
            attempts: 0,
            done: false,
        }
    }

    /// The labels (kind, name) a hold this call grants takes: the name's label is computed
    /// once per call (a manager's mapping function may be a Python call).
    pub fn labels(&self) -> (Value, Value) {
        (self.kind.clone(), self.name.clone())
    }

    /// The call ended with `outcome`; a lock handed over counts as a hand-off too.
    pub fn finish(&mut self, outcome: &'static str, handed_over: bool) {
        if !std::mem::replace(&mut self.done, true) {
            let labels = [self.kind.clone(), Cow::Borrowed(outcome), self.name.clone()];
            record(&ACQUIRE_WAIT, self.started.elapsed().as_secs_f64(), &labels);
            record(&ACQUIRE_ATTEMPTS, f64::from(self.attempts), &labels);
            if handed_over {
                record(&HANDOFFS, 1.0, &[self.kind.clone(), self.name.clone()]);
            }
            if self.waits {
                gauge(&WAITING, &self.kind, -1.0);
            }
        }
    }
}

impl Drop for AcquireWatch {
    fn drop(&mut self) {
        self.finish("cancelled", false);
    }
}

/// The measurements of one hold, from its grant: counted among the locks held until it is
/// released or lost; its time recorded once when it ends.
pub(crate) struct HoldWatch {
    kind: Value,
    name: Value,
    granted: Instant,
    held: AtomicBool,
    ended: AtomicBool,
    /// The `fencelock.hold` span, closed when the hold ends.
    span: std::sync::Mutex<Option<tracing::Span>>,
}

impl HoldWatch {
    /// A hold begun now, with its `fencelock.hold` span (a child of the caller's current
    /// span).
    pub fn new((kind, name): (Value, Value), span: tracing::Span) -> HoldWatch {
        gauge(&HELD, &kind, 1.0);
        HoldWatch {
            kind,
            name,
            granted: Instant::now(),
            held: AtomicBool::new(true),
            ended: AtomicBool::new(false),
            span: std::sync::Mutex::new(Some(span)),
        }
    }

    /// No longer counted as held (its first loss or end).
    fn leave_held(&self) {
        if self.held.swap(false, Ordering::AcqRel) {
            gauge(&HELD, &self.kind, -1.0);
        }
    }

    /// It was lost, for `reason`.
    pub fn lost(&self, reason: &'static str) {
        record(
            &LOST,
            1.0,
            &[self.kind.clone(), Cow::Borrowed(reason), self.name.clone()],
        );
        self.leave_held();
    }

    /// An extension's result.
    pub fn extended(&self, ok: bool) {
        let result = Cow::Borrowed(if ok { "ok" } else { "failed" });
        record(
            &EXTENSIONS,
            1.0,
            &[self.kind.clone(), result, self.name.clone()],
        );
    }

    /// The hold ended with `outcome` (once; later calls do nothing).
    pub fn end(&self, outcome: &'static str) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        self.leave_held();
        let held = self.granted.elapsed();
        let labels = [self.kind.clone(), Cow::Borrowed(outcome), self.name.clone()];
        record(&HOLD, held.as_secs_f64(), &labels);
        let span = self.span.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(span) = span {
            span.record("outcome", outcome);
            span.record("held_ms", held.as_millis() as u64);
        }
    }
}
