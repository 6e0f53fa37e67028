//! The span records the bindings' tracers receive (`fencelock::ffi_support::measure::set_span_sink`),
//! against a real redis-server: one `fencelock.acquire` per call and one `fencelock.hold` per
//! grant, each with the context the caller gave, its times and the documented attributes;
//! nothing for a call without a context or while no sink is set.
//!
//! One test function: the sink is process-wide.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fencelock::ffi_support::measure::{self, SpanRecord, SpanValue, TraceParent};
use fencelock::{AcquireOptions, ErrorKind, LockManager};
use fencelock_testkit::{RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[derive(Debug, Clone)]
struct Seen {
    name: &'static str,
    parent: String,
    start: SystemTime,
    end: SystemTime,
    attributes: Vec<(&'static str, SpanValue)>,
    last: bool,
}

impl Seen {
    fn attr(&self, key: &str) -> Option<&SpanValue> {
        self.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
    fn text(&self, key: &str) -> &str {
        match self.attr(key) {
            Some(SpanValue::Text(t)) => t,
            other => panic!("{key}: {other:?} in {self:?}"),
        }
    }
    fn int(&self, key: &str) -> u64 {
        match self.attr(key) {
            Some(SpanValue::Int(n)) => *n,
            other => panic!("{key}: {other:?} in {self:?}"),
        }
    }
}

fn traced(ttl: u64, wait: Option<u64>, context: &str) -> AcquireOptions {
    AcquireOptions::new(MS(ttl))
        .wait(wait.map(MS))
        .trace(Some(TraceParent::new(context.to_owned())))
}

#[test]
fn span_records_carry_the_callers_context_times_and_attributes() {
    let server = RedisServer::start();
    server.cmd(&[b"CONFIG", b"SET", b"requirepass", b"s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}", server.port());
    let admin = |args: &[&[u8]]| {
        fencelock_testkit::requests(server.port(), &[&[b"AUTH", b"s3cret-pw"], args], MS(5000))
            .unwrap()
            .remove(1)
    };
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = LockManager::builder([url.as_str()]).build().unwrap();

    // No sink: a context given is not traced.
    assert!(!measure::spans_wanted());
    rt.block_on(async {
        let lock = m
            .acquire_with("orders", &traced(10_000, None, "unseen"))
            .await
            .unwrap();
        lock.release().await.unwrap();
    });

    let sink = Arc::clone(&seen);
    measure::set_span_sink(Some(Arc::new(move |r: SpanRecord| {
        sink.lock().unwrap().push(Seen {
            name: r.name,
            parent: r.parent.get::<String>().cloned().unwrap_or_default(),
            start: r.start,
            end: r.end,
            attributes: r.attributes,
            last: r.last,
        });
    })));
    assert!(measure::spans_wanted());
    let before = SystemTime::now();
    let token = rt.block_on(async {
        // Granted, held 50 ms, released: an acquire and a hold under "request-1".
        let lock = m
            .acquire_with("orders", &traced(10_000, None, "request-1"))
            .await
            .unwrap();
        let token = String::from_utf8_lossy(lock.token()).into_owned();
        tokio::time::sleep(MS(50)).await;
        // Refused once, under "request-2"; then a waiter handed the lock by the release.
        let refused = m
            .acquire_with("orders", &traced(10_000, Some(0), "request-2"))
            .await;
        assert_eq!(refused.unwrap_err().kind(), ErrorKind::NotAcquired);
        let waiter = {
            let m = m.clone();
            tokio::spawn(async move {
                m.acquire_with("orders", &traced(10_000, None, "request-3"))
                    .await
            })
        };
        // Released once the waiter has its place in line (and has waited at least 100 ms).
        let in_line = || {
            let script = b"local k = redis.call('KEYS', '*queue:orders') \
                           if #k == 0 then return 0 end return redis.call('ZCARD', k[1])";
            admin(&[b"EVAL", script, b"0"]) == Reply::Int(1)
        };
        let waiting = std::time::Instant::now();
        while !in_line() || waiting.elapsed() < MS(100) {
            tokio::time::sleep(MS(5)).await;
        }
        lock.release().await.unwrap();
        let next = waiter.await.unwrap().unwrap();
        // Lost meanwhile (its extension finds the key gone): the hold ends "lost".
        admin(&[b"DEL", b"orders"]);
        assert_eq!(
            next.extend(MS(10_000)).await.unwrap_err().kind(),
            ErrorKind::NotHeld
        );
        assert_eq!(next.release().await.unwrap_err().kind(), ErrorKind::NotHeld);
        // No context: nothing.
        m.acquire("orders", MS(10_000), Some(Duration::ZERO))
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        token
    });
    measure::set_span_sink(None);
    assert!(!measure::spans_wanted());
    rt.block_on(async {
        let lock = m
            .acquire_with("orders", &traced(10_000, None, "after"))
            .await
            .unwrap();
        lock.release().await.unwrap();
    });

    let seen = seen.lock().unwrap().clone();
    let by = |name: &str, parent: &str| -> Vec<Seen> {
        seen.iter()
            .filter(|s| s.name == name && s.parent == parent)
            .cloned()
            .collect()
    };
    assert_eq!(seen.len(), 5, "{seen:#?}");
    for s in &seen {
        assert!(s.start >= before && s.end >= s.start, "{s:?}");
        let text = format!("{:?}", s.attributes);
        assert!(
            !text.contains("s3cret-pw") && !text.contains(&token),
            "{text}"
        );
        assert_eq!(s.text("lock"), "orders");
        assert_eq!(s.text("kind"), "mutex");
    }
    // request-1: acquired at the first attempt, then held and released.
    let [acquire] = by("fencelock.acquire", "request-1").try_into().unwrap();
    assert_eq!(acquire.text("outcome"), "acquired");
    assert_eq!(
        (
            acquire.int("attempts"),
            acquire.int("servers"),
            acquire.int("quorum")
        ),
        (1, 1, 1)
    );
    assert!(!acquire.last, "its hold follows");
    let [hold] = by("fencelock.hold", "request-1").try_into().unwrap();
    assert_eq!(hold.text("outcome"), "released");
    assert_eq!(hold.int("fencing_token"), acquire.int("fencing_token"));
    assert!(
        hold.int("held_ms") >= 150 && hold.start >= acquire.end && hold.last,
        "{hold:?}"
    );
    // request-2: one try, refused.
    let [refused] = by("fencelock.acquire", "request-2").try_into().unwrap();
    assert_eq!(refused.text("outcome"), "not_acquired");
    assert!(refused.attr("fencing_token").is_none() && refused.last);
    // request-3: waited in line, handed the lock; its hold lost.
    let [waited] = by("fencelock.acquire", "request-3").try_into().unwrap();
    assert_eq!(waited.text("outcome"), "acquired");
    assert!(waited.int("waited_ms") >= 100, "{waited:?}");
    assert!(waited.int("fencing_token") > acquire.int("fencing_token"));
    let [lost] = by("fencelock.hold", "request-3").try_into().unwrap();
    assert_eq!(lost.text("outcome"), "lost");
}
