//! `fencelock.asyncio.Lock`: a lock held through the asyncio manager, its awaitable
//! `release()`, `extend()` and `is_held()`, `detach()`, and `async with lock:`.

use std::sync::Arc;

use pyo3::prelude::*;
use tokio::sync::RwLock;

use crate::aio_bridge::{none, ready, spawn, OnCancel};
use crate::convert::{ttl_arg, ttl_seconds, Names, Text};
use crate::errors::Failure;
use crate::managed::{other_process, Live, ProcessLocal};
use crate::options::{is_exception, lock_getters, HeldLock, LockFacts};
use crate::shutdown;

type Cell = Arc<RwLock<Option<fencelock::Lock>>>;

/// What an async lock holds in the process that acquired it.
struct Held {
    /// `None` once released.
    cell: Cell,
    /// Keeps the manager's runtime running while the lock lives.
    live: Live,
}

/// A lock held through ``fencelock.asyncio.LockManager``: as ``fencelock.Lock``, with
/// awaitable ``release()`` and ``extend(ttl)`` and ``async with lock:``.
#[pyclass(name = "AsyncLock", module = "fencelock.asyncio", frozen)]
pub struct PyAsyncLock {
    held: ProcessLocal<Held>,
    facts: LockFacts,
    /// Set when a release (or the end of `async with`) starts: the spawned call takes the lock
    /// out later, and this object's collection in between must not detach it.
    finishing: std::sync::atomic::AtomicBool,
}

impl PyAsyncLock {
    pub(crate) fn new(
        lock: fencelock::Lock,
        names: &Names,
        token: Option<&Text>,
        live: Live,
    ) -> PyAsyncLock {
        PyAsyncLock {
            facts: LockFacts::new(&lock, names, token),
            finishing: std::sync::atomic::AtomicBool::new(false),
            held: ProcessLocal::new(Held {
                cell: Arc::new(RwLock::new(Some(lock))),
                live,
            }),
        }
    }

    fn display_name(&self) -> String {
        self.facts.display_name()
    }

    fn held(&self, py: Python<'_>) -> PyResult<&Held> {
        self.held
            .get()
            .ok_or_else(|| other_process(&self.display_name(), self.held.pid()).into_py(py))
    }

    /// The end of an `async with` block (see `fencelock.Lock.__exit__`); resolves to False.
    pub(crate) fn finish<'py>(
        &self,
        py: Python<'py>,
        block_raised: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.finishing
            .store(true, std::sync::atomic::Ordering::Release);
        let Some(held) = self.held.get() else {
            return ready(py, false.into_pyobject(py)?.to_owned().into_any());
        };
        let cell = Arc::clone(&held.cell);
        let fut = async move {
            let taken = cell.write().await.take();
            match taken {
                Some(lock) => {
                    let outcome = lock.finish_scope().await;
                    match outcome {
                        Err(e) if !block_raised => Err(Failure::Core(e)),
                        _ => Ok(()),
                    }
                }
                None => Ok(()),
            }
        };
        spawn(py, &held.live, OnCancel::Finish, fut, |py, ()| {
            Ok(false.into_pyobject(py)?.to_owned().into_any())
        })
    }
}

impl HeldLock for PyAsyncLock {
    fn facts(&self) -> &LockFacts {
        &self.facts
    }

    fn peek_core<T>(&self, f: impl FnOnce(&fencelock::Lock) -> T) -> Option<T> {
        let guard = self.held.get()?.cell.try_read().ok()?;
        guard.as_ref().map(f)
    }

    fn in_this_process(&self) -> bool {
        self.held.get().is_some()
    }
}

impl Drop for PyAsyncLock {
    /// Collected while held: not released (see `warn_abandoned`).
    fn drop(&mut self) {
        let Some(held) = self.held.get() else {
            return; // a forked child's copy: the parent's lock, left alone
        };
        if self.finishing.load(std::sync::atomic::Ordering::Acquire) {
            return; // a release under way owns the lock
        }
        match held.cell.try_write() {
            Ok(mut guard) => {
                if let Some(lock) = guard.take() {
                    crate::options::warn_abandoned(&self.facts, lock.is_auto_extending());
                    lock.detach();
                }
            }
            Err(_) => {
                // A call still runs on the lock (it owns the lock's fate if it is a release):
                // detach what is left once it is done.
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

lock_getters!(PyAsyncLock);

#[pymethods]
impl PyAsyncLock {
    /// Releases the lock (awaitable). Raises ``LockLost`` if it had expired or been taken,
    /// ``Unavailable``, or ``LockError`` if already released. Cancelling the awaiting task
    /// does not stop the release.
    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.finishing
            .store(true, std::sync::atomic::Ordering::Release);
        let held = self.held(py)?;
        let cell = Arc::clone(&held.cell);
        let released = format!("lock {} was already released", self.display_name());
        let fut = async move {
            let taken = cell.write().await.take();
            match taken {
                Some(lock) => {
                    let outcome = lock.release().await;
                    outcome.map_err(Failure::Core)
                }
                None => Err(Failure::Usage(released)),
            }
        };
        spawn(py, &held.live, OnCancel::Finish, fut, none)
    }

    /// Whether the servers still hold this lock (awaitable ``bool``); see
    /// ``fencelock.Lock.is_held``.
    fn is_held<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let held = self.held(py)?;
        let cell = Arc::clone(&held.cell);
        let fut = async move {
            let guard = cell.read().await;
            match guard.as_ref() {
                Some(lock) => lock.is_held().await.map_err(Failure::Core),
                None => Ok(false),
            }
        };
        spawn(py, &held.live, OnCancel::Finish, fut, |py, held: bool| {
            Ok(pyo3::types::PyBool::new(py, held).to_owned().into_any())
        })
    }

    /// Gives up this object's hold without releasing the lock (not awaitable): as
    /// ``fencelock.Lock.detach``. Raises ``LockError`` if it was already released or detached.
    fn detach(&self, py: Python<'_>) -> PyResult<()> {
        let held = self.held(py)?;
        let cell = Arc::clone(&held.cell);
        // Waits (without the GIL) for an extend in flight on this lock, which is bounded.
        let taken = shutdown::detach(py, move || cell.blocking_write().take());
        match taken {
            Some(lock) => {
                lock.detach();
                Ok(())
            }
            None => Err(Failure::Usage(format!(
                "lock {} was already released",
                self.display_name()
            ))
            .into_py(py)),
        }
    }

    /// Extends the lock to expire ``ttl`` seconds from now (awaitable); with ``add=True``,
    /// adds ``ttl`` seconds to its remaining time (see ``fencelock.Lock.extend``). Raises
    /// ``LockLost`` if no quorum still holds it, ``ValueError`` for a bad ttl, ``LockError``
    /// if released.
    #[pyo3(signature = (ttl, *, add = false))]
    fn extend<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        add: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ttl = ttl_seconds(ttl)?;
        let held = self.held(py)?;
        let cell = Arc::clone(&held.cell);
        let released = format!("lock {} was already released", self.display_name());
        let fut = async move {
            let guard = cell.read().await;
            match guard.as_ref() {
                Some(lock) if add => lock.extend_by(ttl).await.map_err(Failure::Core),
                Some(lock) => lock.extend(ttl).await.map_err(Failure::Core),
                None => Err(Failure::Usage(released)),
            }
        };
        spawn(py, &held.live, OnCancel::Finish, fut, none)
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready(slf.py(), slf.into_any())
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
        HeldLock::repr(self, py, "fencelock.asyncio.Lock")
    }
}
