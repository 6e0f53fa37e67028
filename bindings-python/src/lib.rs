//! `fencelock._native`: the Python binding of the fencelock core, wrapped by the pure Python
//! package `fencelock` (`python/fencelock/`).
//!
//! A thin layer: argument and unit conversion (`convert`), what the sync and asyncio classes
//! share (`options`: the constructor keywords, `lock()`/`locked()` arguments, a lock's facts
//! and getters), error mapping (`errors`), GIL release and Ctrl-C (`sync`), the asyncio
//! bridge (`aio`), fork safety (`managed`), the core's events for `logging` (`events`), its
//! measurements and span records for exporters (`metrics`, `spans`). No lock logic lives here.

mod aio;
mod aio_bridge;
mod calls;
mod cli;
mod convert;
mod election;
mod errors;
mod events;
mod face;
mod family;
mod lock;
mod lost;
mod managed;
mod metrics;
mod options;
mod process;
mod shutdown;
mod spans;
mod sync;

use pyo3::prelude::*;

/// The native part of fencelock: use the ``fencelock`` and ``fencelock.asyncio`` modules.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(cli::_cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(process::_at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(process::_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(events::_set_event_level, m)?)?;
    m.add_function(wrap_pyfunction!(events::_event_level, m)?)?;
    m.add_function(wrap_pyfunction!(events::_next_events, m)?)?;
    m.add_function(wrap_pyfunction!(events::_take_events, m)?)?;
    m.add_function(wrap_pyfunction!(events::_set_span_capture, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::_metric_measures, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::_metric_start, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::_metric_totals, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::_metric_observations, m)?)?;
    m.add_class::<sync::PyLockManager>()?;
    m.add_class::<lock::PyLock>()?;
    m.add_class::<sync::PyLockScope>()?;
    m.add_class::<aio::PyAsyncLockManager>()?;
    m.add_class::<lock::PyAsyncLock>()?;
    m.add_class::<aio::PyAsyncLockScope>()?;
    m.add_class::<election::PyObserver>()?;
    m.add_class::<election::PyAsyncObserver>()?;
    Ok(())
}
