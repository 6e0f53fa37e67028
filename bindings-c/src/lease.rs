//! The one body behind the coordination family's C entry points (`fl_semaphore_*`,
//! `fl_rwlock_*`, in family.rs): a lease of a manager, name and kind acquired (waiting,
//! interruptibly or scoped), tried once, released or extended by its token.

use std::ffi::{c_char, c_void};

use fencelock::blocking::{Lock, LockManager};
use fencelock::{display_name, AcquireOptions, Error, LeaseKind, Result};

use crate::ffi;
use crate::lock::{
    fl_interrupt_callback, fl_lock, fl_lock_callback, flagged_options, hand_out, run_scoped,
    INTERRUPT_POLL,
};

/// How a lease is acquired: waiting as `wait_ms` says, interruptibly, or scoped.
pub(crate) enum How {
    Wait(Option<(unsafe extern "C" fn(*mut c_void) -> bool, *mut c_void)>),
    Scoped,
}

impl How {
    /// Waiting, giving up when the caller's `interrupted(user_data)` says so; NULL is invalid.
    pub(crate) fn interruptible(
        interrupted: fl_interrupt_callback,
        user_data: *mut c_void,
    ) -> Result<How> {
        let interrupted = interrupted.ok_or_else(|| ffi::invalid("interrupted is NULL"))?;
        Ok(How::Wait(Some((interrupted, user_data))))
    }
}

/// A lease of a family handle: its manager, name and kind.
pub(crate) type Lease<'a> = (&'a LockManager, &'a [u8], LeaseKind);

/// Acquires a lease of `kind` on `name`, its options checked first.
///
/// # Safety
/// `token` is NULL or a NUL-terminated string.
pub(crate) unsafe fn acquire(
    (m, name, kind): Lease<'_>,
    token: *const c_char,
    (ttl_ms, wait_ms, flags): (u64, i64, u32),
    how: How,
) -> Result<Lock> {
    // SAFETY: by contract.
    let opts: AcquireOptions = unsafe { flagged_options(token, (ttl_ms, wait_ms, flags)) }?;
    match how {
        How::Wait(None) => m.acquire_lease_with(name, kind, &opts),
        How::Wait(Some((interrupted, user_data))) => {
            // SAFETY: a C function pointer given by the caller, called on this thread.
            let poll = || unsafe { interrupted(user_data) };
            let acquisition = m.as_async().acquire_lease_with(name, kind, &opts);
            m.acquire_interruptible(acquisition, INTERRUPT_POLL, poll)
        }
        How::Scoped => m.acquire_lease_with(name, kind, &opts.auto_extend(None)),
    }
}

/// One try: the lease into `*out`, or `FL_NOT_ACQUIRED` naming `what` (`"the permits"`)
/// when it is not free.
pub(crate) fn try_lease(
    lease: Lease<'_>,
    what: &str,
    ttl_ms: u64,
    out: *mut *mut fl_lock,
) -> Result<()> {
    let out = ffi::out(out, "out")?;
    let name = lease.1;
    // SAFETY: no token.
    match unsafe { acquire(lease, std::ptr::null(), (ttl_ms, 0, 0), How::Wait(None)) } {
        Ok(lease) => hand_out(lease, out),
        Err(e) if e.kind() == fencelock::ErrorKind::NotAcquired => Err(Error::not_acquired(
            format!("{what} of {} is not free", display_name(name)),
        )),
        Err(e) => Err(e),
    }
}

/// The scoped form: the lease kept alive while `callback` runs, then released.
///
/// # Safety
/// `callback` and `user_data` under the caller's contract (`fl_with_semaphore`).
pub(crate) unsafe fn with_lease(
    lease: Lease<'_>,
    (ttl_ms, wait_ms): (u64, i64),
    callback: fl_lock_callback,
    user_data: *mut c_void,
) -> Result<()> {
    let callback = callback.ok_or_else(|| ffi::invalid("callback is NULL"))?;
    // SAFETY: no token; the callback under the caller's contract.
    unsafe {
        let lease = acquire(lease, std::ptr::null(), (ttl_ms, wait_ms, 0), How::Scoped)?;
        run_scoped(lease, callback, user_data)
    }
}

/// Releases the lease of `lease`'s semaphore or read-write lock held with `token`.
///
/// # Safety
/// `token` is NULL or a NUL-terminated string.
pub(crate) unsafe fn release_by_token(
    (m, name, kind): Lease<'_>,
    token: *const c_char,
) -> Result<()> {
    // SAFETY: by contract.
    let token = unsafe { ffi::bytes(token, "token") }?;
    let family = m.as_async().family(name, kind)?;
    m.block_on(family.release_by_token(token))?
}

/// Extends the lease held with `token` to `ttl_ms` from now; its validity into `*validity_ms`
/// when that is not NULL.
///
/// # Safety
/// `token` is NULL or a NUL-terminated string; `validity_ms` NULL or writable.
pub(crate) unsafe fn extend_by_token(
    (m, name, kind): Lease<'_>,
    token: *const c_char,
    ttl_ms: u64,
    validity_ms: *mut u64,
) -> Result<()> {
    // SAFETY: by contract.
    let token = unsafe { ffi::bytes(token, "token") }?;
    let family = m.as_async().family(name, kind)?;
    let validity = m.block_on(family.extend_by_token(token, ffi::ttl(ttl_ms)))??;
    if !validity_ms.is_null() {
        // SAFETY: not NULL, and writable by contract.
        unsafe { *validity_ms = validity.as_millis() as u64 };
    }
    Ok(())
}
