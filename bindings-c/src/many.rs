//! Locks on several names at once: `fl_lock_acquire_many` and the per-name getters.

use std::ffi::{c_char, c_void};

use crate::error::boundary;
use crate::error::fl_status;
use crate::ffi;
use crate::lock::{fl_lock, flagged_options, hand_out, lock_ref, manager};
use crate::manager::fl_manager;
use crate::pending::{fl_acquire_done, fl_pending, start_prepared};

/// Acquires every name of `names` (`n_names` NUL-terminated strings, 1 to 64, none twice) at
/// once, or none, as one lock: on each server one script sets every key or none, with one
/// token (`token`, or a random one when NULL) and one fencing token per name
/// (`fl_lock_fencing_token_at`). It waits up to `wait_ms` (-1 forever, 0 one try) in every
/// name's queue in the order callers came, without holding any of the names meanwhile (a
/// release never hands it one name alone), so locks on overlapping names never deadlock.
/// Extending, releasing, auto-extension and `fl_lock_is_held` act on all the names;
/// `fl_lock_name` gives the first. `flags`: 0 or `FL_ACQUIRE_REENTRANT`, as for
/// `fl_lock_acquire_with_flags`. On a Redis Cluster the names must share a hash slot: give
/// them a common hash tag (`{order-42}:payment`, `{order-42}:stock`).
///
/// Errors: as `fl_lock_acquire_with_flags`; `FL_INVALID_ARGUMENT` also for a NULL `names`
/// with `n_names > 0`, a NULL name, no names, more than 64, a name given twice, or names in
/// different hash slots when a server is a cluster.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire_many(
    manager: *const fl_manager,
    names: *const *const c_char,
    n_names: usize,
    token: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let m = self::manager(manager)?;
        // SAFETY: forwarded under the caller's contract.
        let list = unsafe { names_arg(names, n_names) }?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let opts = unsafe { flagged_options(token, (ttl_ms, wait_ms, flags)) }?;
        hand_out(m.inner.acquire_many_with(&list, &opts)?, out)
    })
}

/// As `fl_lock_acquire_many`, returning at once: the wait runs in the manager's runtime and
/// `done(status, lock, user_data)` is called once when it ends, as for
/// `fl_lock_acquire_start` (whose handle, `fl_pending_cancel` and `fl_pending_free` apply).
/// Every argument is checked before this returns.
///
/// Errors: as `fl_lock_acquire_many`'s argument checks; a NULL `done` or `out`.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_acquire_many_start(
    manager: *const fl_manager,
    names: *const *const c_char,
    n_names: usize,
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
        // SAFETY: forwarded under the caller's contract.
        let list = unsafe { names_arg(names, n_names) }?;
        start_prepared(&m.inner, (done, user_data), flags, out, |flags| {
            // SAFETY: NULL or a NUL-terminated string, by contract.
            let opts = unsafe { flagged_options(token, (ttl_ms, wait_ms, flags)) }?;
            m.inner.as_async().prepare_many(&list, &opts)
        })
    })
}

/// The names of a lock on several names, checked: not NULL (with names), at most the limit,
/// each a NUL-terminated string.
///
/// # Safety
/// `names` is NULL or points to `n_names` readable pointers, each NULL or a NUL-terminated
/// string.
unsafe fn names_arg(
    names: *const *const c_char,
    n_names: usize,
) -> fencelock::Result<Vec<Vec<u8>>> {
    if names.is_null() && n_names > 0 {
        return Err(ffi::invalid("names is NULL"));
    }
    // Bounded before reading: a wrong count must not walk past the caller's array.
    let max = fencelock::ffi_support::keys::MAX_NAMES;
    if n_names > max {
        return Err(ffi::invalid(format!(
            "a lock on several names takes 1 to {max} names, got {n_names}"
        )));
    }
    let mut list = Vec::with_capacity(n_names);
    for i in 0..n_names {
        // SAFETY: names points to n_names readable pointers, by contract.
        let p = unsafe { *names.add(i) };
        // SAFETY: each is NULL or a NUL-terminated string, by contract.
        list.push(unsafe { ffi::bytes(p, &format!("names[{i}]")) }?.to_vec());
    }
    Ok(list)
}

/// How many names the lock has (1 for a lock on one name).
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_name_count(lock: *const fl_lock, out: *mut usize) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        *ffi::out(out, "out")? = l.names.len();
        Ok(())
    })
}

/// The lock's name number `index` (0-based, in the order given), NUL-terminated; valid until
/// the handle is freed.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL or `index` is out of range.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_name_at(
    lock: *const fl_lock,
    index: usize,
    out: *mut *const c_char,
) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let out = ffi::out(out, "out")?;
        let name = l.names.get(index).ok_or_else(|| out_of_range(index, l))?;
        *out = name.as_ptr();
        Ok(())
    })
}

/// The fencing token of the lock's name number `index` (0-based, in the order given): larger
/// than that of every earlier acquisition of that name.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL or `index` is out of range.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_fencing_token_at(
    lock: *const fl_lock,
    index: usize,
    out: *mut u64,
) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let out = ffi::out(out, "out")?;
        *out = *l
            .fencing_tokens
            .get(index)
            .ok_or_else(|| out_of_range(index, l))?;
        Ok(())
    })
}

fn out_of_range(index: usize, l: &fl_lock) -> fencelock::Error {
    ffi::invalid(format!(
        "index {index} is out of range: the lock has {} names",
        l.names.len()
    ))
}
