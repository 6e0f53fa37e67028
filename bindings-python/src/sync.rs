//! The synchronous API: `fencelock.LockManager` (its methods shared with the asyncio manager
//! are in `calls.rs`, the `Lock` in `lock.rs`), its acquisition and the `lock()` scope.
//!
//! Every network wait runs with the GIL released (`py.detach`), on owned values converted
//! beforehand. Acquisitions wake every [`SIGNAL_POLL`] to run Python's signal handlers, so
//! Ctrl-C interrupts them; the core then drops the attempt and releases its votes.

use std::sync::Mutex;

use fencelock::{blocking, ErrorKind};
use pyo3::prelude::*;

use crate::calls::manager_methods;
use crate::convert::{wait_limit, CallerToken, Names};
use crate::errors::{to_py, Failure, LockError};
use crate::face::Blocking;
use crate::lock::{LockCell, PyLock};
use crate::lost::{Deliver, Keep};
use crate::managed::{Managed, SIGNAL_POLL};
use crate::options::acquire_options;
use crate::options::{is_exception, ScopeArgs};
use crate::shutdown;

/// Why a blocking acquisition failed.
pub(crate) enum AcquireError {
    /// A Python signal handler raised (KeyboardInterrupt for Ctrl-C): raised as is.
    Signal(PyErr),
    /// The core's error.
    Failed(Failure),
}

impl AcquireError {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            AcquireError::Signal(e) => e,
            AcquireError::Failed(f) => f.into_py(py),
        }
    }
}

/// Blocks on `acquisition` with the GIL released, running Python's signal handlers every
/// `SIGNAL_POLL`; an exception from a handler cancels the acquisition and is raised as is.
pub(crate) fn acquire_blocking<T: Send>(
    py: Python<'_>,
    manager: &blocking::LockManager,
    acquisition: impl std::future::Future<Output = fencelock::Result<T>> + Send,
) -> Result<T, AcquireError> {
    let mut raised: Option<PyErr> = None;
    let interrupted = || {
        shutdown::reattach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                raised = Some(e);
                true
            }
        })
    };
    let result = shutdown::detach(py, || {
        manager
            .block_on_interruptible(acquisition, SIGNAL_POLL, interrupted)
            .and_then(|acquired| acquired)
    });
    match result {
        Ok(lock) => Ok(lock),
        Err(e) => match (e.kind(), raised) {
            (ErrorKind::Cancelled, Some(signal)) => Err(AcquireError::Signal(signal)),
            _ => Err(AcquireError::Failed(Failure::Core(e))),
        },
    }
}

/// A distributed lock manager over one Redis server or several (Redlock).
///
/// ``LockManager(servers, *, key_prefix="", retry_delay=0.2, retry_jitter=None,
/// drift_factor=0.01, server_timeout=None, connect_timeout=None, refused_attempts=10,
/// replica_ack=None, replica_ack_timeout=None, tls_ca_file=None,
/// tls_client_cert=None, tls_client_key=None, tls_insecure=False, password=None,
/// metric_names=None, holder=None)``
///
/// ``servers`` is a ``redis://[user:password@]host[:port][/db]`` URL or a list of them (one
/// for the single-server lock, several independent servers for Redlock with quorum N/2+1);
/// also ``rediss://`` (TLS), ``redis+sentinel://[user:password@]s1:26379,s2:26379/master``
/// (a Sentinel-watched master), ``redis+cluster://[user:password@]h1:7000,h2:7001`` (a Redis
/// Cluster named by some of its nodes, one server of the quorum; ``rediss+cluster://`` for
/// TLS) and ``redis+unix:///path``.
/// ``key_prefix`` (str or bytes) goes in front of every lock name to make its Redis key.
/// ``retry_delay`` is the longest sleep between tries when no release notification comes,
/// ``retry_jitter`` its random spread (default half of it), ``drift_factor`` the clock drift
/// allowance, ``server_timeout`` a fixed per-server call timeout (default ttl/20 within
/// [0.01, 1] s), ``connect_timeout`` the bound on opening a connection (TCP, TLS handshake,
/// authentication; default 2). ``refused_attempts`` is after how many attempts in a row on
/// which every server refused the connection (nothing listens there: a server not started,
/// a wrong port) a wait gives up with ``Unavailable`` (default 10, about 2 s; 0 waits
/// through refusals; a Sentinel's or a Cluster's master down during a failover is always
/// waited through). ``replica_ack=N`` makes each acquire, extend and fencing
/// write-back wait until N replicas acknowledged it, at most
/// ``replica_ack_timeout`` (default 0.1): a server whose replicas did not does not count
/// toward the quorum (the call fails with ``Unavailable`` saying so), so that a granted
/// lock survives the failover of its master (docs/SAFETY.md). Times are in seconds.
///
/// TLS, for ``rediss://`` servers: ``tls_ca_file`` a PEM file of the CA(s) to trust instead
/// of the system's roots; ``tls_client_cert`` and ``tls_client_key`` (both or neither) PEM
/// files of a client certificate and its key, for servers that require one (mutual TLS);
/// ``tls_insecure=True`` accepts any certificate and host name (self-signed development
/// servers only). Paths are ``str``, ``bytes`` or ``os.PathLike``; the files are read here.
///
/// ``password`` is the password of every server whose URL has none (with the URL's user, if
/// any; a Sentinel entry's master, a cluster's nodes), for passwords kept out of URLs: read it
/// from the environment or a secret file. A URL's own password wins; never shown.
///
/// ``holder`` leaves a note next to each lock this manager acquires, for
/// ``LockManager.holder(name)`` (and ``fencelock status``) to show who holds it, since when and
/// with which fencing token: ``True`` for ``host:pid``, or a label of your own (1 to 128
/// bytes, no control characters). Off by default (``None``): nothing more is written.
///
/// ``metric_names`` lets lock names into the ``name`` label of fencelock's measurements
/// (``fencelock.metrics``; empty by default, since names are often unbounded): a list of names
/// shown as they are, or a function of a name (a ``str``) that returns its label or ``None``
/// (it runs on fencelock's threads; when it raises, the label is empty).
///
/// Nothing is contacted here: a server that is down does not make this fail; bad options
/// raise ``ValueError`` or ``TypeError``. Thread-safe; usable as a context manager (which
/// closes it); usable in a child process after ``os.fork()`` (it reconnects there).
#[pyclass(name = "LockManager", module = "fencelock", frozen)]
pub struct PyLockManager {
    managed: Managed,
}

manager_methods!(
    PyLockManager,
    Blocking,
    PyLockScope,
    "fencelock.LockManager"
);

impl PyLockManager {
    /// Acquires `names` (or a lease of the family: [`Names::Lease`]); the outer error is a
    /// bad argument, the inner one the acquisition's.
    pub(crate) fn acquire_inner(
        &self,
        py: Python<'_>,
        names: Names,
        ttl: f64,
        wait: Option<f64>,
        token: CallerToken,
        keep: &Keep,
    ) -> PyResult<Result<PyLock, AcquireError>> {
        let opts = acquire_options(py, ttl, wait_limit(wait)?, &token, keep)?;
        let live = self.live(py)?;
        let acquisition =
            (names.prepare(live.manager.as_async(), &opts)).map_err(|e| to_py(py, e))?;
        let manager = live.manager.clone();
        Ok(acquire_blocking(py, &manager, acquisition).map(|lock| {
            keep.watch(&lock, &names.first(), Deliver::Thread);
            PyLock::new(LockCell::new(lock, &names, token.token.as_ref(), live))
        }))
    }

    /// Acquires for `manager_methods!` and the family: the `Lock`, or `None` for a single try
    /// (`try_once`) that found the name held.
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
        match self.acquire_inner(py, names, ttl, wait, token, &keep)? {
            Ok(lock) => Ok(Bound::new(py, lock)?.into_any()),
            // As the core's try_acquire: "held by another" is no lock, anything else raises.
            Err(AcquireError::Failed(Failure::Core(e)))
                if try_once && e.kind() == ErrorKind::NotAcquired =>
            {
                Ok(py.None().into_bound(py))
            }
            Err(e) => Err(e.into_py(py)),
        }
    }
}

#[pymethods]
impl PyLockManager {
    /// Closes the manager: later calls raise ``LockError``. Locks already acquired stay
    /// usable until released; the connections go when the last of them does. Never blocks.
    fn close(&self) {
        self.managed.close();
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc_info))]
    fn __exit__(&self, _exc_info: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.managed.close();
        false
    }
}

/// The ``with manager.lock(name)`` context manager: acquires on entry (auto-extending),
/// releases on exit, and raises ``LockLost`` on exit if the lock was lost meanwhile.
#[pyclass(name = "LockScope", module = "fencelock", frozen)]
pub struct PyLockScope {
    manager: Py<PyLockManager>,
    args: ScopeArgs,
    entered: Mutex<Option<Py<PyLock>>>,
}

impl PyLockScope {
    /// The scope of `args` on `manager` (also a lease's, [`ScopeArgs::kind`]).
    pub(crate) fn new(manager: Py<PyLockManager>, args: ScopeArgs) -> PyLockScope {
        PyLockScope {
            manager,
            args,
            entered: Mutex::new(None),
        }
    }
}

#[pymethods]
impl PyLockScope {
    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<PyLock>> {
        if self.entered.lock().map(|e| e.is_some()).unwrap_or(true) {
            return Err(LockError::new_err(
                "this manager.lock(...) block is already entered; call manager.lock() again \
                 for another",
            ));
        }
        let a = &self.args;
        let lock = self
            .manager
            .get()
            .acquire_inner(
                py,
                a.names(),
                a.ttl,
                a.wait,
                CallerToken::default(),
                &a.keep,
            )?
            .map_err(|e| e.into_py(py))?;
        let lock = Py::new(py, lock)?;
        if let Ok(mut e) = self.entered.lock() {
            *e = Some(lock.clone_ref(py));
        }
        Ok(lock)
    }

    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let lock = self.entered.lock().ok().and_then(|mut e| e.take());
        if let Some(lock) = lock {
            lock.get().finish(py, is_exception(exc_type))?;
        }
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.args.repr(py, "fencelock.LockScope")
    }
}
