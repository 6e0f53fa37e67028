//! The synchronous API: `fencelock.LockManager`, `fencelock.Lock` and the `lock()` scope.
//!
//! Every network wait runs with the GIL released (`py.detach`), on owned values converted
//! beforehand. Acquisitions wake every [`SIGNAL_POLL`] to run Python's signal handlers, so
//! Ctrl-C interrupts them; the core then drops the attempt and releases its votes.

use std::sync::Mutex;

use fencelock::{blocking, AcquireOptions, ErrorKind};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{
    max_hold_arg, name_arg, names_arg, opt_token_arg, token_arg, ttl_arg, ttl_seconds, wait_arg,
    wait_limit, CallerToken, Names, Servers, Text,
};
use crate::errors::{to_py, Failure, LockError};
use crate::lost::{Deliver, Keep};
use crate::managed::{Managed, SIGNAL_POLL};
use crate::options::acquire_options;
use crate::options::{is_exception, Options, ScopeArgs};
use crate::shutdown;
use crate::sync_lock::PyLock;

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

/// Acquires with the GIL released, running Python's signal handlers every `SIGNAL_POLL`; an
/// exception from a handler cancels the acquisition and is raised as is.
fn acquire_blocking(
    py: Python<'_>,
    manager: &blocking::LockManager,
    names: &Names,
    opts: &AcquireOptions,
) -> Result<blocking::Lock, AcquireError> {
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
    let result = shutdown::detach(py, || match names {
        Names::One(name) => {
            manager.acquire_interruptible(name.as_bytes(), opts, SIGNAL_POLL, interrupted)
        }
        Names::Many(_) => {
            manager.acquire_many_interruptible(names.bytes(), opts, SIGNAL_POLL, interrupted)
        }
        Names::Lease(name, kind) => manager.acquire_lease_interruptible(
            name.as_bytes(),
            *kind,
            opts,
            SIGNAL_POLL,
            interrupted,
        ),
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

impl PyLockManager {
    pub(crate) fn live(&self, py: Python<'_>) -> PyResult<blocking::LockManager> {
        self.managed
            .live()
            .map(|l| l.manager)
            .map_err(|f| f.into_py(py))
    }

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
        let manager = self.live(py)?;
        Ok(acquire_blocking(py, &manager, &names, &opts).map(|lock| {
            keep.watch(lock.as_async(), &names.first(), Deliver::Thread);
            PyLock::new(lock, &names, token.token.as_ref())
        }))
    }
}

#[pymethods]
impl PyLockManager {
    #[new]
    #[pyo3(signature = (servers, **options))]
    fn new(
        py: Python<'_>,
        servers: Servers,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyLockManager> {
        let options = Options::from_kwargs("LockManager", servers, options)?;
        let managed = Managed::new(py, options)?;
        Ok(PyLockManager { managed })
    }

    /// Acquires the lock ``name`` (str or bytes) for ``ttl`` seconds and returns the ``Lock``.
    ///
    /// ``wait``: ``None`` (the default) waits until acquired, interruptible by Ctrl-C; a
    /// number of seconds gives up after that long with ``NotAcquired``; ``0`` tries once.
    /// ``token``: your own token (str or bytes: a job or request id) instead of a random one;
    /// it is exclusive, as the classic request-id lock is: while the name is held with it
    /// (by another process passing it too), acquiring waits like for any other holder, unless
    /// ``reentrant=True``, which acquires it again (TTL reset, a new fencing token). ``auto_extend``: keep the lock alive
    /// in the background (extends every ttl/3) until released; ``lock.lost`` turns true if
    /// it is lost anyway. ``max_hold`` (seconds, with ``auto_extend``): stop extending that
    /// long after acquisition, so the lock expires then at the latest. ``on_lost``: a callable
    /// called once, from a background thread, with a ``LockLost`` error (``reason``:
    /// ``"expired"``, ``"taken"`` or ``"unreachable"``; ``name``, ``fencing_token``) if the
    /// lock is lost while held; never after a release. What it raises is logged on the
    /// ``fencelock`` logger.
    ///
    /// Raises ``NotAcquired`` (wait limit passed), ``Unavailable`` (too few servers answer),
    /// ``ServerError``, ``ValueError``/``TypeError`` for bad arguments. The GIL is released
    /// while waiting.
    #[pyo3(signature = (
        name, ttl = 30.0, *, wait = None, token = None, reentrant = false,
        auto_extend = false, max_hold = None,
        on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn acquire(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
        reentrant: bool,
        auto_extend: bool,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyLock> {
        let keep = Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
        let token = CallerToken { token, reentrant };
        self.acquire_inner(py, Names::One(name), ttl, wait, token, &keep)?
            .map_err(|e| e.into_py(py))
    }

    /// Acquires every name of ``names`` (a list or tuple of str or bytes) at once, or none,
    /// and returns one ``Lock`` for all of them: on each server one script sets every key or
    /// none, with one token and one fencing token per name (``lock.names``,
    /// ``lock.fencing_tokens``). It waits in every name's queue in the order callers came,
    /// without holding any of the names meanwhile (a release never hands it one name alone),
    /// so locks on overlapping names never deadlock. ``extend``, ``release`` and auto-extension
    /// act on all the names. On a Redis Cluster the names must share a hash slot: give them a
    /// common hash tag (``["{order-42}:payment", "{order-42}:stock"]``). Other arguments and
    /// errors as for ``acquire``; ``ValueError`` also for no names, more than 64, or one given
    /// twice.
    #[pyo3(signature = (
        names, ttl = 30.0, *, wait = None, token = None, reentrant = false,
        auto_extend = false, max_hold = None, on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn acquire_many(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = names_arg)] names: Names,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
        reentrant: bool,
        auto_extend: bool,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyLock> {
        let keep = Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
        let token = CallerToken { token, reentrant };
        self.acquire_inner(py, names, ttl, wait, token, &keep)?
            .map_err(|e| e.into_py(py))
    }

    /// Tries once to acquire ``name``: the ``Lock``, or ``None`` when another owner holds it.
    ///
    /// Unreachable servers raise ``Unavailable`` rather than returning ``None``. Arguments
    /// as for ``acquire``.
    #[pyo3(signature = (
        name, ttl = 30.0, *, token = None, reentrant = false, auto_extend = false, max_hold = None,
        on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn try_acquire(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
        reentrant: bool,
        auto_extend: bool,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyLock>> {
        let keep = Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
        let token = CallerToken { token, reentrant };
        match self.acquire_inner(py, Names::One(name), ttl, Some(0.0), token, &keep)? {
            Ok(lock) => Ok(Some(lock)),
            // As the core's try_acquire: "held by another" is no lock, anything else raises.
            Err(AcquireError::Failed(Failure::Core(e))) if e.kind() == ErrorKind::NotAcquired => {
                Ok(None)
            }
            Err(e) => Err(e.into_py(py)),
        }
    }

    /// A context manager that holds ``name`` while its block runs:
    /// ``with manager.lock("jobs") as lock: ...``.
    ///
    /// Entering acquires (``wait`` as for ``acquire``; ``None`` waits until acquired) with
    /// auto-extension on (for at most ``max_hold`` seconds when given; ``on_lost`` as for
    /// ``acquire``); leaving releases. If the lock was lost while the block ran, leaving
    /// raises ``LockLost`` (unless the block itself raised: that exception propagates).
    #[pyo3(signature = (name, ttl = 30.0, *, wait = None, max_hold = None, on_lost = None))]
    fn lock(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
        #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
        on_lost: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyLockScope> {
        let args = ScopeArgs::new(name, ttl, wait, max_hold, on_lost.as_ref())?;
        Ok(PyLockScope::new(slf.unbind(), args))
    }

    /// A decorator that runs the function while holding ``name``, as ``with
    /// manager.lock(name, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost)``. For
    /// coroutine functions use ``fencelock.asyncio.LockManager.locked``.
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

    /// Whether ``name`` is held: a quorum of the servers hold its key under one token (taken
    /// by fencelock or by another client's classic set-if-absent lock with an expiry). Acquires nothing;
    /// the holder's token is never shown. Raises ``Unavailable`` when too few servers
    /// answer, as ``acquire`` does.
    fn is_locked(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = name_arg)] name: Text,
    ) -> PyResult<bool> {
        let manager = self.live(py)?;
        shutdown::detach(py, || manager.is_locked(name.as_bytes())).map_err(|e| to_py(py, e))
    }

    /// How long ``name`` stays held at least, in seconds, or ``None`` when it is free: the
    /// quorum's view (what a quorum of the servers holding it under one token still keep, less
    /// this call's time and the clock drift; never more); ``math.inf`` for a key without
    /// expiry. Raises as ``is_locked``.
    fn remaining(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = name_arg)] name: Text,
    ) -> PyResult<Option<f64>> {
        let manager = self.live(py)?;
        shutdown::detach(py, || manager.remaining(name.as_bytes()))
            .map(|r| r.map(crate::convert::seconds_or_inf))
            .map_err(|e| to_py(py, e))
    }

    /// Who holds ``name`` now: a ``fencelock.Holder`` (how long it stays held at least, and the
    /// label, since when and fencing token its holder noted, when its manager has the
    /// ``holder`` option), or ``None`` when it is free. Acquires nothing; raises as
    /// ``is_locked``.
    fn holder<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = name_arg)] name: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let manager = self.live(py)?;
        let holder =
            shutdown::detach(py, || manager.holder(name.as_bytes())).map_err(|e| to_py(py, e))?;
        crate::convert::holder_to_py(py, holder)
    }

    /// Extends ``name`` if it is held with ``token`` (a lock handed over from another process
    /// or thread): it expires ``ttl`` seconds from now on every server holding it with
    /// ``token``. Returns the validity this gives, in seconds (as ``Lock.validity``). Raises
    /// ``LockLost`` if it is not held with that token (expired, or taken by another owner),
    /// ``Unavailable`` if too few servers answered, ``ValueError`` for a bad ttl.
    fn extend(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = token_arg)] token: Text,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
    ) -> PyResult<f64> {
        let ttl = ttl_seconds(ttl)?;
        let manager = self.live(py)?;
        shutdown::detach(py, || {
            manager.extend_by_token(name.as_bytes(), token.as_bytes(), ttl)
        })
        .map(|v| v.as_secs_f64())
        .map_err(|e| to_py(py, e))
    }

    /// Releases ``name`` if it is held with ``token`` (a lock handed over from another process
    /// or thread). Raises ``LockLost`` if it was not held with that token (expired, or taken
    /// by another owner), ``Unavailable`` if too few servers answered.
    fn release(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = name_arg)] name: Text,
        #[pyo3(from_py_with = token_arg)] token: Text,
    ) -> PyResult<()> {
        let manager = self.live(py)?;
        shutdown::detach(py, || {
            manager.release_by_token(name.as_bytes(), token.as_bytes())
        })
        .map_err(|e| to_py(py, e))
    }

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

    fn __repr__(&self, py: Python<'_>) -> String {
        self.managed.repr(py, "fencelock.LockManager")
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
