//! `Lock::detach`: giving up a handle while leaving the lock held (the request-id pattern).

use std::time::Duration;

use fencelock::blocking::LockManager;
use fencelock::{AcquireOptions, ErrorKind};
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn a_detached_lock_stays_held_until_released_by_token() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    let opts = AcquireOptions::new(MS(30_000))
        .wait(Some(MS(0)))
        .token("req-1");
    let lock = m.acquire_with("job", &opts).unwrap();
    lock.detach();
    // A dropped (not detached) lock is released in the background: drop one after the
    // detach, and once its release is done, the detached lock's would have been too.
    drop(m.acquire("marker", MS(30_000), Some(MS(0))).unwrap());
    fencelock_testkit::wait_until(Duration::from_secs(5), "the dropped lock released", || {
        server.get(b"marker").is_none()
    });
    assert_eq!(server.get(b"job").as_deref(), Some(&b"req-1"[..]));
    assert!(server.pttl(b"job") > 20_000);
    let err = m.try_acquire("job", MS(1000)).unwrap();
    assert!(err.is_none(), "still held by the detached acquisition");
    m.release_by_token("job", "req-1").unwrap();
    assert_eq!(server.get(b"job"), None);
    let e = m.release_by_token("job", "req-1").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
}
