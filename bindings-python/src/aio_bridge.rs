//! The bridge between the manager's Tokio runtime and asyncio: each call spawns the core's
//! async future on the runtime and returns a coroutine awaiting an `asyncio.Future`; when the
//! Rust future completes, its result is queued for the event loop, which is woken through a
//! socket it watches and settles the futures on its own thread (`Completions`: no GIL on the
//! runtime's threads). Cancelling the awaiting task aborts an acquisition's Tokio task
//! (`AbortOnCancel`); release and extend finish in the background (`OnCancel::Finish`).

use std::future::Future;
#[cfg(unix)]
use std::io::{Read, Write};
#[cfg(unix)]
use std::os::fd::AsRawFd;
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::task::AbortHandle;

use crate::errors::Failure;
use crate::managed::Live;
use crate::shutdown;

static BRIDGE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

pub(crate) fn bridge(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    BRIDGE
        .get_or_try_init(py, || py.import("fencelock._bridge").map(|m| m.unbind()))
        .map(|m| m.bind(py))
}

/// A coroutine returning `value` at once.
pub(crate) fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    bridge(py)?.call_method1("ready", (value,))
}

/// The way results reach one event loop: tokio threads queue completions and, when the queue
/// was empty, write one byte to a socket the loop watches (`loop.add_reader`); the loop's
/// thread drains the queue, converts the results and settles the futures. The runtime's
/// threads never take the GIL on this path, and one wake-up of the loop settles every result
/// that arrived meanwhile. A loop without `add_reader` (Windows' proactor), or a platform
/// without Unix sockets (`fileno()` is -1 there, which `add_reader` refuses), is woken with
/// `call_soon_threadsafe` instead.
#[pyclass(module = "fencelock._native", frozen)]
struct Completions {
    shared: Arc<Shared>,
}

/// One result waiting for the loop's thread: converts it and settles its future.
type Done = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<()> + Send>;

struct Shared {
    queue: Mutex<Vec<Done>>,
    /// The loop watches `rx`; a completion writes to `tx` (Unix only).
    #[cfg(unix)]
    rx: UnixStream,
    #[cfg(unix)]
    tx: UnixStream,
    /// The loop, when it cannot watch a socket: woken with `call_soon_threadsafe(drain)`.
    fallback: OnceLock<(Py<PyAny>, Py<PyAny>)>,
}

impl Shared {
    /// From a runtime thread: queues `done` and wakes the loop if it is not already due to
    /// drain.
    fn push(&self, done: Done) {
        let first = {
            let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            queue.push(done);
            queue.len() == 1
        };
        if !first {
            return;
        }
        match self.fallback.get() {
            // A closed loop has nobody waiting: the queued values are dropped with it.
            Some((event_loop, drain)) => {
                shutdown::attach(|py| {
                    let _ = event_loop
                        .bind(py)
                        .call_method1("call_soon_threadsafe", (drain.bind(py),));
                });
            }
            // Nonblocking: a full socket already holds a wake-up.
            #[cfg(unix)]
            None => {
                let _ = (&self.tx).write(&[1]);
            }
            // Without a socket the bridge always calls `use_loop` first.
            #[cfg(not(unix))]
            None => {}
        }
    }
}

#[pymethods]
impl Completions {
    #[new]
    fn new() -> PyResult<Self> {
        #[cfg(unix)]
        let (rx, tx) = UnixStream::pair()?;
        #[cfg(unix)]
        {
            rx.set_nonblocking(true)?;
            tx.set_nonblocking(true)?;
        }
        Ok(Completions {
            shared: Arc::new(Shared {
                queue: Mutex::new(Vec::new()),
                #[cfg(unix)]
                rx,
                #[cfg(unix)]
                tx,
                fallback: OnceLock::new(),
            }),
        })
    }

    /// The socket the loop watches; -1 where there is none (the loop is then woken with
    /// `call_soon_threadsafe`, see `use_loop`).
    fn fileno(&self) -> i32 {
        #[cfg(unix)]
        return self.shared.rx.as_raw_fd();
        #[cfg(not(unix))]
        return -1;
    }

    /// For a loop that cannot watch a socket: wake it with `call_soon_threadsafe`.
    fn use_loop(slf: &Bound<'_, Self>, event_loop: Bound<'_, PyAny>) -> PyResult<()> {
        let drain = slf.getattr("drain")?.unbind();
        let _ = slf.get().shared.fallback.set((event_loop.unbind(), drain));
        Ok(())
    }

    /// On the loop's thread: settles every queued result; raises the first error after
    /// settling the others.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        #[cfg(unix)]
        {
            let mut buf = [0u8; 64];
            while matches!((&self.shared.rx).read(&mut buf), Ok(n) if n > 0) {}
        }
        let queue =
            std::mem::take(&mut *self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()));
        let mut first_error = None;
        for done in queue {
            if let Err(e) = done(py) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The done-callback of an acquisition's future: aborts the Tokio task if it was cancelled.
#[pyclass(module = "fencelock._native", frozen)]
struct AbortOnCancel {
    task: AbortHandle,
}

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.task.abort();
        }
        Ok(())
    }
}

/// Whether cancelling the awaiting task stops the Rust future.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnCancel {
    /// Drop the Rust future (acquisitions: the core cleans up).
    Abort,
    /// Let it finish in the background (release, extend).
    Finish,
}

/// Runs `fut` on the manager's runtime; returns a coroutine for its converted result.
pub(crate) fn spawn<'py, T, F, C>(
    py: Python<'py>,
    live: &Live,
    on_cancel: OnCancel,
    fut: F,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    T: Send + 'static,
    F: Future<Output = Result<T, Failure>> + Send + 'static,
    C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Bound<'a, PyAny>> + Send + 'static,
{
    let bridge = bridge(py)?;
    let event_loop = bridge.call_method0("running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    let completions = bridge
        .call_method1("completions", (&event_loop, py.get_type::<Completions>()))?
        .cast_into::<Completions>()?;
    let shared = Arc::clone(&completions.get().shared);
    let future_ref = future.clone().unbind();
    // Boxed once here: a core call's future holds every step's state (kilobytes), which the
    // task would otherwise copy whole when spawned and again when it completes (as in the
    // Node binding's promise.rs; bench/notes.md).
    let fut = Box::pin(fut);
    let task = live.handle.spawn(async move {
        let out = fut.await;
        shared.push(Box::new(move |py| {
            let future = future_ref.bind(py);
            if future.call_method0("done")?.is_truthy()? {
                // Cancelled meanwhile: the value (maybe a lock) is dropped, which releases it.
                return Ok(());
            }
            match out.map_err(|f| f.into_py(py)).and_then(|v| convert(py, v)) {
                Ok(v) => future.call_method1("set_result", (v,))?,
                Err(e) => future.call_method1("set_exception", (e.into_value(py),))?,
            };
            Ok(())
        }));
    });
    if on_cancel == OnCancel::Abort {
        let hook = AbortOnCancel {
            task: task.abort_handle(),
        };
        future.call_method1("add_done_callback", (hook,))?;
    }
    bridge.call_method1("wait", (future,))
}
