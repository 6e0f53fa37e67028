//! The `metrics` handles of the series fencelock records, kept per thread, so that a sample
//! costs a lookup and the handle's own update instead of building its labels and asking the
//! recorder to find (or register) the series each time.
//!
//! A handle belongs to the recorder that made it: the cache is kept for one recorder (its
//! address, read from `metrics::with_recorder` at each sample) and emptied when another is
//! in use (a global recorder installed later, a local one in a test). It holds at most
//! [`MAX_SERIES`] series per thread; past that it starts again, so that a manager's
//! `MetricNames` mapping cannot grow it without end.
//!
//! The lookup is keyed by a cheap hash (the measure's address and an FNV-1a of the labels'
//! values, taken by the map as it is): a lock's cycle records five samples, and hashing their
//! names and labels with the standard library's SipHash cost about as much as the rest of
//! the sample (bench/notes.md, "where the client's instructions go").

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
    series: HashMap<u64, Vec<Series>, BuildHasherDefault<Taken>>,
    len: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Records `value` of `m` with `labels` through the `metrics` facade.
pub(super) fn record(m: &'static Measure, value: f64, labels: &[Value]) {
    let recorder =
        metrics::with_recorder(|r| r as *const dyn metrics::Recorder as *const () as usize);
    let hash = key_of(m, labels);
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

/// The cache's key of a series: FNV-1a over the measure's address and its labels' values,
/// each followed by a byte no label holds (so that `("ab", "")` and `("a", "b")` differ).
/// Series whose keys collide share a bucket, where they are told apart by equality.
fn key_of(m: &'static Measure, labels: &[Value]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (m as *const Measure as usize as u64);
    for label in labels {
        for &b in label.as_bytes().iter().chain(&[0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }
    h
}

/// The map's hasher: the key is already a hash ([`key_of`]), taken as it is.
#[derive(Default)]
struct Taken(u64);

impl Hasher for Taken {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; anything else is folded in, never dropped.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
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

    #[test]
    fn keys_tell_label_boundaries_and_measures_apart() {
        let two = |a: &'static str, b: &'static str| [Cow::Borrowed(a), Cow::Borrowed(b)];
        assert_ne!(key_of(&HELD, &two("ab", "")), key_of(&HELD, &two("a", "b")));
        assert_ne!(
            key_of(&HELD, &two("a", "b")),
            key_of(&ACQUIRE_ATTEMPTS, &two("a", "b"))
        );
        assert_eq!(
            key_of(&HELD, &two("a", "b")),
            key_of(&HELD, &[Cow::Owned("a".into()), Cow::Borrowed("b")])
        );
    }
}
