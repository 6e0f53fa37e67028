//! Interpreter shutdown and threads outside the GIL.
//!
//! On CPython before 3.14, a thread that tries to take the GIL once finalization has started is
//! ended with `pthread_exit`, whose forced unwinding through Rust frames aborts the process.
//! Two kinds of threads can try: a Python thread coming back from a wait with the GIL released
//! (a daemon thread still waiting in `acquire` when the program ends), and a runtime thread
//! waking an asyncio loop that cannot watch a socket (`call_soon_threadsafe`; other loops are
//! woken without the GIL, see `aio::Completions`).
//!
//! So every such thread is counted while it may need the GIL, and an `atexit` hook (which runs
//! before finalization) marks the interpreter as closing and waits for the count to reach
//! zero. From then on a runtime thread does not enter Python, and a Python thread that comes
//! back from its wait parks forever instead of retaking the GIL (the process is exiting; this
//! is what CPython 3.14 itself does with such threads).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// Set by the `atexit` hook.
static CLOSING: AtomicBool = AtomicBool::new(false);
/// Threads that are (or may be about to be) outside the GIL and will want it back.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Of those, threads parked for good because the interpreter is closing.
static PARKED: AtomicUsize = AtomicUsize::new(0);

/// Longest the `atexit` hook waits for in-flight calls (each is bounded by server timeouts).
const EXIT_WAIT: Duration = Duration::from_secs(5);

fn park_forever() -> ! {
    PARKED.fetch_add(1, SeqCst);
    loop {
        std::thread::park();
    }
}

/// Whether the `atexit` hook has run.
pub fn closing() -> bool {
    CLOSING.load(SeqCst)
}

/// `py.detach(f)`, but if the interpreter starts closing meanwhile the thread never retakes
/// the GIL (see the module docs).
pub fn detach<T, F>(py: Python<'_>, f: F) -> T
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    ACTIVE.fetch_add(1, SeqCst);
    let out = py.detach(|| {
        let out = f();
        if CLOSING.load(SeqCst) {
            park_forever();
        }
        out
    });
    ACTIVE.fetch_sub(1, SeqCst);
    out
}

/// From inside [`detach`]: runs `f` with the GIL, unless the interpreter is closing (then the
/// thread parks for good).
pub fn reattach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    if CLOSING.load(SeqCst) {
        park_forever();
    }
    match Python::try_attach(f) {
        Some(r) => r,
        None => park_forever(),
    }
}

/// From a thread that is not a Python thread (the runtime's): runs `f` with the GIL, or not at
/// all (`None`) once the interpreter is closing.
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    ACTIVE.fetch_add(1, SeqCst);
    let out = if CLOSING.load(SeqCst) {
        None
    } else {
        Python::try_attach(f)
    };
    ACTIVE.fetch_sub(1, SeqCst);
    out
}

/// The `atexit` hook (registered by `fencelock/__init__.py`): first waits (GIL released) for
/// the managers' background cleanups (a waiter interrupted by Ctrl-C withdrew its place in
/// the background: the process must not exit before that went out); then from now on no
/// thread enters Python through this module, and it waits for those inside to leave or park.
#[pyfunction]
pub fn _at_exit(py: Python<'_>) {
    let deadline = Instant::now() + EXIT_WAIT;
    py.detach(|| fencelock::settle_all(EXIT_WAIT));
    CLOSING.store(true, SeqCst);
    crate::events::wake();
    py.detach(|| {
        while ACTIVE.load(SeqCst) > PARKED.load(SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// The `os.register_at_fork(after_in_child=...)` hook: the parent's other threads do not exist
/// in the child, so neither do their counts.
#[pyfunction]
pub fn _after_fork_in_child() {
    ACTIVE.store(0, SeqCst);
    PARKED.store(0, SeqCst);
    CLOSING.store(false, SeqCst);
    crate::events::after_fork_in_child();
}
