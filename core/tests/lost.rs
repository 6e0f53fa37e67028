//! A lost lock says why, the same way through every channel: `lost()`, `lost_reason()`, the
//! `on_lost` callback (once, on a background thread, never after a release) and the scope's
//! error.

use std::sync::mpsc;
use std::time::Duration;

use fencelock::{ErrorKind, LockManager, LostReason};
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn manager(server: &RedisServer) -> LockManager {
    LockManager::builder([server.url()])
        .server_timeout(MS(100))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_deleted_behind_the_holder_is_expired() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("gone", MS(600), None).await.unwrap();
    lock.auto_extend(None);
    assert_eq!(lock.lost_reason(), None);
    server.del(b"gone");
    let why = tokio::time::timeout(MS(3000), lock.lost()).await.unwrap();
    assert_eq!(why, Some(LostReason::Expired));
    assert_eq!(lock.lost_reason(), Some(LostReason::Expired));
    assert!(lock.is_lost());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_overwritten_by_another_client_is_taken() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("stolen", MS(600), None).await.unwrap();
    lock.auto_extend(None);
    server.set(b"stolen", b"someone-else");
    let why = tokio::time::timeout(MS(3000), lock.lost()).await.unwrap();
    assert_eq!(why, Some(LostReason::Taken));
    // The other owner's key is left alone.
    assert_eq!(server.get(b"stolen").as_deref(), Some(&b"someone-else"[..]));
    let e = lock.extend(MS(600)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert_eq!(
        lock.lost_reason(),
        Some(LostReason::Taken),
        "the first reason stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_makes_it_unreachable() {
    let mut server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("frozen", MS(600), None).await.unwrap();
    lock.auto_extend(None);
    server.stop(); // SIGSTOP: connections stay open, nothing answers
    let why = tokio::time::timeout(MS(5000), lock.lost()).await;
    server.cont();
    assert_eq!(why, Ok(Some(LostReason::Unreachable)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auto_extension_the_validity_running_out_is_expired() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("short", MS(300), None).await.unwrap();
    let why = tokio::time::timeout(MS(3000), lock.lost()).await.unwrap();
    assert_eq!(why, Some(LostReason::Expired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_lost_runs_once_on_another_thread_with_why() {
    let server = RedisServer::start();
    let m = manager(&server);
    let lock = m.acquire("watched", MS(600), None).await.unwrap();
    lock.auto_extend(None);
    let (tx, rx) = mpsc::channel();
    let caller = std::thread::current().id();
    lock.on_lost(move |why| {
        let _ = tx.send((why, std::thread::current().id()));
    });
    server.set(b"watched", b"other");
    let (why, thread) = tokio::task::spawn_blocking(move || {
        let first = rx.recv_timeout(MS(5000)).expect("on_lost was called");
        // A sender dropped without a second message: called exactly once.
        assert!(rx.recv_timeout(MS(500)).is_err(), "called more than once");
        first
    })
    .await
    .unwrap();
    assert_eq!(why, LostReason::Taken);
    assert_ne!(thread, caller);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_lost_is_never_called_for_a_released_or_detached_lock() {
    let server = RedisServer::start();
    let m = manager(&server);
    let (tx, rx) = mpsc::channel::<LostReason>();
    let released = m.acquire("calm", MS(300), None).await.unwrap();
    let t = tx.clone();
    released.on_lost(move |why| {
        let _ = t.send(why);
    });
    released.release().await.unwrap();
    let detached = m.acquire("handed-on", MS(300), None).await.unwrap();
    detached.on_lost(move |why| {
        let _ = tx.send(why);
    });
    detached.detach();
    // Both TTLs run out well within this wait; neither lock reports a loss.
    let heard = tokio::task::spawn_blocking(move || rx.recv_timeout(MS(1000)))
        .await
        .unwrap();
    assert!(heard.is_err(), "on_lost called: {heard:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_that_lost_its_lock_says_why() {
    let server = RedisServer::start();
    let m = manager(&server);
    let e = m
        .with_lock("scoped", MS(600), async |lock: &fencelock::Lock| {
            server.set(b"scoped", b"intruder");
            lock.lost().await
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(e.message().contains("another token holds its key"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lost_view_outlives_the_release_and_tells_what_it_found() {
    let server = RedisServer::start();
    let m = manager(&server);
    // Released while held: never lost.
    let calm = m.acquire("view-calm", MS(2000), None).await.unwrap();
    let view = calm.lost_view();
    calm.release().await.unwrap();
    assert_eq!(view.reason(), None);
    // Nobody extended it; the release is the first to find the key taken.
    let taken = m.acquire("view-taken", MS(2000), None).await.unwrap();
    let view = taken.lost_view();
    server.set(b"view-taken", b"other");
    assert_eq!(view.reason(), None, "nothing known yet");
    let e = taken.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert_eq!(view.reason(), Some(LostReason::Taken));
    // Found gone by the release.
    let gone = m.acquire("view-gone", MS(2000), None).await.unwrap();
    let view = gone.lost_view();
    server.del(b"view-gone");
    assert!(gone.release().await.is_err());
    assert_eq!(view.reason(), Some(LostReason::Expired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shortest_grantable_ttl_is_granted_and_shorter_extends_are_refused() {
    let server = RedisServer::start();
    let m = manager(&server);
    // 3 ms is grantable in principle; on a fast loopback it is often granted, else refused as
    // taking too long: never a wait without end (a bounded wait of 2 s here).
    match m.acquire("tiny", MS(3), Some(MS(2000))).await {
        Ok(lock) => {
            let e = lock.extend(MS(2)).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}"),
    }
}

/// Auto-extensions wait in their manager's queue until first due, served by one task on the
/// runtime of the lock that found none serving. When that runtime shuts down, a lock taken on
/// another runtime is still extended (what was queued starts on its own runtime) and is not
/// lost: its key outlives three TTLs.
#[test]
fn auto_extension_outlives_the_runtime_that_served_the_queue() {
    let server = RedisServer::start();
    let m = manager(&server);
    let first = tokio::runtime::Runtime::new().unwrap();
    let second = tokio::runtime::Runtime::new().unwrap();
    // The connection is made on the runtime that stays.
    second.block_on(async {
        m.acquire("warm", MS(1000), None)
            .await
            .unwrap()
            .release()
            .await
            .unwrap()
    });
    let a = first.block_on(async {
        let a = m.acquire("served-a", MS(30_000), None).await.unwrap();
        a.auto_extend(None);
        a
    });
    let b = second.block_on(async {
        let b = m.acquire("served-b", MS(300), None).await.unwrap();
        b.auto_extend(None);
        b
    });
    first.block_on(a.release()).unwrap();
    drop(first);
    second.block_on(async {
        tokio::time::sleep(MS(1000)).await;
        assert_eq!(server.get(b"served-b").as_deref(), Some(b.token()));
        assert_eq!(b.lost_reason(), None);
        assert!(b.is_auto_extending());
        b.release().await.unwrap();
    });
}
