//! Losing a lock, seen from Python: the `auto_extend`, `max_hold` and `on_lost` arguments of
//! the acquiring calls ([`Keep`]), and the call of `on_lost` when the core reports the loss:
//! once, with a `LockLost` whose `reason` says why, from a background thread for the sync API
//! and scheduled on the event loop for asyncio (`fencelock._bridge.call_on_lost` and
//! `schedule_on_lost`, which log whatever the callback raises).

use std::sync::Arc;
use std::time::Duration;

use fencelock::{AcquireOptions, LostReason};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::convert::{positive_seconds, Text};
use crate::errors::LockLost;
use crate::shutdown;

/// How an acquired lock is kept, and who hears of its loss.
#[derive(Clone, Default)]
pub struct Keep {
    pub auto_extend: bool,
    pub max_hold: Option<Duration>,
    pub on_lost: Option<Arc<Py<PyAny>>>,
}

/// Where `on_lost` runs.
pub enum Deliver {
    /// On the background thread that noticed the loss (the sync API).
    Thread,
    /// Scheduled on this event loop (asyncio).
    Loop(Py<PyAny>),
}

impl Keep {
    /// Checks the arguments (before any network call).
    pub fn new(
        auto_extend: bool,
        max_hold: Option<f64>,
        on_lost: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Keep> {
        let max_hold = max_hold
            .map(|s| positive_seconds("max_hold", s))
            .transpose()?;
        if max_hold.is_some() && !auto_extend {
            return Err(PyValueError::new_err(
                "max_hold bounds auto-extension: pass auto_extend=True with it",
            ));
        }
        let on_lost = match on_lost {
            Some(f) if !f.is_none() => {
                if !f.is_callable() {
                    return Err(PyTypeError::new_err(format!(
                        "on_lost must be a callable taking the LockLost error, got {}",
                        f.get_type().name()?
                    )));
                }
                Some(Arc::new(f.clone().unbind()))
            }
            _ => None,
        };
        Ok(Keep {
            auto_extend,
            max_hold,
            on_lost,
        })
    }

    /// The scoped forms' keep: always auto-extended.
    pub fn scoped(max_hold: Option<f64>, on_lost: Option<&Bound<'_, PyAny>>) -> PyResult<Keep> {
        Keep::new(true, max_hold, on_lost)
    }

    /// `opts` with this keep's auto-extension.
    pub fn apply(&self, opts: AcquireOptions) -> AcquireOptions {
        if self.auto_extend {
            opts.auto_extend(self.max_hold)
        } else {
            opts
        }
    }

    /// `max_hold` in seconds, for the scope objects' arguments.
    pub fn max_hold_secs(&self) -> Option<f64> {
        self.max_hold.map(|d| d.as_secs_f64())
    }

    /// `on_lost` as given, for the scope objects' arguments.
    pub fn on_lost_obj(&self, py: Python<'_>) -> Py<PyAny> {
        match &self.on_lost {
            Some(f) => f.clone_ref(py),
            None => py.None(),
        }
    }

    /// Registers `on_lost` (if any) on the acquired `lock`.
    pub fn watch(&self, lock: &fencelock::Lock, name: &Text, to: Deliver) {
        let Some(callback) = self.on_lost.clone() else {
            return;
        };
        let name = name.clone();
        let fencing_token = lock.fencing_token();
        lock.on_lost(move |why| {
            shutdown::attach(|py| {
                let delivered = deliver(py, &callback, &to, &name, fencing_token, why);
                if let Err(e) = delivered {
                    e.write_unraisable(py, None);
                }
            });
        });
    }
}

fn deliver(
    py: Python<'_>,
    callback: &Py<PyAny>,
    to: &Deliver,
    name: &Text,
    fencing_token: u64,
    why: LostReason,
) -> PyResult<()> {
    let error = lost_error(py, name, fencing_token, why)?;
    let bridge = py.import("fencelock._bridge")?;
    match to {
        Deliver::Thread => bridge.call_method1("call_on_lost", (callback.bind(py), error))?,
        Deliver::Loop(event_loop) => bridge.call_method1(
            "schedule_on_lost",
            (event_loop.bind(py), callback.bind(py), error),
        )?,
    };
    Ok(())
}

/// The `LockLost` an `on_lost` callback receives: `reason`, `name` and `fencing_token` set.
fn lost_error<'py>(
    py: Python<'py>,
    name: &Text,
    fencing_token: u64,
    why: LostReason,
) -> PyResult<Bound<'py, PyAny>> {
    let message = format!(
        "lock {} was lost: {why}",
        fencelock::display_name(name.as_bytes())
    );
    let error = LockLost::new_err(message)
        .into_value(py)
        .into_bound(py)
        .into_any();
    error.setattr("reason", why.as_str())?;
    error.setattr("name", name.to_object(py))?;
    error.setattr("fencing_token", fencing_token)?;
    Ok(error)
}
