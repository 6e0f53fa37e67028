//! A caller's token is exclusive (issue 25 item 2): another acquisition with the same token
//! waits for the holder like anyone else, and nothing it does (its undo, leaving the queue)
//! touches the holder's keys; and a failed acquisition says what each server answered, as
//! data on the error (item 9).

use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LockManager, ServerOutcome};
use fencelock_testkit::{servers, wait_until_async, RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn with_token(ttl: u64, wait: Option<u64>) -> AcquireOptions {
    AcquireOptions::new(MS(ttl))
        .token("job-7")
        .wait(wait.map(MS))
}

fn urls(s: &[RedisServer]) -> Vec<String> {
    s.iter().map(RedisServer::url).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_acquisition_with_the_same_token_waits_for_the_holders_release() {
    let s = servers(3);
    // Two managers: two processes that were given the same job id.
    let a = LockManager::new(urls(&s)).unwrap();
    let b = LockManager::new(urls(&s)).unwrap();
    let held = a
        .acquire_with("job", &with_token(10_000, None))
        .await
        .unwrap();
    let waiter = tokio::spawn(async move {
        let lock = b.acquire_with("job", &with_token(10_000, Some(8000))).await;
        (lock, b)
    });
    wait_until_async(MS(5000), "the second acquisition queued", || {
        s.iter().all(|x| x.queued("", "job") == 1)
    })
    .await;
    assert!(!waiter.is_finished(), "acquired while the holder held it");
    assert!(held.is_held().await.unwrap());
    let fence = held.fencing_token();
    held.release().await.unwrap();
    let (lock, _b) = waiter.await.unwrap();
    let lock = lock.expect("acquired once the holder released");
    assert!(lock.fencing_token() > fence);
    assert!(lock.is_held().await.unwrap());
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_attempt_with_the_same_token_leaves_the_holders_keys_alone() {
    let s = servers(3);
    let a = LockManager::new(urls(&s)).unwrap();
    let b = LockManager::new(urls(&s)).unwrap();
    let held = a
        .acquire_with("job", &with_token(10_000, None))
        .await
        .unwrap();
    // The holder lost the key on one server: the other acquisition wins it there, but not a
    // quorum, and undoes that vote only.
    s[2].del(b"job");
    let e = b
        .acquire_with("job", &with_token(10_000, Some(0)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    let outcomes: Vec<ServerOutcome> = e.servers().iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            ServerOutcome::Held,
            ServerOutcome::Held,
            ServerOutcome::Granted
        ]
    );
    assert!(e.servers()[0].detail.contains("this token"), "{e:?}");
    assert_eq!(
        s[2].get(b"job"),
        None,
        "the refused attempt's vote was undone"
    );
    for x in &s[..2] {
        assert_eq!(x.get(b"job").as_deref(), Some(&b"job-7"[..]));
        assert!(x.pttl(b"job") > 5000, "the holder's key is untouched");
    }
    assert!(held.is_held().await.unwrap());

    // A waiter with the same token that gives up leaves the queue, not the holder's keys.
    let e = b
        .acquire_with("job", &with_token(10_000, Some(300)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    for x in &s[..2] {
        assert_eq!(x.get(b"job").as_deref(), Some(&b"job-7"[..]));
        assert_eq!(x.queued("", "job"), 0, "the place was given up");
    }
    assert!(held.is_held().await.unwrap());
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acquire_says_what_each_server_answered() {
    let mut s = servers(3);
    assert!(s[0].set_nx_px(b"busy", b"another-owner", 60_000));
    let dead = format!("redis://:sekrit@127.0.0.1:{}", s[1].port());
    s[1].kill();
    let list = [s[0].url(), dead, s[2].url()];
    let m = LockManager::builder(&list)
        .server_timeout(MS(200))
        .build()
        .unwrap();
    // Warm the third server's connection, then stop it: its reply will not come in time.
    assert!(!m.is_locked("warm").await.unwrap());
    s[2].stop();
    let e = m.try_acquire("busy", MS(10_000)).await.unwrap_err();
    s[2].cont();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let r = e.servers();
    assert_eq!(r.len(), 3, "{e:?}");
    assert_eq!(
        r.iter().map(|x| x.outcome).collect::<Vec<_>>(),
        [
            ServerOutcome::Held,
            ServerOutcome::Unreachable,
            ServerOutcome::TimedOut
        ],
        "{r:?}"
    );
    assert_eq!(r[0].server, format!("127.0.0.1:{}", s[0].port()));
    assert!(r[0].detail.contains("another owner"), "{:?}", r[0]);
    assert!(r[1].server.contains(&s[1].port().to_string()));
    for x in r {
        assert!(
            !x.server.contains("sekrit") && !x.detail.contains("sekrit"),
            "{x:?}"
        );
    }
    assert!(!format!("{e:?}").contains("sekrit"));

    // An acquire that succeeds, or fails before any call, reports no servers.
    let e = m.try_acquire("", MS(1000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.servers().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_limit_reports_the_last_attempts_servers() {
    let s = servers(3);
    for x in &s[1..] {
        assert!(x.set_nx_px(b"split", b"another-owner", 60_000));
    }
    let m = LockManager::new(urls(&s)).unwrap();
    let e = m
        .acquire("split", MS(10_000), Some(MS(300)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    assert!(e.message().contains("gave up after"), "{e}");
    let outcomes: Vec<ServerOutcome> = e.servers().iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            ServerOutcome::Granted,
            ServerOutcome::Held,
            ServerOutcome::Held
        ]
    );
    assert_eq!(s[0].get(b"split"), None, "the granted vote was undone");
}

/// A waiter with a caller's token that stops waiting (its future dropped) just after a release
/// handed it the lock, before it heard so: it only gives its place up (the key could be another
/// acquisition's with the same token), the key still holds the token, the release's message
/// names the place, and the lock it was handed is released at once rather than left to its
/// TTL (a minute here).
#[test]
fn a_waiter_cancelled_just_after_a_release_handed_it_the_lock_releases_it() {
    cancelled_after_a_handoff(false, |s| s.get(b"job").as_deref() == Some(&b"job-7"[..]));
}

/// The same for a semaphore's permits, handed to the waiter's token by the release.
#[test]
fn a_waiter_cancelled_just_after_a_release_handed_it_permits_gives_them_back() {
    cancelled_after_a_handoff(true, |s| lease_of(s, "job", "job-7"));
}

/// Whether `token` holds a lease of the semaphore `name` on `s`.
fn lease_of(s: &RedisServer, name: &str, token: &str) -> bool {
    let pattern = format!("fencelock:{{*}}:holders:{name}");
    let Reply::Array(Some(keys)) = s.cmd(&[b"KEYS", pattern.as_bytes()]) else {
        panic!("unexpected KEYS reply");
    };
    keys.iter().any(|k| match k {
        Reply::Bulk(Some(key)) => {
            matches!(
                s.cmd(&[b"ZSCORE", key, token.as_bytes()]),
                Reply::Bulk(Some(_))
            )
        }
        _ => false,
    })
}

/// Holds `job` (a lock, or a semaphore of 1) on one runtime; a waiter with the token `job-7`
/// on a runtime of this thread alone, so that none of its tasks runs while the thread is busy
/// elsewhere; the holder's release, from the other runtime while this thread waits for it,
/// hands `job` to the waiter (`handed` says so), which is cancelled before it can run: what it
/// was handed must be given back.
fn cancelled_after_a_handoff(semaphore: bool, handed: impl Fn(&RedisServer) -> bool) {
    let s = servers(1);
    let holder_rt = tokio::runtime::Runtime::new().unwrap();
    let held = holder_rt.block_on(async {
        let a = LockManager::new(urls(&s)).unwrap();
        let opts = AcquireOptions::new(MS(60_000));
        match semaphore {
            true => a.semaphore("job", 1).unwrap().acquire_with(1, &opts).await,
            false => a.acquire_with("job", &opts).await,
        }
        .unwrap()
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let b = LockManager::new(urls(&s)).unwrap();
        let waiter = tokio::spawn(async move {
            let opts = with_token(60_000, Some(60_000));
            match semaphore {
                true => b.semaphore("job", 1).unwrap().acquire_with(1, &opts).await,
                false => b.acquire_with("job", &opts).await,
            }
        });
        wait_until_async(MS(5000), "the waiter queued and listening", || {
            s[0].queued("", "job") == 1 && s[0].listening("", "job")
        })
        .await;
        std::thread::scope(|scope| {
            scope
                .spawn(|| holder_rt.block_on(held.release()).unwrap())
                .join()
                .unwrap();
        });
        assert!(handed(&s[0]), "handed to the waiter");
        waiter.abort();
        wait_until_async(
            MS(10_000),
            "what the cancelled waiter was handed given back",
            || !handed(&s[0]),
        )
        .await;
        assert_eq!(s[0].queued("", "job"), 0);
    });
}
