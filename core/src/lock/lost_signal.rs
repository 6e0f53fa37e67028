//! A lock's lost signal: a future that completes when it is lost, callbacks run on a thread
//! of their own, and a view of the loss that outlives the handle.

use std::future::Future;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Instant;

use super::{Holding, Lock, Status};
use crate::lost::LostReason;

impl Lock {
    /// Completes when the lock is lost (`Some` with why), or when it is released, detached or
    /// dropped first (`None`). Its validity running out counts as lost, so without
    /// auto-extension this completes at the end of the validity.
    pub fn lost(&self) -> impl Future<Output = Option<LostReason>> + Send + 'static {
        let shared = Arc::clone(&self.shared);
        let mut rx = shared.status.subscribe();
        async move {
            loop {
                match *rx.borrow_and_update() {
                    Status::Lost(why) => return Some(why),
                    Status::Released => return None,
                    Status::Held => {}
                }
                let until = shared.valid_until();
                if Instant::now() >= until {
                    shared.mark_lost(shared.expiry_reason());
                    continue; // marked now, or by someone else meanwhile, or released
                }
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { return None },
                    _ = tokio::time::sleep_until(until.into()) => {}
                }
            }
        }
    }

    /// A view of whether and why this lock was lost that outlives the handle: after a
    /// [`release`](Lock::release) or the end of a scope it still tells a loss that was known
    /// before, or that the release found.
    pub fn lost_view(&self) -> LostView {
        LostView {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Calls `f` once, with why, when the lock is lost; never when it is released, detached
    /// or dropped first. `f` runs on a thread of its own, outside any async runtime (never on
    /// the thread that called this, never while a fencelock call waits for it), so it may
    /// take its time and may call fencelock, the blocking API included. Each call registers
    /// one more callback.
    pub fn on_lost(&self, f: impl FnOnce(LostReason) + Send + 'static) {
        let Some(runtime) = &self.shared.runtime else {
            return;
        };
        let lost = self.lost();
        let pool = runtime.clone();
        runtime.spawn(async move {
            if let Some(why) = lost.await {
                call_outside_runtime(&pool, move || f(why));
            }
        });
    }
}

/// Whether and why a lock was lost, readable after its handle is released or dropped
/// ([`Lock::lost_view`]); the bindings keep one beside their lock objects.
#[derive(Clone)]
pub struct LostView {
    shared: Arc<Holding>,
}

impl LostView {
    /// Why the lock was lost: while it is held, as [`Lock::lost_reason`]; once released, the
    /// loss known before the release or found by it; `None` when it was never lost (or was
    /// detached).
    pub fn reason(&self) -> Option<LostReason> {
        self.shared.lost_reason_ever()
    }
}

impl std::fmt::Debug for LostView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LostView")
            .field("reason", &self.reason())
            .finish()
    }
}

/// Runs `f` on a new thread, outside the runtime's context (the blocking API refuses to run
/// inside one); if no thread can be started, on the runtime's blocking pool instead.
fn call_outside_runtime(runtime: &tokio::runtime::Handle, f: impl FnOnce() + Send + 'static) {
    let f = Arc::new(StdMutex::new(Some(f)));
    let on_thread = Arc::clone(&f);
    let started = std::thread::Builder::new()
        .name("fencelock-on-lost".into())
        .spawn(move || {
            let f = on_thread.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(f) = f {
                f();
            }
        });
    if started.is_err() {
        let f = f.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(f) = f {
            drop(runtime.spawn_blocking(f));
        }
    }
}
