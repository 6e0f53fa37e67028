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

/// Marks the interpreter as closing (no thread enters Python through this crate from now on)
/// and waits, the GIL released, until every thread counted here left or parked, or until
/// `deadline`.
pub fn close(py: Python<'_>, deadline: Instant, wake: impl FnOnce()) {
    CLOSING.store(true, SeqCst);
    wake();
    py.detach(|| {
        while ACTIVE.load(SeqCst) > PARKED.load(SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// In a child after `fork()`: the parent's other threads do not exist here, so neither do
/// their counts.
pub fn reset_after_fork() {
    ACTIVE.store(0, SeqCst);
    PARKED.store(0, SeqCst);
    CLOSING.store(false, SeqCst);
}
