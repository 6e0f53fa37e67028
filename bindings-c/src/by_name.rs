//! Calls on a lock by name, without a lock handle: release and extend by token (for locks
//! detached or handed across processes), and the inspection of a name.

use std::ffi::c_char;

use crate::error::boundary;
use crate::error::fl_status;
use crate::ffi;
use crate::lock::manager;
use crate::manager::fl_manager;

/// Releases the lock `name` if it is held with `token`, without a lock handle (for locks
/// acquired with `fl_lock_acquire_with_token` and detached, or handed across processes). A
/// lock held by another token is left alone.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a bad name or token; `FL_NOT_HELD`
/// when fewer than a quorum held it with this token (the message says whether the key was gone
/// or held by another token); `FL_UNAVAILABLE` when too few servers answered.
#[no_mangle]
pub unsafe extern "C" fn fl_release_by_token(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
) -> fl_status {
    boundary(|| {
        let m = self::manager(manager)?;
        // SAFETY: NULL or NUL-terminated strings, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        // SAFETY: as above.
        let token = unsafe { ffi::bytes(token, "token") }?;
        m.inner.release_by_token(name, token)
    })
}

/// Extends the lock `name` if it is held with `token`, without a lock handle (a lock handed
/// over by token, as `fl_release_by_token` releases one): it expires `ttl_ms` from now on every
/// server holding it with `token`. When `validity_ms` is not NULL, `*validity_ms` is the
/// validity this gives (as `fl_lock_validity_ms`), written only on success.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments, a bad name, token or TTL (before any
/// network call); `FL_NOT_HELD` when fewer than a quorum hold it with this token (the message
/// says whether the key was gone or held by another token); `FL_UNAVAILABLE` when too few
/// servers answered.
#[no_mangle]
pub unsafe extern "C" fn fl_extend_by_token(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
    ttl_ms: u64,
    validity_ms: *mut u64,
) -> fl_status {
    boundary(|| {
        let m = self::manager(manager)?;
        // SAFETY: NULL or NUL-terminated strings, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        // SAFETY: as above.
        let token = unsafe { ffi::bytes(token, "token") }?;
        let validity = m.inner.extend_by_token(name, token, ffi::ttl(ttl_ms))?;
        if !validity_ms.is_null() {
            // SAFETY: not NULL, and a valid pointer by contract.
            unsafe { *validity_ms = validity.as_millis() as u64 };
        }
        Ok(())
    })
}

/// Whether the lock `name` is held: a quorum of the servers hold its key under one token
/// (taken by fencelock or by another client's classic set-if-absent lock with an expiry). Acquires nothing;
/// the holder's token is never shown. Writes `*out` only on success.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a bad name (before any network call);
/// `FL_UNAVAILABLE` when fewer than a quorum of servers answered; `FL_REDIS_ERROR` when the
/// key holds another type.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_is_locked(
    manager: *const fl_manager,
    name: *const c_char,
    out: *mut bool,
) -> fl_status {
    boundary(|| {
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        let out = ffi::out(out, "out")?;
        *out = m.inner.is_locked(name)?;
        Ok(())
    })
}

/// Whether the lock `name` is held with `token` on a quorum of the servers (read-only:
/// nothing is extended or released). Writes `*out` only on success.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a bad name or token (before any
/// network call); `FL_UNAVAILABLE` when fewer than a quorum of servers answered.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_is_held_by_token(
    manager: *const fl_manager,
    name: *const c_char,
    token: *const c_char,
    out: *mut bool,
) -> fl_status {
    boundary(|| {
        let m = crate::lock::manager(manager)?;
        // SAFETY: NULL or NUL-terminated strings, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        // SAFETY: as above.
        let token = unsafe { ffi::bytes(token, "token") }?;
        let out = ffi::out(out, "out")?;
        *out = m.inner.is_held_by_token(name, token)?;
        Ok(())
    })
}

/// How long the lock `name` stays held at least, in milliseconds, or -1 when it is free: the
/// quorum's view (what a quorum of the servers holding it under one token still keep, less
/// this call's time and the clock drift; never more); `INT64_MAX` for a key without expiry.
/// Writes `*out` only on success.
///
/// Errors: as `fl_manager_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_remaining_ms(
    manager: *const fl_manager,
    name: *const c_char,
    out: *mut i64,
) -> fl_status {
    boundary(|| {
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        let out = ffi::out(out, "out")?;
        *out = match m.inner.remaining(name)? {
            None => -1,
            Some(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        };
        Ok(())
    })
}
