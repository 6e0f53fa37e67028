//! The measurements (`fencelock::ffi_support::measure`), read back from a real `metrics` recorder (the
//! `metrics-util` debugging recorder, installed for this test binary) and from a sink as the
//! bindings add one, against a real redis-server; and the `fencelock.acquire` and
//! `fencelock.hold` spans, read back from a `tracing` layer, nested under the caller's span.
//!
//! One test function: the recorder and the gauges are process-wide.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fencelock::ffi_support::measure::{self, Instrument, MetricNames, Sample, Total, MEASURES};
use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::{free_port, RedisServer};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tracing::span;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Every series the recorder holds: (name, labels) → value, histograms as their observations.
type Series = HashMap<(String, Vec<(String, String)>), DebugValue>;

fn series(snapshotter: &Snapshotter) -> Series {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (_, key) = key.into_parts();
            let labels = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            ((key.name().to_owned(), labels), value)
        })
        .collect()
}

/// The observations of histogram `name` whose labels include `with`.
fn observed(s: &Series, name: &str, with: &[(&str, &str)]) -> Vec<f64> {
    matching(s, name, with)
        .flat_map(|v| match v {
            DebugValue::Histogram(v) => v.iter().map(|x| x.into_inner()).collect::<Vec<f64>>(),
            other => panic!("{name} is not a histogram: {other:?}"),
        })
        .collect()
}

/// The sum of counter `name` over the series whose labels include `with`.
fn counted(s: &Series, name: &str, with: &[(&str, &str)]) -> u64 {
    matching(s, name, with)
        .map(|v| match v {
            DebugValue::Counter(n) => *n,
            other => panic!("{name} is not a counter: {other:?}"),
        })
        .sum()
}

/// The value of gauge `name` with `kind`.
fn level(s: &Series, name: &str, kind: &str) -> f64 {
    matching(s, name, &[("kind", kind)])
        .map(|v| match v {
            DebugValue::Gauge(x) => x.into_inner(),
            other => panic!("{name} is not a gauge: {other:?}"),
        })
        .sum()
}

fn matching<'a>(
    s: &'a Series,
    name: &'a str,
    with: &'a [(&'a str, &'a str)],
) -> impl Iterator<Item = &'a DebugValue> + 'a {
    s.iter()
        .filter(move |((n, labels), _)| {
            n == name
                && with
                    .iter()
                    .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, v)| v)
}

/// What a sink received: (measure, labels, value).
type Received = Arc<Mutex<Vec<(&'static str, Vec<String>, f64)>>>;

/// Spans seen closing: (name, parent's name, fields).
type Closed = Arc<Mutex<Vec<(String, Option<String>, HashMap<String, String>)>>>;

struct Spans(Closed);

#[derive(Default)]
struct Fields(HashMap<String, String>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }
    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let mut ext = span.extensions_mut();
        values.record(ext.get_mut::<Fields>().unwrap());
    }
    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        let parent = span.parent().map(|p| p.name().to_owned());
        let fields = span.extensions().get::<Fields>().unwrap().0.clone();
        self.0
            .lock()
            .unwrap()
            .push((span.name().to_owned(), parent, fields));
    }
}

#[test]
fn measurements_and_spans_are_recorded_as_documented() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();
    let totals = measure::totals();
    totals.keep_observations();
    let received: Received = Arc::default();
    let sink = {
        let received = Arc::clone(&received);
        measure::add_sink(Arc::new(move |s: &Sample<'_>| {
            let labels = s.labels.iter().map(|v| v.to_string()).collect();
            received
                .lock()
                .unwrap()
                .push((s.measure.name, labels, s.value));
        }))
    };
    let closed: Closed = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Spans(Arc::clone(&closed)));
    let server = RedisServer::start();
    // An ACL user with a password for the library; the default user stays open for the test's
    // own tampering.
    server.cmd(&[
        b"ACL",
        b"SETUSER",
        b"locker",
        b"on",
        b">s3cret-pw",
        b"~*",
        b"&*",
        b"+@all",
    ]);
    let url = format!("redis://locker:s3cret-pw@127.0.0.1:{}", server.port());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = tracing::subscriber::with_default(subscriber, || rt.block_on(run(&url)));

    let s = series(&snapshotter);
    let mutex = ("kind", "mutex");
    let orders = ("name", "orders");
    // Acquire: one per outcome, with its time and attempts; the name only where let through.
    let acquired = observed(
        &s,
        "fencelock_acquire_wait_seconds",
        &[mutex, orders, ("outcome", "acquired")],
    );
    assert_eq!(acquired.len(), 4, "{acquired:?}");
    for outcome in ["not_acquired", "wait_limit", "cancelled"] {
        let got = observed(
            &s,
            "fencelock_acquire_wait_seconds",
            &[mutex, orders, ("outcome", outcome)],
        );
        assert_eq!(got.len(), 1, "{outcome}: {got:?}");
    }
    let limit = observed(
        &s,
        "fencelock_acquire_wait_seconds",
        &[("outcome", "wait_limit")],
    );
    assert!(limit[0] >= 0.2, "the wait limit was 200 ms: {limit:?}");
    let attempts = observed(
        &s,
        "fencelock_acquire_attempts",
        &[orders, ("outcome", "not_acquired")],
    );
    assert_eq!(attempts, vec![1.0]);
    assert_eq!(counted(&s, "fencelock_handoffs_total", &[mutex, orders]), 1);
    // Names not let through have an empty name; a mapped one its mapping.
    let unnamed = [("name", ""), ("outcome", "acquired")];
    assert_eq!(
        observed(
            &s,
            "fencelock_acquire_wait_seconds",
            &[mutex, unnamed[0], unnamed[1]]
        )
        .len(),
        1
    );
    let failed = [("name", ""), ("outcome", "error")];
    assert_eq!(
        observed(&s, "fencelock_acquire_wait_seconds", &failed).len(),
        1
    );
    assert_eq!(
        observed(&s, "fencelock_acquire_wait_seconds", &[("name", "job")]).len(),
        1
    );
    assert_eq!(
        observed(
            &s,
            "fencelock_acquire_wait_seconds",
            &[("kind", "semaphore")]
        )
        .len(),
        1
    );
    // Holds, by how they ended.
    for outcome in ["released", "lost", "detached", "dropped"] {
        let got = observed(&s, "fencelock_hold_seconds", &[mutex, ("outcome", outcome)]);
        assert!(!got.is_empty(), "hold {outcome}: none");
    }
    let held = observed(
        &s,
        "fencelock_hold_seconds",
        &[orders, ("outcome", "detached")],
    );
    assert!(held[0] >= 0.05, "held 50 ms before detach: {held:?}");
    assert_eq!(
        counted(
            &s,
            "fencelock_extensions_total",
            &[orders, ("result", "ok")]
        ),
        1
    );
    assert_eq!(
        counted(
            &s,
            "fencelock_extensions_total",
            &[orders, ("result", "failed")]
        ),
        1
    );
    assert_eq!(
        counted(
            &s,
            "fencelock_locks_lost_total",
            &[orders, ("reason", "taken")]
        ),
        1
    );
    assert!(
        counted(
            &s,
            "fencelock_server_errors_total",
            &[("error", "connection")]
        ) >= 1
    );
    // Every gauge is back to zero: nothing held, nobody waiting.
    for kind in ["mutex", "semaphore"] {
        assert_eq!(level(&s, "fencelock_locks_held", kind), 0.0, "{kind}");
        assert_eq!(level(&s, "fencelock_callers_waiting", kind), 0.0, "{kind}");
    }

    // The sink received the same samples, with each measure's labels in its order.
    let received = received.lock().unwrap().clone();
    assert!(measure::remove_sink(sink));
    for m in MEASURES {
        let of: Vec<_> = received.iter().filter(|r| r.0 == m.name).collect();
        assert!(!of.is_empty(), "the sink got no {}", m.name);
        assert!(of.iter().all(|r| r.1.len() == m.labels.len()));
        if m.instrument == Instrument::Gauge {
            assert_eq!(of.iter().map(|r| r.2).sum::<f64>(), 0.0, "{}", m.name);
        }
    }
    let sunk = received
        .iter()
        .filter(|r| r.0 == "fencelock_acquire_wait_seconds" && r.1[2] == "orders")
        .count();
    assert_eq!(sunk, 7);
    // The totals (what a scrape reads) agree: a histogram's cumulative buckets, count and
    // sum; a counter's sum; every gauge back at zero. The kept observations are the sink's.
    let snapshot = totals.snapshot();
    let total = |name: &str, labels: &[&str]| {
        snapshot
            .iter()
            .find(|((m, l), _)| m.name == name && l == labels)
            .map(|(_, t)| t.clone())
    };
    match total(
        "fencelock_acquire_wait_seconds",
        &["mutex", "acquired", "orders"],
    ) {
        Some(Total::Histogram {
            buckets,
            count,
            sum,
        }) => {
            assert_eq!(count, 4);
            assert!(buckets.windows(2).all(|w| w[0] <= w[1]) && buckets[buckets.len() - 1] <= 4);
            assert!((sum - acquired.iter().sum::<f64>()).abs() < 1e-9, "{sum}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        total("fencelock_handoffs_total", &["mutex", "orders"]),
        Some(Total::Counter(1.0))
    );
    assert_eq!(
        total("fencelock_locks_held", &["mutex"]),
        Some(Total::Gauge(0.0))
    );
    let kept = totals.take_observations();
    let histograms = received
        .iter()
        .filter(|r| {
            MEASURES
                .iter()
                .any(|m| m.name == r.0 && m.instrument == Instrument::Histogram)
        })
        .count();
    assert_eq!(kept.len(), histograms);
    assert!(totals.take_observations().is_empty());
    // No label anywhere holds a token or the password.
    for (_, labels) in s.keys() {
        for (_, v) in labels {
            assert!(!v.contains("s3cret-pw") && !v.contains(&token), "{v}");
        }
    }

    // Spans: each acquire and each hold, under the caller's span, with their fields.
    let closed = closed.lock().unwrap();
    let acquires: Vec<_> = closed
        .iter()
        .filter(|c| c.0 == "fencelock.acquire")
        .collect();
    assert!(acquires.len() >= 9, "{}", acquires.len());
    assert!(acquires.iter().all(|c| c.1.as_deref() == Some("caller")));
    let handed = acquires
        .iter()
        .find(|c| c.2.get("handed_over").map(String::as_str) == Some("true"))
        .expect("a handed-over acquire");
    assert_eq!(handed.2["outcome"], "acquired");
    assert!(handed.2["fencing_token"].parse::<u64>().unwrap() > 0);
    assert_eq!(handed.2["servers"], "1");
    assert!(acquires.iter().all(|c| c.2.contains_key("lock")));
    assert!(acquires.iter().any(|c| c.2["lock"] == "orders"));
    assert!(acquires
        .iter()
        .all(|c| c.2["waited_ms"].parse::<u64>().is_ok()));
    // A call dropped before its end (a caller that stopped waiting) says so.
    assert!(acquires.iter().all(|c| c.2.contains_key("outcome")));
    assert!(acquires.iter().any(|c| c.2["outcome"] == "cancelled"));
    let refused = acquires
        .iter()
        .find(|c| c.2.get("outcome").map(String::as_str) == Some("not_acquired"))
        .expect("a refused acquire");
    assert_eq!(refused.2["attempts"], "1");
    let holds: Vec<_> = closed.iter().filter(|c| c.0 == "fencelock.hold").collect();
    assert!(holds.iter().all(|c| c.1.as_deref() == Some("caller")));
    assert!(holds.iter().all(|c| c.2["held_ms"].parse::<u64>().is_ok()));
    for outcome in ["released", "lost", "detached", "dropped"] {
        assert!(
            holds
                .iter()
                .any(|c| c.2.get("outcome").map(String::as_str) == Some(outcome)),
            "no hold span ended {outcome}"
        );
    }
}

/// Every case the assertions above count, under a span named `caller`; returns a token.
async fn run(url: &str) -> String {
    let caller = tracing::info_span!("caller");
    let _entered = caller.enter();
    // Counts its calls for "job:" names: one per acquisition, the hold reusing the call's.
    let mapped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls = Arc::clone(&mapped);
    let names = MetricNames::mapped(move |n| match n {
        b"orders" => Some("orders".into()),
        n if n.starts_with(b"job:") => {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some("job".into())
        }
        _ => None,
    });
    let m = LockManager::builder([url])
        .metric_names(names)
        .build()
        .unwrap();
    let other = m.clone();
    // Acquired at once, extended, released.
    let lock = m.acquire("orders", MS(10_000), None).await.unwrap();
    let token = String::from_utf8_lossy(lock.token()).into_owned();
    lock.extend(MS(10_000)).await.unwrap();
    // Refused at once, then after a 200 ms wait; then handed over by the release.
    assert!(other
        .try_acquire("orders", MS(10_000))
        .await
        .unwrap()
        .is_none());
    let e = other
        .acquire("orders", MS(10_000), Some(MS(200)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired);
    let waiter = tokio::spawn({
        let other = other.clone();
        async move { other.acquire("orders", MS(10_000), Some(MS(10_000))).await }
    });
    let plain = url.replace("locker:s3cret-pw@", "");
    let mut redis = redis::Client::open(plain)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let keys = fencelock::ffi_support::keys::LockKeys::new(b"", b"orders");
    let mut wake = keys.channel.clone();
    wake.extend_from_slice(b"|*");
    // In line and listening: a waiter takes its place at its first refusal and subscribes
    // after it, and a release passes over a waiter that does not listen yet.
    let in_line_listening = || {
        let mut redis = redis.clone();
        let (queue, wake) = (keys.queue.clone(), wake.clone());
        async move {
            let n: i64 = redis::cmd("ZCARD")
                .arg(&queue)
                .query_async(&mut redis)
                .await
                .unwrap();
            let channels: Vec<Vec<u8>> = redis::cmd("PUBSUB")
                .arg("CHANNELS")
                .arg(&wake)
                .query_async(&mut redis)
                .await
                .unwrap();
            n == 1 && !channels.is_empty()
        }
    };
    fencelock_testkit::wait_for(MS(5000), "the waiter in line, listening", in_line_listening).await;
    lock.release().await.unwrap();
    let next = waiter.await.unwrap().unwrap();
    // Cancelled: a waiting call dropped.
    let cancelled = tokio::time::timeout(
        MS(100),
        other.acquire("orders", MS(10_000), Some(MS(10_000))),
    );
    assert!(cancelled.await.is_err());
    // Taken from its holder: the extend fails and finds it lost; then dropped.
    let _: () = redis::cmd("SET")
        .arg("orders")
        .arg("someone-else")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(next.extend(MS(10_000)).await.is_err());
    drop(next);
    let _: () = redis::cmd("DEL")
        .arg("orders")
        .query_async(&mut redis)
        .await
        .unwrap();
    // Detached after 50 ms, dropped while held (released in the background).
    let lock = m.acquire("orders", MS(10_000), None).await.unwrap();
    tokio::time::sleep(MS(50)).await;
    lock.detach();
    let _: () = redis::cmd("DEL")
        .arg("orders")
        .query_async(&mut redis)
        .await
        .unwrap();
    drop(m.acquire("orders", MS(10_000), None).await.unwrap());
    // A name not let through, a mapped one, a semaphore's permits.
    m.acquire("hidden", MS(10_000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    m.acquire("job:7", MS(10_000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert_eq!(mapped.load(std::sync::atomic::Ordering::Relaxed), 1);
    let sem = m.semaphore("pool", 2).unwrap();
    sem.acquire(1, MS(10_000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    // A server that is not there: connection errors.
    let gone = LockManager::builder([format!("redis://127.0.0.1:{}", free_port())])
        .connect_timeout(MS(200))
        .build()
        .unwrap();
    assert!(gone.try_acquire("orders", MS(10_000)).await.is_err());
    token
}

/// docs/observability.md's table has a row per measure, with its instrument, unit and labels
/// as `MEASURES` defines them, and no other row.
#[test]
fn the_documented_table_is_the_core_s() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/observability.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let rows: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("| `fencelock_"))
        .collect();
    assert_eq!(rows.len(), MEASURES.len(), "{rows:#?}");
    for (m, row) in MEASURES.iter().zip(&rows) {
        let instrument = match m.instrument {
            Instrument::Counter => "counter",
            Instrument::Histogram => "histogram",
            Instrument::Gauge => "gauge",
        };
        let labels: Vec<String> = m.labels.iter().map(|l| format!("`{l}`")).collect();
        let head = format!(
            "| `{}` | {instrument} | {} | {} |",
            m.name,
            m.unit,
            labels.join(", ")
        );
        assert!(row.starts_with(&head), "{row}\nshould start with\n{head}");
    }
}
