//! A lock's slot being migrated between two masters of a real Redis Cluster (3 masters, no
//! replicas). A node runs a script of a migrating slot only when it has every key the script
//! declares, and a script that then emptied a key and touched it again stopped half done,
//! its writes so far kept (`Script attempted to access a non local key`: a release lost in a
//! resharding run of the chaos suite). The scripts that can delete a key declare the slot
//! guard (a key that never exists, `keys.rs`) on a cluster, so they run only on a settled
//! slot.

use std::time::Duration;

use fencelock::ffi_support::keys::LockKeys;
use fencelock::LockManager;
use fencelock_testkit::cluster::RedisCluster;
use fencelock_testkit::{wait_until_async, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// How long the test watches a call that must not run while the slot is migrating. A call
/// that ran would be done within milliseconds; this is not a speed check.
const WATCH: Duration = Duration::from_millis(1500);

/// A manager that sends a refused call again for up to 10 s.
fn manager(c: &RedisCluster) -> LockManager {
    LockManager::builder([c.url()])
        .server_timeout(MS(10_000))
        .build()
        .unwrap()
}

/// How many waiters hold a place in the queue of `keys`, on the node on `port`.
fn queued(c: &RedisCluster, port: u16, keys: &LockKeys) -> i64 {
    match c.node(port).cmd(&[b"ZCARD", &keys.queue]) {
        Reply::Int(n) => n,
        other => panic!("ZCARD: {other:?}"),
    }
}

/// With every key of a release there (the holder's, and a waiter in line), the release is
/// not run on the migrating node, where it used to run and could stop half done: it is sent
/// again until the move is called off, and then it hands the lock to the waiter in one piece.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_waits_for_its_slot_to_settle_and_then_hands_over_whole() {
    let c = RedisCluster::start_with_args(3, 0, &["--cluster-node-timeout".into(), "5000".into()]);
    let (holder, waiter) = (manager(&c), manager(&c));
    let keys = LockKeys::new(b"", b"guarded");
    let lock = holder.acquire("guarded", MS(30_000), None).await.unwrap();
    let first = lock.fencing_token();
    let token = lock.token().to_vec();
    let from = c.master_of_slot(keys.slot).port();
    let waiting = tokio::spawn(async move {
        waiter
            .acquire("guarded", MS(30_000), Some(MS(30_000)))
            .await
    });
    wait_until_async(MS(5000), "the waiter in line", || {
        queued(&c, from, &keys) == 1
    })
    .await;
    let to = c.another_master(from);
    c.open_migration(keys.slot, to);
    let mut release = tokio::spawn(lock.release());
    assert!(
        tokio::time::timeout(WATCH, &mut release).await.is_err(),
        "the release ran while its slot was migrating"
    );
    assert_eq!(c.node(from).get(b"guarded"), Some(token), "the key changed");
    assert_eq!(queued(&c, from, &keys), 1, "the queue changed");
    c.cancel_migration(keys.slot, from, to);
    release.await.unwrap().unwrap();
    let next = waiting.await.unwrap().unwrap();
    assert!(next.fencing_token() > first);
    assert_eq!(c.node(from).get(b"guarded").as_deref(), Some(next.token()));
    next.release().await.unwrap();
    assert_eq!(c.node(from).get(b"guarded"), None);
}

/// An acquire of a free name during the move is not granted on either node until the slot
/// settles (its keys are absent, so Redis itself redirects it); an extend, which deletes no
/// key and declares no guard, is served where its one key is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_waits_for_the_slot_and_an_extend_does_not() {
    let c = RedisCluster::start_with_args(3, 0, &["--cluster-node-timeout".into(), "5000".into()]);
    let m = manager(&c);
    let held = m.acquire("held", MS(30_000), None).await.unwrap();
    let keys = LockKeys::new(b"", b"held");
    let free = LockKeys::new(b"", b"free");
    let from = c.master_of_slot(keys.slot).port();
    let to = c.another_master(from);
    c.open_migration(keys.slot, to);
    held.extend(MS(60_000)).await.unwrap();
    let ttl = match c.node(from).cmd(&[b"PTTL", b"held"]) {
        Reply::Int(n) => n,
        other => panic!("PTTL: {other:?}"),
    };
    assert!(
        ttl > 30_000,
        "extended to 60 s on the source: {ttl} ms left"
    );
    c.cancel_migration(keys.slot, from, to);
    // "free" lives in another slot: opening its move stops its acquire until it is called off.
    let free_from = c.master_of_slot(free.slot).port();
    let free_to = c.another_master(free_from);
    c.open_migration(free.slot, free_to);
    let mut acquire = {
        let m = m.clone();
        tokio::spawn(async move { m.try_acquire("free", MS(30_000)).await })
    };
    assert!(
        tokio::time::timeout(WATCH, &mut acquire).await.is_err(),
        "the acquire was answered while its slot was migrating"
    );
    c.cancel_migration(free.slot, free_from, free_to);
    let lock = acquire.await.unwrap().unwrap().expect("free");
    lock.release().await.unwrap();
    held.release().await.unwrap();
}
