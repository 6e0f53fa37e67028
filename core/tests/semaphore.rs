//! The counting semaphore (issue 34 item 1) on real servers: the limit, all-or-none counts,
//! first come first served, a release waking every waiter it satisfies, leases that end one by
//! one, the limit kept on the servers, and one kind per name.

use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LockManager, Semaphore};
use fencelock_testkit::{servers, wait_for, RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A manager whose calls wait up to 100 ms for a server. The default is a twentieth of a
/// call's TTL (15 ms for the 300 ms leases below), which the first call, opening the
/// connection, missed once on a machine busy with the rest of the suite (stage 10).
fn manager(s: &[RedisServer]) -> LockManager {
    let urls: Vec<String> = s.iter().map(RedisServer::url).collect();
    LockManager::builder(&urls)
        .server_timeout(MS(100))
        .retry_delay(MS(100))
        .build()
        .unwrap()
}

/// Waits (10 s at most: a hang) until `n` callers wait in the semaphore's line.
async fn waiters_in_line(sem: &Semaphore, n: u64) {
    let lined_up = || async { sem.state().await.unwrap().waiters == n };
    wait_for(MS(10_000), "waiters in line", lined_up).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_than_the_limit_and_counts_are_all_or_none() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("jobs", 4).unwrap();
    let two = sem.acquire(2, MS(10_000), Some(MS(0))).await.unwrap();
    let one = sem.acquire(1, MS(10_000), Some(MS(0))).await.unwrap();
    assert!(
        sem.try_acquire(2, MS(10_000)).await.unwrap().is_none(),
        "2 of the 1 permit left: none taken"
    );
    let state = sem.state().await.unwrap();
    assert_eq!((state.limit, state.held, state.holders), (4, 3, 2));
    let last = sem.try_acquire(1, MS(10_000)).await.unwrap().unwrap();
    assert!(sem.try_acquire(1, MS(10_000)).await.unwrap().is_none());
    two.release().await.unwrap();
    assert_eq!(sem.state().await.unwrap().held, 2);
    let again = sem.try_acquire(2, MS(10_000)).await.unwrap().unwrap();
    // Every acquisition's fencing token is larger than the earlier ones'.
    assert!(again.fencing_token() > last.fencing_token());
    assert!(last.fencing_token() > one.fencing_token());
    for lease in [one, last, again] {
        lease.release().await.unwrap();
    }
    let state = sem.state().await.unwrap();
    assert_eq!((state.held, state.holders, state.waiters), (0, 0, 0));
    assert_eq!(
        s[0].cmd(&[b"DBSIZE"]),
        Reply::Int(1),
        "nothing left but the fencing counter"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_counts_and_limits_fail_before_any_network_call() {
    // No server at this address: the errors come first.
    let m = LockManager::new(["redis://127.0.0.1:1"]).unwrap();
    assert_eq!(
        m.semaphore("jobs", 0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        m.semaphore("", 3).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let sem = m.semaphore("jobs", 3).unwrap();
    for count in [0, 4] {
        let e = sem.acquire(count, MS(1000), None).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    assert!(
        m.semaphore("jobs", 100_000).is_ok(),
        "limits up to 100,000 at least"
    );
}

/// redis-semaphore: a waiter for 3 permits was passed by a later waiter for 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_semaphore_and_redisson_3573_3728_a_waiter_for_three_is_not_passed_by_a_later_waiter_for_one(
) {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("pool", 3).unwrap();
    let holder = sem.acquire(1, MS(30_000), Some(MS(0))).await.unwrap();
    let big = tokio::spawn({
        let sem = sem.clone();
        async move { sem.acquire(3, MS(30_000), None).await }
    });
    waiters_in_line(&sem, 1).await;
    // 2 permits are free, but the waiter for 3 came first.
    assert!(sem.try_acquire(1, MS(30_000)).await.unwrap().is_none());
    assert_eq!(sem.state().await.unwrap().waiters, 1);
    holder.release().await.unwrap();
    let big = tokio::time::timeout(MS(10_000), big)
        .await
        .expect("the waiter for 3 was handed its permits")
        .unwrap()
        .unwrap();
    assert_eq!(sem.state().await.unwrap().held, 3);
    big.release().await.unwrap();
}

/// Redisson #6664, #6687: a release woke one waiter when several could go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_6664_6687_5762_a_release_hands_its_permits_to_every_waiter_they_satisfy() {
    let s = servers(1);
    // A retry delay far beyond the test's limit: only a handoff can let the waiters in.
    let m = LockManager::builder([s[0].url()])
        .retry_delay(MS(60_000))
        .build()
        .unwrap();
    let sem = m.semaphore("wide", 3).unwrap();
    let all = sem.acquire(3, MS(60_000), Some(MS(0))).await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let sem = sem.clone();
            tokio::spawn(async move { sem.acquire(1, MS(60_000), None).await })
        })
        .collect();
    waiters_in_line(&sem, 3).await;
    all.release().await.unwrap();
    let mut fences = Vec::new();
    for w in waiters {
        let lease = tokio::time::timeout(MS(10_000), w)
            .await
            .expect("every waiter the release satisfies is handed a permit")
            .unwrap()
            .unwrap();
        fences.push(lease.fencing_token());
        lease.detach();
    }
    fences.sort_unstable();
    fences.dedup();
    assert_eq!(fences.len(), 3, "each its own fencing token");
    assert_eq!(sem.state().await.unwrap().held, 3);
}

/// Redisson #4462, #659: a crashed holder's permits never came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_4462_659_a_crashed_holders_permits_come_back_when_its_lease_ends() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("licences", 2).unwrap();
    let crashed = sem.acquire(2, MS(1500), Some(MS(0))).await.unwrap();
    let ends = std::time::Instant::now() + MS(1500);
    crashed.detach(); // its process is gone: nobody releases it
    assert!(sem.try_acquire(1, MS(10_000)).await.unwrap().is_none());
    let lease = sem.acquire(2, MS(10_000), None).await.unwrap();
    assert!(
        std::time::Instant::now() + MS(5) >= ends,
        "not before the lease ended"
    );
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_extends_auto_extends_and_reports_its_loss() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("ext", 1).unwrap();
    let lease = sem
        .acquire_with(1, &AcquireOptions::new(MS(600)).auto_extend(None))
        .await
        .unwrap();
    tokio::time::sleep(MS(1500)).await;
    assert!(lease.is_held().await.unwrap(), "kept alive past its TTL");
    assert!(sem.try_acquire(1, MS(1000)).await.unwrap().is_none());
    lease.extend(MS(20_000)).await.unwrap();
    lease.extend_by(MS(1000)).await.unwrap();
    // Taken away on the server: the loss is reported.
    s[0].cmd(&[b"DEL", b"ext"]);
    let e = lease.extend(MS(1000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(lease.is_lost());
}

/// Redisson #4678: setting the permits overwrote a count that had reached 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_4678_another_limit_while_permits_are_held_is_refused_naming_both() {
    let s = servers(1);
    let m = manager(&s);
    let four = m.semaphore("limits", 4).unwrap();
    let lease = four.acquire(4, MS(10_000), Some(MS(0))).await.unwrap();
    let five = m.semaphore("limits", 5).unwrap();
    let e = five.acquire(1, MS(10_000), Some(MS(0))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.message().contains("limit 4") && e.message().contains("limit 5"),
        "{e}"
    );
    lease.release().await.unwrap();
    // Nobody holds or waits: the next acquisition's limit holds.
    five.acquire(5, MS(10_000), Some(MS(0)))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_name_one_kind() {
    let s = servers(1);
    let m = manager(&s);
    let lock = m.acquire("shared-name", MS(10_000), None).await.unwrap();
    let sem = m.semaphore("shared-name", 2).unwrap();
    let e = sem.acquire(1, MS(1000), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    assert!(e.message().contains("as a lock"), "{e}");
    lock.release().await.unwrap();

    let lease = sem.acquire(1, MS(10_000), None).await.unwrap();
    let e = m.acquire("shared-name", MS(1000), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    assert!(e.message().contains("as a semaphore"), "{e}");
    let e = m.is_locked("shared-name").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    let e = m
        .rwlock("shared-name")
        .unwrap()
        .read(MS(1000), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    assert!(e.message().contains("as a semaphore"), "{e}");
    let e = m
        .acquire_many(["x", "shared-name"], MS(1000), Some(MS(0)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    lease.release().await.unwrap();

    // The classic SET NX PX lock of another client.
    assert!(s[0].set_nx_px(b"classic", b"other", 60_000));
    let e = m
        .semaphore("classic", 3)
        .unwrap()
        .acquire(1, MS(1000), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
}

/// redis-semaphore #155, #249: its limit was ignored when one object was reused. One handle
/// here is shared by twenty tasks: never more than its limit inside at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_semaphore_155_249_one_handle_shared_by_many_tasks_keeps_its_limit() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("shared-handle", 3).unwrap();
    let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (sem, inside, most) = (sem.clone(), Arc::clone(&inside), Arc::clone(&most));
            tokio::spawn(async move {
                for _ in 0..3 {
                    let lease = sem.acquire(1, MS(10_000), None).await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(MS(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    lease.release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 3);
    assert_eq!(sem.state().await.unwrap().held, 0);
}

/// redis-semaphore #28: it failed above about 4,000 permits. A limit of 100,000, one lease of
/// 95,000 and 5,000 of one: all held, one more refused, and all given back when their leases
/// end (in batches, by the calls that come).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_semaphore_28_limits_and_holders_in_the_thousands() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("big", 100_000).unwrap();
    let ttl = MS(4000);
    let big = sem.acquire(95_000, ttl, Some(MS(0))).await.unwrap();
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let sem = sem.clone();
            tokio::spawn(async move {
                for _ in 0..100 {
                    sem.acquire(1, ttl, Some(MS(0))).await.unwrap().detach();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let state = sem.state().await.unwrap();
    assert_eq!((state.held, state.holders), (100_000, 5001));
    assert!(sem.try_acquire(1, ttl).await.unwrap().is_none());
    big.detach();
    let all = sem
        .acquire(100_000, MS(10_000), Some(MS(20_000)))
        .await
        .expect("every ended lease given back");
    assert_eq!(sem.state().await.unwrap().holders, 1);
    all.release().await.unwrap();
}

/// redis-semaphore, tried as a new user would: two callers with different lock timeouts on one
/// semaphore of limit 1 let two holders in. Here a lease's TTL is its own and the limit the
/// servers'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_semaphore_callers_with_different_ttls_on_a_limit_of_one_never_hold_together() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("one", 1).unwrap();
    let long = sem.acquire(1, MS(30_000), Some(MS(0))).await.unwrap();
    assert!(sem.try_acquire(1, MS(500)).await.unwrap().is_none());
    long.release().await.unwrap();
    let short = sem.acquire(1, MS(500), Some(MS(0))).await.unwrap();
    assert!(sem.try_acquire(1, MS(30_000)).await.unwrap().is_none());
    short.release().await.unwrap();
}

/// Keys of a semaphore whose holder vanished go away on their own: the name's key and the
/// leases' outlive the last lease by at most twice its TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_holders_keys_expire_on_their_own() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("vanished", 2).unwrap();
    sem.acquire(1, MS(400), Some(MS(0))).await.unwrap().detach();
    assert_eq!(
        s[0].cmd(&[b"DBSIZE"]),
        Reply::Int(3),
        "name, leases, fencing counter"
    );
    let gone = || async { s[0].cmd(&[b"DBSIZE"]) == Reply::Int(1) };
    wait_for(MS(10_000), "only the fencing counter left", gone).await;
}

/// The uncontended path (`permits_acquire_lean.lua`, `permits_release_lean.lua`) leaves ended
/// leases to the full path: they still count there until a call on the full path gives them
/// back; the release of one finds it gone (not a release on the uncontended path, which would
/// take its weight twice); the last release leaves only the fencing counter; and a counter of
/// the wrong type fails an acquisition with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_uncontended_path_leaves_ended_leases_to_the_full_path() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("lean", 3).unwrap();
    let ended = [
        sem.acquire(1, MS(300), Some(MS(0))).await.unwrap(),
        sem.acquire(1, MS(300), Some(MS(0))).await.unwrap(),
    ];
    for lease in &ended {
        let over = || async { !lease.is_held().await.unwrap() };
        wait_for(MS(10_000), "the short lease ended", over).await;
    }
    // 2 ended + 1: fits, on the uncontended path.
    let first = sem.try_acquire(1, MS(10_000)).await.unwrap().unwrap();
    for lease in ended {
        assert_eq!(
            lease.release().await.unwrap_err().kind(),
            ErrorKind::NotHeld
        );
    }
    let second = sem.try_acquire(2, MS(10_000)).await.unwrap().unwrap();
    let state = sem.state().await.unwrap();
    assert_eq!((state.held, state.holders), (3, 2));
    assert!(sem.try_acquire(1, MS(10_000)).await.unwrap().is_none());
    first.release().await.unwrap();
    assert_eq!(sem.state().await.unwrap().held, 2);
    assert!(sem.try_acquire(2, MS(10_000)).await.unwrap().is_none());
    second.release().await.unwrap();
    assert_eq!(s[0].cmd(&[b"DBSIZE"]), Reply::Int(1), "the fencing counter");
    let Reply::Array(Some(keys)) = s[0].cmd(&[b"KEYS", b"*fence"]) else {
        panic!("no fencing counter")
    };
    let Reply::Bulk(Some(fence)) = &keys[0] else {
        panic!("{keys:?}")
    };
    s[0].cmd(&[b"DEL", fence]);
    s[0].cmd(&[b"HSET", fence, b"not", b"a counter"]);
    assert!(sem.try_acquire(1, MS(10_000)).await.is_err());
    assert_eq!(s[0].cmd(&[b"DBSIZE"]), Reply::Int(1), "nothing written");
}

/// The leases' key expired before anyone gave the ended leases' weights back, while the
/// name's key lived on (a queue keeps it alive): the weights come back, both to an inspection
/// and to the next acquisition, rather than being lost for as long as anyone waits. Found by
/// the conformance test (docs/SAFETY.md, "The model held to the scripts").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weights_of_leases_whose_key_expired_come_back() {
    let s = servers(1);
    let m = manager(&s);
    let sem = m.semaphore("expired", 2).unwrap();
    let lease = sem.acquire(2, MS(300), Some(MS(0))).await.unwrap();
    let over = || async { !lease.is_held().await.unwrap() };
    wait_for(MS(10_000), "the short lease ended", over).await;
    let Reply::Array(Some(keys)) = s[0].cmd(&[b"KEYS", b"*"]) else {
        panic!("no keys")
    };
    let mut name = None;
    for key in keys {
        let Reply::Bulk(Some(key)) = key else {
            panic!("{key:?}")
        };
        match s[0].cmd(&[b"TYPE", &key]) {
            // What the leases' key's expiry does.
            Reply::Status(t) if t == "zset" => drop(s[0].cmd(&[b"DEL", &key])),
            Reply::Status(t) if t == "hash" => name = Some(key),
            _ => {}
        }
    }
    let name = name.expect("the name's key");
    s[0].cmd(&[b"PEXPIRE", &name, b"60000"]);
    assert_eq!(sem.state().await.unwrap().held, 0, "the inspection");
    let both = sem.try_acquire(2, MS(10_000)).await.unwrap();
    assert!(both.is_some(), "the ended lease's 2 permits came back");
    assert_eq!(sem.state().await.unwrap().held, 2);
    both.unwrap().release().await.unwrap();
}

/// `family_of` (what `fencelock status NAME` asks): the family a name holds on the servers,
/// with the limit they keep; nothing for a free name or a lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn family_of_finds_the_kind_and_the_servers_limit() {
    let s = servers(1);
    let m = manager(&s);
    assert!(m.family_of("nothing-here").await.unwrap().is_none());
    let lease = m
        .semaphore("pool", 3)
        .unwrap()
        .acquire(1, MS(10_000), None)
        .await
        .unwrap();
    match m.family_of("pool").await.unwrap() {
        Some(fencelock::Family::Semaphore(sem)) => assert_eq!(sem.limit(), 3),
        other => panic!("{other:?}"),
    }
    lease.release().await.unwrap();
    let read = m
        .rwlock("cache")
        .unwrap()
        .read(MS(10_000), None)
        .await
        .unwrap();
    assert!(matches!(
        m.family_of("cache").await.unwrap(),
        Some(fencelock::Family::RwLock(_))
    ));
    read.release().await.unwrap();
    let lock = m.acquire("plain", MS(10_000), None).await.unwrap();
    assert!(m.family_of("plain").await.unwrap().is_none());
    lock.release().await.unwrap();
}
