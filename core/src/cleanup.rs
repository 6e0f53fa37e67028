//! Cleanups that run in the background: a dropped lock's release, a cancelled acquire's votes
//! and place in line given up. They are counted, per manager and for the whole process, so
//! that a process about to exit can wait for them ([`LockManager::settle`](crate::LockManager::settle),
//! [`settle_all`]: what the bindings' exit hooks call) instead of leaving a vote or a place
//! behind on a server until it expires (a Python waiter interrupted by Ctrl-C returns at once,
//! and its interpreter often exits at once).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// The background cleanups of every manager of the process, for [`settle_all`].
static PROCESS: Mutex<usize> = Mutex::new(0);
static PROCESS_DONE: Condvar = Condvar::new();

/// Waits, blocking the calling thread, until no background cleanup of any manager of the
/// process runs, at most `limit`; returns whether none runs. For exit hooks (Python's
/// `atexit`, Node's `exit`, a JVM shutdown hook, a C program before `exit`): each cleanup is
/// bounded by its own time limit, and runs on its manager's runtime, not on this thread.
pub fn settle_all(limit: Duration) -> bool {
    let until = Instant::now().checked_add(limit);
    let mut running = lock(&PROCESS);
    while *running > 0 {
        let left = match until {
            Some(until) => until.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        };
        if left.is_zero() {
            return false;
        }
        running = PROCESS_DONE
            .wait_timeout(running, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

use tokio::sync::Notify;

/// The background cleanups of one manager.
#[derive(Default)]
pub(crate) struct Cleanups {
    running: AtomicUsize,
    finished: Notify,
}

/// Counts one cleanup while it exists: dropped when the cleanup ends, and also when its task
/// is dropped unfinished (the runtime shut down), so a count is never left behind.
struct Running(Arc<Cleanups>);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.finished.notify_waiters();
        }
        let mut process = lock(&PROCESS);
        *process -= 1;
        if *process == 0 {
            PROCESS_DONE.notify_all();
        }
    }
}

impl Cleanups {
    /// Runs `cleanup` as a task of `runtime`, counted until it ends.
    pub fn spawn<F>(self: &Arc<Self>, runtime: &tokio::runtime::Handle, cleanup: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.running.fetch_add(1, Ordering::AcqRel);
        *lock(&PROCESS) += 1;
        let running = Running(Arc::clone(self));
        runtime.spawn(async move {
            let _running = running;
            cleanup.await;
        });
    }

    /// How many cleanups are running.
    pub fn count(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Waits until no cleanup runs, at most until `until` (`None`: no limit). Returns whether
    /// none runs.
    pub async fn settle(&self, until: Option<Instant>) -> bool {
        loop {
            let finished = self.finished.notified();
            tokio::pin!(finished);
            // Registered before the count is read, so an end between the two is not missed.
            finished.as_mut().enable();
            if self.count() == 0 {
                return true;
            }
            match until {
                Some(until) => {
                    if tokio::time::timeout_at(until.into(), finished)
                        .await
                        .is_err()
                    {
                        return self.count() == 0;
                    }
                }
                None => finished.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn settle_waits_for_every_cleanup_and_no_longer() {
        let cleanups = Arc::new(Cleanups::default());
        let runtime = tokio::runtime::Handle::current();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        cleanups.spawn(&runtime, async move {
            let _ = rx.await;
        });
        cleanups.spawn(&runtime, tokio::time::sleep(Duration::from_millis(20)));
        assert_eq!(cleanups.count(), 2);
        // One cleanup never ends by itself: the wait stops at its limit and says so.
        let limit = Instant::now() + Duration::from_millis(200);
        assert!(!cleanups.settle(Some(limit)).await);
        assert_eq!(
            cleanups.count(),
            1,
            "the sleeping cleanup ended, the blocked one did not"
        );
        drop(tx);
        assert!(cleanups.settle(None).await);
        assert_eq!(cleanups.count(), 0);
    }

    #[test]
    fn settle_all_waits_for_the_cleanups_of_every_manager() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let (one, two) = (Arc::new(Cleanups::default()), Arc::new(Cleanups::default()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        one.spawn(runtime.handle(), async move {
            let _ = rx.await;
        });
        two.spawn(runtime.handle(), async {
            tokio::time::sleep(Duration::from_millis(50)).await
        });
        // Other tests of this binary may have cleanups of their own running: the wait is for
        // all of them, so only its outcome with one that never ends is asserted here.
        assert!(
            !settle_all(Duration::from_millis(200)),
            "a cleanup never ends"
        );
        assert_eq!(two.count(), 0, "the sleeping one ended meanwhile");
        drop(tx);
        assert!(settle_all(Duration::from_secs(10)));
        assert_eq!(one.count(), 0);
    }

    #[test]
    fn a_cleanup_dropped_with_its_runtime_is_not_counted_any_more() {
        let cleanups = Arc::new(Cleanups::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        cleanups.spawn(runtime.handle(), std::future::pending());
        assert_eq!(cleanups.count(), 1);
        drop(runtime);
        assert_eq!(cleanups.count(), 0);
    }
}
