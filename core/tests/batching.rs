//! Batching (issue 37): calls of one manager that meet at a server go out as one script call,
//! each with its own answer. The tests poll many calls in one task on a current-thread
//! runtime, so that every call after the first finds it in flight and waits in the batcher's
//! line before any reply can come back: the batches they form are known, not hoped for. They
//! read what the server ran with `INFO commandstats`.

use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LockManager};
use fencelock_testkit::RedisServer;
use futures_util::future::join_all;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// `EVALSHA` calls since the last `CONFIG RESETSTAT`.
fn evalsha_calls(server: &RedisServer) -> u64 {
    server
        .info_commandstats()
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// A manager whose connection is open and whose scripts are loaded (the batch's too), with
/// the server's counts reset after.
async fn warm(server: &RedisServer, batching: bool) -> LockManager {
    let m = LockManager::builder([server.url()])
        .server_timeout(Duration::from_secs(5))
        .batching(batching)
        .build()
        .unwrap();
    let locks = join_all((0..3).map(|i| m.acquire(format!("warm-{i}"), MS(10_000), None))).await;
    for lock in locks {
        lock.unwrap().release().await.unwrap();
    }
    server.cmd(&[b"CONFIG", b"RESETSTAT"]);
    m
}

#[tokio::test(flavor = "current_thread")]
async fn hundreds_of_calls_share_a_few_script_calls_each_with_its_own_answer() {
    let server = RedisServer::start();
    let m = warm(&server, true).await;
    let names: Vec<String> = (0..300).map(|i| format!("many-{i}")).collect();
    let locks: Vec<_> = join_all(names.iter().map(|n| m.try_acquire(n, MS(30_000))))
        .await
        .into_iter()
        .map(|r| r.unwrap().expect("a free name is granted"))
        .collect();
    // The first call alone, the other 299 in batches of at most 128.
    let sent = evalsha_calls(&server);
    assert!(
        (4..=6).contains(&sent),
        "{sent} script calls for 300 acquires"
    );
    // Each caller got its own lock: its name's key holds its token, the fencing tokens are
    // each name's own counter (1 for a name never locked).
    for (lock, name) in locks.iter().zip(&names) {
        assert_eq!(lock.name(), name.as_bytes());
        assert_eq!(server.get(name.as_bytes()).as_deref(), Some(lock.token()));
        assert_eq!(lock.fencing_token(), 1);
    }
    server.cmd(&[b"CONFIG", b"RESETSTAT"]);
    let released = join_all(locks.into_iter().map(|l| l.release())).await;
    assert!(released.iter().all(Result::is_ok), "{released:?}");
    let sent = evalsha_calls(&server);
    assert!(
        (4..=6).contains(&sent),
        "{sent} script calls for 300 releases"
    );
    assert!(names.iter().all(|n| server.get(n.as_bytes()).is_none()));
}

#[tokio::test(flavor = "current_thread")]
async fn without_batching_every_call_is_its_own_script_call() {
    let server = RedisServer::start();
    let m = warm(&server, false).await;
    let got = join_all((0..50).map(|i| m.try_acquire(format!("own-{i}"), MS(30_000)))).await;
    assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
    assert_eq!(evalsha_calls(&server), 50);
}

#[tokio::test(flavor = "current_thread")]
async fn a_lone_call_goes_out_as_its_own_script() {
    let server = RedisServer::start();
    let m = warm(&server, true).await;
    for i in 0..5 {
        let lock = m
            .acquire(format!("lone-{i}"), MS(10_000), None)
            .await
            .unwrap();
        lock.release().await.unwrap();
    }
    assert_eq!(
        evalsha_calls(&server),
        10,
        "one script call per acquire and per release"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn one_batch_of_mixed_outcomes_answers_each_call_its_own() {
    let server = RedisServer::start();
    let m = warm(&server, true).await;
    let other = warm(&server, false).await;
    // Held by another manager: refused. A fencing counter of the wrong type: that call fails
    // alone, with nothing written.
    let held = other.acquire("held", MS(30_000), None).await.unwrap();
    let fence = fencelock::keys::LockKeys::new(b"", b"broken").fence;
    server.set(&fence, b"not-a-number");
    let queued = other.acquire("queued", MS(30_000), None).await.unwrap();
    let mine = m.acquire("mine", MS(30_000), None).await.unwrap();
    server.cmd(&[b"CONFIG", b"RESETSTAT"]);

    let waiting = AcquireOptions::new(MS(30_000)).wait(Some(Duration::from_secs(20)));
    // One poll starts them all: the first goes alone, the rest share batches.
    let (free, refused, broken, waiter, extended, reentry, ()) = tokio::join!(
        m.try_acquire("free", MS(30_000)),
        m.try_acquire("held", MS(30_000)),
        m.try_acquire("broken", MS(30_000)),
        m.acquire_with("queued", &waiting),
        mine.extend(MS(60_000)),
        m.try_acquire("mine", MS(30_000)),
        async {
            // The holder of "queued" releases once the waiter is in line: the release hands it
            // over to the waiter, who did not ask again.
            let what = "the waiter in line";
            fencelock_testkit::wait_until_async(Duration::from_secs(10), what, || {
                server.queued("", "queued") == 1
            })
            .await;
            queued.release().await.unwrap();
        }
    );
    let free = free.unwrap().expect("a free name is granted");
    assert_eq!(server.get(b"free").as_deref(), Some(free.token()));
    assert!(refused.unwrap().is_none(), "a held name is refused");
    let e = broken.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Redis, "{e}");
    assert!(
        e.message().contains("ERR") || e.message().contains("integer"),
        "{e}"
    );
    assert_eq!(server.get(b"broken"), None, "the failed call wrote nothing");
    let waiter = waiter.unwrap();
    assert_eq!(server.get(b"queued").as_deref(), Some(waiter.token()));
    assert_eq!(
        waiter.fencing_token(),
        2,
        "handed over with the next fencing token"
    );
    extended.unwrap();
    assert!(mine.validity() > MS(40_000), "extended to a minute");
    assert!(
        reentry.unwrap().is_none(),
        "another call's token on a held name is refused"
    );
    assert!(evalsha_calls(&server) < 9, "the calls shared script calls");
    for lock in [free, waiter, mine, held] {
        lock.release().await.unwrap();
    }
}
