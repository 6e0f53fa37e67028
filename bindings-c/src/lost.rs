//! `fl_lock_on_lost` and `fl_lock_lost_reason`: a lost lock, reported to C as in every
//! language: once, with why, on a thread of the library's.

use std::ffi::{c_char, c_void};

use fencelock::LostReason;

use crate::error::boundary;
use crate::error::fl_status;
use crate::ffi;
use crate::hook::Hook;
use crate::lock::{fl_lock, fl_lock_callback, lock_ref};

/// Why a lock was lost. The numbers are stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_lost_reason {
    /// Not lost: held, released while held, or detached.
    FL_LOST_NONE = 0,
    /// Its validity ran out without a successful extension, or the key was found gone
    /// (expired or deleted).
    FL_LOST_EXPIRED = 1,
    /// Another token holds the key: someone acquired it after it expired, or overwrote it.
    FL_LOST_TAKEN = 2,
    /// No quorum of servers could be reached to extend it before its validity ran out.
    FL_LOST_UNREACHABLE = 3,
}

impl fl_lost_reason {
    fn of(why: Option<LostReason>) -> fl_lost_reason {
        match why {
            None => fl_lost_reason::FL_LOST_NONE,
            Some(LostReason::Expired) => fl_lost_reason::FL_LOST_EXPIRED,
            Some(LostReason::Taken) => fl_lost_reason::FL_LOST_TAKEN,
            Some(LostReason::Unreachable) => fl_lost_reason::FL_LOST_UNREACHABLE,
            // A reason added to the core later reads as the closest one here.
            Some(_) => fl_lost_reason::FL_LOST_EXPIRED,
        }
    }
}

/// Called once, on a thread of the library's, if the lock is lost while held:
/// `callback(lock, user_data)`, where `lock` is the handle (read it with `fl_lock_lost_reason`,
/// `fl_lock_name`, `fl_lock_fencing_token`; do not release, detach or free it from the callback).
/// Never called after the lock was released or detached, nor once `fl_lock_free` returned:
/// `fl_lock_free` waits for a callback that is running. The callback may block and may call
/// other fencelock functions (acquire the lock again, for example); `user_data` must stay
/// valid until it was called or the handle was freed. Calling this again replaces the
/// callback (before it was called).
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL lock or callback, a lock already released or
/// detached, or a call from inside this lock's own callback.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_on_lost(
    lock: *mut fl_lock,
    callback: fl_lock_callback,
    user_data: *mut c_void,
) -> fl_status {
    boundary(|| {
        let callback = callback.ok_or_else(|| ffi::invalid("callback is NULL"))?;
        let l = lock_ref(lock)?;
        Hook::<fl_lock>::check_not_in_callback()?;
        {
            let held = l.guard();
            let held = held.as_ref().ok_or_else(|| l.released())?;
            l.on_lost.watch(held);
        }
        l.on_lost.set(callback, user_data, lock)
    })
}

/// Asks the servers whether this lock is still held: a quorum of them hold its key under its
/// token (read-only; never extends it). Unlike `fl_lock_is_lost`, this process's view, it
/// notices a key deleted or overwritten behind the holder's back, and then marks the lock lost
/// (`fl_lock_lost_reason` says how; an `fl_lock_on_lost` callback is called). `*out` is false
/// for a lock already released or detached (no network call). Blocks for one round trip.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL; `FL_UNAVAILABLE` when fewer than
/// a quorum of servers answered; `FL_REDIS_ERROR` for unexpected replies.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_is_held(lock: *const fl_lock, out: *mut bool) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let out = ffi::out(out, "out")?;
        *out = match l.guard().as_ref() {
            Some(held) => held.is_held()?,
            None => false,
        };
        Ok(())
    })
}

/// Why the lock was lost (`FL_LOST_NONE` while held, after a release while held, or after a
/// detach); also after an `fl_lock_release` that found it lost.
///
/// Errors: `FL_INVALID_ARGUMENT` if `lock` or `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_lock_lost_reason(
    lock: *const fl_lock,
    out: *mut fl_lost_reason,
) -> fl_status {
    boundary(|| {
        let l = lock_ref(lock)?;
        let out = ffi::out(out, "out")?;
        *out = fl_lost_reason::of(l.lost.reason());
        Ok(())
    })
}

/// A static name for a reason: `"none"`, `"expired"`, `"taken"`, `"unreachable"`
/// (`"unknown"` for any other number).
#[no_mangle]
pub extern "C" fn fl_lost_reason_str(reason: u32) -> *const c_char {
    let s: &'static [u8] = match reason {
        0 => b"none\0",
        1 => b"expired\0",
        2 => b"taken\0",
        3 => b"unreachable\0",
        _ => b"unknown\0",
    };
    s.as_ptr().cast()
}
