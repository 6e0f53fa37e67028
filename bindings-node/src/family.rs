//! The coordination family's native calls on `LockManager`, for the `Semaphore` and `RwLock`
//! classes of `family.js` (which hold no logic: they name the kind and forward). A lease is a
//! `Lock` like any other, acquired through the manager's one acquisition path
//! (`acquire_as`) with its kind.

use std::time::Duration;

use fencelock::{Family, FamilyState, LeaseKind};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::args::{self, Checked};
use crate::error::invalid;
use crate::lock::JsLock;
use crate::manager::{JsLockManager, Mode};
use crate::promise::{promise, rejected};

/// A whole number of `what` (a count, a limit); the core checks its range.
fn whole(what: &str, v: &Unknown) -> Checked<u32> {
    let n = args::number(what, v)?;
    if n.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&n) {
        return Err(invalid(format!("{what} must be a whole number, got {n}")));
    }
    Ok(n as u32)
}

/// The lease a call names: `kind` `'semaphore'` (`count` permits, 1 when not given, of
/// `limit`), `'read'` or `'write'`.
fn lease_kind(kind: &str, count: Option<&Unknown>, limit: &Unknown) -> Checked<LeaseKind> {
    match kind {
        "semaphore" => Ok(LeaseKind::Permits {
            count: count.map_or(Ok(1), |c| whole("count", c))?,
            limit: whole("limit", limit)?,
        }),
        "read" => Ok(LeaseKind::Read),
        "write" => Ok(LeaseKind::Write),
        other => Err(invalid(format!(
            "lease kind must be 'semaphore', 'read' or 'write', got {other:?}"
        ))),
    }
}

/// A semaphore's `[limit, held, holders, waiters]` or a read-write lock's
/// `[readers, writer (0 or 1), waiters]`.
fn state_array(state: FamilyState) -> Vec<f64> {
    match state {
        FamilyState::Semaphore(st) => {
            let (held, holders, waiters) = (st.held, st.holders, st.waiters);
            vec![st.limit.into(), held as f64, holders as f64, waiters as f64]
        }
        FamilyState::RwLock(st) => {
            let writer = f64::from(u8::from(st.writer));
            vec![st.readers as f64, writer, st.waiters as f64]
        }
    }
}

impl JsLockManager {
    /// The semaphore of `limit` (`kind` `'semaphore'`) or read-write lock `name` names,
    /// checked (name, limit, a live manager).
    fn handle(&self, name: &Unknown, kind: &str, limit: &Unknown) -> Checked<Family> {
        let name = args::bytes("name", name)?;
        let kind = lease_kind(kind, None, limit)?;
        Ok(self.manager()?.family(&name, kind)?)
    }
}

#[napi]
impl JsLockManager {
    /// Checks a semaphore's or read-write lock's name (and limit) before its handle exists:
    /// throws `InvalidArgumentError`.
    #[napi(catch_unwind, js_name = "__checkLease", skip_typescript)]
    pub fn check_lease(&self, env: Env, name: Unknown, kind: String, limit: Unknown) -> Result<()> {
        self.handle(&name, &kind, &limit)
            .map(|_| ())
            .map_err(|f| f.into_js(&env, None))
    }

    /// Acquires a lease of the family: `mode` `'acquire'`, `'try'` (`null` when not free) or
    /// `'scoped'` (auto-extension on unless turned off).
    #[napi(catch_unwind, js_name = "__acquireLease", skip_typescript)]
    #[allow(clippy::too_many_arguments)]
    pub fn acquire_lease<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        kind: String,
        count: Unknown<'e>,
        limit: Unknown<'e>,
        options: Option<Unknown<'e>>,
        mode: String,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        let checked = lease_kind(&kind, Some(&count), &limit).and_then(|kind| {
            let mode = match mode.as_str() {
                "acquire" => Mode::Acquire,
                "try" => Mode::Try,
                "scoped" => Mode::Scoped,
                other => return Err(invalid(format!("acquisition mode {other:?}"))),
            };
            Ok((mode, kind))
        });
        match checked {
            Ok(how) => self.acquire_as(env, name, options, how),
            Err(f) => rejected(env, f),
        }
    }

    /// A semaphore's `[limit, held, holders, waiters]` or a read-write lock's
    /// `[readers, writer (0 or 1), waiters]`.
    #[napi(catch_unwind, js_name = "__leaseState", skip_typescript)]
    pub fn lease_state<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        kind: String,
        limit: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, Vec<f64>>> {
        match self.handle(&name, &kind, &limit) {
            Ok(h) => promise(
                env,
                async move { Ok(state_array(h.state().await?)) },
                |_, st| Ok(st),
            ),
            Err(f) => rejected(env, f),
        }
    }

    /// The holders that left a note, as `manager.holder(name)` gives one each.
    #[napi(catch_unwind, js_name = "__leaseHolders", skip_typescript)]
    pub fn lease_holders<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        kind: String,
        limit: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, Vec<crate::manager::Holder>>> {
        match self.handle(&name, &kind, &limit) {
            Ok(h) => promise(
                env,
                async move { Ok(h.holders().await?) },
                |_, hs: Vec<fencelock::LockHolder>| {
                    Ok(hs.into_iter().map(crate::manager::Holder::from).collect())
                },
            ),
            Err(f) => rejected(env, f),
        }
    }

    /// Releases the lease held with `token`.
    #[napi(catch_unwind, js_name = "__leaseRelease", skip_typescript)]
    pub fn lease_release<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        kind: String,
        limit: Unknown<'e>,
        token: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, ()>> {
        let checked = self
            .handle(&name, &kind, &limit)
            .and_then(|h| Ok((h, args::bytes("token", &token)?)));
        match checked {
            Ok((h, t)) => promise(
                env,
                async move { Ok(h.release_by_token(t).await?) },
                |_, ()| Ok(()),
            ),
            Err(f) => rejected(env, f),
        }
    }

    /// Extends the lease held with `token` to `ttl` ms from now; resolves to its validity.
    #[napi(catch_unwind, js_name = "__leaseExtend", skip_typescript)]
    pub fn lease_extend<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        kind: String,
        limit: Unknown<'e>,
        token: Unknown<'e>,
        ttl: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, f64>> {
        let checked = self.handle(&name, &kind, &limit).and_then(|h| {
            Ok((
                h,
                args::bytes("token", &token)?,
                args::duration("ttl", &ttl)?,
            ))
        });
        match checked {
            Ok((h, t, ttl)) => promise(
                env,
                async move { Ok(h.extend_by_token(t, ttl).await?) },
                |_, v: Duration| Ok(v.as_millis() as f64),
            ),
            Err(f) => rejected(env, f),
        }
    }
}
