//! The interpreter's process hooks, registered by `fencelock/__init__.py`: at exit (settle the
//! managers' background work, then close: see [`shutdown`]) and in a child after `fork()`
//! (fresh counts, a fresh event queue). They tie the runtime glue together in one direction:
//! this module uses [`shutdown`] and [`events`], which use neither it nor each other's hooks.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::{events, shutdown};

/// Longest the `atexit` hook waits for in-flight calls (each is bounded by server timeouts).
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// The `atexit` hook: first waits (GIL released) for the managers' background cleanups (a
/// waiter interrupted by Ctrl-C withdrew its place in the background: the process must not
/// exit before that went out); then from now on no thread enters Python through this crate,
/// and it waits for those inside to leave or park.
#[pyfunction]
pub fn _at_exit(py: Python<'_>) {
    let deadline = Instant::now() + EXIT_WAIT;
    py.detach(|| fencelock::settle_all(EXIT_WAIT));
    shutdown::close(py, deadline, events::wake);
}

/// The `os.register_at_fork(after_in_child=...)` hook.
#[pyfunction]
pub fn _after_fork_in_child() {
    shutdown::reset_after_fork();
    events::after_fork_in_child();
}
