//! `JsLock`, seen from JavaScript as `Lock`: a held lock, its getters, `extend`, `release`,
//! and the `AbortSignal` that fires when the core reports the lock lost.

use std::sync::Arc;

use fencelock::{LostReason, LostView};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use tokio::sync::RwLock;

use crate::args;
use crate::error::Failure;
use crate::promise::{promise, rejected};

/// The core lock, shared with in-flight calls. `None` once released (or being released).
type Slot = Arc<RwLock<Option<fencelock::Lock>>>;

/// A lock held on a quorum of servers. Obtained from `LockManager.acquire`; not constructible.
#[napi(js_name = "Lock", custom_finalize)]
pub struct JsLock {
    slot: Slot,
    name: Vec<u8>,
    /// Every name (one for a lock on one name) and its fencing token.
    names: Vec<Vec<u8>>,
    fencing_tokens: Vec<u64>,
    token: Vec<u8>,
    fencing_token: u64,
    /// Whether and why the lock was lost, also once released.
    lost_view: LostView,
    /// What the lease holds of its name.
    kind: fencelock::LeaseKind,
    /// Set (on the JS thread) by `release`/dispose: from then on the pending call owns the
    /// lock's fate, and collecting this object must not abandon it.
    finishing: bool,
    /// The `AbortController` behind `signal`, created on first access.
    controller: Option<ObjectRef<false>>,
    /// The runtime the lock was acquired on, for work left when the object is collected
    /// (spawning on it never panics, even once it has shut down at exit).
    runtime: tokio::runtime::Handle,
}

impl JsLock {
    pub(crate) fn new(lock: fencelock::Lock, runtime: tokio::runtime::Handle) -> JsLock {
        JsLock {
            name: lock.name().to_vec(),
            names: lock.names().iter().map(|n| n.to_vec()).collect(),
            fencing_tokens: lock.fencing_tokens().to_vec(),
            token: lock.token().to_vec(),
            fencing_token: lock.fencing_token(),
            lost_view: lock.lost_view(),
            kind: lock.kind(),
            slot: Arc::new(RwLock::new(Some(lock))),
            finishing: false,
            controller: None,
            runtime,
        }
    }

    fn released(&self, what: &str) -> Failure {
        Failure::Released(format!(
            "cannot {what} lock {}: it was already released",
            fencelock::display_name(&self.name)
        ))
    }
}

#[napi]
impl JsLock {
    /// The lock's name (a Buffer name is decoded as UTF-8).
    #[napi(catch_unwind, getter)]
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    /// Every name of the lock, in the order given (`acquireMany`); one for `acquire`.
    #[napi(catch_unwind, getter)]
    pub fn names(&self) -> Vec<String> {
        self.names
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect()
    }

    /// One fencing token per name, in the order of `names`.
    #[napi(catch_unwind, getter, js_name = "fencingTokens")]
    pub fn fencing_tokens(&self) -> Vec<BigInt> {
        self.fencing_tokens
            .iter()
            .map(|&f| BigInt::from(f))
            .collect()
    }

    /// This acquisition's token: the value of the lock key (a Buffer token is decoded as UTF-8).
    #[napi(catch_unwind, getter)]
    pub fn token(&self) -> String {
        String::from_utf8_lossy(&self.token).into_owned()
    }

    /// The fencing token: larger than that of every earlier acquisition on this server set.
    #[napi(catch_unwind, getter, js_name = "fencingToken")]
    pub fn fencing_token(&self) -> BigInt {
        BigInt::from(self.fencing_token)
    }

    /// Milliseconds the lock is still safe to use; 0 once released, lost or expired.
    #[napi(catch_unwind, getter)]
    pub fn validity(&self) -> f64 {
        match self.slot.try_read() {
            Ok(guard) => guard
                .as_ref()
                .map_or(0.0, |l| l.validity().as_millis() as f64),
            // A release holds the slot: the lock is going away.
            Err(_) => 0.0,
        }
    }

    /// Whether the lock is known to be lost (its validity ran out, or an extension or release
    /// found it gone or taken).
    #[napi(catch_unwind, getter)]
    pub fn lost(&self) -> bool {
        self.lost_view.reason().is_some()
    }

    /// Why the lock was lost: `'expired'` (its validity ran out, or an extension found the key
    /// gone), `'taken'` (an extension found another token in the key), `'unreachable'` (no
    /// quorum could be reached to extend it before its validity ran out); `null` while it is
    /// held (or released without a loss).
    #[napi(
        catch_unwind,
        getter,
        js_name = "lostReason",
        ts_return_type = "'expired' | 'taken' | 'unreachable' | null"
    )]
    pub fn lost_reason(&self) -> Option<&'static str> {
        self.lost_view.reason().map(LostReason::as_str)
    }

    /// What the lease holds of its name: `'lock'`, `'semaphore'` (`permits` of a semaphore),
    /// `'read'` (a read share) or `'write'` (the write hold).
    #[napi(
        catch_unwind,
        getter,
        ts_return_type = "'lock' | 'semaphore' | 'read' | 'write'"
    )]
    pub fn kind(&self) -> &'static str {
        self.kind.as_str()
    }

    /// How many permits a semaphore's lease holds; `null` for other kinds.
    #[napi(catch_unwind, getter)]
    pub fn permits(&self) -> Option<u32> {
        match self.kind {
            fencelock::LeaseKind::Permits { count, .. } => Some(count),
            _ => None,
        }
    }

    /// An `AbortSignal` aborted when the lock is lost, with a `LockLostError` as its reason
    /// whose `reason` says why (`'expired'`, `'taken'` or `'unreachable'`).
    #[napi(catch_unwind, getter, ts_return_type = "AbortSignal")]
    pub fn signal<'e>(&mut self, env: &'e Env) -> Result<Unknown<'e>> {
        if let Some(c) = &self.controller {
            return c.get_value(env)?.get_named_property("signal");
        }
        let ctor: Function<(), Unknown> =
            env.get_global()?.get_named_property("AbortController")?;
        let controller: Object = unsafe { ctor.new_instance(())?.cast()? };
        self.controller = Some(controller.create_ref::<false>()?);
        // Aborted on this thread when the runtime sees the loss, or before the caller sees it
        // when it is lost already (validity ran out, a release found it lost).
        self.on_loss(env, controller, abort_with)?;
        controller.get_named_property("signal")
    }

    /// The drop-ins' loss hook (compat/redis-semaphore.js), lighter than `signal` (no
    /// `AbortController`, no listener): calls `callback(error)` once, on this thread, with the
    /// `LockLostError` `signal` would be aborted with, when the lock is lost (before it returns
    /// when it already is); never after a release.
    #[napi(catch_unwind, js_name = "__onLost", skip_typescript)]
    pub fn on_lost(&self, env: &Env, callback: Function<Unknown, Unknown>) -> Result<()> {
        // SAFETY: a function is an object.
        self.on_loss(env, unsafe { callback.to_unknown().cast()? }, call_with)
    }

    /// `deliver(target, error)` with the `LockLostError` on this thread: now if the lock is
    /// known lost, else once the runtime sees the loss (a watch, which a release or the lock's
    /// end ends without a call). No watch when a call holds the lock this instant.
    fn on_loss(&self, env: &Env, target: Object, deliver: Deliver) -> Result<()> {
        if self.lost() {
            return deliver(
                target,
                lost_error(env, &self.name, self.lost_view.reason())?,
            );
        }
        let lost = match self.slot.try_read() {
            Ok(guard) => guard.as_ref().map(|l| l.lost()),
            Err(_) => None,
        };
        let Some(lost) = lost else { return Ok(()) };
        let target = target.create_ref::<false>()?;
        let name = self.name.clone();
        crate::promise::watch(env, lost, move |env, why| {
            let delivered = match why {
                Some(why) => target
                    .get_value(env)
                    .and_then(|t| deliver(t, lost_error(env, &name, Some(why))?)),
                None => Ok(()),
            };
            target.unref(env)?;
            delivered
        })
    }

    /// Extends the lock to `ttl` ms from now (default: the TTL of the last acquire or extend).
    #[napi(
        catch_unwind,
        ts_args_type = "ttl?: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn extend<'e>(&self, env: &'e Env, ttl: Option<Unknown<'e>>) -> Result<PromiseRaw<'e, ()>> {
        self.extend_mode(env, ttl, false)
    }

    /// Adds `ms` milliseconds to the lock's remaining time on every server, atomically on each
    /// (redis-py's `extend`, node-redlock's additive use), instead of setting it as `extend`
    /// does; its validity becomes what a quorum now guarantees.
    #[napi(
        catch_unwind,
        js_name = "extendBy",
        ts_args_type = "ms: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn extend_by<'e>(&self, env: &'e Env, ms: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
        self.extend_mode(env, Some(ms), true)
    }

    /// An election's term: proclaims a new value (`election.js`'s `Term.proclaim`).
    #[napi(catch_unwind, js_name = "__proclaim", skip_typescript)]
    pub fn proclaim<'e>(&self, env: &'e Env, value: String) -> Result<PromiseRaw<'e, ()>> {
        if let Err(e) = fencelock::check_value(&value) {
            return rejected(env, Failure::Core(e));
        }
        let slot = Arc::clone(&self.slot);
        let released = self.released("proclaim with");
        promise(
            env,
            async move {
                let guard = slot.read_owned().await;
                let Some(lock) = guard.as_ref() else {
                    return Err(released);
                };
                Ok(fencelock::ffi_support::election::proclaim(lock, &value).await?)
            },
            |_, ()| Ok(()),
        )
    }

    /// An election's term: its value now (`null`: not a term, or released).
    #[napi(catch_unwind, getter, js_name = "__termValue", skip_typescript)]
    pub fn term_value(&self) -> Option<String> {
        let guard = self.slot.try_read().ok()?;
        guard
            .as_ref()
            .and_then(fencelock::ffi_support::election::term_value)
    }

    /// Asks the servers whether this lock is still held: a quorum of them hold its key under
    /// its token (read-only; never extends it). Unlike `lost`, this process's view, it notices
    /// a key deleted or overwritten behind the holder's back, and then marks the lock lost
    /// (`lostReason` says how, `signal` aborts). `false` once released. Rejects with
    /// `ERR_UNAVAILABLE` when too few servers answer.
    #[napi(catch_unwind, js_name = "isHeld", ts_return_type = "Promise<boolean>")]
    pub fn is_held<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, bool>> {
        let slot = Arc::clone(&self.slot);
        promise(
            env,
            async move {
                let guard = slot.read_owned().await;
                match guard.as_ref() {
                    Some(lock) => Ok(lock.is_held().await?),
                    None => Ok(false),
                }
            },
            |_, held| Ok(held),
        )
    }

    /// Gives up this object's hold without releasing the lock: it stays held on the servers
    /// until its TTL runs out or someone releases it by name and token
    /// (`manager.release(name, token)`, from this process or another: the request-id
    /// pattern). Auto-extension stops, `signal` never aborts for it; the object then reads as
    /// released. Throws `LockReleasedError` if it was already released or detached.
    #[napi(catch_unwind)]
    pub fn detach(&mut self, env: Env) -> Result<()> {
        if self.finishing {
            return Err(self.released("detach").into_js(&env, None));
        }
        self.finishing = true;
        match self.slot.try_write() {
            Ok(mut guard) => match guard.take() {
                Some(lock) => lock.detach(),
                None => return Err(self.released("detach").into_js(&env, None)),
            },
            // An extend is in flight: detach once it is done.
            Err(_) => detach_when_free(&self.slot, &self.runtime),
        }
        Ok(())
    }

    /// Releases the lock on every server.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn release<'e>(&mut self, env: &'e Env) -> Result<PromiseRaw<'e, ()>> {
        self.finish(env, Finish::Release)
    }

    /// `Symbol.asyncDispose` (aliased in index.js): release, a no-op after an explicit release.
    #[napi(catch_unwind, js_name = "__dispose", skip_typescript)]
    pub fn dispose<'e>(&mut self, env: &'e Env) -> Result<PromiseRaw<'e, ()>> {
        self.finish(env, Finish::Dispose)
    }

    /// The end of `LockManager.using`: release, and report a loss during the scope.
    #[napi(catch_unwind, js_name = "__finishScope", skip_typescript)]
    pub fn finish_scope<'e>(&mut self, env: &'e Env) -> Result<PromiseRaw<'e, ()>> {
        self.finish(env, Finish::Scope)
    }
}

#[derive(Clone, Copy)]
enum Finish {
    Release,
    Dispose,
    Scope,
}

impl JsLock {
    fn extend_mode<'e>(
        &self,
        env: &'e Env,
        ttl: Option<Unknown<'e>>,
        add: bool,
    ) -> Result<PromiseRaw<'e, ()>> {
        let what = if add { "ms" } else { "ttl" };
        let ttl = match ttl.filter(|t| !args::is_nullish(t)) {
            Some(t) => match args::duration(what, &t) {
                Ok(d) => Some(d),
                Err(f) => return rejected(env, f),
            },
            None if add => return rejected(env, crate::error::invalid("ms is required")),
            None => None,
        };
        let slot = Arc::clone(&self.slot);
        let released = self.released("extend");
        promise(
            env,
            async move {
                let guard = slot.read_owned().await;
                let Some(lock) = guard.as_ref() else {
                    return Err(released);
                };
                let ttl = ttl.unwrap_or_else(|| lock.ttl());
                let extended = if add {
                    lock.extend_by(ttl).await
                } else {
                    lock.extend(ttl).await
                };
                Ok(extended?)
            },
            |_, ()| Ok(()),
        )
    }

    fn finish<'e>(&mut self, env: &'e Env, how: Finish) -> Result<PromiseRaw<'e, ()>> {
        // The call below takes the lock out of the slot later, on a tokio thread; the program
        // may drop its last reference to this object before then (`await lock.release()` as
        // the lock's last use), and its finalizer must not abandon the lock in between.
        self.finishing = true;
        let slot = Arc::clone(&self.slot);
        let released = self.released("release");
        promise(
            env,
            async move {
                // Waits for in-flight extensions, then takes the lock out: from here on the
                // object reads as released.
                let Some(lock) = slot.write_owned().await.take() else {
                    return match how {
                        Finish::Release => Err(released),
                        Finish::Dispose | Finish::Scope => Ok(()),
                    };
                };
                let result = match how {
                    Finish::Release | Finish::Dispose => lock.release().await,
                    Finish::Scope => lock.finish_scope().await,
                };
                Ok(result?)
            },
            |_, ()| Ok(()),
        )
    }
}

/// Detaches the lock in `slot` once the call that holds the slot now is done (on `runtime`).
fn detach_when_free(slot: &Slot, runtime: &tokio::runtime::Handle) {
    let slot = Arc::clone(slot);
    runtime.spawn(async move {
        if let Some(lock) = slot.write_owned().await.take() {
            lock.detach();
        }
    });
}

/// `process.emitWarning(...)` for an auto-extended lock that was collected while held: its
/// auto-extension stops here while the program probably still relied on it. Best effort: a
/// failure to warn is ignored (the lock is abandoned either way).
fn warn_abandoned(env: &Env, name: &[u8], fencing_token: u64) {
    let message = format!(
        "fencelock lock {} (fencing token {fencing_token}) was garbage-collected while held and \
         auto-extended: it is not released, its auto-extension stops and it expires after its \
         TTL. Release it, use `using` / `await using`, or keep a reference while you rely on it \
         (detach() hands it on by token)",
        fencelock::display_name(name)
    );
    let warn = || -> Result<()> {
        let process: Object = env.get_global()?.get_named_property("process")?;
        let emit: Function<FnArgs<(String, String, String)>, Unknown> =
            process.get_named_property("emitWarning")?;
        emit.apply(
            process,
            (
                message,
                "ResourceWarning".to_owned(),
                "FENCELOCK_ABANDONED".to_owned(),
            )
                .into(),
        )?;
        Ok(())
    };
    let _ = warn();
}

impl ObjectFinalize for JsLock {
    /// A lock object collected while still held is not released (a collection can come at
    /// any time, while the program still relies on the lock): it is abandoned, its
    /// auto-extension stops and the key expires after its TTL.
    fn finalize(self, env: Env) -> Result<()> {
        if let Some(c) = self.controller {
            c.unref(&env)?;
        }
        if self.finishing {
            // A release (or dispose) is under way and owns the lock: nothing to abandon.
            return Ok(());
        }
        match self.slot.try_write() {
            Ok(mut guard) => {
                if let Some(lock) = guard.take() {
                    if lock.is_auto_extending() {
                        warn_abandoned(&env, &self.name, self.fencing_token);
                    }
                    lock.detach();
                }
            }
            // A call still runs on the lock: abandon it once that call is done.
            Err(_) => detach_when_free(&self.slot, &self.runtime),
        }
        Ok(())
    }
}

/// The `LockLostError` a lost lock's signal is aborted with: `reason` says why, when known.
fn lost_error<'e>(env: &'e Env, name: &[u8], why: Option<LostReason>) -> Result<Unknown<'e>> {
    let name = fencelock::display_name(name);
    let message = match why {
        Some(why) => format!("lock {name} was lost: {why}"),
        None => format!("lock {name} was lost"),
    };
    let error = Failure::Core(fencelock::Error::new(
        fencelock::ErrorKind::NotHeld,
        message,
    ))
    .to_js(env, None)?;
    if let Some(why) = why {
        let mut object: Object = unsafe { error.cast()? };
        object.set_named_property("reason", why.as_str())?;
    }
    Ok(error)
}

/// How a loss reaches its target: `controller.abort(error)` or `callback(error)`.
type Deliver = for<'e> fn(Object<'e>, Unknown<'e>) -> Result<()>;

fn abort_with(controller: Object, error: Unknown) -> Result<()> {
    let abort: Function<Unknown, Unknown> = controller.get_named_property("abort")?;
    abort.apply(controller, error)?;
    Ok(())
}

fn call_with(callback: Object, error: Unknown) -> Result<()> {
    // SAFETY: made from a `Function` (`__onLost`).
    let callback: Function<Unknown, Unknown> = unsafe { callback.to_unknown().cast()? };
    callback.call(error)?;
    Ok(())
}
