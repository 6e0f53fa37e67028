//! The measurements of one acquire call and of one hold ([`super`]).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tracing::field::Value as FieldValue;

use super::trace::{SpanValue, TraceParent, Traced};
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
    /// The `fencelock.acquire` span for a binding's tracer, when the caller's context came.
    trace: Option<Traced>,
}

/// What a hold takes from the call that granted it: its labels, computed once per call (a
/// manager's mapping function may be a Python call), and the caller's trace context.
pub(crate) struct HoldLabels {
    pub kind: Value,
    pub name: Value,
    pub parent: Option<TraceParent>,
}

impl AcquireWatch {
    pub fn new(kind: Value, name: Value, waits: bool, trace: Option<Traced>) -> AcquireWatch {
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
            trace,
        }
    }

    /// What a hold this call grants takes.
    pub fn labels(&self) -> HoldLabels {
        HoldLabels {
            kind: self.kind.clone(),
            name: self.name.clone(),
            parent: self.trace.as_ref().map(|t| t.parent().clone()),
        }
    }

    /// The call ended with `outcome` (with `fencing_token` when acquired); a lock handed over
    /// counts as a hand-off too.
    pub fn finish(&mut self, outcome: &'static str, handed_over: bool, fencing_token: Option<u64>) {
        if let Some(trace) = self.trace.take() {
            let mut more = vec![
                ("outcome", SpanValue::Text(Cow::Borrowed(outcome))),
                ("attempts", SpanValue::Int(u64::from(self.attempts))),
                ("handed_over", SpanValue::Bool(handed_over)),
                (
                    "waited_ms",
                    SpanValue::Int(self.started.elapsed().as_millis() as u64),
                ),
            ];
            more.extend(fencing_token.map(|t| ("fencing_token", SpanValue::Int(t))));
            trace.end("fencelock.acquire", &more, fencing_token.is_none());
        }
        if !std::mem::replace(&mut self.done, true) {
            self.fill_span(outcome, handed_over, fencing_token);
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

    /// Fills the call's `fencelock.acquire` span, the current one while the call runs or is
    /// dropped (`AcquireCall::lock` instruments it).
    fn fill_span(&self, outcome: &'static str, handed_over: bool, fencing_token: Option<u64>) {
        let span = tracing::Span::current();
        if span.metadata().map(|m| m.name()) != Some("fencelock.acquire") {
            return;
        }
        let waited_ms = self.started.elapsed().as_millis() as u64;
        record_at_once(
            &span,
            [
                ("outcome", Some(&outcome as &dyn FieldValue)),
                ("attempts", Some(&self.attempts)),
                ("handed_over", Some(&handed_over)),
                ("waited_ms", Some(&waited_ms)),
                (
                    "fencing_token",
                    fencing_token.as_ref().map(|t| t as &dyn FieldValue),
                ),
            ],
        );
    }
}

impl Drop for AcquireWatch {
    fn drop(&mut self) {
        self.finish("cancelled", false, None);
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
    /// The same span for a binding's tracer, when the acquire call was traced.
    trace: std::sync::Mutex<Option<Traced>>,
}

impl HoldWatch {
    /// A hold begun now, with its `fencelock.hold` span (a child of the caller's current
    /// span) and, when its call was traced, the same for the binding's tracer (`attributes`:
    /// the span's fixed ones).
    pub fn new(
        labels: HoldLabels,
        span: tracing::Span,
        attributes: impl FnOnce() -> Vec<(&'static str, SpanValue)>,
    ) -> HoldWatch {
        gauge(&HELD, &labels.kind, 1.0);
        let trace = labels.parent.map(|p| Traced::follow(p, attributes));
        HoldWatch {
            kind: labels.kind,
            name: labels.name,
            granted: Instant::now(),
            held: AtomicBool::new(true),
            ended: AtomicBool::new(false),
            span: std::sync::Mutex::new(Some(span)),
            trace: std::sync::Mutex::new(trace),
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
            let held_ms = held.as_millis() as u64;
            record_at_once(
                &span,
                [
                    ("outcome", Some(&outcome as &dyn FieldValue)),
                    ("held_ms", Some(&held_ms)),
                ],
            );
        }
        let trace = self.trace.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(trace) = trace {
            let more = [
                ("outcome", SpanValue::Text(Cow::Borrowed(outcome))),
                ("held_ms", SpanValue::Int(held.as_millis() as u64)),
            ];
            trace.end("fencelock.hold", &more, true);
        }
    }
}

/// Records `values` in `span`'s fields of those names in one call (a layer that formats the
/// fields does it once, not per field); nothing when the span is disabled or lacks one.
fn record_at_once<const N: usize>(
    span: &tracing::Span,
    values: [(&str, Option<&dyn FieldValue>); N],
) {
    let Some(fields) = span.metadata().map(|m| m.fields()) else {
        return;
    };
    let found: [Option<tracing::field::Field>; N] =
        std::array::from_fn(|i| fields.field(values[i].0));
    if found.iter().any(Option::is_none) {
        return;
    }
    let pairs: [(&tracing::field::Field, Option<&dyn FieldValue>); N] = std::array::from_fn(|i| {
        let field = found[i].as_ref().expect("every field was found above");
        (field, values[i].1)
    });
    span.record_all(&fields.value_set(&pairs));
}
