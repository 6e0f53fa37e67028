//! The blocking facade, used from plain threads (as the C and synchronous Python layers do).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fencelock::blocking::LockManager;
use fencelock::{AcquireOptions, ErrorKind};
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn round_trip_from_a_plain_thread() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("b", MS(2000), None).unwrap();
    assert_eq!(server.get(b"b").as_deref(), Some(lock.token()));
    assert!(lock.validity() > MS(1900));
    lock.extend(MS(5000)).unwrap();
    assert!(server.pttl(b"b") > 4000);
    assert!(m.try_acquire("b", MS(1000)).unwrap().is_none());
    lock.release().unwrap();
    assert_eq!(server.get(b"b"), None);
}

#[test]
fn threads_sharing_one_manager_exclude_each_other() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let inside = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (m, inside, count) = (m.clone(), inside.clone(), count.clone());
            std::thread::spawn(move || {
                for _ in 0..10 {
                    m.with_lock("shared", MS(5000), |_lock| {
                        assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                        std::thread::sleep(MS(1));
                        count.fetch_add(1, Ordering::SeqCst);
                        inside.store(false, Ordering::SeqCst);
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(count.load(Ordering::SeqCst), 80);
}

#[test]
fn an_interrupted_acquire_is_cancelled_and_leaves_no_lock() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let holder = m.acquire("busy", MS(10_000), None).unwrap();
    let started = Instant::now();
    let e = m
        .acquire_interruptible(
            m.as_async()
                .acquire_with("busy", &AcquireOptions::new(MS(10_000))),
            MS(20),
            || started.elapsed() > MS(200),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert!(started.elapsed() < MS(2000));
    // The cancelled waiter gives its place up (in the background if need be).
    fencelock_testkit::wait_until(Duration::from_secs(5), "the waiter left the queue", || {
        server.queued("", "busy") == 0
    });
    holder.release().unwrap();
    assert_eq!(
        server.get(b"busy"),
        None,
        "the cancelled waiter took nothing"
    );
}

/// Issue 51 item 4: a program whose wait was interrupted and that closes its manager at once
/// (a C program freeing it before `exit`) leaves no place in the queue: closing awaits the
/// background withdrawal instead of cancelling it with the runtime.
#[test]
fn closing_a_manager_right_after_an_interrupted_wait_leaves_no_place_behind() {
    let server = RedisServer::start();
    let holder = LockManager::new([server.url()]).unwrap();
    let held = holder.acquire("closing", MS(30_000), None).unwrap();
    for _ in 0..5 {
        let m = LockManager::new([server.url()]).unwrap();
        let queued = || server.queued("", "closing") == 1;
        let e = m
            .acquire_interruptible(
                m.as_async()
                    .acquire_with("closing", &AcquireOptions::new(MS(30_000))),
                MS(5),
                queued,
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled);
        m.close(Duration::from_secs(5));
        assert_eq!(server.queued("", "closing"), 0, "a place was left behind");
    }
    held.release().unwrap();
}

#[test]
fn dropping_a_lock_on_a_plain_thread_releases_it() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    drop(m.acquire("d", MS(30_000), None).unwrap());
    let again = m.acquire("d", MS(1000), Some(MS(2000))).unwrap();
    again.release().unwrap();
}

#[test]
fn auto_extension_and_wait_lost_from_a_plain_thread() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("ae", MS(300), None).unwrap();
    lock.auto_extend(None);
    assert_eq!(
        lock.wait_lost(Some(MS(800))).unwrap(),
        None,
        "still held after 800 ms"
    );
    server.del(b"ae");
    assert_eq!(
        lock.wait_lost(Some(MS(2000))).unwrap(),
        Some(Some(fencelock::LostReason::Expired))
    );
    assert!(lock.is_lost());
    assert_eq!(lock.finish_scope().unwrap_err().kind(), ErrorKind::NotHeld);
}

#[test]
fn blocking_inside_an_async_runtime_is_refused_not_a_panic() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt.block_on(async { m.acquire("x", MS(1000), None).unwrap_err() });
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("async runtime"), "{e}");
}

#[test]
fn on_lost_may_use_the_blocking_api() {
    // The callback runs outside the runtime: taking the lock back from there works.
    let server = RedisServer::start();
    let m = std::sync::Arc::new(LockManager::new([server.url()]).unwrap());
    let lock = m.acquire("retake", MS(300), None).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let again = std::sync::Arc::clone(&m);
    lock.on_lost(move |why| {
        let retaken = again.acquire("retake", MS(1000), Some(MS(2000)));
        let _ = tx.send((why, retaken.map(|l| l.release())));
    });
    let (why, retaken) = rx.recv_timeout(MS(5000)).expect("on_lost was called");
    assert_eq!(why, fencelock::LostReason::Expired);
    assert!(matches!(retaken, Ok(Ok(()))), "{retaken:?}");
}

/// The family's blocking handles (their methods written by `blocking_calls!` from the async
/// ones): permits counted, shares and the write hold excluding each other, by-token calls,
/// and an interruptible wait for permits given up.
#[test]
fn the_familys_blocking_handles_count_exclude_and_can_be_interrupted() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let sem = m.semaphore("pool", 2).unwrap();
    assert_eq!((sem.name(), sem.limit()), (&b"pool"[..], 2));
    let two = sem.acquire(2, MS(10_000), None).unwrap();
    assert!(
        sem.try_acquire(1, MS(1000)).unwrap().is_none(),
        "a third permit"
    );
    assert_eq!(sem.state().unwrap().held, 2);
    let started = Instant::now();
    let e = m
        .acquire_interruptible(
            sem.as_async()
                .acquire_with(1, &AcquireOptions::new(MS(10_000))),
            MS(20),
            || started.elapsed() > MS(200),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    let validity = sem.extend_by_token(two.token(), MS(20_000)).unwrap();
    assert!(validity > MS(19_000), "extended by token: {validity:?}");
    sem.release_by_token(two.token()).unwrap();
    assert_eq!(sem.state().unwrap().held, 0);
    drop(two); // released by token above: nothing left to release

    let rw = m.rwlock("doc").unwrap();
    let r1 = rw.read(MS(10_000), None).unwrap();
    let r2 = rw.try_read(MS(10_000)).unwrap().expect("readers share");
    assert!(
        rw.try_write(MS(1000)).unwrap().is_none(),
        "a writer among readers"
    );
    assert_eq!(rw.state().unwrap().readers, 2);
    r1.release().unwrap();
    r2.release().unwrap();
    let w = rw.write(MS(10_000), Some(MS(1000))).unwrap();
    assert!(
        rw.try_read(MS(1000)).unwrap().is_none(),
        "a reader beside the writer"
    );
    assert!(rw.state().unwrap().writer);
    w.release().unwrap();
}

/// The blocking election (issue 54): a term, its value read and proclaimed, an observer that
/// long-polls, and a resign handing over to the next candidate in line.
#[test]
fn the_blocking_election_leads_proclaims_and_is_observed() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let e = m.election("blocking-election").unwrap();
    let mut observer = e.observe();
    assert_eq!(observer.next().unwrap().unwrap(), None);
    assert_eq!(
        observer.next_within(Duration::from_millis(50)).unwrap(),
        None,
        "no change yet"
    );
    let term = e.campaign("a", Duration::from_secs(30), None).unwrap();
    let leader = observer
        .next_within(Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(
        leader.map(|l| (l.value, l.fencing_token)),
        Some(("a".to_owned(), term.fencing_token()))
    );
    term.proclaim("b").unwrap();
    assert_eq!(e.leader().unwrap().unwrap().value, "b");
    let waiting = {
        let e = e.clone();
        std::thread::spawn(move || e.campaign("c", Duration::from_secs(30), None))
    };
    let in_line = || m.state("blocking-election").unwrap().waiters == Some(1);
    fencelock_testkit::wait_until(Duration::from_secs(10), "c in line", in_line);
    assert!(e
        .try_campaign("d", Duration::from_secs(30))
        .unwrap()
        .is_none());
    let first = term.fencing_token();
    term.resign().unwrap();
    let next = waiting.join().unwrap().unwrap();
    assert!(next.fencing_token() > first);
    assert_eq!(e.leader().unwrap().unwrap().value, "c");
    next.resign().unwrap();
    assert_eq!(e.leader().unwrap(), None);
}

/// How many script calls `server` ran so far (INFO commandstats' evalsha).
fn evalsha_calls(server: &RedisServer) -> u64 {
    let fencelock_testkit::Reply::Bulk(Some(info)) = server.cmd(&[b"INFO", b"commandstats"]) else {
        panic!("INFO commandstats")
    };
    let info = String::from_utf8(info).unwrap();
    let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:"));
    line.and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// An observer waited on in chunks (`next_within`, the C, Java and Go long polls) reads the
/// servers only when something changed: a chunk that runs out leaves its wait to the next.
#[test]
fn an_observer_waited_on_in_chunks_reads_only_on_a_change() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let e = m.election("chunked").unwrap();
    let mut observer = e.observe();
    assert_eq!(observer.next().unwrap().unwrap(), None);
    let before = evalsha_calls(&server);
    for _ in 0..5 {
        assert_eq!(
            observer.next_within(Duration::from_millis(50)).unwrap(),
            None
        );
    }
    assert_eq!(
        evalsha_calls(&server),
        before,
        "no read while nothing changed"
    );
    let term = e.campaign("x", Duration::from_secs(30), None).unwrap();
    let report = observer.next_within(Duration::from_secs(10)).unwrap();
    assert_eq!(report.unwrap().map(|l| l.value), Some("x".to_owned()));
    term.resign().unwrap();
}
