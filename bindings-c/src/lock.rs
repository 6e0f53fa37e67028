//! `fl_lock`: acquire, query, extend, release and free a lock; `fl_with_lock`, the scoped form.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use fencelock::blocking::Lock;
use fencelock::display_name;
use fencelock::{AcquireOptions, Error, Result};

use crate::error::fl_status;
use crate::error::{boundary, boundary_or};
use crate::ffi;
use crate::manager::fl_manager;

/// A lock acquired through a manager. Opaque: made by `fl_lock_acquire`,
/// `fl_lock_acquire_with_token` or `fl_lock_try_acquire`, freed by `fl_lock_free`.
///
/// Releasing (`fl_lock_release`) or detaching (`fl_lock_detach`) does not free the handle:
/// its name, token and fencing token stay readable until `fl_lock_free`.
///
/// Threads: the calls on one handle may come from any thread, and calls made at the same time
/// are serialized (an `fl_lock_release` waits for an `fl_lock_extend` in progress). Only
/// `fl_lock_free` must not overlap any other call on the same handle.
pub struct fl_lock {
    lock: Mutex<Option<Lock>>,
    name: CString,
    token: CString,
    fencing_token: u64,
    /// Every name (one for a lock on one name) and its fencing token (`fl_lock_name_at`).
    pub(crate) names: Vec<CString>,
    pub(crate) fencing_tokens: Vec<u64>,
    /// Whether and why it was lost, also after a release.
    pub(crate) lost: fencelock::LostView,
    /// The `fl_lock_on_lost` callback.
    pub(crate) on_lost: std::sync::Arc<crate::hook::Hook<fl_lock>>,
    /// What it holds of its name (`fl_lock_kind`).
    pub(crate) kind: fencelock::LeaseKind,
}

impl fl_lock {
    pub(crate) fn new(lock: Lock) -> Result<fl_lock> {
        // Names and tokens come from C strings or are generated (hex and a UUID), so they hold no NUL.
        let c = |b: &[u8], what: &str| {
            CString::new(b).map_err(|_| Error::invalid_argument(format!("{what} contains NUL")))
        };
        Ok(fl_lock {
            name: c(lock.name(), "lock name")?,
            token: c(lock.token(), "token")?,
            fencing_token: lock.fencing_token(),
            names: lock
                .names()
                .iter()
                .map(|n| c(n, "lock name"))
                .collect::<Result<_>>()?,
            fencing_tokens: lock.fencing_tokens().to_vec(),
            lost: lock.lost_view(),
            kind: lock.as_async().kind(),
            on_lost: Default::default(),
            lock: Mutex::new(Some(lock)),
        })
    }

    pub(crate) fn guard(&self) -> MutexGuard<'_, Option<Lock>> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn released(&self) -> Error {
        Error::invalid_argument(format!(
            "lock {} was already released or detached",
            display_name(self.name.as_bytes())
        ))
    }
}

impl Drop for fl_lock {
    fn drop(&mut self) {
        self.on_lost.clear();
    }
}

/// The function `fl_with_lock` runs while it holds the lock, and the one `fl_lock_on_lost`
/// calls when the lock is lost. `lock` is valid only during the call: read it
/// (`fl_lock_fencing_token`, `fl_lock_is_lost`, `fl_lock_lost_reason`, ...) but do not
/// release, detach or free it, and do not keep the pointer. `user_data` is the argument
/// given with the callback.
pub type fl_lock_callback =
    Option<unsafe extern "C" fn(lock: *const fl_lock, user_data: *mut c_void)>;

pub(crate) fn manager<'a>(m: *const fl_manager) -> Result<&'a fl_manager> {
    // SAFETY: NULL or a live manager, by contract.
    unsafe { ffi::obj(m, "manager") }
}

pub(crate) fn lock_ref<'a>(l: *const fl_lock) -> Result<&'a fl_lock> {
    // SAFETY: NULL or a live lock handle, by contract.
    unsafe { ffi::obj(l, "lock") }
}

/// Checks every argument, then acquires with the core's `acquire_with`.
unsafe fn acquire(
    m: *const fl_manager,
    name: *const c_char,
    token: Option<*const c_char>,
    ttl_ms: u64,
    wait_ms: i64,
) -> Result<Lock> {
    // SAFETY: forwarded under the caller's contract.
    let (m, name, opts) = unsafe { acquire_args(m, name, token, ttl_ms, wait_ms) }?;
    m.inner.acquire_with(name, &opts)
}

/// `fl_lock_acquire_with_flags`: with a caller's token, the name already held with it is
/// acquired again (its TTL reset, a new fencing token) instead of being refused.
pub const FL_ACQUIRE_REENTRANT: u32 = 1;

/// The `fl_*_acquire_start` calls: an acquisition that ends without waiting (a free lock,
/// a refusal with `wait_ms` 0, a failure) ends on the calling thread, its `done` called there
/// before the start call returns, with no hand-off to a manager's thread (one round trip,
/// where the manager has a single plain server: see the header's "Threads"). One that must
/// wait goes on in the background as without it. For callers whose `done` may run inside
/// the start call (it must not take a lock the caller holds around it).
pub const FL_ACQUIRE_INLINE: u32 = 2;

/// Every flag `fl_lock_acquire_with_flags` knows.
pub(crate) const KNOWN_FLAGS: u32 = FL_ACQUIRE_REENTRANT;

/// The flags of an `fl_*_acquire_start` call: those of the acquisition and whether it may
/// end inline (`FL_ACQUIRE_INLINE`).
pub(crate) fn start_flags(flags: u32) -> (u32, bool) {
    (flags & !FL_ACQUIRE_INLINE, flags & FL_ACQUIRE_INLINE != 0)
}

/// The flags of an acquire call, checked: whether it re-enters.
pub(crate) fn reentrant_flag(flags: u32) -> Result<bool> {
    if flags & !KNOWN_FLAGS != 0 {
        return Err(ffi::invalid(format!(
            "unknown acquire flags {:#x} (known: FL_ACQUIRE_REENTRANT = {FL_ACQUIRE_REENTRANT:#x}; FL_ACQUIRE_INLINE = {FL_ACQUIRE_INLINE:#x} for the fl_*_acquire_start calls only)",
            flags & !KNOWN_FLAGS
        )));
    }
    Ok(flags & FL_ACQUIRE_REENTRANT != 0)
}

/// The manager, name and options of an acquire call, checked.
///
/// # Safety
/// As `acquire`.
unsafe fn acquire_args<'a>(
    m: *const fl_manager,
    name: *const c_char,
    token: Option<*const c_char>,
    ttl_ms: u64,
    wait_ms: i64,
) -> Result<(&'a fl_manager, &'a [u8], AcquireOptions)> {
    let m = manager(m)?;
    // SAFETY: NULL or NUL-terminated strings, by contract.
    let name = unsafe { ffi::bytes(name, "name") }?;
    // SAFETY: as above.
    let opts = unsafe { acquire_options(token, ttl_ms, wait_ms) }?;
    Ok((m, name, opts))
}

/// The options of an acquire call, checked: TTL, wait limit and the caller's token if any.
///
/// # Safety
/// `token`, when given, is NULL or a NUL-terminated string.
pub(crate) unsafe fn acquire_options(
    token: Option<*const c_char>,
    ttl_ms: u64,
    wait_ms: i64,
) -> Result<AcquireOptions> {
    let mut opts = AcquireOptions::new(ffi::ttl(ttl_ms))
        .wait(ffi::wait(wait_ms)?)
        .trace(crate::spans::parent());
    if let Some(t) = token {
        // SAFETY: by contract.
        let t = unsafe { ffi::bytes(t, "token") }?;
        // Checked before it is copied into the options.
        fencelock::ffi_support::token::check_token(t)?;
        opts = opts.token(t);
    }
    Ok(opts)
}

/// The options of an acquire call that takes flags: `token` NULL for a random one, `flags`
/// checked (`FL_ACQUIRE_REENTRANT`).
///
/// # Safety
/// `token` is NULL or a NUL-terminated string.
pub(crate) unsafe fn flagged_options(
    token: *const c_char,
    (ttl_ms, wait_ms, flags): (u64, i64, u32),
) -> Result<AcquireOptions> {
    let reentrant = reentrant_flag(flags)?;
    let token = (!token.is_null()).then_some(token);
    // SAFETY: by contract.
    Ok(unsafe { acquire_options(token, ttl_ms, wait_ms) }?.reentrant(reentrant))
}

/// How often `fl_lock_acquire_interruptible` asks its callback whether to give up.
pub(crate) const INTERRUPT_POLL: Duration = Duration::from_millis(50);

pub(crate) fn hand_out(lock: Lock, out: &mut *mut fl_lock) -> Result<()> {
    *out = Box::into_raw(Box::new(fl_lock::new(lock)?));
    Ok(())
}

/// Acquires the lock `name` (any bytes but NUL, at most 1024) for `ttl_ms` milliseconds,
/// with a fresh random token. `wait_ms` is how long to keep trying: -1 waits until acquired
/// (blocking the calling thread; waiters are woken by the holder's release, they do not
/// poll), 0 tries once, otherwise that many milliseconds. On success `*out` is a new handle
/// to free with `fl_lock_free`; otherwise `*out` is left as it was.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL `manager`, `name` or `out`, an empty or too long
/// name, `ttl_ms` shorter than the drift rule can ever grant (3 ms with the default drift
/// factor; the message names the minimum) or over 2^53 - 1 (about 285,000 years), or `wait_ms`
/// below -1 (all before
/// any network call);
/// `FL_NOT_ACQUIRED` when the wait limit passed while another owner held it;
/// `FL_UNAVAILABLE` when too few servers answered; `FL_REDIS_ERROR` for unexpected replies.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire(
    manager: *const fl_manager,
    name: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        // SAFETY: the pointers are forwarded under the caller's contract.
        let lock = unsafe { acquire(manager, name, None, ttl_ms, wait_ms) }?;
        hand_out(lock, out)
    })
}

/// As `fl_lock_acquire`, with a token chosen by the caller (non-empty, at most 512 bytes,
/// e.g. a request id) as the value of the lock key instead of a random one. The token is
/// exclusive, as the classic request-id lock is: while the name is held with it (by another
/// process passing the same token too), this waits like for any other holder
/// (`fl_lock_acquire_with_flags` with `FL_ACQUIRE_REENTRANT` acquires it again instead).
/// Pair it with `fl_release_by_token` to release the lock from anywhere that knows the
/// name and token (see `fl_lock_detach`).
///
/// Errors: as `fl_lock_acquire`; also `FL_INVALID_ARGUMENT` for a NULL, empty or too long
/// token.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire_with_token(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        // SAFETY: the pointers are forwarded under the caller's contract.
        let lock = unsafe { acquire(manager, name, Some(token), ttl_ms, wait_ms) }?;
        hand_out(lock, out)
    })
}

/// As `fl_lock_acquire_with_token` (`token` may be NULL for a random one), with `flags`: 0, or
/// `FL_ACQUIRE_REENTRANT` to acquire again a name already held with `token` (its TTL reset,
/// a new fencing token). Without it a caller's token is exclusive, as the classic request-id
/// lock is: while the name is held with it (by another process passing it too), the acquire
/// waits like for any other holder.
///
/// Errors: as `fl_lock_acquire_with_token`; also `FL_INVALID_ARGUMENT` for an unknown flag.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire_with_flags(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let reentrant = reentrant_flag(flags)?;
        let token = (!token.is_null()).then_some(token);
        // SAFETY: the pointers are forwarded under the caller's contract.
        let (m, name, opts) = unsafe { acquire_args(manager, name, token, ttl_ms, wait_ms) }?;
        let opts = opts.reentrant(reentrant);
        hand_out(m.inner.acquire_with(name, &opts)?, out)
    })
}

/// Asked by `fl_lock_acquire_interruptible`, on the waiting thread, whether to give up:
/// return true to cancel the wait. `user_data` is that call's argument.
pub type fl_interrupt_callback = Option<unsafe extern "C" fn(user_data: *mut c_void) -> bool>;

/// As `fl_lock_acquire_with_token` (`token` may be NULL for a random one), with a way to give
/// up a wait early: `interrupted(user_data)` is called on the calling thread about every 50
/// ms while the acquisition waits, and when it returns true the wait stops with
/// `FL_CANCELLED` (whatever was acquired on some servers meanwhile is released in the
/// background; `*out` is left untouched). Use it for `wait_ms = -1` waits that must stay
/// stoppable: a shutdown flag, a signal handler's flag, a deadline of your own.
///
/// Errors: as `fl_lock_acquire_with_token`; `FL_CANCELLED` when interrupted;
/// `FL_INVALID_ARGUMENT` also for a NULL `interrupted`.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire_interruptible(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    interrupted: fl_interrupt_callback,
    user_data: *mut c_void,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let interrupted = interrupted.ok_or_else(|| ffi::invalid("interrupted is NULL"))?;
        let m = self::manager(manager)?;
        // SAFETY: NULL or NUL-terminated strings, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        let token = (!token.is_null()).then_some(token);
        // SAFETY: as above.
        let opts = unsafe { acquire_options(token, ttl_ms, wait_ms) }?;
        // SAFETY: a C function pointer given by the caller, called on this thread.
        let poll = || unsafe { interrupted(user_data) };
        let acquisition = m.inner.as_async().acquire_with(name, &opts);
        let lock = m
            .inner
            .acquire_interruptible(acquisition, INTERRUPT_POLL, poll)?;
        hand_out(lock, out)
    })
}

/// One attempt to acquire `name` for `ttl_ms` milliseconds. When another owner holds it,
/// returns `FL_NOT_ACQUIRED` and leaves `*out` untouched. On success `*out` is a new handle to
/// free with `fl_lock_free`.
///
/// Errors: `FL_NOT_ACQUIRED` when held by another owner; otherwise as `fl_lock_acquire`
/// (unreachable servers are `FL_UNAVAILABLE`, not `FL_NOT_ACQUIRED`).
#[no_mangle]
pub unsafe extern "C" fn fl_lock_try_acquire(
    manager: *const fl_manager,
    name: *const c_char,
    ttl_ms: u64,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        // SAFETY: no token.
        let opts = unsafe { acquire_options(None, ttl_ms, 0) }?;
        hand_out(m.inner.acquire_with(name, &opts)?, out)
    })
}

/// Extends a held lock: its expiry on the servers becomes now + `ttl_ms`, and its validity is
/// recomputed as for an acquisition.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL lock, a bad TTL, or a lock already released or
/// detached; `FL_NOT_HELD` when no quorum holds it any more (it expired or was taken; the
/// lock is then marked lost); `FL_UNAVAILABLE` when too few servers answered.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_extend(lock: *mut fl_lock, ttl_ms: u64) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let guard = l.guard();
        let held = guard.as_ref().ok_or_else(|| l.released())?;
        held.extend(ffi::ttl(ttl_ms))
    })
}

/// Adds `add_ms` to the lock's remaining time on every server, atomically on each, instead of
/// setting it as `fl_lock_extend` does; its validity becomes what a quorum now guarantees.
///
/// Errors: as `fl_lock_extend`.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_extend_by(lock: *mut fl_lock, add_ms: u64) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let guard = l.guard();
        let held = guard.as_ref().ok_or_else(|| l.released())?;
        held.extend_by(ffi::ttl(add_ms))
    })
}

/// Keeps the lock alive in the background: extends it every ttl/3 (the TTL of the last
/// acquire or extend) until it is released, freed or lost, and, when `max_hold_ms > 0`, for
/// at most that long since it was acquired. A loss (the key gone or taken, or no quorum
/// reachable before validity runs out) marks the lock lost: check `fl_lock_is_lost`. Calling
/// it again replaces the previous setting. `fl_with_lock` does this for you.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL lock or one already released or detached.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_auto_extend(lock: *mut fl_lock, max_hold_ms: u64) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let guard = l.guard();
        let held = guard.as_ref().ok_or_else(|| l.released())?;
        held.auto_extend((max_hold_ms > 0).then(|| ffi::millis(max_hold_ms)));
        Ok(())
    })
}

/// Releases the lock on every server (compare-and-delete by token), waking its waiters. Does
/// not free the handle: call `fl_lock_free` after. After this call, whatever it returned, the
/// handle is released: a second release or an extend returns `FL_INVALID_ARGUMENT`.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL lock or one already released or detached;
/// `FL_NOT_HELD` when fewer than a quorum still held it (it had expired or been taken: the
/// message says which): whatever was done under it was not protected; `FL_UNAVAILABLE`
/// when too few servers answered.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_release(lock: *mut fl_lock) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let held = l.guard().take().ok_or_else(|| l.released())?;
        held.release()
    })
}

/// Gives up the handle's hold without releasing: the lock stays held on the servers until its
/// TTL runs out or someone calls `fl_release_by_token` with its name and token (the classic
/// request-id pattern, or a lock handed to another process). The handle then acts as
/// released (`fl_lock_free` releases nothing) and must still be freed.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL lock or one already released or detached.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_detach(lock: *mut fl_lock) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let held = l.guard().take().ok_or_else(|| l.released())?;
        held.detach();
        Ok(())
    })
}

/// The lock's name, NUL-terminated. `*out` stays valid until the handle is freed.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_name(lock: *const fl_lock, out: *mut *const c_char) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        *ffi::out(out, "out")? = l.name.as_ptr();
        Ok(())
    })
}

/// The lock's token (the value of its Redis key: a random token, or the caller's),
/// NUL-terminated. `*out` stays valid until the handle is freed, also after a release. Keep
/// it secret from other owners: it is what releases the lock.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_token(lock: *const fl_lock, out: *mut *const c_char) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        *ffi::out(out, "out")? = l.token.as_ptr();
        Ok(())
    })
}

/// The lock's fencing token: larger than that of every earlier acquisition of any lock on
/// this server set. Send it with every write to the storage the lock protects, and have the
/// storage reject a token smaller than the largest it has seen.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_fencing_token(lock: *const fl_lock, out: *mut u64) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        *ffi::out(out, "out")? = l.fencing_token;
        Ok(())
    })
}

/// The time, in milliseconds, the lock is still safe to use: counts down from the acquisition
/// (or last extension), net of the time acquiring took and of the clock drift allowance. 0
/// once released, detached, lost or expired.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_validity_ms(lock: *const fl_lock, out: *mut u64) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let out = ffi::out(out, "out")?;
        let ms = l.guard().as_ref().map_or(0, |h| h.validity().as_millis());
        *out = u64::try_from(ms).unwrap_or(u64::MAX);
        Ok(())
    })
}

/// Whether the lock is known to be lost: an extension (explicit, or `fl_with_lock`'s
/// automatic one) found it gone or taken, no quorum could be reached before its validity ran
/// out, or its validity simply ran out. It stays true after an `fl_lock_release` that found
/// it lost; false once released while held, or detached. `fl_lock_lost_reason` says why.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_is_lost(lock: *const fl_lock, out: *mut bool) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let out = ffi::out(out, "out")?;
        *out = l.lost.reason().is_some();
        Ok(())
    })
}

/// Frees a lock handle. NULL is a no-op. Never blocks: a lock still held is released in the
/// background (best effort; if that fails it expires after its TTL). Freeing a handle twice,
/// using it after, or freeing it while another thread is inside a call on it, is undefined
/// behaviour (the caller's contract).
#[no_mangle]
pub unsafe extern "C" fn fl_lock_free(lock: *mut fl_lock) {
    // The handle's drop first waits for its `fl_lock_on_lost` callback if one is running.
    // SAFETY: NULL or made by this library and not freed before, by contract.
    boundary_or((), || unsafe { ffi::free(lock) })
}

/// The scoped form: acquires `name` as `fl_lock_acquire` does (`ttl_ms`, `wait_ms`), extends
/// it in the background every ttl/3 while `callback(lock, user_data)` runs on the calling
/// thread, then releases it. The callback may check `fl_lock_is_lost` to stop early; it must
/// not release, detach or free the lock, nor keep the pointer. If acquiring fails the
/// callback is not called and the acquire error is returned.
///
/// Returns `FL_OK` when the lock was held throughout and released; `FL_NOT_HELD` when it was
/// lost while the callback ran (then whatever the callback did was not protected) or could
/// not be released as held.
///
/// Errors: as `fl_lock_acquire`; `FL_INVALID_ARGUMENT` also for a NULL callback; `FL_NOT_HELD`
/// as above.
#[no_mangle]
pub unsafe extern "C" fn fl_with_lock(
    manager: *const fl_manager,
    name: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    callback: fl_lock_callback,
    user_data: *mut c_void,
) -> fl_status {
    boundary(|| {
        let callback = callback.ok_or_else(|| ffi::invalid("callback is NULL"))?;
        // SAFETY: the pointers are forwarded under the caller's contract.
        let (m, name, opts) = unsafe { acquire_args(manager, name, None, ttl_ms, wait_ms) }?;
        let lock = m.inner.acquire_scoped(name, &opts)?;
        // SAFETY: the callback under the caller's contract.
        unsafe { run_scoped(lock, callback, user_data) }
    })
}

/// The end of every scoped form (`fl_with_lock`, `fl_with_semaphore`, `fl_with_rwlock`):
/// runs `callback` on the held lock, then releases it (`FL_NOT_HELD` if it was lost).
///
/// # Safety
/// `callback` honours `fl_lock_callback`'s contract.
pub(crate) unsafe fn run_scoped(
    lock: Lock,
    callback: unsafe extern "C" fn(*const fl_lock, *mut c_void),
    user_data: *mut c_void,
) -> Result<()> {
    let handle = fl_lock::new(lock)?;
    // SAFETY: by contract; the handle outlives the call.
    unsafe { callback(&handle, user_data) };
    let lock = handle.guard().take().ok_or_else(|| handle.released())?;
    lock.finish_scope()
}
