//! Locks on several names at once (issue 25 item 6): all or none on each server, one token,
//! one fencing token per name, waiting in every name's queue without holding any of them, and
//! no deadlock between locks on overlapping names.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LockManager};
use fencelock_testkit::{servers, wait_until_async, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn manager(s: &[RedisServer]) -> LockManager {
    let urls: Vec<String> = s.iter().map(RedisServer::url).collect();
    LockManager::builder(&urls)
        .retry_delay(MS(100))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_name_is_taken_with_one_token_and_its_own_fencing_token() {
    let s = servers(1);
    let m = manager(&s);
    let lock = m
        .acquire_many(["a", "b", "c"], MS(10_000), Some(MS(0)))
        .await
        .unwrap();
    assert_eq!(lock.names(), [&b"a"[..], b"b", b"c"]);
    assert_eq!(lock.name(), b"a");
    assert_eq!(lock.fencing_tokens().len(), 3);
    for name in ["a", "b", "c"] {
        assert_eq!(s[0].get(name.as_bytes()).as_deref(), Some(lock.token()));
        assert!(s[0].pttl(name.as_bytes()) > 9000);
    }
    let before = lock.fencing_tokens().to_vec();
    lock.extend(MS(20_000)).await.unwrap();
    assert!(s[0].pttl(b"c") > 19_000, "extended as one");
    lock.extend_by(MS(5000)).await.unwrap();
    assert!(s[0].pttl(b"a") > 24_000, "added to each");
    assert!(lock.is_held().await.unwrap());
    lock.release().await.unwrap();
    for name in ["a", "b", "c"] {
        assert_eq!(s[0].get(name.as_bytes()), None);
    }
    // Each name's token grows with each acquisition of that name.
    let again = m.acquire_many(["c", "a"], MS(1000), None).await.unwrap();
    assert!(again.fencing_tokens()[0] > before[2]);
    assert!(again.fencing_tokens()[1] > before[0]);
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_is_taken_while_one_is_held_by_another_owner() {
    let s = servers(1);
    let m = manager(&s);
    // The classic SET NX PX lock of another client on one of the names.
    assert!(s[0].set_nx_px(b"b", b"another-owner", 60_000));
    let e = m
        .acquire_many(["a", "b"], MS(10_000), Some(MS(0)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    assert_eq!(s[0].get(b"a"), None, "no part of it was taken");
    assert_eq!(s[0].get(b"b").as_deref(), Some(&b"another-owner"[..]));
    assert_eq!(e.servers().len(), 1);
    // The holder's key vanishing behind a held multi-name lock is a loss.
    s[0].del(b"b");
    let lock = m.acquire_many(["a", "b"], MS(10_000), None).await.unwrap();
    s[0].del(b"b");
    assert!(!lock.is_held().await.unwrap());
    let e = lock.extend(MS(10_000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert_eq!(s[0].get(b"a"), None, "what survived was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_holds_nothing_and_nobody_passes_it() {
    let s = servers(1);
    let m = manager(&s);
    let holder = m.acquire("y", MS(30_000), None).await.unwrap();
    let waiter = {
        let m = m.clone();
        tokio::spawn(async move {
            m.acquire_many(["x", "y"], MS(10_000), Some(MS(10_000)))
                .await
        })
    };
    wait_until_async(MS(5000), "the waiter queued on both names", || {
        s[0].queued("", "x") == 1 && s[0].queued("", "y") == 1
    })
    .await;
    // It holds nothing while it waits (no hold-and-wait) ...
    assert_eq!(s[0].get(b"x"), None);
    // ... and a newcomer does not pass it on the free name.
    let other = LockManager::new([s[0].url()]).unwrap();
    assert!(other.try_acquire("x", MS(1000)).await.unwrap().is_none());
    assert!(!waiter.is_finished());
    holder.release().await.unwrap();
    let lock = waiter.await.unwrap().expect("acquired once y was released");
    assert_eq!(lock.names(), [&b"x"[..], b"y"]);
    assert_eq!(s[0].get(b"x").as_deref(), Some(lock.token()));
    assert_eq!(s[0].get(b"y").as_deref(), Some(lock.token()));
    // A single-name waiter behind it gets its name when the lock on both is released.
    let single = {
        let other = other.clone();
        tokio::spawn(async move { other.acquire("x", MS(1000), Some(MS(10_000))).await })
    };
    wait_until_async(MS(5000), "the single waiter queued", || {
        s[0].queued("", "x") == 1
    })
    .await;
    lock.release().await.unwrap();
    single.await.unwrap().unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn locks_on_overlapping_names_never_overlap_and_never_deadlock() {
    let s = servers(3);
    let m = manager(&s);
    let sets: [&[&str]; 6] = [
        &["p", "q"],
        &["q", "p"],
        &["q", "r"],
        &["r", "p"],
        &["p", "q", "r"],
        &["r"],
    ];
    let holders: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let holds = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (w, names) in sets.iter().enumerate() {
        let (m, holders, holds) = (m.clone(), holders.clone(), holds.clone());
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        tasks.push(tokio::spawn(async move {
            for _ in 0..8 {
                let lock = m
                    .acquire_many(&names, MS(5000), Some(MS(20_000)))
                    .await
                    .unwrap();
                {
                    let mut h = holders.lock().unwrap();
                    for n in &names {
                        assert_eq!(h.insert(n.clone(), w), None, "{n} held twice");
                    }
                }
                tokio::time::sleep(MS(3)).await;
                {
                    let mut h = holders.lock().unwrap();
                    for n in &names {
                        h.remove(n);
                    }
                }
                lock.release().await.unwrap();
                holds.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let all = futures_util::future::join_all(tasks);
    let done = tokio::time::timeout(Duration::from_secs(120), all).await;
    let finished = done.expect("a deadlock: the workers stopped making progress");
    for t in finished {
        t.unwrap();
    }
    assert_eq!(holds.load(Ordering::Relaxed), 48);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redlock_a_quorum_takes_every_name() {
    let s = servers(3);
    let m = manager(&s);
    assert!(s[2].set_nx_px(b"n2", b"another-owner", 60_000));
    let lock = m
        .acquire_many(["n1", "n2"], MS(10_000), Some(MS(0)))
        .await
        .unwrap();
    for x in &s[..2] {
        assert_eq!(x.get(b"n1").as_deref(), Some(lock.token()));
        assert_eq!(x.get(b"n2").as_deref(), Some(lock.token()));
    }
    assert_eq!(s[2].get(b"n1"), None, "all or none on the third server too");
    lock.release().await.unwrap();
    assert_eq!(s[2].get(b"n2").as_deref(), Some(&b"another-owner"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_name_lists_are_refused_before_any_call() {
    // Nothing listens at this address: an error here came before any network call.
    let m = LockManager::new(["redis://127.0.0.1:1"]).unwrap();
    let opts = AcquireOptions::new(MS(1000)).wait(Some(MS(0)));
    let empty: [&str; 0] = [];
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            empty.iter().map(|s| s.to_string()).collect(),
            "1 to 64 names",
        ),
        (vec!["a".into(), "a".into()], "given twice"),
        ((0..65).map(|i| i.to_string()).collect(), "1 to 64 names"),
        (vec!["a".into(), "".into()], "empty"),
    ];
    for (names, needle) in cases {
        let e = m.acquire_many_with(&names, &opts).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{names:?}: {e}");
        assert!(e.message().contains(needle), "{e}");
    }
}
