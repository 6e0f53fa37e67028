//! The lean uncontended path (issue 21): with nobody in line, an acquire is the classic
//! `SET NX PX` and the counter's `INCR`, and a release the classic compare-and-delete, each
//! behind one check that the wait queue is empty; anything else falls back to the queue's
//! code. These tests read what the server ran (`INFO commandstats`, script internals included)
//! to see which path each step took, and check that every guarantee holds on both.

use std::collections::HashMap;
use std::time::Duration;

use fencelock::{AcquireOptions, LockManager};
use fencelock_testkit::{servers, wait_until_async, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Calls per command since the last `CONFIG RESETSTAT`.
fn calls(server: &RedisServer) -> HashMap<String, u64> {
    server
        .info_commandstats()
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(":calls=")?;
            Some((name.to_owned(), rest.split(',').next()?.parse().ok()?))
        })
        // The test's own probes (INFO and CONFIG here, `queued` and `listening` of the
        // testkit), and a new connection's greeting (`CLIENT SETINFO`: Redis 7.2 and Valkey
        // count it). Redis 6.2 names commands without their subcommand (`config`, `client`,
        // `pubsub`).
        .filter(|(name, _)| {
            let base = name.split('|').next().unwrap_or(name);
            !["info", "config", "keys", "zcard", "client"].contains(&base)
                && !["pubsub|channels", "pubsub"].contains(&name.as_str())
        })
        .collect()
}

/// The calls each command made, as `calls` gives them.
fn ran(commands: &[(&str, u64)]) -> HashMap<String, u64> {
    commands.iter().map(|&(c, n)| (c.to_owned(), n)).collect()
}

fn reset(server: &RedisServer) {
    server.cmd(&[b"CONFIG", b"RESETSTAT"]);
}

/// A manager whose connection is open, its preflight run and its scripts loaded: what it
/// sends from now on is the lock's own traffic.
async fn warm(server: &RedisServer) -> LockManager {
    let m = LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("warm-up", MS(10_000), None).await.unwrap();
    lock.release().await.unwrap();
    m
}

/// The commands of the queue's code: none of them runs on the lean path.
const QUEUE_COMMANDS: [&str; 7] = [
    "zrange",
    "zadd",
    "zrem",
    "time",
    "hset",
    "hget",
    "zrangebyscore",
];

fn ran_queue_code(c: &HashMap<String, u64>) -> bool {
    QUEUE_COMMANDS.iter().any(|q| c.contains_key(*q))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_acquire_and_release_take_the_lean_path() {
    let server = RedisServer::start();
    let m = warm(&server).await;
    reset(&server);
    let lock = m.acquire("lean", MS(10_000), None).await.unwrap();
    let c = calls(&server);
    let lean_acquire = ran(&[("evalsha", 1), ("pttl", 1), ("set", 1), ("incr", 1)]);
    assert_eq!(c, lean_acquire, "the uncontended acquire");
    assert_eq!(server.get(b"lean").as_deref(), Some(lock.token()));
    let ttl = server.pttl(b"lean");
    assert!(ttl > 9_000 && ttl <= 10_000, "{ttl}");
    let first = lock.fencing_token();
    reset(&server);
    lock.release().await.unwrap();
    let c = calls(&server);
    let lean_release = ran(&[("evalsha", 1), ("pttl", 1), ("get", 1), ("del", 1)]);
    assert_eq!(c, lean_release, "the uncontended release");
    assert_eq!(server.get(b"lean"), None);
    // The counter still grows by one per grant.
    let again = m.acquire("lean", MS(10_000), None).await.unwrap();
    assert_eq!(again.fencing_token(), first + 1);
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_acquire_falls_back_to_the_queue_and_is_handed_the_lock() {
    let server = RedisServer::start();
    let holder = warm(&server).await;
    let waiter = warm(&server).await;
    let held = holder.acquire("busy", MS(10_000), None).await.unwrap();
    reset(&server);
    let task = tokio::spawn(async move {
        let lock = waiter.acquire("busy", MS(10_000), Some(MS(8000))).await;
        (lock, waiter)
    });
    // Queued and subscribed: a release between the two publishes to nobody and the waiter
    // finds the lock handed to it on its next try, with no message to count.
    wait_until_async(MS(5000), "the waiter queued and listens", || {
        server.queued("", "busy") == 1 && server.listening("", "busy")
    })
    .await;
    let c = calls(&server);
    assert!(
        c.get("zadd").copied().unwrap_or(0) >= 2,
        "took a place: {c:?}"
    );
    assert!(!task.is_finished(), "acquired while held");
    // With someone in line, the release takes the queue's code and hands the lock over.
    let held_fence = held.fencing_token();
    reset(&server);
    held.release().await.unwrap();
    let (lock, waiter) = task.await.unwrap();
    let lock = lock.unwrap();
    let c = calls(&server);
    assert!(
        c.contains_key("publish") && c.contains_key("zrange"),
        "handed over: {c:?}"
    );
    assert!(lock.fencing_token() > held_fence);
    assert_eq!(server.get(b"busy").as_deref(), Some(lock.token()));
    // The new holder's release leaves the queue (its place was kept while it held): the next
    // acquire is uncontended again.
    let lock_fence = lock.fencing_token();
    lock.release().await.unwrap();
    assert_eq!(server.queued("", "busy"), 0);
    reset(&server);
    let next = waiter.acquire("busy", MS(10_000), None).await.unwrap();
    assert!(!ran_queue_code(&calls(&server)), "{:?}", calls(&server));
    assert!(next.fencing_token() > lock_fence);
    next.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_free_key_with_someone_in_line_goes_to_the_first_in_line_not_a_newcomer() {
    // The holder's key expires while a waiter is in line: the lean path must not let a
    // newcomer's SET NX take it.
    let server = RedisServer::start();
    let crashed = warm(&server).await;
    // Timed retries once a minute: the waiter makes no attempt of its own once in line, so
    // the newcomer's attempt is the one that finds the key free with someone in line.
    let waiter = LockManager::builder([server.url()])
        .retry_delay(Duration::from_secs(60))
        .build()
        .unwrap();
    let newcomer = warm(&server).await;
    // A long TTL, so that the waiter's timer (just after the holder's TTL) stays far off;
    // the key is then expired by hand, as a paused holder's would.
    let held = crashed.acquire("expiring", MS(10_000), None).await.unwrap();
    held.detach();
    let task = tokio::spawn(async move {
        let lock = waiter.acquire("expiring", MS(10_000), Some(MS(8000))).await;
        (lock, waiter)
    });
    wait_until_async(MS(5000), "the waiter queued", || {
        server.queued("", "expiring") == 1 && server.listening("", "expiring")
    })
    .await;
    server.cmd(&[b"PEXPIRE", b"expiring", b"1"]);
    wait_until_async(MS(5000), "the holder's key expired", || {
        server.get(b"expiring").is_none()
    })
    .await;
    reset(&server);
    let stolen = newcomer.try_acquire("expiring", MS(10_000)).await.unwrap();
    assert!(stolen.is_none(), "a newcomer passed the waiter in line");
    // The newcomer's attempt handed the free key to the first in line.
    let c = calls(&server);
    assert_eq!(c.get("publish"), Some(&1), "{c:?}");
    let (lock, _waiter) = task.await.unwrap();
    let lock = lock.expect("the waiter got the lock");
    assert_eq!(server.get(b"expiring").as_deref(), Some(lock.token()));
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentrant_acquire_by_token_falls_back_and_resets_the_ttl() {
    let server = RedisServer::start();
    let m = warm(&server).await;
    let opts = AcquireOptions::new(MS(3000)).token("job-9").reentrant(true);
    let first = m.acquire_with("job", &opts).await.unwrap();
    assert!(server.pttl(b"job") <= 3000);
    reset(&server);
    let again = m
        .acquire_with(
            "job",
            &AcquireOptions::new(MS(20_000))
                .token("job-9")
                .reentrant(true),
        )
        .await
        .unwrap();
    // The lean SET NX fails (the key is held, by this token): the queue's code grants it.
    let c = calls(&server);
    assert_eq!(c.get("set"), Some(&2), "{c:?}");
    assert_eq!(c.get("get"), Some(&1), "{c:?}");
    assert!(again.fencing_token() > first.fencing_token());
    assert!(server.pttl(b"job") > 3000, "the TTL was reset");
    assert_eq!(server.get(b"job").as_deref(), Some(&b"job-9"[..]));
    again.release().await.unwrap();
    assert_eq!(server.get(b"job"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_set_nx_px_holder_and_ours_exclude_each_other() {
    let server = RedisServer::start();
    let m = warm(&server).await;
    // A classic client holds it: our lean SET NX fails like theirs would.
    assert!(server.set_nx_px(b"shared", b"classic-token", 10_000));
    assert!(m.try_acquire("shared", MS(5000)).await.unwrap().is_none());
    assert_eq!(
        server.get(b"shared").as_deref(),
        Some(&b"classic-token"[..])
    );
    // Released by their compare-and-delete: ours takes it, and theirs is refused.
    assert_eq!(server.del(b"shared"), 1);
    let lock = m.try_acquire("shared", MS(5000)).await.unwrap().unwrap();
    assert!(!server.set_nx_px(b"shared", b"classic-token", 10_000));
    // Our release does not delete a key another token holds.
    server.set(b"shared", b"classic-token");
    let e = lock.release().await;
    assert!(e.is_err(), "released a key another token holds: {e:?}");
    assert_eq!(
        server.get(b"shared").as_deref(),
        Some(&b"classic-token"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_grant_is_undone_on_the_lean_path() {
    // Two of three servers are held by a classic client: the third grants on the lean path,
    // the quorum fails, and the undo (the lean compare-and-delete) leaves nothing there.
    let s = servers(3);
    let m = LockManager::new(s.iter().map(RedisServer::url)).unwrap();
    let lock = m.acquire("warm-up", MS(10_000), None).await.unwrap();
    lock.release().await.unwrap();
    assert!(s[1].set_nx_px(b"partial", b"classic", 10_000));
    assert!(s[2].set_nx_px(b"partial", b"classic", 10_000));
    reset(&s[0]);
    assert!(m
        .try_acquire("partial", MS(10_000))
        .await
        .unwrap()
        .is_none());
    let c = calls(&s[0]);
    assert_eq!(c.get("incr"), Some(&1), "granted on the lean path: {c:?}");
    assert_eq!(c.get("del"), Some(&1), "and undone: {c:?}");
    assert!(!ran_queue_code(&c), "{c:?}");
    assert_eq!(s[0].get(b"partial"), None);
    assert_eq!(s[1].get(b"partial").as_deref(), Some(&b"classic"[..]));
}

/// What a release that hands the lock over runs on `server`: the handoff (the sweep, the first
/// in line and its TTL, whether its process listens, the counter, the message, the key) and
/// `own`, what differs from release to release (the lean path's check, leaving a place).
/// Redis 6.2 counts `PUBSUB NUMSUB` as `pubsub`, which [`calls`] leaves out with the
/// testkit's probes.
fn handoff_release(server: &RedisServer, own: &[(&str, u64)]) -> HashMap<String, u64> {
    let mut commands = ran(&[
        ("evalsha", 1),
        ("get", 1),
        ("time", 1),
        ("zrangebyscore", 1),
        ("zrange", 1),
        ("hget", 1),
        ("incr", 1),
        ("publish", 1),
        ("set", 1),
    ]);
    if !server.version().starts_with("redis 6.") {
        commands.extend(ran(&[("pubsub|numsub", 1)]));
    }
    commands.extend(ran(own));
    commands
}

/// A waiter that makes one attempt and then waits for a handoff (its timed retry is a minute
/// off), so that the test sees exactly what one refusal runs; warmed up as [`warm`].
async fn patient(server: &RedisServer) -> LockManager {
    let m = LockManager::builder([server.url()])
        .retry_delay(Duration::from_secs(60))
        .build()
        .unwrap();
    m.acquire("warm-up", MS(10_000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contended_critical_section_runs_the_queues_upkeep_once_per_place_lifetime() {
    // Under contention a critical section is one refused attempt that takes a place and one
    // release that hands the lock over. The queue's upkeep (its keys' expiry and the sweep of
    // places nobody renews) runs when the queue is new or its expiry runs low, not at every
    // refusal; a holder that never waited has no place to leave.
    let server = RedisServer::start();
    let holder = warm(&server).await;
    let held = holder.acquire("line", MS(10_000), None).await.unwrap();
    let (first, second) = (patient(&server).await, patient(&server).await);
    let lock = |m: LockManager| {
        tokio::spawn(async move { m.acquire("line", MS(10_000), Some(MS(20_000))).await })
    };
    // A waiter's first refusal takes its place; it then subscribes to its wake-up channel and
    // tries once more (a release may have come in between), and waits.
    let tried_twice = || calls(&server).get("evalsha") == Some(&2);
    // The first waiter's first refusal makes the queue, so the upkeep runs: the keys' expiry
    // (and the sweep, with nothing to sweep). Its second refusal finds the queue alive.
    reset(&server);
    let one = lock(first);
    wait_until_async(MS(5000), "the first waiter tried twice", tried_twice).await;
    let c = calls(&server);
    assert_eq!(
        c.get("pexpire"),
        Some(&3),
        "the new queue's keys expire: {c:?}"
    );
    assert_eq!(c.get("zrangebyscore"), Some(&3), "{c:?}");
    assert_eq!(server.queued("", "line"), 1);
    // The second waiter's two refusals find the queue alive: 10 commands each, no upkeep (each
    // sweeps places whose time came first, so that a grant keeps only a place the caller had).
    reset(&server);
    let two = lock(second);
    wait_until_async(MS(5000), "the second waiter tried twice", tried_twice).await;
    let refusals = ran(&[
        ("evalsha", 2),
        ("pttl", 4),
        ("get", 4),
        ("time", 2),
        ("zrangebyscore", 2),
        ("zadd", 4),
        ("hset", 2),
        ("subscribe", 1),
    ]);
    assert_eq!(
        calls(&server),
        refusals,
        "two refusals with the queue alive"
    );
    assert_eq!(server.queued("", "line"), 2);
    // The holder never waited: its release has no place to leave, and hands the lock over.
    reset(&server);
    held.release().await.unwrap();
    assert_eq!(
        calls(&server),
        handoff_release(&server, &[("pttl", 1), ("zrem", 1)]),
        "a release that hands over, with no place"
    );
    let one = one.await.unwrap().unwrap();
    assert_eq!(server.get(b"line").as_deref(), Some(one.token()));
    // The first waiter got the lock through its place: its release skips the lean path's
    // check (it waited in line, so someone likely still is), leaves its place (three keys),
    // then hands over to the second.
    let one_fence = one.fencing_token();
    reset(&server);
    one.release().await.unwrap();
    assert_eq!(
        calls(&server),
        handoff_release(&server, &[("zrem", 2), ("hdel", 1)]),
        "a release that hands over, leaving its place"
    );
    let two = two.await.unwrap().unwrap();
    assert!(two.fencing_token() > one_fence);
    // The last in line waited too: its release finds nobody behind it and deletes the key.
    reset(&server);
    two.release().await.unwrap();
    let c = calls(&server);
    assert_eq!(c.get("pttl"), None, "{c:?}");
    assert_eq!(c.get("publish"), None, "{c:?}");
    assert_eq!(c.get("del"), Some(&1), "{c:?}");
    assert_eq!(server.queued("", "line"), 0);
    assert_eq!(server.get(b"line"), None);
    // And the next acquire and release take the lean path again.
    reset(&server);
    let lean = holder.acquire("line", MS(10_000), None).await.unwrap();
    lean.release().await.unwrap();
    assert!(!ran_queue_code(&calls(&server)), "{:?}", calls(&server));
}
