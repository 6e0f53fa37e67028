//! The `fl_lock_on_lost` slot of a handle: the callback registered, called once on a thread
//! of the library's when the core reports the loss, and waited for when the handle goes.
//! Generic over the handle it passes back (`fl_lock`), so that the handle's module and the
//! functions that register callbacks both use it and neither uses the other.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use fencelock::blocking::Lock;
use fencelock::Result;

use crate::error::boundary_or;
use crate::ffi;

/// A handle's registered callback, and the handle it is called with.
struct Registered<H> {
    callback: unsafe extern "C" fn(*const H, *mut c_void),
    user_data: *mut c_void,
    handle: *const H,
}

// SAFETY: the header asks for a callback and data usable from another thread; the handle
// pointer is used only while the handle lives (its drop waits for a running callback).
unsafe impl<H> Send for Registered<H> {}

/// The `fl_lock_on_lost` state of one handle, shared with the core's watch.
pub(crate) struct Hook<H> {
    /// Held while the callback runs, so that freeing the handle waits for it. Never taken
    /// while the handle's lock mutex is held (the callback may read the handle).
    slot: Mutex<Slot<H>>,
    /// Whether the core watches the lock for this handle yet (taken under the lock mutex).
    watching: Mutex<bool>,
}

impl<H> Default for Hook<H> {
    fn default() -> Hook<H> {
        Hook {
            slot: Mutex::new(Slot {
                registered: None,
                fired: false,
            }),
            watching: Mutex::new(false),
        }
    }
}

struct Slot<H> {
    registered: Option<Registered<H>>,
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

impl<H: 'static> Hook<H> {
    /// Refuses a registration from inside a loss callback (its own slot is held).
    pub(crate) fn check_not_in_callback() -> Result<()> {
        if IN_CALLBACK.with(Cell::get) {
            return Err(ffi::invalid(
                "fl_lock_on_lost cannot be called from an fl_lock_on_lost callback",
            ));
        }
        Ok(())
    }

    /// Has the core report `held`'s loss to this slot (once per handle). Called with the
    /// handle's lock mutex held.
    pub(crate) fn watch(self: &Arc<Self>, held: &Lock) {
        let mut watching = guard(&self.watching);
        if !*watching {
            *watching = true;
            let hook = Arc::clone(self);
            held.on_lost(move |_| hook.fire());
        }
    }

    /// Registers `callback(handle, user_data)` (replacing one registered before), called at
    /// once (on a thread of its own) when the loss was already reported. Called without the
    /// handle's lock mutex (a running callback, which holds the slot, may read the handle).
    pub(crate) fn set(
        self: &Arc<Self>,
        callback: unsafe extern "C" fn(*const H, *mut c_void),
        user_data: *mut c_void,
        handle: *const H,
    ) -> Result<()> {
        let mut slot = guard(&self.slot);
        slot.registered = Some(Registered {
            callback,
            user_data,
            handle,
        });
        if slot.fired {
            // Lost before this registration: called now, on a thread of its own as always.
            let hook = Arc::clone(self);
            std::thread::Builder::new()
                .name("fencelock-on-lost".into())
                .spawn(move || hook.fire())
                .map_err(|e| {
                    slot.registered = None;
                    fencelock::Error::unavailable(format!("cannot start a thread: {e}"))
                })?;
        }
        Ok(())
    }

    /// Runs the registered callback (once): on the core's callback thread.
    fn fire(&self) {
        let mut slot = guard(&self.slot);
        slot.fired = true;
        if let Some(r) = slot.registered.take() {
            IN_CALLBACK.with(|c| c.set(true));
            // SAFETY: a C function pointer given by the caller, with its data, and the handle
            // it was registered on, alive: its drop waits for this lock to be let go.
            boundary_or((), || unsafe { (r.callback)(r.handle, r.user_data) });
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
