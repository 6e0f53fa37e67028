//! A lock's server-checked ownership (`is_held`) and extension by name and token (issue 25
//! items 4 and 7), on one server and on Redlock with a down minority.

use std::time::Duration;

use fencelock::{ErrorKind, LockManager, LostReason};
use fencelock_testkit::{servers, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_held_asks_the_servers_and_sees_what_the_local_view_cannot() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("owned", MS(10_000), None).await.unwrap();
    assert!(lock.is_held().await.unwrap());
    // Another client overwrites the key: the local view still says held, the servers do not.
    server.set(b"owned", b"someone-else");
    assert!(!lock.is_lost(), "the local view cannot know");
    assert!(!lock.is_held().await.unwrap());
    assert_eq!(
        lock.lost_reason(),
        Some(LostReason::Taken),
        "and now it knows"
    );
    assert_eq!(
        server.get(b"owned").as_deref(),
        Some(&b"someone-else"[..]),
        "read-only"
    );

    let gone = m.acquire("deleted", MS(10_000), None).await.unwrap();
    server.del(b"deleted");
    assert!(!gone.is_held().await.unwrap());
    assert_eq!(gone.lost_reason(), Some(LostReason::Expired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_held_is_the_quorums_view_on_redlock() {
    let mut s = servers(3);
    let urls: Vec<String> = s.iter().map(|x| x.url()).collect();
    let m = LockManager::builder(&urls)
        .server_timeout(MS(200))
        .build()
        .unwrap();
    let lock = m.acquire("quorum", MS(10_000), None).await.unwrap();
    s[0].del(b"quorum");
    assert!(lock.is_held().await.unwrap(), "two of three still hold it");
    s[2].kill();
    assert!(
        !lock.is_held().await.unwrap(),
        "one of the two answering holds it"
    );
    s[1].kill();
    let e = lock.is_held().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_by_token_extends_a_lock_held_elsewhere() {
    let server = RedisServer::start();
    let holder = LockManager::new([server.url()]).unwrap();
    let other = LockManager::new([server.url()]).unwrap();
    let lock = holder.acquire("handed", MS(2_000), None).await.unwrap();
    let token = lock.token().to_vec();
    lock.detach();
    let validity = other
        .extend_by_token("handed", &token, MS(30_000))
        .await
        .unwrap();
    assert!(
        validity > MS(29_000) && validity <= MS(30_000),
        "{validity:?}"
    );
    assert!(server.pttl(b"handed") > 29_000);
    let e = other
        .extend_by_token("handed", b"not-the-token", MS(30_000))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert_eq!(
        server.get(b"handed").as_deref(),
        Some(token.as_slice()),
        "left alone"
    );
    let e = other
        .extend_by_token("handed", &token, MS(2))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    other.release_by_token("handed", &token).await.unwrap();
    let e = other
        .extend_by_token("handed", &token, MS(30_000))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert!(e.message().contains("gone"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_by_adds_to_the_remaining_time_on_each_server() {
    let s = servers(3);
    let urls: Vec<String> = s.iter().map(|x| x.url()).collect();
    let m = LockManager::new(&urls).unwrap();
    let lock = m.acquire("added", MS(10_000), None).await.unwrap();
    // Servers left with different remaining times (as after partial extensions).
    s[0].cmd(&[b"PEXPIRE", b"added", b"4000"]);
    s[1].cmd(&[b"PEXPIRE", b"added", b"6000"]);
    lock.extend_by(MS(20_000)).await.unwrap();
    let pttls: Vec<i64> = s.iter().map(|x| x.pttl(b"added")).collect();
    assert!(pttls[0] > 23_000 && pttls[0] <= 24_000, "{pttls:?}");
    assert!(pttls[1] > 25_000 && pttls[1] <= 26_000, "{pttls:?}");
    assert!(pttls[2] > 29_000 && pttls[2] <= 30_000, "{pttls:?}");
    // The quorum (2 of 3) guarantees the second longest, ~26 s, less drift: never more.
    let v = lock.validity();
    assert!(v > MS(25_000) && v <= MS(26_000), "{v:?}");
    assert_eq!(
        lock.ttl(),
        MS(10_000),
        "the TTL (auto-extension's pace) stays"
    );

    s[0].set(b"added", b"someone-else");
    s[1].set(b"added", b"someone-else");
    let e = lock.extend_by(MS(1000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert_eq!(lock.lost_reason(), Some(LostReason::Taken));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttls_as_long_as_node_redlocks_own_tests_use_are_accepted() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    // node-redlock's tests lock for about 28,500 years.
    let years = Duration::from_secs(28_500 * 365 * 24 * 3600);
    let lock = m.acquire("long", years, None).await.unwrap();
    assert!(
        lock.validity() > years.mul_f64(0.98),
        "less the 1 % drift allowance"
    );
    assert!(server.pttl(b"long") > 800_000_000_000_000);
    lock.extend(years).await.unwrap();
    lock.release().await.unwrap();
    let too_long = fencelock::ffi_support::timing::MAX_TTL + MS(1);
    let e = m.acquire("long", too_long, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.message().contains("got 9007199254740992 ms"),
        "the caller's unit: {e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_held_by_token_reads_without_changing_anything() {
    let srv = fencelock_testkit::RedisServer::start();
    let m = fencelock::LockManager::new([srv.url()]).unwrap();
    let opts = fencelock::AcquireOptions::new(std::time::Duration::from_secs(30)).token("req-7");
    let lock = m.acquire_with("by-token-read", &opts).await.unwrap();
    let before = srv.cmd(&[b"PTTL", b"by-token-read"]);
    assert!(m.is_held_by_token("by-token-read", "req-7").await.unwrap());
    assert!(!m.is_held_by_token("by-token-read", "req-8").await.unwrap());
    assert!(!m.is_held_by_token("free-name", "req-7").await.unwrap());
    let e = m.is_held_by_token("", "req-7").await.unwrap_err();
    assert_eq!(e.kind(), fencelock::ErrorKind::InvalidArgument, "{e}");
    // Read-only: the key's expiry was not reset.
    let after = srv.cmd(&[b"PTTL", b"by-token-read"]);
    match (before, after) {
        (fencelock_testkit::Reply::Int(b), fencelock_testkit::Reply::Int(a)) => assert!(a <= b),
        other => panic!("PTTL replied {other:?}"),
    }
    lock.release().await.unwrap();
    assert!(!m.is_held_by_token("by-token-read", "req-7").await.unwrap());
}
