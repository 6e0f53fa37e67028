//! Issue 57 item 3: a wait whose every server refuses the connection (nothing listens: a
//! server not started, a wrong port) gives up with `Unavailable` after
//! `refused_attempts` attempts in a row, instead of waiting silently until its limit or for
//! ever. Only refusals by every server count: a minority refusing, a server back within
//! the attempts and a Sentinel's master down while it fails over are waited through.
//! (A cluster's: cluster_refused.rs.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fencelock::ffi_support::observe::{add_listener, EventLevel};
use fencelock::{Error, ErrorKind, LockManager};
use fencelock_testkit::sentinel::SentinelSetup;
use fencelock_testkit::{free_port, RedisServer};

/// Far above the few seconds any of these waits takes: a hang, not a speed check.
const HANG: Duration = Duration::from_secs(60);

fn refused_url() -> String {
    format!("redis://127.0.0.1:{}", free_port())
}

async fn acquire_within_hang(
    m: &LockManager,
    name: &str,
    wait: Option<Duration>,
) -> Result<fencelock::Lock, Error> {
    tokio::time::timeout(HANG, m.acquire(name, Duration::from_secs(10), wait))
        .await
        .unwrap_or_else(|_| panic!("acquire {name:?} still waiting after {HANG:?}"))
}

/// The `attempts` field of the core's "acquire failed" event for `name`.
fn attempts_of(events: &Mutex<Vec<String>>, name: &str) -> Option<u32> {
    let events = events.lock().unwrap();
    let line = events
        .iter()
        .find(|l| l.starts_with("acquire failed") && l.contains(&format!("lock=\"{name}\"")))?;
    let value = line.split("attempts=").nth(1)?.split(' ').next()?;
    value.parse().ok()
}

fn listen() -> Arc<Mutex<Vec<String>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    add_listener(EventLevel::Debug, move |e| {
        seen.lock().unwrap().push(e.to_line());
    })
    .unwrap();
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_without_limit_on_an_address_nobody_listens_at_gives_up_after_ten_attempts() {
    let events = listen();
    let m = LockManager::new([refused_url()]).unwrap();
    assert_eq!(m.config().refused_attempts(), 10);
    let e = acquire_within_hang(&m, "nobody-listens", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(
        e.message()
            .contains("every server refused the connection on 10 attempts in a row"),
        "{e}"
    );
    assert!(e.message().contains("refused_attempts"), "{e}");
    assert_eq!(attempts_of(&events, "nobody-listens"), Some(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_attempts_sets_the_bound_and_zero_waits_until_the_limit() {
    let events = listen();
    let urls = [refused_url(), refused_url(), refused_url()];
    let three = LockManager::builder(urls.clone())
        .refused_attempts(3)
        .build()
        .unwrap();
    let e = acquire_within_hang(&three, "three-refusals", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("on 3 attempts in a row"), "{e}");
    assert_eq!(attempts_of(&events, "three-refusals"), Some(3));

    let never = LockManager::builder(urls)
        .refused_attempts(0)
        .build()
        .unwrap();
    let e = acquire_within_hang(&never, "no-bound", Some(Duration::from_millis(3000)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(!e.message().contains("in a row"), "{e}");
    assert!(e.message().contains("gave up after"), "{e}");
    // Paced by the retry delay (200 ms, jitter 100 ms) for 3 s: far more than 10.
    assert!(attempts_of(&events, "no-bound").unwrap() > 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_refusing_is_waited_through_until_the_limit() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    let urls = [a.url(), b.url(), refused_url()];
    let m = LockManager::builder(urls)
        .refused_attempts(2)
        .build()
        .unwrap();
    let held = m
        .acquire("busy", Duration::from_secs(30), None)
        .await
        .unwrap();
    let e = acquire_within_hang(&m, "busy", Some(Duration::from_millis(2000)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_back_within_the_attempts_is_waited_for() {
    let mut srv = RedisServer::start();
    let m = LockManager::builder([srv.url()])
        .refused_attempts(50)
        .build()
        .unwrap();
    srv.kill();
    let waiter = {
        let m = m.clone();
        tokio::spawn(async move { acquire_within_hang(&m, "back-soon", None).await })
    };
    // The waiter meets refusals until the server is back.
    tokio::time::sleep(Duration::from_millis(600)).await;
    srv.restart();
    let lock = waiter
        .await
        .unwrap()
        .expect("acquired once the server is back");
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinels_master_refusing_during_its_failover_is_waited_through() {
    let mut setup = SentinelSetup::start();
    let m = LockManager::builder([setup.url()])
        .refused_attempts(2)
        .build()
        .unwrap();
    m.acquire("failing-over", Duration::from_secs(10), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    // The sentinels name the dead master until they agree it is down (1 s) and promote the
    // replica: every attempt until then is refused, far more than 2.
    setup.master.kill();
    let lock = acquire_within_hang(&m, "failing-over", None)
        .await
        .expect("acquired on the promoted replica");
    assert!(lock.fencing_token() > 0);
    lock.release().await.unwrap();
}
