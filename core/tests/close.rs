//! `blocking::LockManager::close`: the runtime's thread is gone when it returns (Linux: the
//! test counts this process's threads named "fencelock"). Its own test binary, so no other
//! test's manager runs beside it.

use std::time::Duration;

use fencelock::blocking::LockManager;
use fencelock_testkit::RedisServer;

/// The runtime threads left once they had `within` to leave: tokio's shutdown returns when its
/// threads have finished their work, and each leaves the process's thread list a moment later
/// (thread-local destructors, the exit itself): CI once counted one still there right after
/// `close` returned. A thread still listed after `within` is a thread `close` did not stop.
fn runtime_threads_after(within: Duration) -> usize {
    let until = std::time::Instant::now() + within;
    loop {
        let n = runtime_threads();
        if n == 0 || std::time::Instant::now() >= until {
            return n;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn runtime_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "fencelock")
        .count()
}

#[test]
fn close_stops_the_runtime_thread_unless_a_lock_still_uses_it() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    m.acquire("c", Duration::from_secs(10), None)
        .unwrap()
        .release()
        .unwrap();
    assert!(runtime_threads() >= 1);
    m.close(Duration::from_secs(2));
    assert_eq!(
        runtime_threads_after(Duration::from_millis(500)),
        0,
        "close() left the runtime thread running"
    );

    // A lock still alive keeps the runtime: close() does not stop it under the lock's feet.
    let m = LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("c", Duration::from_secs(10), None).unwrap();
    m.close(Duration::from_secs(2));
    assert!(runtime_threads() >= 1);
    lock.extend(Duration::from_secs(10)).unwrap();
    lock.release().unwrap();
}
