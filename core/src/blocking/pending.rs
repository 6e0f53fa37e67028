//! Acquisitions that do not block their caller: started on the manager's runtime, they report
//! through a completion function, and [`Pending::cancel`] gives them up. For callers whose
//! waits must not each hold an OS thread (the C ABI's `fl_*_acquire_start`, which the Go
//! binding's goroutines wait on).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};

use tokio::sync::oneshot;

use super::{Lock, LockManager};
use crate::error::{Error, Result};
use crate::lane::on_caller;

/// An acquisition started by [`LockManager::start`]. Dropping it does not cancel the
/// acquisition; [`cancel`](Self::cancel) does.
#[derive(Clone, Debug)]
pub struct Pending {
    cancel: Arc<Mutex<Option<oneshot::Sender<()>>>>,
}

impl Pending {
    /// Gives the acquisition up, if it has not completed yet: its future is dropped, which
    /// gives its place in line up and undoes what it won, in the background, and the
    /// completion function gets [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled).
    /// Completed (or cancelled) before, nothing happens: the completion function has its
    /// outcome. Returns whether this call cancelled it.
    pub fn cancel(&self) -> bool {
        let sender = self.cancel.lock().unwrap_or_else(|e| e.into_inner()).take();
        sender.is_some_and(|s| s.send(()).is_ok())
    }
}

impl LockManager {
    /// Runs `acquisition` (an acquire of this manager's async API, or of its semaphores' and
    /// read-write locks') on the manager's runtime and returns at once; `done` gets its
    /// outcome, exactly once, on a runtime thread: the lock, the acquisition's error, or
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) after [`Pending::cancel`].
    /// `done` must not block for long (it holds up the manager's other calls).
    ///
    /// With `at_once`, the acquisition is first polled on the calling thread (its calls
    /// riding the thread's own connection, see [`crate::lane`]): one that ends without
    /// waiting (a free lock, a refusal with no wait, a failure) calls `done` there, before
    /// this returns, with no hand-off to a runtime thread; one that must wait goes on in the
    /// runtime as without it.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when the manager's runtime
    /// has shut down (`done` is not called then).
    pub fn start(
        &self,
        acquisition: impl Future<Output = Result<crate::Lock>> + Send + 'static,
        done: impl FnOnce(Result<Lock>) + Send + 'static,
        at_once: bool,
    ) -> Result<Pending> {
        let runtime = self
            .runtime
            .0
            .as_ref()
            .ok_or_else(|| Error::unavailable("the fencelock runtime has shut down"))?;
        let (tx, rx) = oneshot::channel::<()>();
        // Weak: a waiting acquisition must not keep the runtime alive, or closing the
        // manager (`close`) would not end it.
        let holder = Arc::downgrade(&self.runtime);
        let mut done = Done(Some(Box::new(done)));
        let mut task = Box::pin(async move {
            // A dropped `Pending` drops the sender: not a cancellation.
            let cancelled = async {
                if rx.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let outcome = tokio::select! {
                biased;
                lock = acquisition => lock.and_then(|inner| {
                    let runtime = holder.upgrade().ok_or_else(|| {
                        Error::cancelled("the acquisition was given up: its manager was closed")
                    })?;
                    Ok(Lock { inner, runtime })
                }),
                () = cancelled => Err(Error::cancelled("the acquisition was cancelled")),
            };
            done.call(outcome);
        });
        let ended = at_once
            && Inline::enter().is_some_and(|_inline| {
                let _in_runtime = runtime.enter();
                let mut cx = Context::from_waker(Waker::noop());
                // Polled again by the runtime, with its waker, if not ready now.
                std::pin::pin!(on_caller(task.as_mut()))
                    .poll(&mut cx)
                    .is_ready()
            });
        if !ended {
            runtime.spawn(task);
        }
        Ok(Pending {
            cancel: Arc::new(Mutex::new(Some(tx))),
        })
    }
}

/// A start call polling its acquisition on the calling thread. At most one per processor at
/// once: each holds its thread for a round trip, and a caller whose threads are cheap to
/// block but costly to add (Go makes a new OS thread for each call that blocks) starting
/// thousands of acquisitions at once must not get a thread for each. The others start in the
/// runtime at once, as without `at_once`.
struct Inline;

static INLINE: AtomicUsize = AtomicUsize::new(0);

impl Inline {
    fn enter() -> Option<Inline> {
        if INLINE.fetch_add(1, Ordering::AcqRel) < crate::direct::processors() {
            Some(Inline)
        } else {
            INLINE.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for Inline {
    fn drop(&mut self) {
        INLINE.fetch_sub(1, Ordering::AcqRel);
    }
}

type Completion = Box<dyn FnOnce(Result<Lock>) + Send>;

/// The completion function, called exactly once: with the outcome, or, when the task is
/// dropped unfinished (the manager closed, its runtime shut down), with `Cancelled`.
struct Done(Option<Completion>);

impl Done {
    fn call(&mut self, outcome: Result<Lock>) {
        if let Some(f) = self.0.take() {
            f(outcome);
        }
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        self.call(Err(Error::cancelled(
            "the acquisition was given up: its manager was closed",
        )));
    }
}
