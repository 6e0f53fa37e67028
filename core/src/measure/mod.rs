//! The measurements fencelock reports about its locks, defined once here ([`MEASURES`]: names,
//! instruments, units, labels, histogram buckets, and what each means), and recorded two ways
//! at once:
//!
//! - through the [`metrics`] facade, which records nothing until the application installs a
//!   recorder (an exporter such as `metrics-exporter-prometheus`);
//! - to the sinks the bindings add ([`add_sink`]), which hand each [`Sample`] to their
//!   ecosystem's instruments (OpenTelemetry, `prometheus_client`, `prom-client`, a C
//!   callback). Nothing is handed on while no sink is added.
//!
//! Labels are fencelock's own words (`kind`, `outcome`, `reason`, `result`, `error`), and the
//! lock's name only when the manager lets it through ([`MetricNames`]): names are often
//! unbounded (`order:12345`), and a label per name would grow an exporter without end. A label
//! never holds a token, a password or a server's address. docs/observability.md has the table.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

#[cfg(feature = "observe")]
mod handles;
mod totals;
mod trace;
mod watch;

pub use totals::{totals, Series, Total, Totals, MAX_KEPT_OBSERVATIONS};
pub(crate) use trace::Traced;
pub use trace::{set_span_sink, spans_wanted, SpanRecord, SpanSink, SpanValue, TraceParent};
pub(crate) use watch::{AcquireWatch, HoldLabels, HoldWatch};

use crate::kind::LeaseKind;

/// How a measure is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instrument {
    /// A count that only grows: each sample's value is added.
    Counter,
    /// A distribution: each sample's value is one observation.
    Histogram,
    /// A level that goes up and down: each sample's value is a change (+1, -1), as an
    /// OpenTelemetry UpDownCounter or a Prometheus gauge's `inc`/`dec` take it.
    Gauge,
}

/// One measurement: its name, instrument, unit, labels (in the order a [`Sample`]'s values
/// follow), histogram buckets (upper bounds, for exporters that need them), and what it means.
#[derive(Debug, PartialEq)]
pub struct Measure {
    /// The name, in Prometheus's form (OpenTelemetry exporters keep it).
    pub name: &'static str,
    /// How it is reported.
    pub instrument: Instrument,
    /// `"seconds"`, or `"1"` for a count.
    pub unit: &'static str,
    /// The labels' names.
    pub labels: &'static [&'static str],
    /// Histogram bucket upper bounds (empty for a counter or a gauge).
    pub buckets: &'static [f64],
    /// What it means.
    pub help: &'static str,
}

const WAIT_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
const HOLD_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];
const ATTEMPT_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0];

/// How long acquire calls took, from the call to its answer.
pub static ACQUIRE_WAIT: Measure = Measure {
    name: "fencelock_acquire_wait_seconds",
    instrument: Instrument::Histogram,
    unit: "seconds",
    labels: &["kind", "outcome", "name"],
    buckets: WAIT_BUCKETS,
    help: "Time from an acquire call to its answer, by outcome: acquired, not_acquired (a \
           single try refused), wait_limit, cancelled, error.",
};
/// How many attempts an acquire call made.
pub static ACQUIRE_ATTEMPTS: Measure = Measure {
    name: "fencelock_acquire_attempts",
    instrument: Instrument::Histogram,
    unit: "1",
    labels: &["kind", "outcome", "name"],
    buckets: ATTEMPT_BUCKETS,
    help: "Attempts per acquire call, by outcome (a lock handed over ends the call without an \
           attempt of its own).",
};
/// How long locks were held.
pub static HOLD: Measure = Measure {
    name: "fencelock_hold_seconds",
    instrument: Instrument::Histogram,
    unit: "seconds",
    labels: &["kind", "outcome", "name"],
    buckets: HOLD_BUCKETS,
    help: "Time from a grant to the end of the hold, by outcome: released, lost (it was lost \
           before its release), detached, dropped (released in the background when its \
           handle was dropped).",
};
/// Locks handed over by a release while their caller waited.
pub static HANDOFFS: Measure = Measure {
    name: "fencelock_handoffs_total",
    instrument: Instrument::Counter,
    unit: "1",
    labels: &["kind", "name"],
    buckets: &[],
    help: "Acquisitions handed over by a holder's release (FIFO hand-off) rather than taken \
           by an attempt.",
};
/// Extensions, by result.
pub static EXTENSIONS: Measure = Measure {
    name: "fencelock_extensions_total",
    instrument: Instrument::Counter,
    unit: "1",
    labels: &["kind", "result", "name"],
    buckets: &[],
    help: "Extensions (by the caller or by auto-extension), by result: ok, failed.",
};
/// Locks lost, by reason.
pub static LOST: Measure = Measure {
    name: "fencelock_locks_lost_total",
    instrument: Instrument::Counter,
    unit: "1",
    labels: &["kind", "reason", "name"],
    buckets: &[],
    help: "Locks lost while held, by reason: expired, taken, unreachable.",
};
/// Server calls that failed, by kind.
pub static SERVER_ERRORS: Measure = Measure {
    name: "fencelock_server_errors_total",
    instrument: Instrument::Counter,
    unit: "1",
    labels: &["error"],
    buckets: &[],
    help: "Calls to one server that failed, by kind: timeout, connection, unready, config, \
           reply, refused, slot_moving, not_replicated.",
};
/// Locks held by this process.
pub static HELD: Measure = Measure {
    name: "fencelock_locks_held",
    instrument: Instrument::Gauge,
    unit: "1",
    labels: &["kind"],
    buckets: &[],
    help: "Locks this process holds now (granted, neither released nor lost).",
};
/// Acquire calls of this process that wait.
pub static WAITING: Measure = Measure {
    name: "fencelock_callers_waiting",
    instrument: Instrument::Gauge,
    unit: "1",
    labels: &["kind"],
    buckets: &[],
    help: "Acquire calls of this process in progress that may wait (every call but a single \
           try).",
};

/// Every measure, in the order of docs/observability.md's table.
pub static MEASURES: [&Measure; 9] = [
    &ACQUIRE_WAIT,
    &ACQUIRE_ATTEMPTS,
    &HOLD,
    &HANDOFFS,
    &EXTENSIONS,
    &LOST,
    &SERVER_ERRORS,
    &HELD,
    &WAITING,
];

impl Measure {
    /// Its place in [`MEASURES`].
    pub fn index(&'static self) -> usize {
        MEASURES
            .iter()
            .position(|m| std::ptr::eq(*m, self))
            .expect("every measure is in MEASURES")
    }
}

/// A label's value: one of fencelock's words, or a lock's name let through.
pub type Value = Cow<'static, str>;

/// One recorded value, as a sink receives it.
#[derive(Debug)]
pub struct Sample<'a> {
    /// What was measured.
    pub measure: &'static Measure,
    /// The observation (a histogram), the amount added (a counter) or the change (a gauge).
    pub value: f64,
    /// The labels' values, in the order of `measure.labels`.
    pub labels: &'a [Value],
}

/// A binding's receiver of samples.
pub type Sink = Arc<dyn Fn(&Sample<'_>) + Send + Sync>;

static SINKS: RwLock<Vec<(u64, Sink)>> = RwLock::new(Vec::new());
static ANY_SINK: AtomicBool = AtomicBool::new(false);
static NEXT_SINK: AtomicU64 = AtomicU64::new(1);

/// Adds a sink that receives every sample from now on (on the thread that records it: it must
/// be quick and must not block); returns its id for [`remove_sink`].
pub fn add_sink(sink: Sink) -> u64 {
    let id = NEXT_SINK.fetch_add(1, Ordering::Relaxed);
    let mut sinks = SINKS.write().unwrap_or_else(|e| e.into_inner());
    sinks.push((id, sink));
    ANY_SINK.store(true, Ordering::Release);
    id
}

/// Removes a sink added by [`add_sink`]; returns whether it was there.
pub fn remove_sink(id: u64) -> bool {
    let mut sinks = SINKS.write().unwrap_or_else(|e| e.into_inner());
    let before = sinks.len();
    sinks.retain(|(i, _)| *i != id);
    ANY_SINK.store(!sinks.is_empty(), Ordering::Release);
    sinks.len() != before
}

/// Gives the `metrics` recorder installed now each measure's unit and description. fencelock
/// does it by itself at its first sample; an application that installs its recorder later
/// calls this once after.
#[cfg(feature = "observe")]
pub fn describe() {
    for m in MEASURES {
        let unit = (m.unit == "seconds").then_some(metrics::Unit::Seconds);
        match (m.instrument, unit) {
            (Instrument::Counter, _) => metrics::describe_counter!(m.name, m.help),
            (Instrument::Histogram, Some(u)) => metrics::describe_histogram!(m.name, u, m.help),
            (Instrument::Histogram, None) => metrics::describe_histogram!(m.name, m.help),
            (Instrument::Gauge, _) => metrics::describe_gauge!(m.name, m.help),
        }
    }
}

/// Records `value` of `m` with `labels` (in the order of `m.labels`).
pub(crate) fn record(m: &'static Measure, value: f64, labels: &[Value]) {
    debug_assert_eq!(labels.len(), m.labels.len(), "{}", m.name);
    #[cfg(feature = "observe")]
    {
        static DESCRIBED: std::sync::Once = std::sync::Once::new();
        DESCRIBED.call_once(describe);
    }
    if ANY_SINK.load(Ordering::Acquire) {
        let sample = Sample {
            measure: m,
            value,
            labels,
        };
        let sinks = SINKS.read().unwrap_or_else(|e| e.into_inner());
        for (_, sink) in sinks.iter() {
            sink(&sample);
        }
    }
    // The `metrics` facade's recorder (the `observe` feature).
    #[cfg(feature = "observe")]
    handles::record(m, value, labels);
}

/// The `kind` label of a lease.
pub(crate) fn kind(kind: LeaseKind) -> Value {
    Cow::Borrowed(match kind {
        LeaseKind::Lock => "mutex",
        LeaseKind::Permits { .. } => "semaphore",
        LeaseKind::Read => "rwlock_read",
        LeaseKind::Write => "rwlock_write",
    })
}

/// A function from a lock's name to its `name` label (`None`: empty).
pub type NameLabel = Arc<dyn Fn(&[u8]) -> Option<String> + Send + Sync>;

/// Which lock names a manager's measurements carry in their `name` label (empty otherwise):
/// by default none.
#[derive(Clone, Default)]
pub enum MetricNames {
    /// No name: the label is empty.
    #[default]
    Hidden,
    /// The names listed, as they are (others: empty).
    Listed(Arc<HashSet<Vec<u8>>>),
    /// What the function returns for a name (`None`: empty), for example its kind without
    /// its id (`order:12345` → `order`).
    Mapped(NameLabel),
}

impl MetricNames {
    /// The names of `names`, as they are.
    pub fn listed<I, N>(names: I) -> MetricNames
    where
        I: IntoIterator<Item = N>,
        N: AsRef<[u8]>,
    {
        MetricNames::Listed(Arc::new(
            names.into_iter().map(|n| n.as_ref().to_vec()).collect(),
        ))
    }

    /// What `f` returns for each name.
    pub fn mapped(f: impl Fn(&[u8]) -> Option<String> + Send + Sync + 'static) -> MetricNames {
        MetricNames::Mapped(Arc::new(f))
    }

    /// The `name` label of `name`.
    pub(crate) fn label(&self, name: &[u8]) -> Value {
        match self {
            MetricNames::Hidden => Cow::Borrowed(""),
            MetricNames::Listed(set) if set.contains(name) => {
                Cow::Owned(String::from_utf8_lossy(name).into_owned())
            }
            MetricNames::Listed(_) => Cow::Borrowed(""),
            MetricNames::Mapped(f) => f(name).map_or(Cow::Borrowed(""), Cow::Owned),
        }
    }
}

impl std::fmt::Debug for MetricNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetricNames::Hidden => f.write_str("Hidden"),
            MetricNames::Listed(set) => write!(f, "Listed({} names)", set.len()),
            MetricNames::Mapped(_) => f.write_str("Mapped(..)"),
        }
    }
}

/// A failed call to one server, by kind (`failure.rs`'s words, never its message).
pub(crate) fn server_error(error: &'static str) {
    record(&SERVER_ERRORS, 1.0, &[Cow::Borrowed(error)]);
}
