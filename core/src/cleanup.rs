//! Cleanups that run in the background: a dropped lock's release, a cancelled acquire's votes
//! and place in line given up. They are counted, so that a process about to exit can wait for
//! them ([`LockManager::settle`](crate::LockManager::settle)) instead of leaving a vote or a
//! place behind on a server until it expires.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

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
    }
}

impl Cleanups {
    /// Runs `cleanup` as a task of `runtime`, counted until it ends.
    pub fn spawn<F>(self: &Arc<Self>, runtime: &tokio::runtime::Handle, cleanup: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.running.fetch_add(1, Ordering::AcqRel);
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
