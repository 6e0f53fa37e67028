//! The asyncio API: `fencelock.asyncio.LockManager` (its methods shared with the sync manager
//! are in `calls.rs`, the `Lock` in `lock.rs`), its acquisition and the `lock()` scope;
//! `aio_bridge.rs` has the bridge from the runtime to the event loop. Cancelling the
//! awaiting task aborts an acquisition, which drops the core's future: votes it had won are
//! released in the background. Release and extend are not aborted (a half-done release would
//! leave the lock held until its TTL): they finish in the background.

use std::sync::Mutex;

use fencelock::ErrorKind;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::aio_bridge::{bridge, ready, spawn, OnCancel};
use crate::calls::manager_methods;
use crate::convert::{wait_limit, CallerToken, Names};
use crate::errors::{Failure, LockError};
use crate::face::Awaiting;
use crate::lock::{LockCell, PyAsyncLock};
use crate::lost::{Deliver, Keep};
use crate::managed::Managed;
use crate::options::acquire_options;
use crate::options::{is_exception, ScopeArgs};

/// A distributed lock manager for asyncio: the same as ``fencelock.LockManager`` with
/// ``async`` methods and ``async with``.
///
/// ``LockManager(servers, *, key_prefix="", retry_delay=0.2, retry_jitter=None,
/// drift_factor=0.01, server_timeout=None, connect_timeout=None, refused_attempts=10,
/// replica_ack=None, replica_ack_timeout=None, tls_ca_file=None,
/// tls_client_cert=None, tls_client_key=None, tls_insecure=False, password=None,
/// metric_names=None, holder=None)``; see
/// ``fencelock.LockManager`` for the options (TLS files, timeouts in seconds).
/// The waits run on a small runtime thread of the manager, never blocking the event loop.
/// Cancelling a task that waits in ``acquire`` (``asyncio.wait_for``, ``task.cancel()``)
/// abandons the acquisition cleanly.
#[pyclass(name = "AsyncLockManager", module = "fencelock.asyncio", frozen)]
pub struct PyAsyncLockManager {
    managed: Managed,
}

manager_methods!(
    PyAsyncLockManager,
    Awaiting,
    PyAsyncLockScope,
    "fencelock.asyncio.LockManager"
);

impl PyAsyncLockManager {
    /// Spawns an acquisition; `try_once` turns "held by another" into `None`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_acquire<'py>(
        &self,
        py: Python<'py>,
        names: Names,
        ttl: f64,
        wait: Option<f64>,
        token: CallerToken,
        keep: Keep,
        try_once: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = if try_once { Some(0.0) } else { wait };
        let opts = acquire_options(py, ttl, wait_limit(wait)?, &token, &keep)?;
        let token = token.token;
        // `on_lost` is scheduled on the loop that acquires.
        let event_loop = match keep.on_lost {
            Some(_) => Some(bridge(py)?.call_method0("running_loop")?.unbind()),
            None => None,
        };
        let live = self.live(py)?;
        let acquisition = names
            .prepare(live.manager.as_async(), &opts)
            .map_err(|e| Failure::Core(e).into_py(py))?;
        let fut = async move {
            match acquisition.await {
                Ok(lock) => Ok(Some(lock)),
                // As the core's try_acquire: only "held by another" is no lock.
                Err(e) if try_once && e.kind() == ErrorKind::NotAcquired => Ok(None),
                Err(e) => Err(Failure::Core(e)),
            }
        };
        let lock_live = live.clone();
        spawn(py, &live, OnCancel::Abort, fut, move |py, lock| {
            let Some(lock) = lock else {
                return Ok(py.None().into_bound(py));
            };
            if let Some(event_loop) = event_loop {
                keep.watch(&lock, &names.first(), Deliver::Loop(event_loop));
            }
            let lock = LockCell::new(lock, &names, token.as_ref(), lock_live);
            let lock = Bound::new(py, PyAsyncLock::new(lock))?;
            Ok(lock.into_any())
        })
    }
}

#[pymethods]
impl PyAsyncLockManager {
    /// Closes the manager at once (later calls raise ``LockError``; locks already acquired
    /// stay usable). Returns an awaitable, so ``await manager.close()`` works too.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.managed.close();
        // Not a coroutine: not awaiting it (allowed) warns of nothing.
        bridge(py)?.call_method1("Done", (py.None(),))
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready(slf.py(), slf.into_any())
    }

    #[pyo3(signature = (*_exc_info))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc_info: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.managed.close();
        ready(py, false.into_pyobject(py)?.to_owned().into_any())
    }
}

/// The ``async with manager.lock(name)`` context manager.
#[pyclass(name = "AsyncLockScope", module = "fencelock.asyncio", frozen)]
pub struct PyAsyncLockScope {
    manager: Py<PyAsyncLockManager>,
    args: ScopeArgs,
    entered: Mutex<Option<Py<PyAsyncLock>>>,
}

impl PyAsyncLockScope {
    /// The scope of `args` on `manager` (also a lease's, [`ScopeArgs::kind`]).
    pub(crate) fn new(manager: Py<PyAsyncLockManager>, args: ScopeArgs) -> PyAsyncLockScope {
        PyAsyncLockScope {
            manager,
            args,
            entered: Mutex::new(None),
        }
    }
}

#[pymethods]
impl PyAsyncLockScope {
    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.get();
        if me.entered.lock().map(|e| e.is_some()).unwrap_or(true) {
            return Err(LockError::new_err(
                "this manager.lock(...) block is already entered; call manager.lock() again \
                 for another",
            ));
        }
        let args = &me.args;
        let acquiring = me.manager.get().start_acquire(
            py,
            args.names(),
            args.ttl,
            args.wait,
            CallerToken::default(),
            args.keep.clone(),
            false,
        )?;
        // The scope records the lock only once the awaiting task has it: a task cancelled
        // while acquiring leaves the scope empty (and the lock, if it came anyway, released).
        bridge(py)?.call_method1("enter", (slf, acquiring))
    }

    /// Records the lock of the running ``async with`` block (called by the bridge).
    fn _entered(&self, lock: Py<PyAsyncLock>) {
        *self.entered.lock().unwrap_or_else(|e| e.into_inner()) = Some(lock);
    }

    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<&Bound<'py, PyAny>>,
        _exc: Option<&Bound<'py, PyAny>>,
        _tb: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lock = self
            .entered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match lock {
            Some(lock) => lock.get().finish(py, is_exception(exc_type)),
            None => ready(py, false.into_pyobject(py)?.to_owned().into_any()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.args.repr(py, "fencelock.asyncio.LockScope")
    }
}
