//! Acquisitions started with `blocking::LockManager::start`: they complete through a
//! function, hold no thread of the caller's, and `Pending::cancel` (or closing the manager)
//! ends them with `Cancelled`, leaving nothing in the servers' queues.

use std::sync::mpsc;
use std::time::Duration;

use fencelock::blocking::{Lock, LockManager};
use fencelock::{AcquireOptions, ErrorKind, LeaseKind, Result};
use fencelock_testkit::RedisServer;

/// Far above anything here takes: a hang, not a speed check.
const HANG: Duration = Duration::from_secs(30);

fn start(
    m: &LockManager,
    name: &str,
) -> (fencelock::blocking::Pending, mpsc::Receiver<Result<Lock>>) {
    let (tx, rx) = mpsc::channel();
    let opts = AcquireOptions::new(Duration::from_secs(30));
    let acquisition = m
        .as_async()
        .prepare_lease(name, LeaseKind::Lock, &opts)
        .unwrap();
    let pending = m
        .start(acquisition, move |outcome| {
            let _ = tx.send(outcome);
        })
        .unwrap();
    (pending, rx)
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
    let e = rx.recv_timeout(HANG).unwrap().unwrap_err();
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
    let lock = rx.recv_timeout(HANG).unwrap().unwrap();
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
    let e = rx.recv_timeout(HANG).unwrap().unwrap_err();
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
