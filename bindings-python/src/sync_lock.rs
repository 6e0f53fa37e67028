//! `fencelock.Lock`: a lock held through the synchronous `fencelock.LockManager` (sync.rs),
//! its release, extension and detach with the GIL released, and the drop rule.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use fencelock::blocking;
use pyo3::prelude::*;

use crate::convert::{ttl_arg, ttl_seconds, Names, Text};
use crate::errors::{to_py, Failure};
use crate::managed::{other_process, ProcessLocal};
use crate::options::{is_exception, lock_getters, HeldLock, LockFacts};
use crate::shutdown;

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
    /// `None` once released (or finished); bound to the process that acquired it.
    cell: ProcessLocal<RwLock<Option<blocking::Lock>>>,
    facts: LockFacts,
}

impl PyLock {
    pub(crate) fn new(lock: blocking::Lock, names: &Names, token: Option<&Text>) -> PyLock {
        PyLock {
            facts: LockFacts::new(lock.as_async(), names, token),
            cell: ProcessLocal::new(RwLock::new(Some(lock))),
        }
    }

    /// The cell, in the process that acquired the lock.
    fn cell(&self) -> Result<&RwLock<Option<blocking::Lock>>, Failure> {
        self.cell
            .get()
            .ok_or_else(|| other_process(&self.display_name(), self.cell.pid()))
    }

    fn read(cell: &RwLock<Option<blocking::Lock>>) -> RwLockReadGuard<'_, Option<blocking::Lock>> {
        cell.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(
        cell: &RwLock<Option<blocking::Lock>>,
    ) -> RwLockWriteGuard<'_, Option<blocking::Lock>> {
        cell.write().unwrap_or_else(|e| e.into_inner())
    }

    fn display_name(&self) -> String {
        self.facts.display_name()
    }

    fn released(&self) -> Failure {
        Failure::Usage(format!("lock {} was already released", self.display_name()))
    }

    /// The end of a `with` block: release, reporting a loss as `LockLost` unless the block
    /// raised (then its exception wins). A no-op once released.
    pub(crate) fn finish(&self, py: Python<'_>, block_raised: bool) -> PyResult<()> {
        let Ok(cell) = self.cell() else {
            return Ok(());
        };
        let result = shutdown::detach(py, || match Self::write(cell).take() {
            Some(lock) => lock.finish_scope(),
            None => Ok(()),
        });
        match result {
            Err(e) if !block_raised => Err(to_py(py, e)),
            _ => Ok(()),
        }
    }
}

impl HeldLock for PyLock {
    fn facts(&self) -> &LockFacts {
        &self.facts
    }

    fn peek_core<T>(&self, f: impl FnOnce(&fencelock::Lock) -> T) -> Option<T> {
        let cell = self.cell.get()?;
        let guard = match cell.try_read() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        guard.as_ref().map(|l| f(l.as_async()))
    }

    fn in_this_process(&self) -> bool {
        self.cell.get().is_some()
    }
}

impl Drop for PyLock {
    /// Collected while held: not released (see `warn_abandoned`).
    fn drop(&mut self) {
        let Some(cell) = self.cell.get() else {
            return; // a forked child's copy: the parent's lock, left alone
        };
        if let Some(lock) = Self::write(cell).take() {
            crate::options::warn_abandoned(&self.facts, lock.is_auto_extending());
            lock.detach();
        }
    }
}

lock_getters!(PyLock);

#[pymethods]
impl PyLock {
    /// Releases the lock on every server. Raises ``LockLost`` if it had expired or been taken
    /// (fewer than a quorum still held it), ``Unavailable`` if too few servers answered, and
    /// ``LockError`` if it was already released.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let cell = self.cell().map_err(|f| f.into_py(py))?;
        shutdown::detach(py, || match Self::write(cell).take() {
            Some(lock) => {
                let outcome = lock.release();
                outcome.map_err(Failure::Core)
            }
            None => Err(self.released()),
        })
        .map_err(|f| f.into_py(py))
    }

    /// Asks the servers whether this lock is still held: a quorum of them hold its key under
    /// its token (read-only; never extends it). Unlike ``lost``, this process's view, it
    /// notices a key deleted or overwritten behind the holder's back, and then marks the lock
    /// lost (``lost_reason`` says how; ``on_lost`` is called). ``False`` once released. Raises
    /// ``Unavailable`` when too few servers answer.
    fn is_held(&self, py: Python<'_>) -> PyResult<bool> {
        let cell = self.cell().map_err(|f| f.into_py(py))?;
        shutdown::detach(py, || match Self::read(cell).as_ref() {
            Some(lock) => lock.is_held(),
            None => Ok(false),
        })
        .map_err(|e| to_py(py, e))
    }

    /// Gives up this object's hold without releasing the lock: it stays held on the servers
    /// until its TTL runs out or someone releases it by name and token
    /// (``manager.release(name, token)``, from this process or another: the request-id
    /// pattern). Auto-extension and ``on_lost`` stop; the object then reads as released.
    /// Raises ``LockError`` if it was already released or detached.
    fn detach(&self, py: Python<'_>) -> PyResult<()> {
        let cell = self.cell().map_err(|f| f.into_py(py))?;
        shutdown::detach(py, || match Self::write(cell).take() {
            Some(lock) => {
                lock.detach();
                Ok(())
            }
            None => Err(self.released()),
        })
        .map_err(|f| f.into_py(py))
    }

    /// Extends the lock: it expires ``ttl`` seconds from now, and ``validity`` is recomputed.
    /// With ``add=True``, ``ttl`` seconds are added to its remaining time instead, atomically
    /// on each server (redis-py's ``extend``); its validity is then what a quorum guarantees.
    /// Raises ``LockLost`` if no quorum still holds it (it is then marked lost),
    /// ``Unavailable``, ``ValueError`` for a bad ttl, ``LockError`` if already released.
    #[pyo3(signature = (ttl, *, add = false))]
    fn extend(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = ttl_arg)] ttl: f64,
        add: bool,
    ) -> PyResult<()> {
        let ttl = ttl_seconds(ttl)?;
        let cell = self.cell().map_err(|f| f.into_py(py))?;
        shutdown::detach(py, || match Self::read(cell).as_ref() {
            Some(lock) if add => lock.extend_by(ttl).map_err(Failure::Core),
            Some(lock) => lock.extend(ttl).map_err(Failure::Core),
            None => Err(self.released()),
        })
        .map_err(|f| f.into_py(py))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.finish(py, is_exception(exc_type))?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        HeldLock::repr(self, py, "fencelock.Lock")
    }
}
