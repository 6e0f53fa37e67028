//! `fl_pending`: acquisitions that return at once and complete through a callback, so that a
//! program with thousands of waiters (goroutines, an event loop) does not hold a thread for
//! each. The wait runs in the manager's runtime; `fl_pending_cancel` gives it up.

use std::ffi::{c_char, c_void};

use fencelock::blocking::{LockManager, Pending};
use fencelock::{LeaseKind, Result};

use crate::error::{boundary, boundary_or};
use crate::error::{fl_status, set_last_core_error, status_of};
use crate::family::{fl_rwlock, fl_semaphore};
use crate::ffi;
use crate::lock::{fl_lock, flagged_options, manager, start_flags};
use crate::manager::fl_manager;

/// An acquisition under way, started by `fl_lock_acquire_start`, `fl_semaphore_acquire_start`
/// or `fl_rwlock_acquire_start`. Opaque: freed by `fl_pending_free` (which does not cancel
/// it). Thread-safe.
pub struct fl_pending {
    inner: Pending,
}

/// Called once when an acquisition started with `fl_*_acquire_start` ends, on one of the
/// manager's threads (or, with `FL_ACQUIRE_INLINE`, on the calling thread before the start
/// call returns, when it ended without waiting): `status` is `FL_OK` with `lock` a new handle the callee owns (free it
/// with `fl_lock_free`), or the failure with `lock` NULL (`FL_CANCELLED` after
/// `fl_pending_cancel`, or when the manager was freed first); during the call,
/// `fl_last_error_message` and `fl_last_error_server*` describe the failure. `user_data` is
/// the start call's argument. The callback must return soon (it holds up the manager's
/// other work) and must not free the manager.
pub type fl_acquire_done =
    Option<unsafe extern "C" fn(status: fl_status, lock: *mut fl_lock, user_data: *mut c_void)>;

/// The caller's callback and its argument, carried to the runtime thread that calls it.
struct Completion {
    done: unsafe extern "C" fn(fl_status, *mut fl_lock, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the caller hands `user_data` to whichever thread calls `done` (the header says the
// callback runs on one of the manager's threads); we never dereference it.
unsafe impl Send for Completion {}

impl Completion {
    fn call(self, outcome: Result<fencelock::blocking::Lock>) {
        let call = || match outcome.and_then(fl_lock::new) {
            Ok(lock) => {
                let lock = Box::into_raw(Box::new(lock));
                // SAFETY: the caller's function pointer, with its own argument.
                unsafe { (self.done)(fl_status::FL_OK, lock, self.user_data) }
            }
            Err(e) => {
                set_last_core_error(&e);
                // SAFETY: as above.
                unsafe { (self.done)(status_of(e.kind()), std::ptr::null_mut(), self.user_data) }
            }
        };
        // A panic must not unwind into the runtime's thread; there is no caller to tell.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call));
    }
}

/// Starts a lease's acquisition after checking every argument (before any network call).
///
/// # Safety
/// `token` is NULL or a NUL-terminated string.
unsafe fn start(
    (m, name, kind): (&LockManager, &[u8], LeaseKind),
    token: *const c_char,
    (ttl_ms, wait_ms, flags): (u64, i64, u32),
    callback: (fl_acquire_done, *mut c_void),
    out: *mut *mut fl_pending,
) -> Result<()> {
    start_prepared(m, callback, flags, out, |flags| {
        // SAFETY: by contract.
        let opts = unsafe { flagged_options(token, (ttl_ms, wait_ms, flags)) }?;
        m.as_async().prepare_lease(name, kind, &opts)
    })
}

/// What every `fl_*_acquire_start` call does once it has its handle: checks `out` and `done`,
/// takes `FL_ACQUIRE_INLINE` out of `flags`, has `prepare` check the rest of the arguments
/// with the other flags and make the acquisition (before any network call), then starts it on
/// `m`'s runtime (first on this thread, with `FL_ACQUIRE_INLINE`), its outcome to the
/// caller's callback, and hands out the handle in `*out`.
pub(crate) fn start_prepared<F>(
    m: &LockManager,
    (done, user_data): (fl_acquire_done, *mut c_void),
    flags: u32,
    out: *mut *mut fl_pending,
    prepare: impl FnOnce(u32) -> Result<F>,
) -> Result<()>
where
    F: std::future::Future<Output = Result<fencelock::Lock>> + Send + 'static,
{
    let out = ffi::out(out, "out")?;
    let done = done.ok_or_else(|| ffi::invalid("done is NULL"))?;
    let (flags, inline) = start_flags(flags);
    let acquisition = prepare(flags)?;
    let completion = Completion { done, user_data };
    let inner = m.start(acquisition, move |outcome| completion.call(outcome), inline)?;
    *out = Box::into_raw(Box::new(fl_pending { inner }));
    Ok(())
}

/// Starts acquiring the lock `name` and returns at once: the wait runs in the manager's
/// runtime (no thread of the caller's is held, however many wait), and `done(status, lock,
/// user_data)` is called once when it ends (see `fl_acquire_done`). The arguments are those
/// of `fl_lock_acquire_with_flags` (`token` NULL for a random one; `wait_ms` -1 waits until
/// acquired or cancelled) and are checked before this returns: a bad one is this call's
/// error, and `done` is then never called. On success `*out` is a handle to cancel the
/// acquisition with (`fl_pending_cancel`), to free with `fl_pending_free` whenever it is no
/// longer needed (before or after `done`).
///
/// Errors: `FL_INVALID_ARGUMENT` as `fl_lock_acquire_with_flags`, or for a NULL `done` or
/// `out`; `FL_UNAVAILABLE` when the manager's runtime has shut down.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire_start(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    done: fl_acquire_done,
    user_data: *mut c_void,
    out: *mut *mut fl_pending,
) -> fl_status {
    boundary(|| {
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        let lease = (&m.inner, name, LeaseKind::Lock);
        // SAFETY: forwarded under the caller's contract.
        unsafe {
            start(
                lease,
                token,
                (ttl_ms, wait_ms, flags),
                (done, user_data),
                out,
            )
        }
    })
}

/// As `fl_lock_acquire_start`, for `count` permits of a semaphore (the arguments of
/// `fl_semaphore_acquire`).
///
/// Errors: as `fl_semaphore_acquire`'s argument checks, or a NULL `done` or `out`.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_acquire_start(
    semaphore: *const fl_semaphore,
    count: u32,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    done: fl_acquire_done,
    user_data: *mut c_void,
    out: *mut *mut fl_pending,
) -> fl_status {
    boundary(|| {
        let s = crate::family::semaphore(semaphore)?;
        let times = (ttl_ms, wait_ms, flags);
        // SAFETY: forwarded under the caller's contract.
        unsafe { start(s.lease(count), token, times, (done, user_data), out) }
    })
}

/// As `fl_lock_acquire_start`, for a read share (`FL_RW_READ`) or the write hold
/// (`FL_RW_WRITE`) of a read-write lock (the arguments of `fl_rwlock_acquire`).
///
/// Errors: as `fl_rwlock_acquire`'s argument checks, or a NULL `done` or `out`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_acquire_start(
    rwlock: *const fl_rwlock,
    mode: u32,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    done: fl_acquire_done,
    user_data: *mut c_void,
    out: *mut *mut fl_pending,
) -> fl_status {
    boundary(|| {
        let r = crate::family::rwlock(rwlock)?;
        let times = (ttl_ms, wait_ms, flags);
        // SAFETY: forwarded under the caller's contract.
        unsafe { start(r.lease(mode)?, token, times, (done, user_data), out) }
    })
}

/// Gives up an acquisition started by `fl_*_acquire_start`, if it has not ended: its place
/// in line is given up and whatever it won is released, in the background, and its `done`
/// is called with `FL_CANCELLED` (soon, on one of the manager's threads). If it has already
/// ended (or ends at this moment), `done` has (or gets) that outcome instead: a lock then
/// belongs to the callee as always. Calling it twice is harmless.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL `pending`.
#[no_mangle]
pub unsafe extern "C" fn fl_pending_cancel(pending: *const fl_pending) -> fl_status {
    boundary(|| {
        // SAFETY: NULL or a live handle, by contract.
        let p = unsafe { ffi::obj(pending, "pending") }?;
        p.inner.cancel();
        Ok(())
    })
}

/// Frees the handle of a started acquisition; the acquisition goes on (cancel it first with
/// `fl_pending_cancel` to stop it) and its `done` is still called. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn fl_pending_free(pending: *mut fl_pending) {
    boundary_or((), || {
        if !pending.is_null() {
            // SAFETY: made by a start call and not freed before, by contract.
            drop(unsafe { Box::from_raw(pending) });
        }
    })
}
