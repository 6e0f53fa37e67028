//! Acquisitions started with `blocking::LockManager::start`: they complete through a
//! function, hold no thread of the caller's, and `Pending::cancel` (or closing the manager)
//! ends them with `Cancelled`, leaving nothing in the servers' queues.

use std::sync::mpsc;
use std::thread::ThreadId;
use std::time::Duration;

use fencelock::blocking::{Lock, LockManager};
use fencelock::{AcquireOptions, ErrorKind, LeaseKind, Result};
use fencelock_testkit::RedisServer;

/// Far above anything here takes: a hang, not a speed check.
const HANG: Duration = Duration::from_secs(30);

fn start(m: &LockManager, name: &str) -> (fencelock::blocking::Pending, Outcomes) {
    start_on(m, name, false)
}

type Outcomes = mpsc::Receiver<(ThreadId, Result<Lock>)>;

/// Starts acquiring `name` (`at_once` or not); the outcome arrives with the thread it ended on.
fn start_on(
    m: &LockManager,
    name: &str,
    at_once: bool,
) -> (fencelock::blocking::Pending, Outcomes) {
    let (tx, rx) = mpsc::channel();
    let opts = AcquireOptions::new(Duration::from_secs(30));
    let acquisition = m
        .as_async()
        .prepare_lease(name, LeaseKind::Lock, &opts)
        .unwrap();
    let done = move |outcome| {
        let _ = tx.send((std::thread::current().id(), outcome));
    };
    (m.start(acquisition, done, at_once).unwrap(), rx)
}

#[test]
fn started_at_once_it_ends_in_the_start_call_when_it_need_not_wait() {
    let srv = RedisServer::start();
    let m = LockManager::new([srv.url()]).unwrap();
    // The manager's first call opens its connections; the calling thread's own comes after.
    assert!(!m.is_locked("free").unwrap());
    let me = std::thread::current().id();
    let (_pending, rx) = start_on(&m, "free", true);
    let (on, outcome) = rx.try_recv().expect("ended before the start call returned");
    assert_eq!(on, me, "ended on the calling thread");
    let lock = outcome.unwrap();
    assert_eq!(srv.get(b"free").as_deref(), Some(lock.token()));
    // A held name: the start call returns with the wait under way, which ends elsewhere.
    let (_pending, rx) = start_on(&m, "free", true);
    assert!(
        rx.try_recv().is_err(),
        "a wait does not end in the start call"
    );
    lock.release().unwrap();
    let (on, outcome) = rx.recv_timeout(HANG).unwrap();
    assert_ne!(on, me, "the wait ended on a runtime thread");
    let next = outcome.unwrap();
    assert_eq!(srv.get(b"free").as_deref(), Some(next.token()));
    next.release().unwrap();
}

#[test]
fn a_cancelled_wait_ends_cancelled_and_gives_its_place_up() {
    let srv = RedisServer::start();
    let m = LockManager::new([srv.url()]).unwrap();
    let held = m
        .acquire("cancelled", Duration::from_secs(30), Some(Duration::ZERO))
        .unwrap();
    let (pending, rx) = start(&m, "cancelled");
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "still waiting"
    );
    assert!(pending.cancel());
    let e = rx.recv_timeout(HANG).unwrap().1.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert!(!pending.cancel(), "cancelled once");
    held.release().unwrap();
    assert!(fencelock::settle_all(HANG));
    let next = m
        .try_acquire("cancelled", Duration::from_secs(1))
        .unwrap()
        .expect("free: the cancelled waiter's place is gone");
    next.release().unwrap();
}

#[test]
fn a_started_acquisition_is_handed_the_lock_on_release() {
    let srv = RedisServer::start();
    let m = LockManager::new([srv.url()]).unwrap();
    let held = m
        .acquire("handed", Duration::from_secs(30), Some(Duration::ZERO))
        .unwrap();
    let (_pending, rx) = start(&m, "handed");
    held.release().unwrap();
    let lock = rx.recv_timeout(HANG).unwrap().1.unwrap();
    assert!(lock.fencing_token() > 0);
    lock.release().unwrap();
}

#[test]
fn closing_the_manager_ends_a_wait_cancelled() {
    let srv = RedisServer::start();
    let holder = LockManager::new([srv.url()]).unwrap();
    let held = holder
        .acquire("closing", Duration::from_secs(30), Some(Duration::ZERO))
        .unwrap();
    let m = LockManager::new([srv.url()]).unwrap();
    let (_pending, rx) = start(&m, "closing");
    assert!(
        rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "still waiting"
    );
    m.close(Duration::from_secs(5));
    let e = rx.recv_timeout(HANG).unwrap().1.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    held.release().unwrap();
}

#[test]
fn bad_arguments_fail_before_anything_starts() {
    let m = LockManager::new(["redis://127.0.0.1:1"]).unwrap();
    let opts = AcquireOptions::new(Duration::from_secs(30));
    let e = m
        .as_async()
        .prepare_lease("", LeaseKind::Lock, &opts)
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let tiny = AcquireOptions::new(Duration::from_micros(10));
    let e = m
        .as_async()
        .prepare_lease("x", LeaseKind::Lock, &tiny)
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let too_many = LeaseKind::Permits { count: 4, limit: 3 };
    let e = m
        .as_async()
        .prepare_lease("x", too_many, &opts)
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}
