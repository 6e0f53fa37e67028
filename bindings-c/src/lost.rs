//! `fl_lock_on_lost` and `fl_lock_lost_reason`: a lost lock, reported to C as in every
//! language: once, with why, on a thread of the library's.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use fencelock::LostReason;

use crate::error::fl_status;
use crate::ffi;
use crate::lock::{fl_lock, fl_lock_callback, lock_ref};
use crate::panic::{boundary, boundary_or};

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

/// A handle's registered callback, and the handle it is called with.
struct Registered {
    callback: unsafe extern "C" fn(*const fl_lock, *mut c_void),
    user_data: *mut c_void,
    lock: *const fl_lock,
}

// SAFETY: the header asks for a callback and data usable from another thread; the handle
// pointer is used only while the handle lives (its drop waits for a running callback).
unsafe impl Send for Registered {}

/// The `fl_lock_on_lost` state of one handle, shared with the core's watch.
#[derive(Default)]
pub(crate) struct Hook {
    /// Held while the callback runs, so that freeing the handle waits for it. Never taken
    /// while the handle's lock mutex is held (the callback may read the handle).
    slot: Mutex<Slot>,
    /// Whether the core watches the lock for this handle yet (taken under the lock mutex).
    watching: Mutex<bool>,
}

#[derive(Default)]
struct Slot {
    registered: Option<Registered>,
    /// The core reported the loss (before a callback was registered, perhaps).
    fired: bool,
}

thread_local! {
    /// Set on the thread running an `fl_lock_on_lost` callback.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hook {
    /// Runs the registered callback (once): on the core's callback thread.
    fn fire(&self) {
        let mut slot = guard(&self.slot);
        slot.fired = true;
        if let Some(r) = slot.registered.take() {
            IN_CALLBACK.with(|c| c.set(true));
            // SAFETY: a C function pointer given by the caller, with its data, and the handle
            // it was registered on, alive: its drop waits for this lock to be let go.
            boundary_or((), || unsafe { (r.callback)(r.lock, r.user_data) });
            IN_CALLBACK.with(|c| c.set(false));
        }
    }

    /// Called when the handle goes (free, or the end of `fl_with_lock`): no callback after
    /// this returns, and a running one is waited for (unless this is its own thread).
    pub(crate) fn clear(&self) {
        if IN_CALLBACK.with(Cell::get) {
            if let Ok(mut slot) = self.slot.try_lock() {
                slot.registered = None;
            }
            return;
        }
        guard(&self.slot).registered = None;
    }
}

impl Drop for fl_lock {
    fn drop(&mut self) {
        self.on_lost.clear();
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
        if IN_CALLBACK.with(Cell::get) {
            return Err(ffi::invalid(
                "fl_lock_on_lost cannot be called from an fl_lock_on_lost callback",
            ));
        }
        {
            let held = l.guard();
            let held = held.as_ref().ok_or_else(|| l.released())?;
            let mut watching = guard(&l.on_lost.watching);
            if !*watching {
                *watching = true;
                let hook = Arc::clone(&l.on_lost);
                held.on_lost(move |_| hook.fire());
            }
        }
        let mut slot = guard(&l.on_lost.slot);
        slot.registered = Some(Registered {
            callback,
            user_data,
            lock,
        });
        if slot.fired {
            // Lost before this registration: called now, on a thread of its own as always.
            let hook = Arc::clone(&l.on_lost);
            std::thread::Builder::new()
                .name("fencelock-on-lost".into())
                .spawn(move || hook.fire())
                .map_err(|e| {
                    slot.registered = None;
                    fencelock::Error::unavailable(format!("cannot start a thread: {e}"))
                })?;
        }
        Ok(())
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
