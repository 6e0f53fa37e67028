//! The undo guard: gives an attempt's votes (and, when asked, a waiter's place in the queue)
//! back on every server unless disarmed. Awaited on the normal path; run in the background
//! when the future that owns it is dropped mid-way (a cancelled acquire), on the runtime the
//! attempt started on, since the drop may happen outside it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Engine, Target};
use crate::timing::BACKGROUND_CLEANUP_TIMEOUT;

/// Releases an attempt's votes on every server unless disarmed.
pub(crate) struct UndoGuard {
    armed: Option<Undo>,
}

struct Undo {
    engine: Arc<Engine>,
    target: Arc<Target>,
    /// Per-server timeout of the undo when awaited: the attempt's (a dead server must not
    /// hold a waiter up longer than it held up the attempt).
    timeout: Duration,
    runtime: Option<tokio::runtime::Handle>,
}

impl Undo {
    /// Releases the attempt's votes; with `leave`, also the waiter's place in the queue.
    async fn run(&self, leave: bool) {
        let _ = self.engine.release(&self.target, self.timeout, leave).await;
    }
}

impl UndoGuard {
    /// An armed guard for `target`'s votes, undone within `timeout` per server when awaited.
    pub fn new(engine: &Arc<Engine>, target: &Arc<Target>, timeout: Duration) -> UndoGuard {
        UndoGuard {
            armed: Some(Undo {
                engine: Arc::clone(engine),
                target: Arc::clone(target),
                timeout,
                runtime: tokio::runtime::Handle::try_current().ok(),
            }),
        }
    }

    /// Nothing to undo any more.
    pub fn disarm(&mut self) {
        self.armed = None;
    }

    /// Gives the waiter's place in the queue up (and any vote), waiting for it at most until
    /// `until`; cancel-safe like [`run`](Self::run). Returns whether it finished in time.
    pub async fn leave(&mut self, until: Option<Instant>) -> bool {
        self.finish(true, until).await
    }

    /// Runs the undo (keeping the waiter's place in the queue), waiting for it at most until
    /// `until`. Returns whether it finished in time; if not, it goes on in the background.
    pub async fn run(&mut self, until: Option<Instant>) -> bool {
        self.finish(false, until).await
    }

    /// The undo runs as its own task, so that cancelling the attempt while it waits (an
    /// aborted acquire dropping its future) cannot stop the undo half-way and leave a vote
    /// behind on some server until its TTL runs out, and so that a caller out of time can
    /// leave it running.
    async fn finish(&mut self, leave: bool, until: Option<Instant>) -> bool {
        let Some(undo) = self.armed.take() else {
            return true;
        };
        let done = async move {
            match undo.runtime.clone() {
                Some(runtime) => {
                    let _ = runtime.spawn(async move { undo.run(leave).await }).await;
                }
                None => undo.run(leave).await,
            }
        };
        match until {
            Some(u) => tokio::time::timeout_at(u.into(), done).await.is_ok(),
            None => {
                done.await;
                true
            }
        }
    }
}

impl Drop for UndoGuard {
    fn drop(&mut self) {
        if let Some(mut undo) = self.armed.take() {
            if let Some(runtime) = undo.runtime.clone() {
                // Nobody waits for it: give slow servers longer.
                undo.timeout = undo.timeout.max(BACKGROUND_CLEANUP_TIMEOUT);
                runtime.spawn(async move { undo.run(true).await });
            }
        }
    }
}
