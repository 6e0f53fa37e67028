//! `fencelock.Lock` and `fencelock.asyncio.Lock`: one lock object written once. Both classes
//! hold a [`LockCell`] (the core lock, what it knows without asking, the drop rule), and
//! `lock_methods!` writes their methods and getters once, each class calling its face
//! (`face.rs`): the sync class blocks with the GIL released, the asyncio one returns
//! awaitables. Cancelling a task awaiting a release or extend does not stop it (a half-done
//! release would leave the lock held until its TTL): it finishes in the background.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fencelock::LeaseKind;
use pyo3::prelude::*;
use tokio::sync::RwLock;

use crate::convert::{py_repr, ttl_arg, ttl_seconds, Names, Text};
use crate::errors::Failure;
use crate::face::{boolean, none, Awaiting, Blocking, Face};
use crate::managed::{other_process, Live, ProcessLocal};
use crate::options::is_exception;

/// A call on a held lock, as [`LockCell::on_held`] runs it.
type LockCall<'a, T> = std::pin::Pin<Box<dyn Future<Output = fencelock::Result<T>> + Send + 'a>>;

/// What a lock object knows without asking its core lock: name and token as the caller gave
/// them (str or bytes), the fencing token.
pub(crate) struct LockFacts {
    pub name: Text,
    /// Every name (one for `acquire`), as given.
    pub names: Vec<Text>,
    pub token: Text,
    pub fencing_token: u64,
    /// One per name.
    pub fencing_tokens: Vec<u64>,
    /// What the lease holds of its name.
    pub kind: LeaseKind,
    /// Whether and why the lock was lost, also after its release (a release or the end of a
    /// scope that found it lost keeps `lost` true).
    pub lost: fencelock::LostView,
}

impl LockFacts {
    fn new(lock: &fencelock::Lock, names: &Names, token: Option<&Text>) -> LockFacts {
        LockFacts {
            token: Text::token(token, lock.token()),
            fencing_token: lock.fencing_token(),
            fencing_tokens: lock.fencing_tokens().to_vec(),
            name: names.first(),
            names: names.all(),
            lost: lock.lost_view(),
            kind: lock.kind(),
        }
    }

    /// The name for messages (the core's rendering: quoted, escaped, long ones cut).
    fn display_name(&self) -> String {
        fencelock::display_name(self.name.as_bytes())
    }
}

/// What a lock object collected while still held does: nothing on the servers (the lock is
/// detached: it expires after its TTL, or is released by token), but when it was
/// auto-extended, a `ResourceWarning` naming it, since its auto-extension stops here and the
/// program probably still relied on it.
fn warn_abandoned(facts: &LockFacts, was_auto_extended: bool) {
    if !was_auto_extended {
        return;
    }
    crate::shutdown::attach(|py| {
        let message = format!(
            "fencelock lock {} (fencing token {}) was garbage-collected while held and \
             auto-extended: it is not released, its auto-extension stops and it expires after \
             its TTL. Release it, use `with`, or keep a reference while you rely on it \
             (detach() hands it on by token)",
            facts.display_name(),
            facts.fencing_token
        );
        if let Ok(message) = std::ffi::CString::new(message) {
            let category = py.get_type::<pyo3::exceptions::PyResourceWarning>();
            if let Err(e) = PyErr::warn(py, &category, &message, 1) {
                e.write_unraisable(py, None);
            }
        }
    });
}

/// What a lock object holds in the process that acquired it.
struct Held {
    /// `None` once released (or detached).
    cell: Arc<RwLock<Option<fencelock::Lock>>>,
    /// Keeps the manager's runtime running while the lock lives.
    live: Live,
}

/// A lock object's state, the same in both classes; bound to the process that acquired it.
pub(crate) struct LockCell {
    held: ProcessLocal<Held>,
    facts: LockFacts,
    /// Set when a release (or the end of a `with` block) starts: it takes the lock out later
    /// (the asyncio face), and this object's collection in between must not detach it.
    finishing: AtomicBool,
}

impl LockCell {
    pub(crate) fn new(
        lock: fencelock::Lock,
        names: &Names,
        token: Option<&Text>,
        live: Live,
    ) -> LockCell {
        LockCell {
            facts: LockFacts::new(&lock, names, token),
            finishing: AtomicBool::new(false),
            held: ProcessLocal::new(Held {
                cell: Arc::new(RwLock::new(Some(lock))),
                live,
            }),
        }
    }

    fn held(&self) -> Result<&Held, Failure> {
        self.held
            .get()
            .ok_or_else(|| other_process(&self.facts.display_name(), self.held.pid()))
    }

    fn released(&self) -> Failure {
        let name = self.facts.display_name();
        Failure::Usage(format!("lock {name} was already released"))
    }

    /// `f` on the core lock; `None` once released, while a call takes it out (never waits:
    /// the caller holds the GIL), or in another process.
    fn peek<T>(&self, f: impl FnOnce(&fencelock::Lock) -> T) -> Option<T> {
        let guard = self.held.get()?.cell.try_read().ok()?;
        guard.as_ref().map(f)
    }

    /// The core lock taken out (`None` once released), for a release or the end of a scope.
    fn take<T, F>(
        &self,
        f: impl FnOnce(Option<fencelock::Lock>) -> F + Send + 'static,
    ) -> Result<
        (
            &Live,
            impl Future<Output = Result<T, Failure>> + Send + 'static,
        ),
        Failure,
    >
    where
        F: Future<Output = Result<T, Failure>> + Send,
    {
        self.finishing.store(true, Ordering::Release);
        let held = self.held()?;
        let cell = Arc::clone(&held.cell);
        let fut = async move {
            let taken = cell.write().await.take();
            f(taken).await
        };
        Ok((&held.live, fut))
    }

    fn release(
        &self,
    ) -> Result<
        (
            &Live,
            impl Future<Output = Result<(), Failure>> + Send + 'static,
        ),
        Failure,
    > {
        let released = self.released();
        self.take(|lock| async move {
            match lock {
                Some(lock) => lock.release().await.map_err(Failure::Core),
                None => Err(released),
            }
        })
    }

    /// `call` on the held lock, in the runtime; `released(error)` when it was released.
    fn on_held<T: Send + 'static>(
        &self,
        released: fn(Failure) -> Result<T, Failure>,
        call: impl for<'a> FnOnce(&'a fencelock::Lock) -> LockCall<'a, T> + Send + 'static,
    ) -> Result<
        (
            &Live,
            impl Future<Output = Result<T, Failure>> + Send + 'static,
        ),
        Failure,
    > {
        let held = self.held()?;
        let cell = Arc::clone(&held.cell);
        let error = self.released();
        let fut = async move {
            match cell.read().await.as_ref() {
                Some(lock) => call(lock).await.map_err(Failure::Core),
                None => released(error),
            }
        };
        Ok((&held.live, fut))
    }

    fn is_held(
        &self,
    ) -> Result<
        (
            &Live,
            impl Future<Output = Result<bool, Failure>> + Send + 'static,
        ),
        Failure,
    > {
        self.on_held(|_| Ok(false), |lock| Box::pin(lock.is_held()))
    }

    /// `add`: `ttl` added to the remaining time (`extend_by`), else the new expiry.
    fn extend(
        &self,
        ttl: std::time::Duration,
        add: bool,
    ) -> Result<
        (
            &Live,
            impl Future<Output = Result<(), Failure>> + Send + 'static,
        ),
        Failure,
    > {
        self.on_held(Err, move |lock| match add {
            true => Box::pin(lock.extend_by(ttl)),
            false => Box::pin(lock.extend(ttl)),
        })
    }

    /// A term's new value (`fencelock/_election.py`'s `Term.proclaim`).
    fn proclaim(
        &self,
        value: String,
    ) -> Result<
        (
            &Live,
            impl Future<Output = Result<(), Failure>> + Send + 'static,
        ),
        Failure,
    > {
        self.on_held(Err, move |lock| {
            Box::pin(async move { fencelock::ffi_support::election::proclaim(lock, &value).await })
        })
    }

    /// The end of a `with` block: release, reporting a loss unless the block raised (then
    /// its exception wins); nothing once released, or in another process.
    fn finish(
        &self,
        block_raised: bool,
    ) -> Option<(
        &Live,
        impl Future<Output = Result<(), Failure>> + Send + 'static,
    )> {
        let finish = move |lock: Option<fencelock::Lock>| async move {
            match lock {
                Some(lock) => match lock.finish_scope().await {
                    Err(e) if !block_raised => Err(Failure::Core(e)),
                    _ => Ok(()),
                },
                None => Ok(()),
            }
        };
        self.take(finish).ok()
    }

    fn detach(&self, py: Python<'_>) -> PyResult<()> {
        let held = self.held().map_err(|f| f.into_py(py))?;
        let cell = Arc::clone(&held.cell);
        // Waits (without the GIL) for a call in flight on this lock, which is bounded.
        match crate::shutdown::detach(py, move || cell.blocking_write().take()) {
            Some(lock) => {
                lock.detach();
                Ok(())
            }
            None => Err(self.released().into_py(py)),
        }
    }

    /// `<CLASS name=... fencing_token=... STATE>`, the lock objects' repr.
    fn repr(&self, py: Python<'_>, class: &str) -> String {
        let state = if self.held.get().is_none() {
            "other process".to_owned()
        } else {
            match (self.facts.lost.reason(), self.peek(|l| l.validity())) {
                (Some(why), _) => format!("lost={}", why.as_str()),
                (None, None) => "released".to_owned(),
                (None, Some(v)) => format!("validity={:.3}s", v.as_secs_f64()),
            }
        };
        let name = py_repr(self.facts.name.to_object(py).bind(py));
        let token = self.facts.fencing_token;
        format!("<{class} name={name} fencing_token={token} {state}>")
    }
}

impl Drop for LockCell {
    /// Collected while held: not released (see `warn_abandoned`).
    fn drop(&mut self) {
        let Some(held) = self.held.get() else {
            return; // a forked child's copy: the parent's lock, left alone
        };
        if self.finishing.load(Ordering::Acquire) {
            return; // a release under way owns the lock
        }
        match held.cell.try_write() {
            Ok(mut guard) => {
                if let Some(lock) = guard.take() {
                    warn_abandoned(&self.facts, lock.is_auto_extending());
                    lock.detach();
                }
            }
            Err(_) => {
                // A call still runs on the lock: detach what is left once it is done.
                let cell = Arc::clone(&held.cell);
                held.live.handle.spawn(async move {
                    if let Some(lock) = cell.write().await.take() {
                        lock.detach();
                    }
                });
            }
        }
    }
}

/// The methods and getters of a lock class over its [`LockCell`] (`self.lock`), run through
/// the class's face.
macro_rules! lock_methods {
    ($class:ty, $face:ty) => {
        impl $class {
            /// The end of a `with` / `async with` block (see [`LockCell::finish`]): `False`.
            pub(crate) fn finish<'py>(
                &self,
                py: Python<'py>,
                block_raised: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                match self.lock.finish(block_raised) {
                    Some((live, fut)) => <$face>::run(py, live, fut, |py, ()| boolean(py, false)),
                    None => <$face>::ready(py, boolean(py, false)?),
                }
            }
        }

        #[pymethods]
        impl $class {
            /// Releases the lock on every server (awaitable in ``fencelock.asyncio``). Raises
            /// ``LockLost`` if it had expired or been taken (fewer than a quorum still held
            /// it), ``Unavailable`` if too few servers answered, and ``LockError`` if it was
            /// already released.
            fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let (live, fut) = self.lock.release().map_err(|f| f.into_py(py))?;
                <$face>::run(py, live, fut, none)
            }

            /// Asks the servers whether this lock is still held (a ``bool``, awaitable in
            /// ``fencelock.asyncio``): a quorum of them hold its key under its token
            /// (read-only; never extends it). Unlike ``lost``, this process's view, it
            /// notices a key deleted or overwritten behind the holder's back, and then marks
            /// the lock lost (``lost_reason`` says how; ``on_lost`` is called). ``False`` once
            /// released. Raises ``Unavailable`` when too few servers answer.
            fn is_held<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let (live, fut) = self.lock.is_held().map_err(|f| f.into_py(py))?;
                <$face>::run(py, live, fut, boolean)
            }

            /// Gives up this object's hold without releasing the lock (never awaitable): it
            /// stays held on the servers until its TTL runs out or someone releases it by name
            /// and token (``manager.release(name, token)``, from this process or another: the
            /// request-id pattern). Auto-extension and ``on_lost`` stop; the object then reads
            /// as released. Raises ``LockError`` if it was already released or detached.
            fn detach(&self, py: Python<'_>) -> PyResult<()> {
                self.lock.detach(py)
            }

            /// Extends the lock: it expires ``ttl`` seconds from now, and ``validity`` is
            /// recomputed (awaitable in ``fencelock.asyncio``). With ``add=True``, ``ttl``
            /// seconds are added to its remaining time instead, atomically on each server
            /// (redis-py's ``extend``); its validity is then what a quorum guarantees. Raises
            /// ``LockLost`` if no quorum still holds it (it is then marked lost),
            /// ``Unavailable``, ``ValueError`` for a bad ttl, ``LockError`` if already
            /// released.
            #[pyo3(signature = (ttl, *, add = false))]
            fn extend<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = ttl_arg)] ttl: f64,
                add: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let ttl = ttl_seconds(ttl)?;
                let (live, fut) = self.lock.extend(ttl, add).map_err(|f| f.into_py(py))?;
                <$face>::run(py, live, fut, none)
            }

            /// A term's new value (``Term.proclaim`` of ``fencelock/_election.py``).
            fn _proclaim<'py>(
                &self,
                py: Python<'py>,
                value: String,
            ) -> PyResult<Bound<'py, PyAny>> {
                let (live, fut) = self.lock.proclaim(value).map_err(|f| f.into_py(py))?;
                <$face>::run(py, live, fut, none)
            }

            /// A term's value now (``None``: not a term, or released).
            #[getter]
            fn _term_value(&self) -> Option<String> {
                self.lock
                    .peek(fencelock::ffi_support::election::term_value)
                    .flatten()
            }

            /// The lock's name, as given (str or bytes).
            #[getter]
            fn name(&self, py: Python<'_>) -> Py<PyAny> {
                self.lock.facts.name.to_object(py)
            }

            /// Every name of the lock, as given (a tuple; one name for ``acquire``).
            #[getter]
            fn names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
                let names = &self.lock.facts.names;
                pyo3::types::PyTuple::new(py, names.iter().map(|n| n.to_object(py)))
            }

            /// One fencing token per name, in the order of ``names`` (a tuple of int).
            #[getter]
            fn fencing_tokens<'py>(
                &self,
                py: Python<'py>,
            ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
                let tokens = &self.lock.facts.fencing_tokens;
                pyo3::types::PyTuple::new(py, tokens.iter().copied())
            }

            /// This acquisition's token, the value of the lock's Redis key: as given, or the
            /// generated token as a str. Pass it with the name to the manager's ``release``
            /// to release the lock from elsewhere.
            #[getter]
            fn token(&self, py: Python<'_>) -> Py<PyAny> {
                self.lock.facts.token.to_object(py)
            }

            /// The fencing token: larger than that of every earlier acquisition of any lock
            /// on this server set. Give it to the storage you protect and have it reject
            /// smaller ones.
            #[getter]
            fn fencing_token(&self) -> u64 {
                self.lock.facts.fencing_token
            }

            /// Seconds the lock is still safe to use, net of acquisition time and clock
            /// drift; 0.0 once released, lost or expired.
            #[getter]
            fn validity(&self) -> f64 {
                self.lock
                    .peek(|l| l.validity().as_secs_f64())
                    .unwrap_or(0.0)
            }

            /// Whether the lock is known to be lost: auto-extension or ``extend`` found it
            /// gone or taken, or its validity ran out; it stays true after a release or the
            /// end of a ``with`` block found it lost. False once released while held.
            #[getter]
            fn lost(&self) -> bool {
                self.lock.facts.lost.reason().is_some()
            }

            /// Why the lock was lost: ``"expired"`` (its validity ran out, or the key was
            /// found gone), ``"taken"`` (another token holds the key), ``"unreachable"`` (no
            /// quorum of servers could be reached to extend it before its validity ran
            /// out); ``None`` while it is held, or released without a loss.
            #[getter]
            fn lost_reason(&self) -> Option<&'static str> {
                self.lock
                    .facts
                    .lost
                    .reason()
                    .map(fencelock::LostReason::as_str)
            }

            /// What the lease holds of its name: ``"lock"``, ``"semaphore"`` (``permits`` of
            /// a semaphore), ``"read"`` (a read share) or ``"write"`` (the write hold).
            #[getter]
            fn kind(&self) -> &'static str {
                self.lock.facts.kind.as_str()
            }

            /// How many permits a semaphore's lease holds; ``None`` for other kinds.
            #[getter]
            fn permits(&self) -> Option<u32> {
                match self.lock.facts.kind {
                    fencelock::LeaseKind::Permits { count, .. } => Some(count),
                    _ => None,
                }
            }
        }
    };
}

/// A lock held through ``fencelock.LockManager``.
///
/// ``name`` and ``token`` come back as the type they were given (a generated token is a
/// str); ``fencing_token`` is an int that grows with every acquisition on the server set;
/// ``validity`` is the seconds the lock is still safe to use; ``lost`` turns true when it is
/// known to be lost. ``with lock:`` releases it at the end of the block (raising
/// ``LockLost`` if it was lost). A lock that is garbage-collected while held is not released:
/// it expires after its TTL (with a ``ResourceWarning`` if it was auto-extended, since that
/// stops).
#[pyclass(name = "Lock", module = "fencelock", frozen)]
pub struct PyLock {
    lock: LockCell,
}

/// A lock held through ``fencelock.asyncio.LockManager``: as ``fencelock.Lock``, with
/// awaitable ``release()``, ``extend(ttl)`` and ``is_held()``, and ``async with lock:``.
#[pyclass(name = "AsyncLock", module = "fencelock.asyncio", frozen)]
pub struct PyAsyncLock {
    lock: LockCell,
}

impl PyLock {
    pub(crate) fn new(lock: LockCell) -> PyLock {
        PyLock { lock }
    }
}

impl PyAsyncLock {
    pub(crate) fn new(lock: LockCell) -> PyAsyncLock {
        PyAsyncLock { lock }
    }
}

lock_methods!(PyLock, Blocking);
lock_methods!(PyAsyncLock, Awaiting);

#[pymethods]
impl PyLock {
    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __exit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<&Bound<'py, PyAny>>,
        _exc: Option<&Bound<'py, PyAny>>,
        _tb: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.finish(py, is_exception(exc_type))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.lock.repr(py, "fencelock.Lock")
    }
}

#[pymethods]
impl PyAsyncLock {
    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        Awaiting::ready(py, slf.into_any())
    }

    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<&Bound<'py, PyAny>>,
        _exc: Option<&Bound<'py, PyAny>>,
        _tb: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.finish(py, is_exception(exc_type))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.lock.repr(py, "fencelock.asyncio.Lock")
    }
}
