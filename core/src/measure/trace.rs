//! Span records for the bindings' tracers (OpenTelemetry in Python and Node).
//!
//! A Rust application sees fencelock's `tracing` spans (`fencelock.acquire`, `fencelock.hold`)
//! with its own subscriber. A binding's tracer lives in its host language, and its "current
//! span" is there too (a Python context variable, Node's async context), out of reach of the
//! runtime's threads. So a binding captures the caller's context when a call starts (only
//! while [`spans_wanted`]), hands it to the core as an opaque [`TraceParent`]
//! ([`AcquireOptions::trace`](crate::AcquireOptions::trace)), and receives one
//! [`SpanRecord`] per span when it ends, with that parent, its start and end times and the
//! same attributes as the `tracing` span. The binding then makes its ecosystem's span, as a
//! child of the captured context.
//!
//! Nothing is captured, built or handed on while no sink is set.

use std::any::Any;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The caller's trace context as a binding captured it (opaque to fencelock: a Python
/// context object, a Node context's id).
#[derive(Clone)]
pub struct TraceParent(Arc<dyn Any + Send + Sync>);

impl TraceParent {
    /// Wraps a binding's context.
    pub fn new(context: impl Any + Send + Sync) -> TraceParent {
        TraceParent(Arc::new(context))
    }

    /// The binding's context, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

/// The same captured context (not two equal ones).
impl PartialEq for TraceParent {
    fn eq(&self, other: &TraceParent) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for TraceParent {}

impl std::fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceParent(..)")
    }
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanValue {
    /// Text: the lock's name, the kind, the outcome.
    Text(Cow<'static, str>),
    /// A count, a fencing token, milliseconds.
    Int(u64),
    /// A flag.
    Bool(bool),
}

/// One span that ended, as a sink receives it.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    /// `fencelock.acquire` or `fencelock.hold`.
    pub name: &'static str,
    /// The context the call was made in: the span's parent.
    pub parent: TraceParent,
    /// When the call started (acquire) or the lock was granted (hold).
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// The attributes, as the `tracing` span's fields (docs/observability.md).
    pub attributes: Vec<(&'static str, SpanValue)>,
    /// No further record has this parent (an acquire that granted nothing, or a hold's end):
    /// a binding that keeps parents by id may forget it.
    pub last: bool,
}

/// A binding's receiver of span records, called on the thread where the span ended: it must
/// be quick and must not block (a binding queues the record for its host's thread).
pub type SpanSink = Arc<dyn Fn(SpanRecord) + Send + Sync>;

static SINK: RwLock<Option<SpanSink>> = RwLock::new(None);
static WANTED: AtomicBool = AtomicBool::new(false);

/// Sets the process's span sink (`None`: none). A call started before keeps the parent it
/// captured; its records go to the sink set when it ends.
pub fn set_span_sink(sink: Option<SpanSink>) {
    let mut slot = SINK.write().unwrap_or_else(|e| e.into_inner());
    WANTED.store(sink.is_some(), Ordering::Release);
    *slot = sink;
}

/// Whether a span sink is set: a binding captures its caller's context only then.
pub fn spans_wanted() -> bool {
    WANTED.load(Ordering::Acquire)
}

/// A traced call's or hold's span, recorded when it ends.
pub(crate) struct Traced {
    parent: TraceParent,
    start: SystemTime,
    attributes: Vec<(&'static str, SpanValue)>,
}

impl Traced {
    /// A span begun now under `parent` (`None`, or no sink: nothing is traced).
    pub fn begin(
        parent: Option<&TraceParent>,
        attributes: impl FnOnce() -> Vec<(&'static str, SpanValue)>,
    ) -> Option<Traced> {
        let parent = parent.filter(|_| spans_wanted())?;
        Some(Traced {
            parent: parent.clone(),
            start: SystemTime::now(),
            attributes: attributes(),
        })
    }

    /// The span of what follows a traced span under the same parent (a hold after its
    /// acquire): traced whether or not a sink is still set, so that the parent's last record
    /// comes.
    pub fn follow(
        parent: TraceParent,
        attributes: impl FnOnce() -> Vec<(&'static str, SpanValue)>,
    ) -> Traced {
        Traced {
            parent,
            start: SystemTime::now(),
            attributes: attributes(),
        }
    }

    /// The parent, for the spans that follow this one.
    pub fn parent(&self) -> &TraceParent {
        &self.parent
    }

    /// Hands the span, with `more` attributes, to the sink.
    pub fn end(mut self, name: &'static str, more: &[(&'static str, SpanValue)], last: bool) {
        let sink = SINK.read().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(sink) = sink else { return };
        self.attributes.extend_from_slice(more);
        let record = SpanRecord {
            name,
            parent: self.parent,
            start: self.start,
            end: SystemTime::now(),
            attributes: self.attributes,
            last,
        };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(record)));
    }
}
