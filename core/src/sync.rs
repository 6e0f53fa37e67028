//! Mutexes that survive a panic in another thread.

use std::sync::{Mutex, MutexGuard};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these short critical sections leaves plain data behind,
    // still consistent: keep going rather than poison every later call.
    m.lock().unwrap_or_else(|e| e.into_inner())
}
