//! The asyncio API: `fencelock.asyncio.LockManager` and the `lock()` scope (`aio_lock.rs` has
//! the `Lock`, `aio_bridge.rs` the bridge from the runtime to the event loop). Cancelling the
//! awaiting task aborts an acquisition, which drops the core's future: votes it had won are
//! released in the background. Release and extend are not aborted (a half-done release would
//! leave the lock held until its TTL): they finish in the background.

use std::sync::Mutex;

use fencelock::{ErrorKind, LeaseKind};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::aio_bridge::{bridge, none, ready, spawn, OnCancel};
use crate::convert::{
    max_hold_arg, name_arg, names_arg, opt_token_arg, token_arg, ttl_arg, wait_arg, wait_limit,
    CallerToken, Names, Servers, Text,
};
use crate::errors::{Failure, LockError};
use crate::lost::{Deliver, Keep};
use crate::managed::{Live, Managed};
use crate::options::acquire_options;
use crate::options::{is_exception, Options, ScopeArgs};

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

impl PyAsyncLockManager {
    pub(crate) fn live(&self, py: Python<'_>) -> PyResult<Live> {
        self.managed.live().map_err(|f| f.into_py(py))
    }

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
        let manager = live.manager.as_async().clone();
        let keys = names.bytes();
        let kind = match &names {
            Names::One(_) => Some(LeaseKind::Lock),
            Names::Many(_) => None,
            Names::Lease(_, kind) => Some(*kind),
        };
        let fut = async move {
            let acquired = match kind {
                None => manager.acquire_many_with(&keys, &opts).await,
                Some(kind) => manager.acquire_lease_with(&keys[0], kind, &opts).await,
            };
            match acquired {
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
            let lock = Bound::new(
                py,
                PyAsyncLock::new(lock, &names, token.as_ref(), lock_live),
            )?;
            Ok(lock.into_any())
        })
    }
}

#[pymethods]
impl PyAsyncLockManager {
    #[new]
    #[pyo3(signature = (servers, **options))]
    fn new(
        py: Python<'_>,
        servers: Servers,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyAsyncLockManager> {
        let options = Options::from_kwargs("LockManager", servers, options)?;
        let managed = Managed::new(py, options)?;
        Ok(PyAsyncLockManager { managed })
    }

    /// Acquires ``name`` for ``ttl`` seconds; awaits the ``Lock``.
    ///
    /// ``wait``: ``None`` waits until acquired, a number of seconds gives up with
    /// ``NotAcquired``, ``0`` tries once. ``token``, ``reentrant``, ``auto_extend`` and ``max_hold`` as in
    /// ``fencelock.LockManager.acquire``; ``on_lost`` too, but scheduled on the event loop
    /// that acquired (a coroutine function's coroutine is run as a task). Cancelling the
    /// awaiting task abandons the acquisition (nothing stays locked).
    #[pyo3(signature = (
        name, ttl = 30.0, *, wait = None, token = None, reentrant = false,
        auto_extend = false, max_hold = None,
        on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
        reentrant: bool,
        auto_extend: bool,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keep = Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
        let token = CallerToken { token, reentrant };
        self.start_acquire(py, Names::One(name), ttl, wait, token, keep, false)
    }

    /// Acquires every name of ``names`` at once, or none; awaits one ``Lock`` for all of them.
    /// As ``fencelock.LockManager.acquire_many``; cancelling the awaiting task abandons it.
    #[pyo3(signature = (
        names, ttl = 30.0, *, wait = None, token = None, reentrant = false,
        auto_extend = false, max_hold = None, on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn acquire_many<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = names_arg)] names: Names,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
        reentrant: bool,
        auto_extend: bool,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keep = Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
        let token = CallerToken { token, reentrant };
        self.start_acquire(py, names, ttl, wait, token, keep, false)
    }

    /// Tries once to acquire ``name``: awaits the ``Lock``, or ``None`` when another owner
    /// holds it (unreachable servers raise ``Unavailable``).
    #[pyo3(signature = (
        name, ttl = 30.0, *, token = None, reentrant = false, auto_extend = false, max_hold = None,
        on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn try_acquire<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
        reentrant: bool,
        auto_extend: bool,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keep = Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
        let token = CallerToken { token, reentrant };
        self.start_acquire(py, Names::One(name), ttl, None, token, keep, true)
    }

    /// An async context manager that holds ``name`` while its block runs:
    /// ``async with manager.lock("jobs") as lock: ...``. Auto-extends (for at most
    /// ``max_hold`` seconds when given; ``on_lost`` as for ``acquire``); raises ``LockLost``
    /// at exit if the lock was lost meanwhile (unless the block raised).
    #[pyo3(signature = (name, ttl = 30.0, *, wait = None, max_hold = None, on_lost = None))]
    fn lock(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyAsyncLockScope> {
        let args = ScopeArgs::new(name, ttl, wait, max_hold, on_lost.as_ref())?;
        Ok(PyAsyncLockScope::new(slf.unbind(), args))
    }

    /// A decorator for coroutine functions: each call runs inside
    /// ``async with manager.lock(name, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost)``.
    #[pyo3(signature = (name, ttl = 30.0, *, wait = None, max_hold = None, on_lost = None))]
    fn locked<'py>(
        slf: &Bound<'py, Self>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        ScopeArgs::new(name, ttl, wait, max_hold, on_lost.as_ref())?.decorator(slf.as_any())
    }

    /// Whether ``name`` is held (awaitable ``bool``); see ``fencelock.LockManager.is_locked``.
    fn is_locked<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let live = self.live(py)?;
        let manager = live.manager.as_async().clone();
        let fut = async move {
            manager
                .is_locked(name.as_bytes())
                .await
                .map_err(Failure::Core)
        };
        spawn(py, &live, OnCancel::Finish, fut, |py, held: bool| {
            Ok(pyo3::types::PyBool::new(py, held).to_owned().into_any())
        })
    }

    /// How long ``name`` stays held at least, in seconds, or ``None`` when free (awaitable);
    /// see ``fencelock.LockManager.remaining``.
    fn remaining<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let live = self.live(py)?;
        let manager = live.manager.as_async().clone();
        let fut = async move {
            manager
                .remaining(name.as_bytes())
                .await
                .map_err(Failure::Core)
        };
        spawn(
            py,
            &live,
            OnCancel::Finish,
            fut,
            |py, left: Option<std::time::Duration>| {
                Ok(match left {
                    Some(d) => {
                        pyo3::types::PyFloat::new(py, crate::convert::seconds_or_inf(d)).into_any()
                    }
                    None => py.None().into_bound(py),
                })
            },
        )
    }

    /// Who holds ``name`` now (awaitable ``fencelock.Holder`` or ``None``); see
    /// ``fencelock.LockManager.holder``.
    fn holder<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let live = self.live(py)?;
        let manager = live.manager.as_async().clone();
        let fut = async move { manager.holder(name.as_bytes()).await.map_err(Failure::Core) };
        spawn(
            py,
            &live,
            OnCancel::Finish,
            fut,
            crate::convert::holder_to_py,
        )
    }

    /// Extends ``name`` if it is held with ``token`` (awaitable validity in seconds); see
    /// ``fencelock.LockManager.extend``.
    fn extend<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = token_arg)] token: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ttl = crate::convert::ttl_seconds(ttl)?;
        let live = self.live(py)?;
        let manager = live.manager.as_async().clone();
        let fut = async move {
            manager
                .extend_by_token(name.as_bytes(), token.as_bytes(), ttl)
                .await
                .map_err(Failure::Core)
        };
        spawn(
            py,
            &live,
            OnCancel::Finish,
            fut,
            |py, v: std::time::Duration| {
                Ok(pyo3::types::PyFloat::new(py, v.as_secs_f64()).into_any())
            },
        )
    }

    /// Releases ``name`` if it is held with ``token``; raises ``LockLost`` if it was not.
    fn release<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = token_arg)] token: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let live = self.live(py)?;
        let manager = live.manager.as_async().clone();
        let fut = async move {
            manager
                .release_by_token(name.as_bytes(), token.as_bytes())
                .await
                .map_err(Failure::Core)
        };
        spawn(py, &live, OnCancel::Finish, fut, none)
    }

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

    fn __repr__(&self, py: Python<'_>) -> String {
        self.managed.repr(py, "fencelock.asyncio.LockManager")
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

pub use crate::aio_lock::PyAsyncLock;
