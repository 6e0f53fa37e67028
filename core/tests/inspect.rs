//! Inspection without acquiring (issue 22): `is_locked` and `remaining`, the quorum's view,
//! against real redis-server processes; a classic `SET NX PX` lock counts as held.

use std::time::Duration;

use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::{servers, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_server_says_whether_and_how_long_a_lock_is_held() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    assert!(!m.is_locked("jobs").await.unwrap());
    assert_eq!(m.remaining("jobs").await.unwrap(), None);
    let lock = m.acquire("jobs", MS(5000), None).await.unwrap();
    assert!(m.is_locked("jobs").await.unwrap());
    let left = m.remaining("jobs").await.unwrap().unwrap();
    assert!(left > MS(3000) && left <= MS(5000), "{left:?}");
    // Nothing changed: the holder's TTL runs on, its token still there.
    assert_eq!(server.get(b"jobs").as_deref(), Some(lock.token()));
    lock.release().await.unwrap();
    assert!(!m.is_locked("jobs").await.unwrap());
    // A classic SET NX PX of another client counts as held; one without expiry lasts for ever.
    assert!(server.set_nx_px(b"classic", b"someone-else", 2000));
    let left = m.remaining("classic").await.unwrap().unwrap();
    assert!(left > MS(500) && left <= MS(2000), "{left:?}");
    server.set(b"forever", b"someone-else");
    assert_eq!(m.remaining("forever").await.unwrap(), Some(Duration::MAX));
    // A key of another type is a Redis error, not "free".
    server.cmd(&[b"RPUSH", b"a-list", b"x"]);
    let e = m.is_locked("a-list").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Redis, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_counts_a_quorum_under_one_token_and_its_shortest_guaranteed_time() {
    let srv = servers(3);
    let m = LockManager::new(srv.iter().map(RedisServer::url)).unwrap();
    // One server of three: no quorum, not held.
    assert!(srv[0].set_nx_px(b"r", b"tok-a", 10_000));
    assert!(!m.is_locked("r").await.unwrap());
    // Two servers, two different tokens: still no quorum under one token.
    assert!(srv[1].set_nx_px(b"r", b"tok-b", 10_000));
    assert!(!m.is_locked("r").await.unwrap());
    // Two under one token: held for as long as the shorter of the two keeps it (the quorum's
    // guarantee), never the longer.
    srv[1].del(b"r");
    assert!(srv[1].set_nx_px(b"r", b"tok-a", 3000));
    let left = m.remaining("r").await.unwrap().unwrap();
    assert!(left > MS(1500) && left <= MS(3000), "{left:?}");
    // One server down still leaves a quorum of answers; two down do not.
    let mut srv = srv;
    srv[2].kill();
    assert!(m.is_locked("r").await.unwrap());
    srv[1].kill();
    let e = m.is_locked("r").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("only 1 of 3 servers answered"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_name_is_refused_before_any_network_call() {
    let m = LockManager::new([format!(
        "redis://127.0.0.1:{}",
        fencelock_testkit::free_port()
    )])
    .unwrap();
    for name in [&b""[..], b"fencelock:{1}:fence"] {
        let e = m.is_locked(name).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let e = m.remaining(name).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    let e = m.is_locked("x").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

#[test]
fn the_blocking_facade_inspects_too() {
    let server = RedisServer::start();
    let m = fencelock::blocking::LockManager::new([server.url()]).unwrap();
    assert!(!m.is_locked("b").unwrap());
    let lock = m.acquire("b", MS(5000), None).unwrap();
    assert!(m.is_locked("b").unwrap());
    assert!(m.remaining("b").unwrap().unwrap() <= MS(5000));
    lock.release().unwrap();
    assert_eq!(m.remaining("b").unwrap(), None);
}

/// `state`: the remaining time and how many wait in line (for the `fencelock status`
/// command), changing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_counts_the_waiters_in_line() {
    let server = RedisServer::start();
    let m = LockManager::builder([server.url()])
        .retry_delay(MS(100))
        .build()
        .unwrap();
    let free = m.state("line").await.unwrap();
    assert_eq!((free.remaining, free.waiters), (None, Some(0)));
    let lock = m.acquire("line", MS(10_000), None).await.unwrap();
    // Each waiter releases as soon as it holds: the line orders them by arrival, which
    // need not be the order they were spawned in.
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move {
                let lock = m.acquire("line", MS(10_000), Some(MS(20_000))).await?;
                lock.release().await
            })
        })
        .collect();
    let two_in_line = || async { m.state("line").await.unwrap().waiters == Some(2) };
    fencelock_testkit::wait_for(MS(10_000), "two waiters in line", two_in_line).await;
    let st = m.state("line").await.unwrap();
    assert!(st.remaining.unwrap() > MS(5000), "{st:?}");
    lock.release().await.unwrap();
    for w in waiters {
        w.await.unwrap().unwrap();
    }
    assert_eq!(m.state("line").await.unwrap().waiters, Some(0));
}
