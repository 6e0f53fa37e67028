//! The `metrics` handles of the series fencelock records, kept per thread, so that a sample
//! costs a lookup and the handle's own update instead of building its labels and asking the
//! recorder to find (or register) the series each time.
//!
//! A handle belongs to the recorder that made it: the cache is kept for one recorder (its
//! address, read from `metrics::with_recorder` at each sample) and emptied when another is
//! in use (a global recorder installed later, a local one in a test). It holds at most
//! [`MAX_SERIES`] series per thread; past that it starts again, so that a manager's
//! `MetricNames` mapping cannot grow it without end.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::{Instrument, Measure, Value};

/// Most series one thread keeps handles of.
const MAX_SERIES: usize = 4096;

enum Handle {
    Counter(metrics::Counter),
    Gauge(metrics::Gauge),
    Histogram(metrics::Histogram),
}

/// One series: its measure's name, its labels' values and its handle.
type Series = (&'static str, Vec<Value>, Handle);

#[derive(Default)]
struct Cache {
    /// The recorder the handles belong to (its address).
    recorder: usize,
    /// Series by the hash of their measure and labels; each bucket checked for equality.
    series: HashMap<u64, Vec<Series>>,
    len: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Records `value` of `m` with `labels` through the `metrics` facade.
pub(super) fn record(m: &'static Measure, value: f64, labels: &[Value]) {
    let recorder =
        metrics::with_recorder(|r| r as *const dyn metrics::Recorder as *const () as usize);
    let mut hasher = DefaultHasher::new();
    m.name.hash(&mut hasher);
    labels.hash(&mut hasher);
    let hash = hasher.finish();
    let done = CACHE.try_with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return false; // a recorder that records from inside a sample: no cache
        };
        if cache.recorder != recorder || cache.len >= MAX_SERIES {
            *cache = Cache {
                recorder,
                ..Cache::default()
            };
        }
        let bucket = cache.series.entry(hash).or_default();
        if let Some((_, _, handle)) = bucket
            .iter()
            .find(|(name, l, _)| std::ptr::eq(*name, m.name) && l.as_slice() == labels)
        {
            update(handle, value);
            return true;
        }
        let handle = register(m, labels);
        update(&handle, value);
        bucket.push((m.name, labels.to_vec(), handle));
        cache.len += 1;
        true
    });
    if done != Ok(true) {
        update(&register(m, labels), value);
    }
}

fn update(handle: &Handle, value: f64) {
    match handle {
        Handle::Counter(c) => c.increment(value as u64),
        Handle::Gauge(g) => g.increment(value),
        Handle::Histogram(h) => h.record(value),
    }
}

/// The recorder's handle of the series (registered there if new).
fn register(m: &'static Measure, labels: &[Value]) -> Handle {
    let labels: Vec<metrics::Label> = m
        .labels
        .iter()
        .zip(labels)
        .map(|(k, v)| match v {
            Cow::Borrowed(s) => metrics::Label::from_static_parts(k, s),
            Cow::Owned(s) => metrics::Label::new(*k, s.clone()),
        })
        .collect();
    match m.instrument {
        Instrument::Counter => Handle::Counter(metrics::counter!(m.name, labels)),
        Instrument::Histogram => Handle::Histogram(metrics::histogram!(m.name, labels)),
        Instrument::Gauge => Handle::Gauge(metrics::gauge!(m.name, labels)),
    }
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use super::super::{ACQUIRE_ATTEMPTS, HELD};
    use super::*;

    fn seen(r: &DebuggingRecorder) -> Vec<(String, DebugValue)> {
        r.snapshotter()
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(k, _, _, v)| (k.key().name().to_owned(), v))
            .collect()
    }

    #[test]
    fn handles_follow_the_recorder_in_use() {
        let labels = [
            Cow::Borrowed("mutex"),
            Cow::Borrowed("acquired"),
            Cow::Borrowed(""),
        ];
        let (first, second) = (DebuggingRecorder::new(), DebuggingRecorder::new());
        metrics::with_local_recorder(&first, || {
            record(&ACQUIRE_ATTEMPTS, 2.0, &labels);
            record(&ACQUIRE_ATTEMPTS, 3.0, &labels);
            record(&HELD, 1.0, &labels[..1]);
        });
        metrics::with_local_recorder(&second, || record(&ACQUIRE_ATTEMPTS, 5.0, &labels));
        let mut one = seen(&first);
        one.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(one.len(), 2, "{one:?}");
        assert!(matches!(&one[0].1, DebugValue::Histogram(v) if v.len() == 2));
        assert!(matches!(&one[1].1, DebugValue::Gauge(g) if g.into_inner() == 1.0));
        let two = seen(&second);
        assert!(
            matches!(&two[..], [(_, DebugValue::Histogram(v))] if v.len() == 1 && v[0].into_inner() == 5.0)
        );
    }
}
