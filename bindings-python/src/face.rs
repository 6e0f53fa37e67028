//! The two faces of every call, so that each method is written once: [`Blocking`] (the
//! `fencelock` classes) runs the core's future to completion on the calling thread with the
//! GIL released; [`Awaiting`] (the `fencelock.asyncio` classes) spawns it on the manager's
//! runtime and returns an awaitable (`aio_bridge.rs`). A method is the future it runs and the
//! conversion of its result; the twin classes call it through their face
//! (`manager_methods!` in `calls.rs`, `lock_methods!` in `lock.rs`, the family's
//! `lease_methods!`).

use std::future::Future;

use pyo3::prelude::*;

use crate::aio_bridge::{spawn, OnCancel};
use crate::errors::Failure;
use crate::managed::Live;
use crate::shutdown;

/// How a call's result reaches Python.
pub(crate) trait Face {
    /// Runs `fut` on `live`'s manager and gives its result converted by `convert`: the value
    /// ([`Blocking`]) or an awaitable of it ([`Awaiting`]; cancelling the awaiting task does
    /// not stop `fut`: a release or extend half done would leave the lock in doubt).
    fn run<'py, T, F, C>(
        py: Python<'py>,
        live: &Live,
        fut: F,
        convert: C,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Failure>> + Send + 'static,
        C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Bound<'a, PyAny>> + Send + 'static;

    /// `value` as this face gives a result: itself, or an awaitable of it.
    fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>;
}

/// The synchronous classes' face: blocks with the GIL released.
pub(crate) struct Blocking;

/// The asyncio classes' face: an awaitable, the future running on the manager's runtime.
pub(crate) struct Awaiting;

impl Face for Blocking {
    fn run<'py, T, F, C>(
        py: Python<'py>,
        live: &Live,
        fut: F,
        convert: C,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Failure>> + Send + 'static,
        C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Bound<'a, PyAny>> + Send + 'static,
    {
        let manager = &live.manager;
        let out = shutdown::detach(py, || manager.block_on(fut));
        let value = out
            .map_err(Failure::Core)
            .and_then(|r| r)
            .map_err(|f| f.into_py(py))?;
        convert(py, value)
    }

    fn ready<'py>(_py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        Ok(value)
    }
}

impl Face for Awaiting {
    fn run<'py, T, F, C>(
        py: Python<'py>,
        live: &Live,
        fut: F,
        convert: C,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Failure>> + Send + 'static,
        C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Bound<'a, PyAny>> + Send + 'static,
    {
        spawn(py, live, OnCancel::Finish, fut, convert)
    }

    fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        crate::aio_bridge::ready(py, value)
    }
}

/// `None`, for calls with nothing to return.
pub(crate) fn none(py: Python<'_>, (): ()) -> PyResult<Bound<'_, PyAny>> {
    Ok(py.None().into_bound(py))
}

/// A `bool`.
pub(crate) fn boolean(py: Python<'_>, value: bool) -> PyResult<Bound<'_, PyAny>> {
    Ok(pyo3::types::PyBool::new(py, value).to_owned().into_any())
}

/// A duration as seconds (a `float`).
pub(crate) fn seconds(py: Python<'_>, d: std::time::Duration) -> PyResult<Bound<'_, PyAny>> {
    Ok(pyo3::types::PyFloat::new(py, d.as_secs_f64()).into_any())
}
