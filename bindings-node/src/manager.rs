//! `JsLockManager`, seen from JavaScript as `LockManager`.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LeaseKind};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::abort::{bridge_signal, Signal};
use crate::args::{self, Checked, Fields};
use crate::error::{invalid, Failure};
use crate::lock::JsLock;
use crate::promise::{promise, rejected, rejected_with, settled_by};
use crate::types::AcquireOptions as AcquireOptionsType;

/// The longest `close()` waits for the manager's background clean-ups: each is bounded by
/// its own time limit (`fencelock::ffi_support::timing::BACKGROUND_CLEANUP_TIMEOUT`, 1 s), and they run at
/// once, so this is only a backstop.
const CLOSE_SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// A lock manager over one Redis server or several (Redlock).
#[napi(js_name = "LockManager")]
pub struct JsLockManager {
    /// `None` after `close()`.
    inner: RefCell<Option<fencelock::LockManager>>,
    /// The servers' `host:port` labels, kept after `close()`.
    labels: Vec<String>,
}

/// How an acquisition was asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `acquire`: wait as the options say.
    Acquire,
    /// `tryAcquire`: one attempt; "held by another" resolves to `null`.
    Try,
    /// `using`: as `acquire`, with auto-extension on unless turned off.
    Scoped,
    /// `acquireMany`: as `acquire`, for every name of an array at once.
    Many,
}

/// Checked options of one acquisition, all owned Rust values.
struct Acquisition {
    /// One name, or with `Mode::Many` every name of the lock.
    names: Vec<Vec<u8>>,
    opts: AcquireOptions,
}

fn parse_acquire<'e>(name: &Unknown<'e>, fields: &Fields<'e>, mode: Mode) -> Checked<Acquisition> {
    let names = match mode {
        Mode::Many => args::names(name)?,
        _ => vec![args::bytes("name", name)?],
    };
    let field = |key| fields.get(key);
    let ttl = field("ttl")?;
    let ttl = if args::is_nullish(&ttl) {
        fencelock::DEFAULT_TTL
    } else {
        args::duration("ttl", &ttl)?
    };
    let wait = field("wait")?;
    let wait = match mode {
        Mode::Try if !args::is_nullish(&wait) => return Err(invalid(
            "tryAcquire makes one attempt and takes no wait option; use acquire(name, { wait })",
        )),
        Mode::Try => Some(Duration::ZERO),
        Mode::Acquire | Mode::Scoped | Mode::Many => args::wait(&wait)?,
    };
    let token = field("token")?;
    let token = if args::is_nullish(&token) {
        None
    } else {
        Some(args::bytes("token", &token)?)
    };
    let reentrant = args::boolean("reentrant", &field("reentrant")?, false)?;
    let auto_extend = args::boolean("autoExtend", &field("autoExtend")?, mode == Mode::Scoped)?;
    let max_hold = field("maxHold")?;
    let max_hold = if args::is_nullish(&max_hold) {
        None
    } else {
        Some(args::duration("maxHold", &max_hold)?)
    };
    // The core starts auto-extension once the lock is acquired.
    Ok(Acquisition {
        names,
        opts: AcquireOptions {
            ttl,
            wait,
            token,
            reentrant,
            auto_extend,
            max_hold,
            trace: crate::spans::parent(),
        },
    })
}

/// A time left in milliseconds, `Infinity` for a key without expiry (`Duration::MAX`).
pub(crate) fn millis_or_inf(d: std::time::Duration) -> f64 {
    if d == std::time::Duration::MAX {
        f64::INFINITY
    } else {
        d.as_secs_f64() * 1000.0
    }
}

/// Who holds a lock (`LockManager.holder`); `index.js` makes `since` a `Date`.
#[napi(object)]
pub struct Holder {
    /// How long it stays held at least, in milliseconds (`Infinity`: no expiry).
    pub remaining: f64,
    /// The holder's label, or `null` when it left no note.
    #[napi(ts_type = "string | null")]
    pub label: Option<String>,
    /// When it was granted the lock (by its clock), or `null` when it left no note.
    #[napi(ts_type = "Date | null")]
    pub since: Option<f64>,
    /// Its fencing token, or `null` when it left no note.
    #[napi(ts_type = "bigint | null")]
    pub fencing_token: Option<BigInt>,
}

impl From<fencelock::LockHolder> for Holder {
    fn from(h: fencelock::LockHolder) -> Holder {
        let note = h.note.as_ref();
        Holder {
            remaining: millis_or_inf(h.remaining),
            label: note.map(|n| n.label.clone()),
            since: note.map(|n| n.since_ms() as f64),
            fencing_token: note.map(|n| BigInt::from(n.fencing_token)),
        }
    }
}

/// The name of a one-name acquisition (parse_acquire gives it exactly one).
fn name_of_one(names: &[Vec<u8>]) -> &[u8] {
    names.first().map_or(&[], Vec::as_slice)
}

impl JsLockManager {
    pub(crate) fn manager(&self) -> Checked<fencelock::LockManager> {
        self.inner
            .borrow()
            .clone()
            .ok_or_else(|| invalid("the lock manager is closed"))
    }

    /// The arguments of an acquisition, checked before anything starts: what to acquire, the
    /// manager (not closed), and the abort signal.
    fn acquire_args<'e>(
        &self,
        env: &'e Env,
        name: &Unknown<'e>,
        options: Option<Unknown<'e>>,
        mode: Mode,
    ) -> Checked<(Acquisition, fencelock::LockManager, Signal<'e>)> {
        let options = args::options("options", options)?;
        // tryAcquire's options are acquire's without `wait`, which is read only to say that
        // tryAcquire takes none.
        let what = match mode {
            Mode::Try => "the options of tryAcquire()",
            Mode::Acquire => "the options of acquire()",
            Mode::Scoped => "the options of using()",
            Mode::Many => "the options of acquireMany()",
        };
        let fields = Fields::new(env, what, options, AcquireOptionsType::KEYS)?;
        let acquisition = parse_acquire(name, &fields, mode)?;
        let manager = self.manager()?;
        let signal = bridge_signal(env, fields.get("signal")?)?;
        Ok((acquisition, manager, signal))
    }

    /// An acquisition of `kind` (a lock, or a lease of the family) as `mode` asks.
    pub(crate) fn acquire_as<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        options: Option<Unknown<'e>>,
        how: (Mode, LeaseKind),
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        self.acquire_noting(env, name, options, how, None)
    }

    /// [`acquire_as`](Self::acquire_as), or with `campaign` (a candidate's value) a term of
    /// the election `name` (`election.rs`).
    pub(crate) fn acquire_noting<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        options: Option<Unknown<'e>>,
        (mode, kind): (Mode, LeaseKind),
        campaign: Option<String>,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        let (a, manager, signal) = match self.acquire_args(env, &name, options, mode) {
            Ok(c) => c,
            Err(f) => return rejected(env, f),
        };
        let (bridge, notify) = match signal {
            Signal::Aborted(reason) => {
                let e = fencelock::Error::new(
                    ErrorKind::Cancelled,
                    format!(
                        "acquire of lock {} was aborted before it started",
                        fencelock::display_name(a.names.first().map_or(&[][..], |n| n))
                    ),
                );
                let error = Failure::Core(e).into_js(env, Some(reason));
                return rejected_with(env, error);
            }
            Signal::Live(b) => {
                let n = Arc::clone(&b.notify);
                (Some(b), Some(n))
            }
            Signal::None => (None, None),
        };
        let name = a.names.first().cloned().unwrap_or_default();
        let acquire = async move {
            let name = name_of_one(&a.names);
            let result = match (mode, campaign) {
                (_, Some(value)) => match manager.election(name) {
                    Ok(e) => match e.prepare_campaign(&value, &a.opts) {
                        Ok(campaign) => campaign.await,
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                },
                (Mode::Many, None) => manager.acquire_many_with(&a.names, &a.opts).await,
                _ => manager.acquire_lease_with(name, kind, &a.opts).await,
            };
            match result {
                Ok(lock) => Ok(Some((lock, tokio::runtime::Handle::current()))),
                Err(e) if mode == Mode::Try && e.kind() == ErrorKind::NotAcquired => Ok(None),
                Err(e) => Err(e),
            }
        };
        let fut = async move {
            match notify {
                None => acquire.await,
                // Dropping `acquire` cancels it; the core releases partial votes, and a lock
                // that was complete is released by its drop.
                Some(n) => tokio::select! {
                    biased;
                    () = n.notified() => Err(fencelock::Error::new(
                        ErrorKind::Cancelled,
                        format!("acquire of lock {} was aborted", fencelock::display_name(&name)),
                    )),
                    r = acquire => r,
                },
            }
        };
        settled_by(env, fut, move |env, outcome| {
            let aborted = matches!(&outcome, Err(e) if e.kind() == ErrorKind::Cancelled);
            let reason = bridge.and_then(|b| b.finish(env, aborted));
            match outcome {
                Ok(lock) => Ok(lock.map(|(lock, runtime)| JsLock::new(lock, runtime))),
                Err(e) => Err(Failure::Core(e).into_js(env, reason)),
            }
        })
    }
}

#[napi]
impl JsLockManager {
    /// A manager over one Redis URL (single-server lock) or several (Redlock). Throws
    /// `InvalidArgumentError` for a bad URL or option; never contacts the servers.
    #[napi(
        catch_unwind,
        constructor,
        ts_args_type = "servers: string | readonly string[], options?: LockManagerOptions"
    )]
    pub fn new(env: Env, servers: Unknown, options: Option<Unknown>) -> Result<Self> {
        crate::options::manager(&env, servers, options)
            .map(|m| JsLockManager {
                labels: m.config().server_labels(),
                inner: RefCell::new(Some(m)),
            })
            .map_err(|f| f.into_js(&env, None))
    }

    /// Acquires `name`, waiting up to `options.wait` ms (default: until acquired).
    #[napi(
        catch_unwind,
        ts_args_type = "name: string | Buffer, options?: AcquireOptions",
        ts_return_type = "Promise<Lock>"
    )]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        options: Option<Unknown<'e>>,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        self.acquire_as(env, name, options, (Mode::Acquire, LeaseKind::Lock))
    }

    /// One attempt: resolves to `null` when another owner holds the lock.
    #[napi(
        catch_unwind,
        js_name = "tryAcquire",
        ts_args_type = "name: string | Buffer, options?: TryAcquireOptions",
        ts_return_type = "Promise<Lock | null>"
    )]
    pub fn try_acquire<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        options: Option<Unknown<'e>>,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        self.acquire_as(env, name, options, (Mode::Try, LeaseKind::Lock))
    }

    /// Acquires every name of `names` at once, or none, waiting up to `options.wait` ms
    /// (default: until acquired): one lock, one token, one fencing token per name
    /// (`lock.fencingTokens`). It waits without holding any of them, and a release of one
    /// never hands it that one alone. On a Redis Cluster the names must share a hash slot
    /// (a common hash tag: `{order-42}:payment`, `{order-42}:stock`).
    #[napi(
        catch_unwind,
        js_name = "acquireMany",
        ts_args_type = "names: ReadonlyArray<string | Buffer>, options?: AcquireOptions",
        ts_return_type = "Promise<Lock>"
    )]
    pub fn acquire_many<'e>(
        &self,
        env: &'e Env,
        names: Unknown<'e>,
        options: Option<Unknown<'e>>,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        self.acquire_as(env, names, options, (Mode::Many, LeaseKind::Lock))
    }

    /// The acquisition behind `using` (index.js): auto-extension on by default.
    #[napi(catch_unwind, js_name = "__acquireScoped", skip_typescript)]
    pub fn acquire_scoped<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        options: Option<Unknown<'e>>,
    ) -> Result<PromiseRaw<'e, Option<JsLock>>> {
        self.acquire_as(env, name, options, (Mode::Scoped, LeaseKind::Lock))
    }

    /// Releases `name` if it is held with `token`, without a lock object.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string | Buffer, token: string | Buffer",
        ts_return_type = "Promise<void>"
    )]
    pub fn release<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        token: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, ()>> {
        let (name, token, manager) = match self.by_token(&name, &token) {
            Ok(c) => c,
            Err(f) => return rejected(env, f),
        };
        promise(
            env,
            async move { Ok(manager.release_by_token(&name, &token).await?) },
            |_, ()| Ok(()),
        )
    }

    /// Extends `name` if it is held with `token`, without a lock object (a lock handed over by
    /// token): it expires `ttl` ms from now on every server holding it with `token`. Resolves
    /// to the validity this gives, in ms (as a lock's `validity`). Rejects with
    /// `ERR_LOCK_LOST` if it is not held with that token (the message says whether the key was
    /// gone or held by another token).
    #[napi(
        catch_unwind,
        ts_args_type = "name: string | Buffer, token: string | Buffer, ttl: number",
        ts_return_type = "Promise<number>"
    )]
    pub fn extend<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
        token: Unknown<'e>,
        ttl: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, f64>> {
        let checked = self
            .by_token(&name, &token)
            .and_then(|(n, t, m)| Ok((n, t, args::duration("ttl", &ttl)?, m)));
        let (name, token, ttl, manager) = match checked {
            Ok(c) => c,
            Err(f) => return rejected(env, f),
        };
        promise(
            env,
            async move { Ok(manager.extend_by_token(&name, &token, ttl).await?) },
            |_, validity: std::time::Duration| Ok(validity.as_millis() as f64),
        )
    }

    /// Whether `name` is held: a quorum of the servers hold its key under one token (taken by
    /// fencelock or by another client's classic set-if-absent lock with an expiry). Acquires nothing; the
    /// holder's token is never shown. Rejects with `ERR_UNAVAILABLE` when too few servers
    /// answer, as `acquire` does.
    #[napi(
        catch_unwind,
        js_name = "isLocked",
        ts_args_type = "name: string | Buffer",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn is_locked<'e>(&self, env: &'e Env, name: Unknown<'e>) -> Result<PromiseRaw<'e, bool>> {
        let (name, manager) = match self.name_and_manager(&name) {
            Ok(c) => c,
            Err(f) => return rejected(env, f),
        };
        promise(
            env,
            async move { Ok(manager.is_locked(&name).await?) },
            |_, held| Ok(held),
        )
    }

    /// How long `name` stays held at least, in milliseconds, or `null` when it is free: the
    /// quorum's view (what a quorum of the servers holding it under one token still keep, less
    /// this call's time and the clock drift; never more); `Infinity` for a key without expiry.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string | Buffer",
        ts_return_type = "Promise<number | null>"
    )]
    pub fn remaining<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, Option<f64>>> {
        let (name, manager) = match self.name_and_manager(&name) {
            Ok(c) => c,
            Err(f) => return rejected(env, f),
        };
        promise(
            env,
            async move { Ok(manager.remaining(&name).await?) },
            |_, left: Option<std::time::Duration>| Ok(left.map(millis_or_inf)),
        )
    }

    /// Who holds `name` now, or `null` when it is free: how long it stays held at least (as
    /// `remaining`), and the label, since when and fencing token its holder noted (a manager
    /// with the `holder` option), else `null` each. Acquires nothing; the token is never shown.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string | Buffer",
        ts_return_type = "Promise<Holder | null>"
    )]
    pub fn holder<'e>(
        &self,
        env: &'e Env,
        name: Unknown<'e>,
    ) -> Result<PromiseRaw<'e, Option<Holder>>> {
        let (name, manager) = match self.name_and_manager(&name) {
            Ok(c) => c,
            Err(f) => return rejected(env, f),
        };
        promise(
            env,
            async move { Ok(manager.holder(&name).await?) },
            |_, holder: Option<fencelock::LockHolder>| Ok(holder.map(Holder::from)),
        )
    }

    /// The servers, as `host:port` labels (credentials never shown).
    #[napi(catch_unwind, getter)]
    pub fn servers(&self) -> Vec<String> {
        self.labels.clone()
    }

    /// Whether `close()` was called.
    #[napi(catch_unwind, getter)]
    pub fn closed(&self) -> bool {
        self.inner.borrow().is_none()
    }

    /// Closes the manager: later calls reject with `ERR_INVALID_ARG`. Locks already held stay
    /// usable until released. Settles once the manager's background clean-ups are done (an
    /// aborted wait's place in line given up, a dropped lock's release; each bounded by its
    /// server timeout), so that a program that closes its manager and exits leaves nothing in
    /// the servers' queues.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, ()>> {
        let manager = self.inner.borrow_mut().take();
        promise(
            env,
            async move {
                if let Some(m) = &manager {
                    m.settle(CLOSE_SETTLE_LIMIT).await;
                }
                drop(manager);
                Ok(())
            },
            |_, ()| Ok(()),
        )
    }
}

impl JsLockManager {
    /// A checked lock name and the live manager, for the name queries.
    fn name_and_manager(&self, name: &Unknown) -> Checked<(Vec<u8>, fencelock::LockManager)> {
        Ok((args::bytes("name", name)?, self.manager()?))
    }

    /// The name and token of a call by token (release, extend), checked, and the manager.
    fn by_token(
        &self,
        name: &Unknown,
        token: &Unknown,
    ) -> Checked<(Vec<u8>, Vec<u8>, fencelock::LockManager)> {
        let (name, manager) = self.name_and_manager(name)?;
        Ok((name, args::bytes("token", token)?, manager))
    }
}
