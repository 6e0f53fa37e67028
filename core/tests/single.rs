//! The single-server lock against a real redis-server that each test starts for itself.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fencelock::{AcquireOptions, ErrorKind, LockManager, LostReason};
use fencelock_testkit::{wait_until_async, RedisServer};

/// Waits until the wait queue of lock `name` holds `n` places.
async fn until_queued(server: &RedisServer, name: &str, n: i64) {
    let what = format!("{n} waiters queued for {name}");
    wait_until_async(Duration::from_secs(5), &what, || {
        server.queued("", name) == n
    })
    .await;
}

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A manager whose calls wait up to 100 ms for the server. The default is a twentieth of a
/// call's TTL (10 ms for the 100 ms lock below, 15 ms for the 300 ms ones), which a busy
/// machine running the suite in parallel may miss: a release then failed `Unavailable` (stage
/// 57, once). The tests that check the timeouts build their own managers.
fn manager(server: &RedisServer) -> LockManager {
    LockManager::builder([server.url()])
        .server_timeout(MS(100))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_extend_release_round_trip() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("jobs", MS(2000), None).await.unwrap();
    assert_eq!(lock.name(), b"jobs");
    assert_eq!(
        server.get(b"jobs").as_deref(),
        Some(lock.token()),
        "the key's value is the token"
    );
    let pttl = server.pttl(b"jobs");
    assert!(pttl > 1500 && pttl <= 2000, "pttl {pttl}");
    let v = lock.validity();
    assert!(
        v > MS(1900) && v < MS(2000),
        "validity {v:?} is ttl minus elapsed and drift"
    );
    assert!(lock.fencing_token() >= 1);

    lock.extend(MS(10_000)).await.unwrap();
    assert!(server.pttl(b"jobs") > 9000, "extend set a new expiry");
    assert!(lock.validity() > MS(9000));
    assert_eq!(lock.ttl(), MS(10_000));

    lock.release().await.unwrap();
    assert_eq!(server.get(b"jobs"), None, "release deleted the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_on_one_name_never_overlap() {
    let server = RedisServer::start();
    let m = manager(&server);
    let inside = Arc::new(AtomicBool::new(false));
    let sections = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (m, inside, sections) = (m.clone(), inside.clone(), sections.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..8 {
                let lock = m
                    .acquire("counter", MS(5000), Some(MS(30_000)))
                    .await
                    .unwrap();
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                tokio::time::sleep(MS(1)).await;
                sections.fetch_add(1, Ordering::SeqCst);
                inside.store(false, Ordering::SeqCst);
                lock.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(sections.load(Ordering::SeqCst), 16 * 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_frees_a_lock_whose_holder_vanished() {
    let server = RedisServer::start();
    let m = manager(&server);
    let gone = m.acquire("orphan", MS(300), None).await.unwrap();
    let first_token = gone.fencing_token();
    std::mem::forget(gone); // the holder vanishes without releasing
    assert!(m.try_acquire("orphan", MS(300)).await.unwrap().is_none());
    let next = m.acquire("orphan", MS(1000), Some(MS(3000))).await.unwrap();
    assert!(next.fencing_token() > first_token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_after_expiry_reports_not_held_and_spares_the_new_holder() {
    let server = RedisServer::start();
    let m = manager(&server);
    let old = m.acquire("res", MS(100), None).await.unwrap();
    tokio::time::sleep(MS(150)).await;
    assert!(old.is_lost(), "validity ran out");
    assert_eq!(old.validity(), Duration::ZERO);
    let new = m.acquire("res", MS(5000), Some(MS(1000))).await.unwrap();

    let e = old.extend(MS(5000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(e.message().contains("another owner"), "{e}");
    let e = old.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(e.message().contains("another owner"), "{e}");
    assert!(e.message().contains("\"res\""), "names the lock: {e}");

    assert_eq!(
        server.get(b"res").as_deref(),
        Some(new.token()),
        "new holder untouched"
    );
    assert!(server.pttl(b"res") > 4000, "new holder's ttl untouched");
    new.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_of_an_expired_key_says_it_was_gone() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("res", MS(5000), None).await.unwrap();
    server.del(b"res");
    let e = lock.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(e.message().contains("gone"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_by_token_without_a_lock_object() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("handoff", MS(5000), None).await.unwrap();
    let token = lock.token().to_vec();
    std::mem::forget(lock);

    let e = m
        .release_by_token("handoff", "not-the-token")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert_eq!(
        server.get(b"handoff"),
        Some(token.clone()),
        "wrong token released nothing"
    );

    m.release_by_token("handoff", &token).await.unwrap();
    assert_eq!(server.get(b"handoff"), None);
    let e = m.release_by_token("handoff", &token).await.unwrap_err();
    assert!(e.message().contains("gone"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_strictly_increase_across_holders_and_managers() {
    let server = RedisServer::start();
    let a = manager(&server);
    let b = manager(&server);
    // Per name (each name counts on its hash slot's counter).
    let mut last = std::collections::HashMap::new();
    for i in 0..20 {
        let m = if i % 2 == 0 { &a } else { &b };
        let name = if i % 3 == 0 { "x" } else { "y" };
        let lock = m.acquire(name, MS(5000), None).await.unwrap();
        let before = last.insert(name, lock.fencing_token()).unwrap_or(0);
        assert!(
            lock.fencing_token() > before,
            "{name}: {} after {before}",
            lock.fencing_token()
        );
        lock.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_set_nx_px_lock_and_ours_exclude_each_other() {
    let server = RedisServer::start();
    let m = manager(&server);
    assert!(server.set_nx_px(b"shared", b"someone-else", 5000));
    assert!(m.try_acquire("shared", MS(5000)).await.unwrap().is_none());
    let e = m
        .acquire("shared", MS(5000), Some(MS(100)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired);
    assert!(e.message().contains("held by another owner"), "{e}");
    server.del(b"shared");

    let lock = m.try_acquire("shared", MS(5000)).await.unwrap().unwrap();
    assert!(
        !server.set_nx_px(b"shared", b"someone-else", 5000),
        "ours excludes SET NX"
    );
    lock.release().await.unwrap();
    assert!(server.set_nx_px(b"shared", b"someone-else", 5000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_extension_outlives_the_ttl_and_signals_loss() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("long-job", MS(300), None).await.unwrap();
    lock.auto_extend(None);
    tokio::time::sleep(MS(1000)).await; // more than three TTLs
    assert_eq!(server.get(b"long-job").as_deref(), Some(lock.token()));
    assert!(!lock.is_lost());
    assert!(lock.validity() > Duration::ZERO);

    server.del(b"long-job"); // the key vanishes behind the holder's back
    let lost = tokio::time::timeout(MS(2000), lock.lost()).await;
    assert_eq!(lost, Ok(Some(LostReason::Expired)), "lost signal fired");
    assert!(lock.is_lost());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_extension_stops_at_the_maximum_hold_time() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("bounded", MS(300), None).await.unwrap();
    lock.auto_extend(Some(MS(500)));
    let started = Instant::now();
    assert_eq!(
        tokio::time::timeout(MS(3000), lock.lost()).await,
        Ok(Some(LostReason::Expired))
    );
    let held = started.elapsed();
    assert!(
        held >= MS(400) && held < MS(900),
        "held {held:?}, max hold 500 ms"
    );
    // Validity ends a drift allowance before the key's expiry on the server.
    assert!(
        server.pttl(b"bounded") <= 20,
        "no extension past the max hold time"
    );
    wait_until_async(
        Duration::from_secs(2),
        "the key expired at the max hold time",
        || server.get(b"bounded").is_none(),
    )
    .await;
}

/// An extension that shortens the lock (a TTL below what is left) shortens its validity too:
/// the servers expire the key at the new TTL, so a validity kept at the longer one would let
/// the holder act on a lock another may hold by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_that_shortens_the_lock_shortens_its_validity() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("shortened", MS(30_000), None).await.unwrap();
    assert!(lock.validity() > MS(20_000));
    lock.extend(MS(1000)).await.unwrap();
    assert!(server.pttl(b"shortened") <= 1000);
    assert!(
        lock.validity() <= MS(1000),
        "validity {:?} after shortening to 1 s",
        lock.validity()
    );
    // And a later, longer extension lengthens it again.
    lock.extend(MS(20_000)).await.unwrap();
    assert!(lock.validity() > MS(10_000));
}

/// Issue 57: a max hold shorter than a third of the TTL (before the first regular extension)
/// ends the hold there too: the one extension, halfway, shortens the lock to what is left. It
/// used to keep the lock for its whole TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_max_hold_shorter_than_the_ttl_ends_the_hold_at_max_hold() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("short-hold", MS(30_000), None).await.unwrap();
    lock.auto_extend(Some(MS(500)));
    let started = Instant::now();
    assert_eq!(
        tokio::time::timeout(MS(5000), lock.lost()).await,
        Ok(Some(LostReason::Expired)),
        "still held 5 s after a max hold of 500 ms (TTL 30 s)"
    );
    let held = started.elapsed();
    assert!(held < MS(1500), "held {held:?}, max hold 500 ms");
    wait_until_async(
        Duration::from_secs(2),
        "the key expired at the max hold time",
        || server.get(b"short-hold").is_none(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_by_the_release_not_by_polling() {
    let server = RedisServer::start();
    // A retry delay of 20 s: only the release notification can explain a quick wake-up.
    let m = LockManager::builder([server.url()])
        .retry_delay(Duration::from_secs(20))
        .build()
        .unwrap();
    let holder = m
        .acquire("wake", Duration::from_secs(60), None)
        .await
        .unwrap();
    let waiter_m = m.clone();
    let waiter = tokio::spawn(async move {
        let lock = waiter_m
            .acquire("wake", Duration::from_secs(60), None)
            .await
            .unwrap();
        (Instant::now(), lock)
    });
    wait_until_async(
        Duration::from_secs(5),
        "the waiter queued and listening",
        || server.queued("", "wake") == 1 && server.listening("", "wake"),
    )
    .await;
    assert!(!waiter.is_finished());
    let released_at = Instant::now();
    holder.release().await.unwrap();
    let (acquired_at, lock) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("waiter woke up")
        .unwrap();
    let gap = acquired_at - released_at;
    println!("release-to-acquire gap: {gap:?}");
    assert!(
        gap < Duration::from_secs(2),
        "gap {gap:?}: woken by polling, not by the release"
    );
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_limit_is_kept() {
    let server = RedisServer::start();
    let m = manager(&server);
    let _holder = m.acquire("busy", MS(10_000), None).await.unwrap();
    let started = Instant::now();
    let e = m
        .acquire("busy", MS(1000), Some(MS(400)))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.kind(), ErrorKind::NotAcquired);
    assert!(e.message().contains("gave up after"), "{e}");
    assert!(took >= MS(400) && took < MS(1500), "took {took:?}");
    let started = Instant::now();
    assert!(m.try_acquire("busy", MS(1000)).await.unwrap().is_none());
    assert!(started.elapsed() < MS(500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_waiting_acquire_leaves_no_lock_behind() {
    let server = RedisServer::start();
    let m = manager(&server);
    let holder = m.acquire("cancel", MS(10_000), None).await.unwrap();
    let r = tokio::time::timeout(MS(300), m.acquire("cancel", MS(10_000), None)).await;
    assert!(r.is_err(), "still waiting when dropped");
    // The dropped waiter gives its place up in the background.
    until_queued(&server, "cancel", 0).await;
    holder.release().await.unwrap();
    assert_eq!(
        server.get(b"cancel"),
        None,
        "the cancelled waiter took nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_held_lock_releases_it_in_the_background() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("dropped", MS(30_000), None).await.unwrap();
    drop(lock);
    let again = m
        .acquire("dropped", MS(1000), Some(MS(2000)))
        .await
        .unwrap();
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_token_is_exclusive_unless_reentry_is_asked_for() {
    let server = RedisServer::start();
    let m = manager(&server);
    let once = |ttl: u64| {
        AcquireOptions::new(MS(ttl))
            .token("request-42")
            .wait(Some(Duration::ZERO))
    };
    let first = m.acquire_with("re", &once(1000)).await.unwrap();
    assert_eq!(first.token(), b"request-42");
    // The same token again, as a plain SET NX with a request id would: not acquired.
    let e = m.acquire_with("re", &once(8000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    assert!(e.message().contains("reentrant"), "{e}");
    assert!(
        server.pttl(b"re") <= 1000,
        "the refused acquire changed nothing"
    );
    // Asked for, re-entry resets the TTL and takes a new fencing token.
    let second = m
        .acquire_with("re", &once(8000).reentrant(true))
        .await
        .unwrap();
    assert!(server.pttl(b"re") > 7000, "ttl was reset");
    assert!(second.fencing_token() > first.fencing_token());
    let other = AcquireOptions::new(MS(1000))
        .token("request-43")
        .wait(Some(Duration::ZERO))
        .reentrant(true);
    assert_eq!(
        m.acquire_with("re", &other).await.unwrap_err().kind(),
        ErrorKind::NotAcquired,
        "re-entry is for the holder's token only"
    );
    std::mem::forget(first);
    second.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_returns_the_result_and_reports_a_loss() {
    let server = RedisServer::start();
    let m = manager(&server);
    let out = m
        .with_lock("scoped", MS(300), async |lock: &fencelock::Lock| {
            tokio::time::sleep(MS(700)).await; // longer than the ttl: auto-extension holds it
            assert!(!lock.is_lost());
            lock.fencing_token()
        })
        .await
        .unwrap();
    assert!(out >= 1);
    assert_eq!(server.get(b"scoped"), None, "released at the end");

    let e = m
        .with_lock("scoped", MS(300), async |lock: &fencelock::Lock| {
            server.del(b"scoped");
            lock.lost().await
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(e.message().contains("lost while its scope ran"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_rejected_before_any_network_call() {
    // Nothing listens on this port: a network call would fail with Unavailable instead.
    let m = LockManager::new([format!(
        "redis://127.0.0.1:{}",
        fencelock_testkit::free_port()
    )])
    .unwrap();
    let reserved = fencelock::ffi_support::keys::LockKeys::new(b"", b"x").fence;
    let cases: Vec<(&[u8], Duration)> = vec![
        (b"", MS(1000)),
        (&[b'n'; 1025], MS(1000)),
        (&reserved, MS(1000)),
        (b"ok", Duration::ZERO),
        (b"ok", Duration::from_secs(10_000_000_000_000)), // over 2^53 - 1 ms
    ];
    for (name, ttl) in cases {
        let e = m.acquire(name, ttl, None).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    let e = m
        .acquire_with("ok", &AcquireOptions::new(MS(10)).token(""))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // A TTL the validity rule can never grant (1-2 ms with the default drift factor): refused
    // up front, naming the minimum, instead of "held by another" or a wait without end.
    for ttl in [MS(1), MS(2)] {
        let e = m.acquire("ok", ttl, None).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains("at least 3 ms"), "{e}");
    }
    let slack = LockManager::builder([format!(
        "redis://127.0.0.1:{}",
        fencelock_testkit::free_port()
    )])
    .drift_factor(0.49)
    .build()
    .unwrap();
    let e = slack
        .acquire("ok", MS(4) - Duration::from_micros(1), None)
        .await
        .unwrap_err();
    assert!(e.message().contains("at least 4 ms"), "{e}");
    let e = m.release_by_token("ok", vec![b't'; 513]).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_unavailable_and_named() {
    let port = fencelock_testkit::free_port();
    let m = LockManager::new([format!("redis://:s3cret-pw@127.0.0.1:{port}")]).unwrap();
    let e = m.try_acquire("x", MS(1000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.message().contains(&format!("127.0.0.1:{port}")), "{e}");
    assert!(!e.to_string().contains("s3cret-pw"), "{e}");
    let e = m.acquire("x", MS(1000), Some(MS(300))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_password_is_not_shown() {
    let server = RedisServer::start();
    server.cmd(&[b"CONFIG", b"SET", b"requirepass", b"right-pw"]);
    let url = format!("redis://:wrong-pw@127.0.0.1:{}", server.port());
    let m = LockManager::new([url]).unwrap();
    let e = m.acquire("x", MS(1000), Some(MS(0))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("authentication failed"), "{e}");
    assert!(!format!("{e} {e:?} {m:?}").contains("wrong-pw"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_types_give_a_redis_error_and_corrupt_nothing() {
    let server = RedisServer::start();
    let m = manager(&server);
    server.cmd(&[b"RPUSH", b"a-list", b"x"]);
    let e = m.acquire("a-list", MS(1000), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Redis, "{e}");
    assert!(e.message().contains("WRONGTYPE"), "{e}");

    let fence = fencelock::ffi_support::keys::LockKeys::new(b"", b"fresh").fence;
    server.set(&fence, b"not-a-number");
    let e = m.acquire("fresh", MS(1000), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Redis, "{e}");
    assert_eq!(server.get(b"fresh"), None, "the lock key was not written");
    assert_eq!(server.get(&fence).as_deref(), Some(&b"not-a-number"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_prefix_applies_to_keys_and_the_counter() {
    let server = RedisServer::start();
    let m = LockManager::builder([server.url()])
        .key_prefix("app:")
        .build()
        .unwrap();
    let lock = m.acquire("jobs", MS(2000), None).await.unwrap();
    assert_eq!(server.get(b"app:jobs").as_deref(), Some(lock.token()));
    assert_eq!(server.get(b"jobs"), None);
    let keys = fencelock::ffi_support::keys::LockKeys::new(b"app:", b"jobs");
    assert!(keys.fence.starts_with(b"app:fencelock:{"));
    let counter = server.get(&keys.fence).unwrap();
    assert_eq!(counter, lock.fencing_token().to_string().into_bytes());
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_acquire_after_a_server_restart_succeeds() {
    let mut server = RedisServer::start();
    let m = manager(&server);
    m.acquire("r", MS(1000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    for _ in 0..3 {
        server.restart();
        // One try, no waiting: the broken connection is replaced within the call.
        let lock = m
            .try_acquire("r", MS(1000))
            .await
            .unwrap()
            .expect("free after restart");
        assert_eq!(server.get(b"r").as_deref(), Some(lock.token()));
        lock.release().await.unwrap();
        assert_eq!(server.get(b"r"), None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_flushed_from_a_live_server_are_loaded_again() {
    let server = RedisServer::start();
    let m = manager(&server);
    // Opens the connection and loads the scripts.
    let warm = m.acquire("r", MS(1000), None).await.unwrap();
    warm.release().await.unwrap();
    // The same connection, a server that forgot the scripts: EVALSHA is refused with
    // NOSCRIPT, the script is loaded and run within the call.
    server.cmd(&[b"SCRIPT", b"FLUSH"]);
    let lock = m.try_acquire("r", MS(1000)).await.unwrap().expect("free");
    assert_eq!(server.get(b"r").as_deref(), Some(lock.token()));
    server.cmd(&[b"SCRIPT", b"FLUSH"]);
    lock.release().await.unwrap();
    assert_eq!(server.get(b"r"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hung_at_connect_time_costs_one_server_timeout() {
    let mut server = RedisServer::start();
    let m = LockManager::builder([server.url()])
        .server_timeout(MS(100))
        .connect_timeout(MS(400))
        .build()
        .unwrap();
    server.stop(); // accepts TCP connections (kernel backlog) but never answers
    let started = Instant::now();
    let e = m.try_acquire("h", MS(5000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(started.elapsed() < MS(1000), "took {:?}", started.elapsed());
    server.cont();
    // The background connect either completes now or has timed out and is retried.
    let lock = m.acquire("h", MS(5000), Some(MS(3000))).await.unwrap();
    lock.release().await.unwrap();
}

#[test]
fn debug_output_never_shows_the_token() {
    let server = RedisServer::start();
    let m = fencelock::blocking::LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("secret", MS(2000), None).unwrap();
    let token = String::from_utf8(lock.token().to_vec()).unwrap();
    let shown = format!("{lock:?} {:?}", lock.as_async());
    assert!(
        shown.contains("secret") && !shown.contains(&token),
        "{shown}"
    );
    lock.release().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_the_order_they_came() {
    // Each waiter its own manager (as separate processes would be); the holder's release
    // hands the lock to the first in line only, which hands it to the next on its own release.
    let server = RedisServer::start();
    let holder = manager(&server)
        .acquire("fifo", MS(10_000), None)
        .await
        .unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..6usize {
        // Timed retries once a minute: every handoff within the wait limit below is a wake-up
        // on the first waiter's own channel.
        let m = LockManager::builder([server.url()])
            .retry_delay(Duration::from_secs(60))
            .build()
            .unwrap();
        let order = Arc::clone(&order);
        tasks.push(tokio::spawn(async move {
            let lock = m
                .acquire("fifo", MS(10_000), Some(Duration::from_secs(20)))
                .await
                .unwrap();
            order.lock().unwrap().push(i);
            tokio::time::sleep(MS(2)).await;
            lock.release().await.unwrap();
        }));
        // The next one arrives only once this one has its place.
        until_queued(&server, "fifo", i as i64 + 1).await;
    }
    holder.release().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    until_queued(&server, "fifo", 0).await;
}

/// Scripts run by the server so far (`EVALSHA` calls).
fn scripts_run(server: &RedisServer) -> u64 {
    let stats = server.info_commandstats();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_already_listening_sends_no_extra_attempt() {
    // A handoff costs the waiter's refused attempt and the holder's release, which hands the
    // lock over: the waiter needs no second attempt. A first wait adds one attempt right after
    // subscribing (a release between the refusal and the subscription would be missed
    // otherwise); while the subscription lingers, later waits on the lock listen before their
    // first attempt and need none.
    let server = RedisServer::start();
    let holders = manager(&server);
    // Timed retries once a minute: no attempt but the ones counted.
    let waiter = Arc::new(
        LockManager::builder([server.url()])
            .retry_delay(Duration::from_secs(60))
            .build()
            .unwrap(),
    );
    // Loads the scripts (a first EVALSHA of each is refused with NOSCRIPT), and opens the
    // waiter's connection (whose preflight script is not an attempt).
    let lock = holders.acquire("listen", MS(10_000), None).await.unwrap();
    lock.release().await.unwrap();
    let warm = waiter.acquire("warm-up", MS(10_000), None).await.unwrap();
    warm.release().await.unwrap();
    let mut costs = Vec::new();
    for _ in 0..3 {
        let holder = holders.acquire("listen", MS(10_000), None).await.unwrap();
        let before = scripts_run(&server);
        let w = Arc::clone(&waiter);
        let task = tokio::spawn(async move {
            w.acquire("listen", MS(10_000), Some(Duration::from_secs(20)))
                .await
                .unwrap()
        });
        until_queued(&server, "listen", 1).await;
        holder.release().await.unwrap();
        let lock = task.await.unwrap();
        costs.push(scripts_run(&server) - before);
        lock.release().await.unwrap();
    }
    // The first wait's extra attempt comes before the release (refused, then handed over) or
    // after it (granted: the key holds its token): 3 either way.
    assert_eq!(costs, [3, 2, 2]);
    // Idle, the subscription goes (after a linger of 2 s).
    wait_until_async(
        Duration::from_secs(10),
        "the idle subscription went",
        || !server.listening("", "listen"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_the_lock_to_the_first_waiter_whose_validity_counts_from_its_call() {
    let server = RedisServer::start();
    let m = manager(&server);
    let holder = m.acquire("handed", MS(10_000), None).await.unwrap();
    let w = manager(&server);
    let started = Instant::now();
    let task = tokio::spawn(async move {
        w.acquire("handed", MS(4_000), Some(Duration::from_secs(20)))
            .await
            .unwrap()
    });
    until_queued(&server, "handed", 1).await;
    tokio::time::sleep(MS(500)).await;
    let holder_fence = holder.fencing_token();
    holder.release().await.unwrap();
    let lock = task.await.unwrap();
    let waited = started.elapsed();
    // The release wrote the waiter's token with the waiter's TTL and a new fencing token.
    assert_eq!(server.get(b"handed").as_deref(), Some(lock.token()));
    assert!(lock.fencing_token() > holder_fence);
    let server_ttl = MS(server.pttl(b"handed").max(0) as u64);
    assert!(
        server_ttl > MS(3_000) && server_ttl <= MS(4_000),
        "{server_ttl:?}"
    );
    // Its validity counts from before its first attempt, not from the release: at most the
    // TTL less the wait, and never more than the server keeps the key.
    let validity = lock.validity();
    assert!(
        validity <= MS(4_000) - waited + MS(1) && validity > MS(2_500),
        "validity {validity:?} after waiting {waited:?}"
    );
    assert!(
        validity <= server_ttl,
        "{validity:?} > server {server_ttl:?}"
    );
    lock.release().await.unwrap();
    until_queued(&server, "handed", 0).await;
    assert_eq!(server.get(b"handed"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_after_a_wait_longer_than_half_the_ttl_is_confirmed_by_an_attempt() {
    let server = RedisServer::start();
    let m = manager(&server);
    let holder = m.acquire("late", MS(10_000), None).await.unwrap();
    // No timed retries during the wait: the only attempts are the first and the one after
    // the handoff.
    let w = LockManager::builder([server.url()])
        .retry_delay(Duration::from_secs(60))
        .build()
        .unwrap();
    let task = tokio::spawn(async move {
        w.acquire("late", MS(1_000), Some(Duration::from_secs(20)))
            .await
            .unwrap()
    });
    until_queued(&server, "late", 1).await;
    tokio::time::sleep(MS(700)).await;
    holder.release().await.unwrap();
    let lock = task.await.unwrap();
    // Counted from the call, 300 ms at most would be left; the attempt reset the TTL.
    assert!(lock.validity() > MS(700), "{:?}", lock.validity());
    assert!(lock.validity() <= MS(server.pttl(b"late").max(0) as u64));
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_or_vanishes_does_not_block_the_line() {
    let server = RedisServer::start();
    let m = manager(&server);
    let holder = m.acquire("line", MS(10_000), None).await.unwrap();
    // Gives up: its place goes with it, before acquire returns.
    let e = manager(&server)
        .acquire("line", MS(1000), Some(MS(100)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    until_queued(&server, "line", 0).await;
    // Vanishes (a crashed process): a place nobody renews and nobody listens for, first in
    // line for 10 s.
    let keys = fencelock::ffi_support::keys::LockKeys::new(b"", b"line");
    let (queue, deadlines, ttls) = (&keys.queue, &keys.deadlines, &keys.ttls);
    let seconds: u64 = match server.cmd(&[b"TIME"]) {
        fencelock_testkit::Reply::Array(Some(t)) => match &t[0] {
            fencelock_testkit::Reply::Bulk(Some(b)) => {
                std::str::from_utf8(b).unwrap().parse().unwrap()
            }
            r => panic!("TIME: {r:?}"),
        },
        r => panic!("TIME: {r:?}"),
    };
    let until = (seconds * 1000 + 10_000).to_string();
    server.cmd(&[b"ZADD", queue, b"1", b"ghost"]);
    server.cmd(&[b"ZADD", deadlines, until.as_bytes(), b"ghost"]);
    server.cmd(&[b"HSET", ttls, b"ghost", b"300"]);
    holder.release().await.unwrap();
    // Nobody listens for the ghost (its process is gone): the release passes it over instead
    // of handing it the lock for its TTL, and a live caller gets the lock at once, long before
    // the ghost's place runs out.
    assert_eq!(server.get(b"line"), None);
    let started = Instant::now();
    let lock = m
        .acquire("line", MS(1000), Some(Duration::from_secs(5)))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the live waiter got the lock after {:?}",
        started.elapsed()
    );
    assert_eq!(
        server.cmd(&[b"ZSCORE", queue, b"ghost"]),
        fencelock_testkit::Reply::Bulk(Some(b"1".to_vec())),
        "the ghost's place is still there: being passed over, not its place's expiry, let the waiter in"
    );
    lock.release().await.unwrap();
}
