//! The coordination family's native surface on both managers: `semaphore()` and `rwlock()`,
//! which check their arguments and build the Python handles of `fencelock/_family.py`, and
//! the private calls those handles make (`_acquire_lease`, `_lease_scope`, `_lease_state`,
//! `_lease_holders`, `_lease_release`, `_lease_extend`). A lease is a `Lock` / `asyncio.Lock` like any other;
//! the kind travels as [`Names::Lease`] through the managers' one acquisition path.

use fencelock::{FamilyState, LeaseKind};
use pyo3::prelude::*;

use crate::aio::{PyAsyncLockManager, PyAsyncLockScope};
use crate::convert::{
    lease_kind, max_hold_arg, name_arg, opt_token_arg, token_arg, ttl_arg, ttl_seconds, wait_arg,
    CallerToken, Names, Text,
};
use crate::errors::to_py;
use crate::lost::Keep;
use crate::options::ScopeArgs;
use crate::sync::{PyLockManager, PyLockScope};

/// A state as the handles read it: a semaphore's `(limit, held, holders, waiters)`, a
/// read-write lock's `(readers, writer, waiters)`.
type State = Vec<u64>;

/// A state as the handles read it (see [`State`]).
fn state_tuple(state: FamilyState) -> State {
    match state {
        FamilyState::Semaphore(st) => vec![st.limit.into(), st.held, st.holders, st.waiters],
        FamilyState::RwLock(st) => vec![st.readers, u64::from(st.writer), st.waiters],
    }
}

/// The arguments every acquisition of the family shares, checked.
struct LeaseArgs {
    name: Text,
    kind: LeaseKind,
    ttl: f64,
    wait: Option<f64>,
    token: CallerToken,
    keep: Keep,
}

/// Builds `fencelock._family.CLASS(manager, name, *more)` after the core checked the name (and
/// the limit, through `check`): bad arguments raise before any handle exists.
fn handle<'py>(
    manager: &Bound<'py, PyAny>,
    class: &str,
    name: Text,
    more: Option<u32>,
    check: fencelock::Result<()>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = manager.py();
    check.map_err(|e| to_py(py, e))?;
    let family = py.import("fencelock._family")?;
    match more {
        Some(limit) => family.call_method1(class, (manager, name.to_object(py), limit)),
        None => family.call_method1(class, (manager, name.to_object(py))),
    }
}

fn check_semaphore(name: &Text, limit: u32) -> fencelock::Result<()> {
    fencelock::ffi_support::keys::check_name(name.as_bytes())?;
    fencelock::ffi_support::kind::check_limit(limit)
}

/// The family's methods, the same on both managers (`$class_prefix` names the Python handle
/// classes: `Semaphore` or `AsyncSemaphore`, ...); each manager's `start_acquire` and `call`
/// (`calls.rs`) do the blocking or the awaiting.
macro_rules! lease_methods {
    ($manager:ty, $scope:ty, $class_prefix:literal) => {
        #[pymethods]
        impl $manager {
            /// A counting semaphore on ``name``: at most ``limit`` permits held at any
            /// instant, across every process and language that uses the name. Nothing is
            /// contacted here; a bad name or a limit outside 1 to 1,000,000 raises
            /// ``ValueError``.
            fn semaphore<'py>(
                slf: &Bound<'py, Self>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                limit: u32,
            ) -> PyResult<Bound<'py, PyAny>> {
                let check = check_semaphore(&name, limit);
                handle(slf.as_any(), concat!($class_prefix, "Semaphore"), name, Some(limit), check)
            }

            /// A fair read-write lock on ``name``: many readers or one writer. Nothing is
            /// contacted here; a bad name raises ``ValueError``.
            fn rwlock<'py>(
                slf: &Bound<'py, Self>,
                #[pyo3(from_py_with = name_arg)] name: Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let check = fencelock::ffi_support::keys::check_name(name.as_bytes());
                handle(slf.as_any(), concat!($class_prefix, "RwLock"), name, None, check)
            }

            #[pyo3(signature = (
                name, kind, count, limit, ttl, *, wait = None, token = None, reentrant = false,
                auto_extend = false, max_hold = None, on_lost = None, try_once = false
            ))]
            #[allow(clippy::too_many_arguments)]
            fn _acquire_lease<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                kind: &str,
                count: u32,
                limit: u32,
                #[pyo3(from_py_with = ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = opt_token_arg)] token: Option<Text>,
                reentrant: bool,
                auto_extend: bool,
                #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'py, PyAny>>,
                try_once: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let args = LeaseArgs {
                    name,
                    kind: lease_kind(kind, count, limit)?,
                    ttl,
                    wait: if try_once { Some(0.0) } else { wait },
                    token: CallerToken { token, reentrant },
                    keep: Keep::new(auto_extend, max_hold, on_lost.as_ref())?,
                };
                let names = Names::Lease(args.name, args.kind);
                self.start_acquire(py, names, args.ttl, args.wait, args.token, args.keep, try_once)
            }

            #[pyo3(signature = (
                name, kind, count, limit, ttl, *, wait = None, max_hold = None, on_lost = None
            ))]
            #[allow(clippy::too_many_arguments)]
            fn _lease_scope(
                slf: Bound<'_, Self>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                kind: &str,
                count: u32,
                limit: u32,
                #[pyo3(from_py_with = ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$scope> {
                let kind = lease_kind(kind, count, limit)?;
                let args = ScopeArgs::new(name, ttl, wait, max_hold, on_lost.as_ref())?;
                Ok(<$scope>::new(slf.unbind(), args.of_kind(kind)))
            }

            fn _lease_state<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                kind: &str,
                limit: u32,
            ) -> PyResult<Bound<'py, PyAny>> {
                let kind = lease_kind(kind, 1, limit)?;
                let state = move |m: fencelock::LockManager| async move {
                    m.family(name.as_bytes(), kind)?.state().await.map(state_tuple)
                };
                self.call(py, state, |py, st: State| {
                    Ok(pyo3::types::PyTuple::new(py, st)?.into_any())
                })
            }

            fn _lease_holders<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                kind: &str,
                limit: u32,
            ) -> PyResult<Bound<'py, PyAny>> {
                let kind = lease_kind(kind, 1, limit)?;
                let holders = move |m: fencelock::LockManager| async move {
                    m.family(name.as_bytes(), kind)?.holders().await
                };
                self.call(py, holders, |py, hs: Vec<fencelock::LockHolder>| {
                    let list = pyo3::types::PyList::empty(py);
                    for h in hs {
                        list.append(crate::convert::holder_to_py(py, Some(h))?)?;
                    }
                    Ok(list.into_any())
                })
            }

            fn _lease_release<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                kind: &str,
                limit: u32,
                #[pyo3(from_py_with = token_arg)] token: Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let kind = lease_kind(kind, 1, limit)?;
                let release = move |m: fencelock::LockManager| async move {
                    m.family(name.as_bytes(), kind)?.release_by_token(token.as_bytes()).await
                };
                self.call(py, release, crate::face::none)
            }

            fn _lease_extend<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = name_arg)] name: Text,
                kind: &str,
                limit: u32,
                #[pyo3(from_py_with = token_arg)] token: Text,
                #[pyo3(from_py_with = ttl_arg)] ttl: f64,
            ) -> PyResult<Bound<'py, PyAny>> {
                let kind = lease_kind(kind, 1, limit)?;
                let ttl = ttl_seconds(ttl)?;
                let extend = move |m: fencelock::LockManager| async move {
                    m.family(name.as_bytes(), kind)?.extend_by_token(token.as_bytes(), ttl).await
                };
                self.call(py, extend, crate::face::seconds)
            }
        }
    };
}

lease_methods!(PyLockManager, PyLockScope, "");
lease_methods!(PyAsyncLockManager, PyAsyncLockScope, "Async");
