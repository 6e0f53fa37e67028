//! Leader election's native surface on both managers: `election()`, which checks the name and
//! builds the Python handle of `fencelock/_election.py`, and the private calls that handle
//! makes (`_campaign`, `_leader`, `_observe`). A term is a `Lock` / `asyncio.Lock` of the
//! election's name (its value read and proclaimed through `lock.rs`'s `_term_value` and
//! `_proclaim`); it travels as [`Names::Term`] through the managers' one acquisition path.
//! The observers are the two classes here, one cell written once.

use std::future::Future;
use std::sync::Arc;

use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;

use crate::aio::PyAsyncLockManager;
use crate::convert::{max_hold_arg, name_arg, ttl_arg, wait_arg, CallerToken, Names, Text};
use crate::errors::{to_py, Failure};
use crate::lost::Keep;
use crate::managed::Live;
use crate::sync::{acquire_blocking, PyLockManager};

/// A leader as the Python handles make it (`fencelock._election._leader`), or `None`.
fn leader_to_py(py: Python<'_>, leader: Option<fencelock::Leader>) -> PyResult<Bound<'_, PyAny>> {
    let Some(l) = leader else {
        return Ok(py.None().into_bound(py));
    };
    let since = l.since.duration_since(std::time::UNIX_EPOCH);
    let since_ms = since.map_or(0, |d| d.as_millis() as u64);
    py.import("fencelock._election")?
        .getattr("_leader")?
        .call1((
            l.value,
            l.fencing_token,
            since_ms,
            crate::convert::seconds_or_inf(l.remaining),
        ))
}

/// The election's methods, the same on both managers (`$class` names the Python handle
/// class: `Election` or `AsyncElection`, and `$observer` the observer's); each manager's
/// `start_acquire` and `call` (`calls.rs`) do the blocking or the awaiting.
macro_rules! election_methods {
    ($manager:ty, $class:literal, $observer:ident) => {
        #[pymethods]
        impl $manager {
            /// A leader election on ``name``: candidates campaign for terms, everyone reads
            /// and follows the leader. Nothing is contacted here; a bad name raises
            /// ``ValueError``.
            fn election<'py>(
                slf: &Bound<'py, Self>,
                #[pyo3(from_py_with = name_arg)] name: Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let py = slf.py();
                fencelock::ffi_support::keys::check_name(name.as_bytes())
                    .map_err(|e| to_py(py, e))?;
                let module = py.import("fencelock._election")?;
                module.call_method1($class, (slf, name.to_object(py)))
            }

            #[pyo3(signature = (
                name, value, ttl, *, wait = None, max_hold = None, on_lost = None, try_once = false
            ))]
            #[allow(clippy::too_many_arguments)]
            fn _campaign<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                value: String,
                #[pyo3(from_py_with = ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'py, PyAny>>,
                try_once: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let keep = Keep::new(true, max_hold, on_lost.as_ref())?;
                let token = CallerToken {
                    token: None,
                    reentrant: false,
                };
                let names = Names::Term(name, value);
                self.start_acquire(py, names, ttl, wait, token, keep, try_once)
            }

            fn _leader<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let leader = move |m: fencelock::LockManager| async move {
                    m.election(name.as_bytes())?.leader().await
                };
                self.call(py, leader, leader_to_py)
            }

            fn _observe(
                &self,
                py: Python<'_>,
                #[pyo3(from_py_with = name_arg)] name: Text,
            ) -> PyResult<$observer> {
                let live = self.live(py)?;
                let election = live
                    .manager
                    .as_async()
                    .election(name.as_bytes())
                    .map_err(|e| to_py(py, e))?;
                let closing = self.closing();
                Ok($observer {
                    cell: ObserverCell::new(election.observe(), live, closing),
                })
            }
        }
    };
}

election_methods!(PyLockManager, "Election", PyObserver);
election_methods!(PyAsyncLockManager, "AsyncElection", PyAsyncObserver);

/// What an observer object holds: the core's observer (one report at a time), and what ends
/// it: its own `close()`, from any thread, or its manager's.
struct ObserverCell {
    observer: Arc<tokio::sync::Mutex<fencelock::Observer>>,
    closed: tokio::sync::watch::Sender<bool>,
    manager_closing: tokio::sync::watch::Receiver<bool>,
    live: Live,
}

impl ObserverCell {
    fn new(
        observer: fencelock::Observer,
        live: Live,
        manager_closing: tokio::sync::watch::Receiver<bool>,
    ) -> ObserverCell {
        ObserverCell {
            observer: Arc::new(tokio::sync::Mutex::new(observer)),
            closed: tokio::sync::watch::channel(false).0,
            manager_closing,
            live,
        }
    }

    /// The next report: `Some(leader or None)`, or `None` once closed.
    fn next(
        &self,
    ) -> impl Future<Output = fencelock::Result<Option<Option<fencelock::Leader>>>> + Send + 'static
    {
        let observer = Arc::clone(&self.observer);
        let mut closed = self.closed.subscribe();
        let mut manager_closing = self.manager_closing.clone();
        async move {
            let ended = async move {
                tokio::select! {
                    _ = closed.wait_for(|c| *c) => {}
                    _ = manager_closing.wait_for(|c| *c) => {}
                }
            };
            tokio::select! {
                biased;
                () = ended => Ok(None),
                report = async { observer.lock().await.next().await } => report.map(Some),
            }
        }
    }

    fn close(&self) {
        self.closed.send_replace(true);
    }
}

/// Follows an election's leader (``election.observe()``): iterating gives the current leader
/// (a ``Leader``, or ``None`` when nobody leads) and then each change, blocking between them
/// with the GIL released (Ctrl-C interrupts). ``close()``, from any thread, ends the
/// iteration, as does closing the manager.
#[pyclass(name = "Observer", module = "fencelock", frozen)]
pub struct PyObserver {
    cell: ObserverCell,
}

#[pymethods]
impl PyObserver {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let next = self.cell.next();
        match acquire_blocking(py, &self.cell.live.manager, next) {
            Ok(Some(report)) => leader_to_py(py, report).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e.into_py(py)),
        }
    }

    /// Ends the iteration (a blocked ``next`` returns at once); from any thread.
    fn close(&self) {
        self.cell.close();
    }
}

/// The asyncio observer: ``async for leader in election.observe():``; ``close()``, from any
/// thread, ends it.
#[pyclass(name = "AsyncObserver", module = "fencelock.asyncio", frozen)]
pub struct PyAsyncObserver {
    cell: ObserverCell,
}

#[pymethods]
impl PyAsyncObserver {
    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = self.cell.next();
        let fut = async move { next.await.map_err(Failure::Core) };
        let on_cancel = crate::aio_bridge::OnCancel::Abort;
        crate::aio_bridge::spawn(
            py,
            &self.cell.live,
            on_cancel,
            fut,
            |py, report| match report {
                Some(leader) => leader_to_py(py, leader),
                None => Err(PyStopAsyncIteration::new_err(())),
            },
        )
    }

    /// Ends the iteration (a pending ``__anext__`` ends it at once); from any thread.
    fn close(&self) {
        self.cell.close();
    }
}
