//! Leader election's native calls on `LockManager`, for the `Election` and `Term` classes of
//! `election.js` (which hold no logic: they forward). A campaign goes through the manager's
//! one acquisition path (`acquire_noting`) and its term is a `Lock` (its value proclaimed and
//! read through `lock.rs`'s `__proclaim` and `__termValue`); `JsObserver` is the core's
//! observer, one report at a time, ended by `close()`.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::args;
use crate::error::{invalid, Failure};
use crate::lock::JsLock;
use crate::manager::{millis_or_inf, JsLockManager, Mode};
use crate::promise::{promise, rejected};

/// An election's leader as the native calls give it (internal: `election.js` makes `since` a
/// `Date`, and index.d.ts types the `Leader` users see).
#[napi(object)]
pub struct NativeLeader {
    /// The value it proclaimed.
    pub value: String,
    /// Its term number: the term's fencing token, larger than every earlier term's.
    #[napi(ts_type = "bigint")]
    pub fencing_token: BigInt,
    /// When its term began (by its clock), in milliseconds since the epoch.
    pub since: f64,
    /// How long its term lasts at least without another extension, in milliseconds.
    pub remaining: f64,
}

fn leader_of(l: fencelock::Leader) -> NativeLeader {
    let since = l
        .since
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    NativeLeader {
        value: l.value,
        fencing_token: BigInt::from(l.fencing_token),
        since: since.as_millis() as f64,
        remaining: millis_or_inf(l.remaining),
    }
}

#[napi]
impl JsLockManager {
    /// Checks an election's name before its handle exists: throws `InvalidArgumentError`.
    #[napi(catch_unwind, js_name = "__checkElection", skip_typescript)]
    pub fn check_election(&self, env: Env, name: Unknown) -> Result<()> {
        let checked =
            args::bytes("name", &name).and_then(|n| Ok(self.manager()?.election(n).map(|_| ())?));
        checked.map_err(|f| f.into_js(&env, None))
    }

    /// Campaigns with `value`: `mode` `'acquire'` (wait as the options say) or `'try'` (`null`
    /// when someone else leads); resolves to the term's `Lock`.
    #[napi(catch_unwind, js_name = "__campaign", skip_typescript)]
    pub fn campaign<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        value: Unknown<'e>,
        options: Option<Unknown<'e>>,
        mode: String,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        let checked = value_of(&value).and_then(|value| {
            let mode = match mode.as_str() {
                "acquire" => Mode::Acquire,
                "try" => Mode::Try,
                other => return Err(invalid(format!("campaign mode {other:?}"))),
            };
            Ok((mode, value))
        });
        match checked {
            Ok((mode, value)) => {
                let how = (mode, fencelock::LeaseKind::Lock);
                self.acquire_noting(env, name, options, how, Some(value))
            }
            Err(f) => rejected(env, f),
        }
    }

    /// The leader now, or `null` when nobody leads.
    #[napi(catch_unwind, js_name = "__leader", skip_typescript)]
    pub fn leader<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, Option<NativeLeader>>> {
        let election = args::bytes("name", &name).and_then(|n| Ok(self.manager()?.election(n)?));
        match election {
            Ok(e) => promise(env, async move { Ok(e.leader().await?) }, |_, l| {
                Ok(l.map(leader_of))
            }),
            Err(f) => rejected(env, f),
        }
    }

    /// An observer of the election: the current leader, then each change.
    #[napi(catch_unwind, js_name = "__observe", skip_typescript)]
    pub fn observe(&self, env: Env, name: Unknown) -> Result<JsObserver> {
        let election = args::bytes("name", &name)
            .and_then(|n| Ok(self.manager()?.election(n)?))
            .map_err(|f| f.into_js(&env, None))?;
        Ok(JsObserver {
            observer: Arc::new(tokio::sync::Mutex::new(election.observe())),
            closed: tokio::sync::watch::channel(false).0,
        })
    }
}

/// A leader's value: a string of at most 16 KiB, checked before any call.
fn value_of(value: &Unknown) -> std::result::Result<String, Failure> {
    let value = args::value(value)?;
    fencelock::check_value(&value)?;
    Ok(value)
}

/// Follows an election's leader, one report at a time (internal: `election.js` makes it an
/// async iterable ended by a signal).
#[napi(js_name = "NativeObserver")]
pub struct JsObserver {
    observer: Arc<tokio::sync::Mutex<fencelock::Observer>>,
    closed: tokio::sync::watch::Sender<bool>,
}

#[napi]
impl JsObserver {
    /// The next report: `{ leader }` (`leader` `null` when nobody leads), or `null` once
    /// closed.
    #[napi(catch_unwind, skip_typescript)]
    pub fn next<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, Option<NativeReport>>> {
        let observer = Arc::clone(&self.observer);
        let mut closed = self.closed.subscribe();
        promise(
            env,
            async move {
                tokio::select! {
                    biased;
                    _ = closed.wait_for(|c| *c) => Ok(None),
                    report = async { observer.lock().await.next().await } => {
                        Ok(Some(report.map_err(Failure::Core)?))
                    }
                }
            },
            |_, report: Option<Option<fencelock::Leader>>| {
                Ok(report.map(|leader| NativeReport {
                    leader: leader.map(leader_of),
                }))
            },
        )
    }

    /// Ends the observer: a pending `next()` resolves to `null` at once.
    #[napi(catch_unwind, skip_typescript)]
    pub fn close(&self) {
        self.closed.send_replace(true);
    }
}

/// One report of an observer (internal, as [`NativeLeader`]).
#[napi(object)]
pub struct NativeReport {
    /// The leader, or `null` when nobody leads.
    pub leader: Option<NativeLeader>,
}
