//! The exception hierarchy of `fencelock` and the one conversion from [`fencelock::Error`].
//!
//! ```text
//! LockError(Exception)
//! ├── NotAcquired(LockError, TimeoutError)     ErrorKind::NotAcquired
//! ├── LockLost(LockError)                      ErrorKind::NotHeld
//! ├── Unavailable(LockError, ConnectionError)  ErrorKind::Unavailable
//! ├── ServerError(LockError)                   ErrorKind::Redis
//! └── WrongKind(LockError)                     ErrorKind::WrongKind
//! ValueError                                   ErrorKind::InvalidArgument
//! KeyboardInterrupt                            ErrorKind::Cancelled (never a LockError)
//! ```

use fencelock::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyConnectionError, PyException, PyKeyboardInterrupt, PyTimeoutError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(
    fencelock,
    LockError,
    PyException,
    "Base class of every fencelock error. Raised as such for misuse of a lock object: \
releasing or extending a lock that was already released, using a closed manager, or using \
a lock in a process it was not acquired in (after fork)."
);
create_exception!(
    fencelock,
    LockLost,
    LockError,
    "The lock is no longer held: it expired or was deleted or taken by another owner before \
release or extend, or it was lost while a `with manager.lock(...)` block ran (the work done \
under it was not protected)."
);
create_exception!(
    fencelock,
    ServerError,
    LockError,
    "A Redis server answered with an unexpected reply (for example WRONGTYPE when the lock's \
key holds a list)."
);

create_exception!(
    fencelock,
    WrongKind,
    LockError,
    "The name is held as another kind than the call asks for (a lock, a semaphore, a \
read-write lock; the message names the kind found), or the token holds the other mode of a \
read-write lock (a reader asking to write would wait for itself)."
);

const NOT_ACQUIRED_DOC: &str = "The wait limit passed while the lock was held by another owner \
(or no quorum of servers agreed in time). Also a TimeoutError.";
const UNAVAILABLE_DOC: &str = "Too few Redis servers answered to reach a quorum; the message \
names them and why. Also a ConnectionError.";

static NOT_ACQUIRED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UNAVAILABLE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A `LockError` subclass that also derives from a builtin exception, made with `type()`
/// since `create_exception!` takes a single base.
fn derived(
    py: Python<'_>,
    name: &str,
    builtin: Bound<'_, PyType>,
    doc: &str,
) -> PyResult<Py<PyType>> {
    let dict = PyDict::new(py);
    dict.set_item("__module__", "fencelock")?;
    dict.set_item("__doc__", doc)?;
    let bases = PyTuple::new(py, [py.get_type::<LockError>(), builtin])?;
    let class = py.get_type::<PyType>().call1((name, bases, dict))?;
    Ok(class.cast_into::<PyType>()?.unbind())
}

/// `fencelock.NotAcquired`.
pub fn not_acquired(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    NOT_ACQUIRED
        .get_or_try_init(py, || {
            derived(
                py,
                "NotAcquired",
                py.get_type::<PyTimeoutError>(),
                NOT_ACQUIRED_DOC,
            )
        })
        .map(|t| t.bind(py).clone())
}

/// `fencelock.Unavailable`.
pub fn unavailable(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    UNAVAILABLE
        .get_or_try_init(py, || {
            derived(
                py,
                "Unavailable",
                py.get_type::<PyConnectionError>(),
                UNAVAILABLE_DOC,
            )
        })
        .map(|t| t.bind(py).clone())
}

fn of_class(class: PyResult<Bound<'_, PyType>>, message: String) -> PyErr {
    match class {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    }
}

/// The single conversion from the core's error: one arm per [`ErrorKind`], no catch-all, so a
/// new kind in the core fails to compile here until it is mapped.
pub fn to_py(py: Python<'_>, error: Error) -> PyErr {
    let message = error.message().to_owned();
    let err = match error.kind() {
        ErrorKind::InvalidArgument => PyValueError::new_err(message),
        ErrorKind::NotAcquired => of_class(not_acquired(py), message),
        ErrorKind::NotHeld => LockLost::new_err(message),
        ErrorKind::Unavailable => of_class(unavailable(py), message),
        ErrorKind::Redis => ServerError::new_err(message),
        // Only reached when the interruption came from somewhere other than a Python signal
        // handler (which raises its own exception, re-raised as is).
        ErrorKind::Cancelled => PyKeyboardInterrupt::new_err(message),
        ErrorKind::WrongKind => WrongKind::new_err(message),
    };
    if !error.servers().is_empty() {
        let reports: Vec<PyServerReport> = error
            .servers()
            .iter()
            .map(PyServerReport::from_core)
            .collect();
        // Setting an attribute on a fresh exception object fails only without memory.
        let _ = err.value(py).setattr("servers", reports);
    }
    err
}

/// What one server answered in the last attempt of a failed acquisition: an item of a
/// ``LockError``'s ``servers``.
#[pyclass(name = "ServerReport", module = "fencelock", frozen, get_all, eq)]
#[derive(PartialEq)]
pub struct PyServerReport {
    /// The server as configured, without its password.
    server: String,
    /// ``"granted"``, ``"held"``, ``"unreachable"``, ``"timeout"`` or ``"error"``.
    outcome: String,
    /// For people: how long the holder keeps it, or why the server failed.
    detail: String,
}

impl PyServerReport {
    fn from_core(r: &fencelock::ServerReport) -> PyServerReport {
        PyServerReport {
            server: r.server.clone(),
            outcome: r.outcome.as_str().to_owned(),
            detail: r.detail.clone(),
        }
    }
}

#[pymethods]
impl PyServerReport {
    fn __repr__(&self) -> String {
        format!(
            "ServerReport(server={:?}, outcome={:?}, detail={:?})",
            self.server, self.outcome, self.detail
        )
    }
}

/// Why a binding operation failed: the core said so, or the lock object was already released
/// (or belongs to another process).
pub enum Failure {
    /// An error of the core.
    Core(Error),
    /// Misuse of a lock object or manager: raised as `LockError` with this message.
    Usage(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Core(e)
    }
}

impl Failure {
    /// The Python exception.
    pub fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Core(e) => to_py(py, e),
            Failure::Usage(m) => LockError::new_err(m),
        }
    }
}

/// Names of every [`ErrorKind`] (`ErrorKind::ALL`), for the mapping table test.
#[pyfunction]
pub fn _error_kinds() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| format!("{k:?}")).collect()
}

/// The exception that a core error of the given kind (named as in `_error_kinds()`) becomes,
/// through the same conversion every call uses. For the mapping table test.
#[pyfunction]
pub fn _error_for_kind(py: Python<'_>, kind: &str, message: &str) -> PyResult<Py<PyAny>> {
    let kind = ErrorKind::ALL
        .into_iter()
        .find(|k| format!("{k:?}") == kind)
        .ok_or_else(|| PyValueError::new_err(format!("no error kind {kind:?}")))?;
    Ok(to_py(py, Error::new(kind, message))
        .into_value(py)
        .into_any())
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("LockError", py.get_type::<LockError>())?;
    m.add("NotAcquired", not_acquired(py)?)?;
    let lost = py.get_type::<LockLost>();
    // Set on the error an `on_lost` callback receives (see `lost.rs`); None on the others.
    for attr in ["reason", "name", "fencing_token"] {
        lost.setattr(attr, py.None())?;
    }
    // What each server answered in a failed acquisition; set on those errors, empty on others.
    py.get_type::<LockError>()
        .setattr("servers", pyo3::types::PyTuple::empty(py))?;
    m.add_class::<PyServerReport>()?;
    m.add("LockLost", lost)?;
    m.add("Unavailable", unavailable(py)?)?;
    m.add("ServerError", py.get_type::<ServerError>())?;
    m.add("WrongKind", py.get_type::<WrongKind>())?;
    m.add_function(wrap_pyfunction!(_error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(_error_for_kind, m)?)?;
    Ok(())
}
