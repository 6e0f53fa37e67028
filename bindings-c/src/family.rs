//! `fl_semaphore` and `fl_rwlock`: the coordination family. Their leases are `fl_lock`
//! handles like any other (fencing token, extend, auto-extend, `fl_lock_on_lost`, release,
//! free); `fl_lock_kind` tells what a handle holds.

use std::ffi::{c_char, c_void};

use fencelock::blocking::LockManager;
use fencelock::{LeaseKind, Result};

use crate::error::fl_status;
use crate::error::{boundary, boundary_or};
use crate::ffi;
use crate::lease::{acquire, extend_by_token, release_by_token, try_lease, with_lease, How, Lease};
use crate::lock::{fl_interrupt_callback, fl_lock, fl_lock_callback, hand_out, lock_ref, manager};
use crate::manager::fl_manager;

/// A counting semaphore: at most `limit` permits of a name held at any instant, across every
/// process and language using the name. Opaque: made by `fl_semaphore_new`, freed by
/// `fl_semaphore_free`; it keeps its manager's connections alive (the manager may be freed
/// first). Thread-safe.
pub struct fl_semaphore {
    pub(crate) manager: LockManager,
    pub(crate) name: Vec<u8>,
    pub(crate) limit: u32,
}

/// A fair read-write lock on a name: many readers or one writer. Opaque: made by
/// `fl_rwlock_new`, freed by `fl_rwlock_free`; thread-safe, as `fl_semaphore`.
pub struct fl_rwlock {
    pub(crate) manager: LockManager,
    pub(crate) name: Vec<u8>,
}

/// Which side of a read-write lock: a read share (shared) or the write hold (exclusive).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_rw_mode {
    /// A read share: any number of readers together, no writer.
    FL_RW_READ = 0,
    /// The write hold: nobody else.
    FL_RW_WRITE = 1,
}

/// What a lock handle holds of its name (`fl_lock_kind`). Stable numbers, never reused.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_lease_kind {
    /// A lock (`fl_lock_acquire`, ...).
    FL_KIND_LOCK = 0,
    /// Permits of a semaphore (`fl_semaphore_acquire`).
    FL_KIND_SEMAPHORE = 1,
    /// A read share of a read-write lock.
    FL_KIND_READ = 2,
    /// The write hold of a read-write lock.
    FL_KIND_WRITE = 3,
}

/// A semaphore's occupancy (`fl_semaphore_state`); with several servers, each count the
/// largest an answering server reports.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct fl_semaphore_occupancy {
    /// The limit on the servers (the handle's when nobody holds or waits).
    pub limit: u32,
    /// Permits held by leases that have not ended.
    pub held: u64,
    /// Leases that have not ended.
    pub holders: u64,
    /// Callers waiting in line.
    pub waiters: u64,
}

/// A read-write lock's occupancy (`fl_rwlock_state`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct fl_rwlock_occupancy {
    /// Read shares held (0 while a writer holds it).
    pub readers: u64,
    /// Whether a writer holds it.
    pub writer: bool,
    /// Callers waiting in line, readers and writers.
    pub waiters: u64,
}

pub(crate) fn semaphore<'a>(s: *const fl_semaphore) -> Result<&'a fl_semaphore> {
    // SAFETY: NULL or a live handle, by contract.
    unsafe { ffi::obj(s, "semaphore") }
}

pub(crate) fn rwlock<'a>(r: *const fl_rwlock) -> Result<&'a fl_rwlock> {
    // SAFETY: NULL or a live handle, by contract.
    unsafe { ffi::obj(r, "rwlock") }
}

impl fl_semaphore {
    pub(crate) fn lease(&self, count: u32) -> Lease<'_> {
        let limit = self.limit;
        (
            &self.manager,
            &self.name,
            LeaseKind::Permits { count, limit },
        )
    }
}

impl fl_rwlock {
    pub(crate) fn lease(&self, mode: u32) -> Result<Lease<'_>> {
        let kind = match mode {
            0 => LeaseKind::Read,
            1 => LeaseKind::Write,
            other => {
                return Err(ffi::invalid(format!(
                    "mode must be FL_RW_READ (0) or FL_RW_WRITE (1), got {other}"
                )))
            }
        };
        Ok((&self.manager, &self.name, kind))
    }
}

/// Makes a counting semaphore on `name` (as a lock name) with `limit` permits (1 to
/// 1,000,000). Nothing is contacted. On success `*out` is a new handle to free with
/// `fl_semaphore_free`.
///
/// While permits are held or waited for, the servers keep the limit: an acquisition through a
/// handle of another limit fails with `FL_INVALID_ARGUMENT` naming both. A name held as a lock
/// or a read-write lock fails acquisitions with `FL_WRONG_KIND`.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments, a bad name or limit.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_new(
    manager: *const fl_manager,
    name: *const c_char,
    limit: u32,
    out: *mut *mut fl_semaphore,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        m.inner.as_async().semaphore(name, limit)?;
        let handle = fl_semaphore {
            manager: m.inner.clone(),
            name: name.to_vec(),
            limit,
        };
        *out = Box::into_raw(Box::new(handle));
        Ok(())
    })
}

/// Frees a semaphore handle (NULL is a no-op). Leases acquired through it are not affected.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_free(semaphore: *mut fl_semaphore) {
    // SAFETY: NULL or made by this library and not freed before, by contract.
    boundary_or((), || unsafe { ffi::free(semaphore) })
}

/// Takes `count` permits (1 to the limit), all or none, for `ttl_ms`, waiting as `wait_ms`
/// says (-1 until acquired, 0 one try, else that many milliseconds) in line first come, first
/// served. `token` may be NULL for a random one; `flags` 0 or `FL_ACQUIRE_REENTRANT`. On
/// success `*out` is a new lock handle (its `fl_lock_kind` is `FL_KIND_SEMAPHORE`) to release
/// and free as any lock's; otherwise `*out` is left as it was.
///
/// Errors: as `fl_lock_acquire_with_flags`; `FL_INVALID_ARGUMENT` also for a count out of
/// range or another limit on the servers; `FL_WRONG_KIND` for a name of another kind.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_acquire(
    semaphore: *const fl_semaphore,
    count: u32,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let s = self::semaphore(semaphore)?;
        let how = How::Wait(None);
        // SAFETY: forwarded under the caller's contract.
        let lease = unsafe { acquire(s.lease(count), token, (ttl_ms, wait_ms, flags), how) }?;
        hand_out(lease, out)
    })
}

/// As `fl_semaphore_acquire` (flags 0), giving up when `interrupted(user_data)`, asked about
/// every 50 ms on the calling thread, returns true (`FL_CANCELLED`), as
/// `fl_lock_acquire_interruptible`.
///
/// Errors: as `fl_semaphore_acquire`; `FL_CANCELLED` when interrupted; `FL_INVALID_ARGUMENT`
/// also for a NULL `interrupted`.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_acquire_interruptible(
    semaphore: *const fl_semaphore,
    count: u32,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    interrupted: fl_interrupt_callback,
    user_data: *mut c_void,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let how = How::interruptible(interrupted, user_data)?;
        let s = self::semaphore(semaphore)?;
        // SAFETY: forwarded under the caller's contract.
        let lease = unsafe { acquire(s.lease(count), token, (ttl_ms, wait_ms, 0), how) }?;
        hand_out(lease, out)
    })
}

/// One try to take `count` permits: `FL_NOT_ACQUIRED` (and `*out` untouched) when they are
/// not free or others wait ahead in line.
///
/// Errors: `FL_NOT_ACQUIRED` as above; otherwise as `fl_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_try_acquire(
    semaphore: *const fl_semaphore,
    count: u32,
    ttl_ms: u64,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        try_lease(
            self::semaphore(semaphore)?.lease(count),
            "the permits",
            ttl_ms,
            out,
        )
    })
}

/// The scoped form: takes `count` permits as `fl_semaphore_acquire` does, keeps the lease
/// alive while `callback(lease, user_data)` runs on the calling thread, then releases it.
/// Returns as `fl_with_lock` (`FL_NOT_HELD` when the lease was lost while the callback ran).
///
/// Errors: as `fl_semaphore_acquire`; `FL_INVALID_ARGUMENT` also for a NULL callback.
#[no_mangle]
pub unsafe extern "C" fn fl_with_semaphore(
    semaphore: *const fl_semaphore,
    count: u32,
    ttl_ms: u64,
    wait_ms: i64,
    callback: fl_lock_callback,
    user_data: *mut c_void,
) -> fl_status {
    boundary(|| {
        let lease = self::semaphore(semaphore)?.lease(count);
        // SAFETY: the callback under the caller's contract.
        unsafe { with_lease(lease, (ttl_ms, wait_ms), callback, user_data) }
    })
}

/// The semaphore's occupancy, changing nothing, into `*out` (only on success).
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments; `FL_UNAVAILABLE` when fewer than a
/// quorum of servers answered; `FL_WRONG_KIND` when the name is held as another kind.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_state(
    semaphore: *const fl_semaphore,
    out: *mut fl_semaphore_occupancy,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let s = self::semaphore(semaphore)?;
        let handle = s.manager.as_async().semaphore(&s.name, s.limit)?;
        let st = s.manager.block_on(handle.state())??;
        *out = fl_semaphore_occupancy {
            limit: st.limit,
            held: st.held,
            holders: st.holders,
            waiters: st.waiters,
        };
        Ok(())
    })
}

/// Releases the lease held with `token` (one handed across processes), as
/// `fl_release_by_token` does for a lock.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a bad token; `FL_NOT_HELD` when fewer
/// than a quorum held it; `FL_UNAVAILABLE` when too few servers answered.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_release_by_token(
    semaphore: *const fl_semaphore,
    token: *const c_char,
) -> fl_status {
    // SAFETY: NULL or a NUL-terminated string, by contract.
    boundary(|| unsafe { release_by_token(self::semaphore(semaphore)?.lease(1), token) })
}

/// Extends the lease held with `token` to `ttl_ms` from now, as `fl_extend_by_token` does for
/// a lock; writes the validity this gives to `*validity_ms` when it is not NULL.
///
/// Errors: as `fl_extend_by_token`.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_extend_by_token(
    semaphore: *const fl_semaphore,
    token: *const c_char,
    ttl_ms: u64,
    validity_ms: *mut u64,
) -> fl_status {
    boundary(|| {
        let lease = self::semaphore(semaphore)?.lease(1);
        // SAFETY: NULL or a NUL-terminated string; NULL or writable, by contract.
        unsafe { extend_by_token(lease, token, ttl_ms, validity_ms) }
    })
}

/// Makes a read-write lock on `name` (as a lock name). Nothing is contacted. On success `*out`
/// is a new handle to free with `fl_rwlock_free`.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a bad name.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_new(
    manager: *const fl_manager,
    name: *const c_char,
    out: *mut *mut fl_rwlock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        m.inner.as_async().rwlock(name)?;
        let handle = fl_rwlock {
            manager: m.inner.clone(),
            name: name.to_vec(),
        };
        *out = Box::into_raw(Box::new(handle));
        Ok(())
    })
}

/// Frees a read-write lock handle (NULL is a no-op). Leases acquired through it are not
/// affected.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_free(rwlock: *mut fl_rwlock) {
    // SAFETY: NULL or made by this library and not freed before, by contract.
    boundary_or((), || unsafe { ffi::free(rwlock) })
}

/// Takes a read share (`mode` `FL_RW_READ`) or the write hold (`FL_RW_WRITE`) for `ttl_ms`,
/// waiting as `wait_ms` says; `token` and `flags` as `fl_semaphore_acquire`. Phase-fair: a
/// waiting writer stops new readers, and the readers that queued before the next writer
/// enter together when it releases. On success `*out` is a new lock handle
/// (`FL_KIND_READ` or `FL_KIND_WRITE`).
///
/// Errors: as `fl_lock_acquire_with_flags`; `FL_INVALID_ARGUMENT` also for an unknown mode;
/// `FL_WRONG_KIND` for a name of another kind, or a `token` that holds the other mode (a
/// reader asking to write would wait for itself: refused at once).
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_acquire(
    rwlock: *const fl_rwlock,
    mode: u32,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let lease = self::rwlock(rwlock)?.lease(mode)?;
        let how = How::Wait(None);
        // SAFETY: forwarded under the caller's contract.
        let lease = unsafe { acquire(lease, token, (ttl_ms, wait_ms, flags), how) }?;
        hand_out(lease, out)
    })
}

/// As `fl_rwlock_acquire` (flags 0), giving up when `interrupted(user_data)`, asked about every
/// 50 ms on the calling thread, returns true (`FL_CANCELLED`), as
/// `fl_lock_acquire_interruptible`.
///
/// Errors: as `fl_rwlock_acquire`; `FL_CANCELLED` when interrupted; `FL_INVALID_ARGUMENT` also
/// for a NULL `interrupted`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_acquire_interruptible(
    rwlock: *const fl_rwlock,
    mode: u32,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    interrupted: fl_interrupt_callback,
    user_data: *mut c_void,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let how = How::interruptible(interrupted, user_data)?;
        let lease = self::rwlock(rwlock)?.lease(mode)?;
        // SAFETY: forwarded under the caller's contract.
        let lease = unsafe { acquire(lease, token, (ttl_ms, wait_ms, 0), how) }?;
        hand_out(lease, out)
    })
}

/// One try at `mode`: `FL_NOT_ACQUIRED` (and `*out` untouched) when it is not free (a writer
/// holds or waits, or for a write, anyone).
///
/// Errors: `FL_NOT_ACQUIRED` as above; otherwise as `fl_rwlock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_try_acquire(
    rwlock: *const fl_rwlock,
    mode: u32,
    ttl_ms: u64,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        try_lease(
            self::rwlock(rwlock)?.lease(mode)?,
            "the read-write lock",
            ttl_ms,
            out,
        )
    })
}

/// The scoped form at `mode`, as `fl_with_semaphore`.
///
/// Errors: as `fl_rwlock_acquire`; `FL_INVALID_ARGUMENT` also for a NULL callback.
#[no_mangle]
pub unsafe extern "C" fn fl_with_rwlock(
    rwlock: *const fl_rwlock,
    mode: u32,
    ttl_ms: u64,
    wait_ms: i64,
    callback: fl_lock_callback,
    user_data: *mut c_void,
) -> fl_status {
    boundary(|| {
        let lease = self::rwlock(rwlock)?.lease(mode)?;
        // SAFETY: the callback under the caller's contract.
        unsafe { with_lease(lease, (ttl_ms, wait_ms), callback, user_data) }
    })
}

/// The read-write lock's occupancy, changing nothing, into `*out` (only on success).
///
/// Errors: as `fl_semaphore_state`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_state(
    rwlock: *const fl_rwlock,
    out: *mut fl_rwlock_occupancy,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let r = self::rwlock(rwlock)?;
        let handle = r.manager.as_async().rwlock(&r.name)?;
        let st = r.manager.block_on(handle.state())??;
        *out = fl_rwlock_occupancy {
            readers: st.readers,
            writer: st.writer,
            waiters: st.waiters,
        };
        Ok(())
    })
}

/// Releases the share or hold held with `token`.
///
/// Errors: as `fl_semaphore_release_by_token`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_release_by_token(
    rwlock: *const fl_rwlock,
    token: *const c_char,
) -> fl_status {
    // SAFETY: NULL or a NUL-terminated string, by contract.
    boundary(|| unsafe { release_by_token(self::rwlock(rwlock)?.lease(0)?, token) })
}

/// Extends the share or hold held with `token`, as `fl_semaphore_extend_by_token`.
///
/// Errors: as `fl_extend_by_token`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_extend_by_token(
    rwlock: *const fl_rwlock,
    token: *const c_char,
    ttl_ms: u64,
    validity_ms: *mut u64,
) -> fl_status {
    boundary(|| {
        let lease = self::rwlock(rwlock)?.lease(0)?;
        // SAFETY: NULL or a NUL-terminated string; NULL or writable, by contract.
        unsafe { extend_by_token(lease, token, ttl_ms, validity_ms) }
    })
}

/// What `lock` holds of its name into `*kind` (an `fl_lease_kind`, read as an integer), and
/// for a semaphore's lease its permits into `*permits` (0 for other kinds; `permits` may be
/// NULL).
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL lock or `kind`.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_kind(
    lock: *const fl_lock,
    kind: *mut u32,
    permits: *mut u32,
) -> fl_status {
    boundary(|| {
        let kind = ffi::out(kind, "kind")?;
        let l = lock_ref(lock)?;
        let (k, n) = match l.kind {
            LeaseKind::Lock => (fl_lease_kind::FL_KIND_LOCK, 0),
            LeaseKind::Permits { count, .. } => (fl_lease_kind::FL_KIND_SEMAPHORE, count),
            LeaseKind::Read => (fl_lease_kind::FL_KIND_READ, 0),
            LeaseKind::Write => (fl_lease_kind::FL_KIND_WRITE, 0),
        };
        *kind = k as u32;
        if !permits.is_null() {
            // SAFETY: not NULL, and writable by contract.
            unsafe { *permits = n };
        }
        Ok(())
    })
}
