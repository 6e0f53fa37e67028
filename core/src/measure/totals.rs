//! Running totals of every series, for exporters that read the measurements when asked (a
//! Prometheus scrape: `prometheus_client`, `prom-client`) rather than at each sample, and the
//! histograms' recent observations, for exporters that record each one themselves
//! (OpenTelemetry's histograms): the bindings' exporters read both here, so that a sample
//! never waits for a language's interpreter lock.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::{add_sink, Instrument, Measure, Sample, MEASURES};

/// Most histogram observations kept between two [`Totals::take_observations`] (the oldest
/// go first beyond it).
pub const MAX_KEPT_OBSERVATIONS: usize = 100_000;

/// One series' total.
#[derive(Debug, Clone, PartialEq)]
pub enum Total {
    /// A counter's sum.
    Counter(f64),
    /// A gauge's level (the sum of its changes).
    Gauge(f64),
    /// A histogram: per bucket of the measure, how many observations were at most its bound
    /// (cumulative, as Prometheus counts them), and all of them and their sum.
    Histogram {
        /// Cumulative counts, one per bound of `Measure::buckets`.
        buckets: Vec<u64>,
        /// Every observation.
        count: u64,
        /// Their sum.
        sum: f64,
    },
}

/// One series: a measure and its labels' values (in the measure's order).
pub type Series = (&'static Measure, Vec<String>);

#[derive(Default)]
struct State {
    totals: HashMap<(usize, Vec<String>), Total>,
    /// Histogram observations since the last take, when kept.
    kept: Option<VecDeque<(Series, f64)>>,
}

/// The totals of every series since the first call of [`totals`].
pub struct Totals {
    state: Mutex<State>,
}

/// The process's totals; the first call starts keeping them (a sink of every sample).
pub fn totals() -> &'static Totals {
    static TOTALS: OnceLock<&'static Totals> = OnceLock::new();
    TOTALS.get_or_init(|| {
        let totals: &'static Totals = Box::leak(Box::new(Totals {
            state: Mutex::new(State::default()),
        }));
        add_sink(Arc::new(move |s: &Sample<'_>| totals.add(s)));
        totals
    })
}

impl Totals {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, s: &Sample<'_>) {
        let (m, index) = (s.measure, s.measure.index());
        let labels: Vec<String> = s.labels.iter().map(|v| v.to_string()).collect();
        let mut state = self.state();
        if let (Some(kept), Instrument::Histogram) = (state.kept.as_mut(), m.instrument) {
            if kept.len() == MAX_KEPT_OBSERVATIONS {
                kept.pop_front();
            }
            kept.push_back(((m, labels.clone()), s.value));
        }
        let total = state
            .totals
            .entry((index, labels))
            .or_insert_with(|| match m.instrument {
                Instrument::Counter => Total::Counter(0.0),
                Instrument::Gauge => Total::Gauge(0.0),
                Instrument::Histogram => Total::Histogram {
                    buckets: vec![0; m.buckets.len()],
                    count: 0,
                    sum: 0.0,
                },
            });
        match total {
            Total::Counter(n) | Total::Gauge(n) => *n += s.value,
            Total::Histogram {
                buckets,
                count,
                sum,
            } => {
                for (b, bound) in buckets.iter_mut().zip(m.buckets) {
                    *b += u64::from(s.value <= *bound);
                }
                *count += 1;
                *sum += s.value;
            }
        }
    }

    /// Every series and its total, in the order of [`MEASURES`] (series of one measure in
    /// no set order).
    pub fn snapshot(&self) -> Vec<(Series, Total)> {
        let state = self.state();
        let mut all: Vec<_> = state
            .totals
            .iter()
            .map(|((i, labels), t)| (*i, labels.clone(), t.clone()))
            .collect();
        drop(state);
        all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        all.into_iter()
            .map(|(i, labels, t)| ((MEASURES[i], labels), t))
            .collect()
    }

    /// Starts keeping each histogram observation for [`take_observations`](Self::take_observations)
    /// (at most [`MAX_KEPT_OBSERVATIONS`] between two takes).
    pub fn keep_observations(&self) {
        self.state().kept.get_or_insert_with(VecDeque::new);
    }

    /// The histogram observations kept since the last take, oldest first.
    pub fn take_observations(&self) -> Vec<(Series, f64)> {
        match self.state().kept.as_mut() {
            Some(kept) => kept.drain(..).collect(),
            None => Vec::new(),
        }
    }
}
