//! Runtime bridging: core futures run on napi's tokio runtime and settle JavaScript Promises
//! on the JavaScript thread, where core failures become the JavaScript error classes.
//!
//! Each JavaScript thread (the main thread, each worker) has one [`Settler`]: a single
//! threadsafe function and a queue of finished calls. A call finished on another thread
//! queues its outcome and wakes the thread only if no wake-up is on its way; the thread then
//! settles every queued Promise in one go. A call finished on the JavaScript thread itself,
//! in a round of its executor (`event_loop.rs`), is settled right after that round in a
//! callback scope of the settler's ([`settle_here`]): no wake-up, no second turn of the loop.
//! (napi-rs's own `spawn_future_with_callback` makes a threadsafe function, an environment
//! cleanup hook and two tokio tasks per Promise.) What turns an
//! outcome into a JavaScript value never leaves the JavaScript thread: it waits there in a
//! table under the call's number, and only the outcome crosses threads.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::os::raw::c_void;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::error::Failure;
use crate::event_loop::{self, Home};

/// A call's outcome on its way to the JavaScript thread.
type Outcome = Box<dyn Any + Send>;

/// Turns a call's outcome into the value (or error) its Promise settles with. Runs on the
/// JavaScript thread only.
type Settle = Box<dyn FnOnce(&Env, Outcome) -> Result<sys::napi_value>>;

/// The part of a thread's settler that other threads use: finished calls to settle, and its
/// home ([`crate::event_loop`]: the executor's tasks and the thread's wake-up).
pub(crate) struct Shared {
    home: Arc<Home>,
    /// Finished calls, by number, not yet settled.
    done: Mutex<Vec<(u64, Outcome)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data: a panic elsewhere while holding it leaves nothing half-done.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Queues a finished call and, with `wake`, wakes the JavaScript thread to settle it,
    /// unless it finished in a round of that thread's tasks, after which it is settled in
    /// place ([`settle_here`]). Without `wake` it waits for the thread's next settling.
    fn deliver(&self, id: u64, outcome: Outcome, wake: bool) {
        lock(&self.done).push((id, outcome));
        if wake && !self.home.in_round() {
            self.home.signal();
        }
    }
}

/// A Promise waiting for its call, or a watch ([`watch`]: no Promise, `deferred` is `None`).
struct Pending {
    deferred: Option<sys::napi_deferred>,
    settle: Settle,
}

/// One JavaScript thread's settler.
struct Settler {
    env: sys::napi_env,
    shared: Arc<Shared>,
    tsfn: sys::napi_threadsafe_function,
    /// The async context of calls settled in place ([`settle_here`]).
    context: sys::napi_async_context,
    next: u64,
    pending: HashMap<u64, Pending>,
    /// How many of `pending` are Promises (the rest are watches, which do not keep the event
    /// loop alive).
    calls: usize,
    /// Whether the threadsafe function keeps the event loop alive: while Promises are
    /// pending, as with any I/O in flight.
    alive: bool,
    /// Whether calls run on this thread ([`crate::event_loop`]) rather than on the runtime.
    on_loop: bool,
}

thread_local! {
    static SETTLER: RefCell<Option<Settler>> = const { RefCell::new(None) };
}

impl Settler {
    fn new(env: sys::napi_env) -> Result<Settler> {
        let shared = Arc::new(Shared {
            home: Arc::new(Home::new()),
            done: Mutex::new(Vec::new()),
        });
        let mut name = ptr::null_mut();
        check_status!(
            // SAFETY: this thread's environment; a 9-byte static string.
            unsafe { sys::napi_create_string_utf8(env, c"fencelock".as_ptr(), 9, &mut name) },
            "cannot name the fencelock settler"
        )?;
        let context = Arc::into_raw(Arc::clone(&shared)) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        // SAFETY: this thread's environment; the context is one share of `Shared` that the
        // function owns from here (`finalize` drops it) and lends to `settle_done`.
        let status = unsafe {
            sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                ptr::null_mut(),
                Some(finalize),
                context,
                Some(settle_done),
                &mut tsfn,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not created: the share given as its context comes back to us, once.
            drop(unsafe { Arc::from_raw(context as *const Shared) });
            return Err(Error::new(
                Status::from(status),
                "cannot create the fencelock settler",
            ));
        }
        shared.home.set_wake(tsfn, wake_thread);
        let mut context = ptr::null_mut();
        // SAFETY: this thread's environment, the name made above; destroyed at `teardown`.
        let made = unsafe { sys::napi_async_init(env, ptr::null_mut(), name, &mut context) };
        if made == sys::Status::napi_ok {
            shared.home.after_rounds(settle_here);
        }
        // SAFETY: the function just created, on its environment's thread; the cleanup hook
        // runs `teardown` on that thread when the environment goes.
        unsafe {
            sys::napi_unref_threadsafe_function(env, tsfn);
            sys::napi_add_env_cleanup_hook(env, Some(teardown), ptr::null_mut());
        }
        let on_loop =
            event_loop::calls_on_loop() == Ok(true) && event_loop::init_thread(env, &shared.home);
        Ok(Settler {
            env,
            shared,
            tsfn,
            context,
            next: 0,
            pending: HashMap::new(),
            calls: 0,
            alive: false,
            on_loop,
        })
    }

    fn keep_alive(&mut self, alive: bool) {
        if alive != self.alive {
            self.alive = alive;
            // SAFETY: the settler's live function, on its environment's thread (the settler
            // is thread-local).
            unsafe {
                if alive {
                    sys::napi_ref_threadsafe_function(self.env, self.tsfn);
                } else {
                    sys::napi_unref_threadsafe_function(self.env, self.tsfn);
                }
            }
        }
    }
}

/// The core's hook for a manager made on this thread: its connections to plain TCP servers
/// driven by this thread's event loop; `None` when calls run on the runtime (also when the
/// thread's settler cannot be made: calls then fail on their own). An unknown
/// `FENCELOCK_NODE_IO` is a usage error.
pub(crate) fn loop_io(
    env: &Env,
) -> std::result::Result<Option<Arc<dyn fencelock::ffi_support::lane::LoopIo>>, crate::error::Failure>
{
    event_loop::calls_on_loop().map_err(crate::error::invalid)?;
    let io = with_settler(env, |s| {
        s.on_loop.then(|| {
            Arc::new(crate::loop_stream::NodeLoopIo::new(Arc::clone(
                &s.shared.home,
            ))) as Arc<dyn fencelock::ffi_support::lane::LoopIo>
        })
    });
    Ok(io.ok().flatten())
}

/// Runs `f` with this thread's settler, made on first use.
fn with_settler<R>(env: &Env, f: impl FnOnce(&mut Settler) -> R) -> Result<R> {
    SETTLER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if !matches!(slot.as_ref(), Some(s) if s.env == env.raw()) {
            *slot = Some(Settler::new(env.raw())?);
        }
        Ok(f(slot.as_mut().expect("made above")))
    })
}

/// Wakes the settler's thread (`Home::signal`). Non-blocking with an unbounded queue: fails
/// only while closing, when nothing can be settled anyway.
///
/// # Safety
/// `tsfn` is a threadsafe function not yet released.
unsafe fn wake_thread(tsfn: sys::napi_threadsafe_function) {
    // SAFETY: by contract.
    unsafe {
        sys::napi_call_threadsafe_function(
            tsfn,
            ptr::null_mut(),
            sys::ThreadsafeFunctionCallMode::nonblocking,
        )
    };
}

/// The environment is going away: no more wake-ups; pending Promises are dropped with it.
unsafe extern "C" fn teardown(_: *mut c_void) {
    let settler = SETTLER.try_with(|cell| cell.borrow_mut().take());
    crate::loop_stream::teardown();
    if let Ok(Some(s)) = settler {
        if !s.context.is_null() {
            // SAFETY: the context made in `Settler::new`, destroyed once, on its thread.
            unsafe { sys::napi_async_destroy(s.env, s.context) };
        }
        // Tasks never run again: dropped here, on their thread.
        if let Some(tsfn) = s.shared.home.close() {
            // SAFETY: the function taken out of `Home` (nobody calls it any more), released
            // once, on its environment's thread.
            unsafe {
                sys::napi_release_threadsafe_function(
                    tsfn,
                    sys::ThreadsafeFunctionReleaseMode::abort,
                )
            };
        }
        // The settle closures may hold references into the environment: dropped here, on
        // its thread, while it still exists.
        drop(s);
    }
}

/// The threadsafe function is gone (after `teardown`): drops its share of `Shared`, which
/// Node passes back as the hint (the context given at creation).
unsafe extern "C" fn finalize(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    if !hint.is_null() {
        // SAFETY: the share of `Shared` given as the function's context (`Settler::new`),
        // which Node passes back once, when the function is finalised.
        drop(unsafe { Arc::from_raw(hint as *const Shared) });
    }
}

/// The threadsafe function's callback, on the JavaScript thread: settles every finished call.
unsafe extern "C" fn settle_done(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || context.is_null() {
        return;
    }
    // SAFETY: the context is the function's share of `Shared` (see `Settler::new`), alive
    // until `finalize`; borrowed for this call (never dropped here: ManuallyDrop).
    let shared = unsafe { Arc::from_raw(context as *const Shared) };
    let shared = std::mem::ManuallyDrop::new(shared);
    // The woken tasks first: calls they finish are settled below without another wake-up.
    shared.home.woken();
    settle_finished(&Env::from_raw(env), &shared);
}

/// After a round of this thread's tasks run from libuv's poll phase (a socket ready,
/// `event_loop::run_settling`): settles the calls the round finished, in a callback scope of
/// its own (closing it runs the Promises' reactions, as Node's own callbacks do), instead of
/// waking the thread once more through the threadsafe function.
fn settle_here() {
    let this = SETTLER.try_with(|cell| {
        cell.borrow()
            .as_ref()
            .map(|s| (s.env, Arc::clone(&s.shared), s.context))
    });
    let Ok(Some((env, shared, context))) = this else {
        return;
    };
    if lock(&shared.done).is_empty() {
        return;
    }
    let (mut handles, mut resource, mut scope) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: on the environment's thread, from libuv's callback (no JavaScript on the
    // stack); the scopes are closed below, the last opened first.
    unsafe {
        sys::napi_open_handle_scope(env, &mut handles);
        let opened = sys::napi_create_object(env, &mut resource) == sys::Status::napi_ok
            && sys::napi_open_callback_scope(env, resource, context, &mut scope)
                == sys::Status::napi_ok;
        if opened {
            settle_finished(&Env::from_raw(env), &shared);
            report_exception(env);
            sys::napi_close_callback_scope(env, scope);
        } else {
            // Settled by the thread's wake-up instead.
            shared.home.signal();
        }
        sys::napi_close_handle_scope(env, handles);
    }
}

/// An exception left by settling (JavaScript run by a constructor or a listener) goes to
/// `process`'s `uncaughtException`, as one thrown in any callback of Node's would.
///
/// # Safety
/// On the environment's thread, inside a handle scope.
unsafe fn report_exception(env: sys::napi_env) {
    let mut pending = false;
    // SAFETY: by contract.
    unsafe {
        if sys::napi_is_exception_pending(env, &mut pending) == sys::Status::napi_ok && pending {
            let mut error = ptr::null_mut();
            if sys::napi_get_and_clear_last_exception(env, &mut error) == sys::Status::napi_ok {
                sys::napi_fatal_exception(env, error);
            }
        }
    }
}

/// Settles every finished call of `shared` (on its JavaScript thread).
fn settle_finished(env: &Env, shared: &Shared) {
    let done = std::mem::take(&mut *lock(&shared.done));
    if done.is_empty() {
        return;
    }
    // Take the waiting Promises out first: settling runs JavaScript (constructors, abort
    // listeners) that may start new calls on this thread.
    let ready: Vec<(Pending, Outcome)> = SETTLER
        .try_with(|cell| {
            cell.borrow_mut().as_mut().map(|s| {
                let ready: Vec<_> = done
                    .into_iter()
                    .filter_map(|(id, out)| s.pending.remove(&id).map(|p| (p, out)))
                    .collect();
                s.calls -= ready.iter().filter(|(p, _)| p.deferred.is_some()).count();
                ready
            })
        })
        .ok()
        .flatten()
        .unwrap_or_default();
    for (pending, outcome) in ready {
        settle(env, pending, outcome);
    }
    let _ = SETTLER.try_with(|cell| {
        if let Some(s) = cell.borrow_mut().as_mut() {
            let alive = s.calls > 0;
            s.keep_alive(alive);
        }
    });
}

/// Resolves or rejects one Promise (or runs a watch's closure), in a handle scope of its own.
fn settle(env: &Env, pending: Pending, outcome: Outcome) {
    let raw = env.raw();
    let mut scope = ptr::null_mut();
    // SAFETY: on the environment's thread (settling runs there); closed below.
    unsafe { sys::napi_open_handle_scope(raw, &mut scope) };
    let Pending { deferred, settle } = pending;
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| settle(env, outcome)))
        .unwrap_or_else(|_| {
            Err(Error::from_reason(
                "fencelock: a panic while settling a call",
            ))
        });
    // SAFETY: the deferred of a Promise not yet settled (taken out of `pending`, settled once,
    // here), on its environment's thread, with values made in this scope.
    match (deferred, result) {
        // A watch: what its closure did is all there is (a failure has nobody to tell).
        (None, _) => {}
        (Some(deferred), Ok(value)) => unsafe {
            sys::napi_resolve_deferred(raw, deferred, value);
        },
        (Some(deferred), Err(e)) => unsafe {
            match ToNapiValue::to_napi_value(raw, e) {
                Ok(error) => {
                    sys::napi_reject_deferred(raw, deferred, error);
                }
                Err(_) => {
                    let mut message = ptr::null_mut();
                    let mut error = ptr::null_mut();
                    sys::napi_create_string_utf8(
                        raw,
                        c"fencelock: cannot build the error".as_ptr(),
                        33,
                        &mut message,
                    );
                    sys::napi_create_error(raw, ptr::null_mut(), message, &mut error);
                    sys::napi_reject_deferred(raw, deferred, error);
                }
            }
        },
    }
    // SAFETY: the scope opened above.
    unsafe { sys::napi_close_handle_scope(raw, scope) };
}

/// A Promise settled by `fut`: `map` builds the value on the JavaScript thread; a failure
/// rejects with its JavaScript error class. A panic in `fut` rejects too, never crossing
/// into JavaScript.
pub(crate) fn promise<'e, T, V, F, M>(env: &'e Env, fut: F, map: M) -> Result<PromiseRaw<'e, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    M: FnOnce(&Env, T) -> Result<V> + 'static,
{
    settled_by(env, fut, move |env, outcome| match outcome {
        Ok(value) => map(env, value),
        Err(failure) => Err(failure.into_js(env, None)),
    })
}

/// A Promise settled on the JavaScript thread by `settle` with the output of `fut`, run on
/// the runtime.
pub(crate) fn settled_by<'e, O, V, F, S>(
    env: &'e Env,
    fut: F,
    settle: S,
) -> Result<PromiseRaw<'e, V>>
where
    O: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = O> + Send + 'static,
    S: FnOnce(&Env, O) -> Result<V> + 'static,
{
    let settle: Settle = Box::new(move |env, outcome: Outcome| {
        let value = match outcome.downcast::<std::thread::Result<O>>() {
            Ok(out) => match *out {
                Ok(out) => settle(env, out)?,
                Err(_) => return Err(Error::from_reason("fencelock: a panic in a call")),
            },
            Err(_) => {
                return Err(Error::from_reason(
                    "fencelock: a call's outcome was mixed up",
                ))
            }
        };
        // SAFETY: on the environment's thread (settling runs there).
        unsafe { V::to_napi_value(env.raw(), value) }
    });
    let (deferred, raw_promise) = new_promise(env)?;
    let (id, shared, on_loop) = with_settler(env, |s| {
        s.next += 1;
        (s.next, Arc::clone(&s.shared), s.on_loop)
    })?;
    // Spawned before the Promise is recorded, so that a runtime that is gone (a panic caught
    // by the method's catch_unwind) leaves nothing waiting. The call cannot be settled before
    // it is recorded: settling runs on this thread, after this function returns.
    // The call's future is boxed once here: a core call's future holds every step's state
    // (kilobytes), and the task would otherwise copy it whole when it is spawned and again
    // when it completes (bench/notes.md).
    run(shared, id, on_loop, Box::pin(fut), |_| true);
    with_settler(env, |s| {
        let deferred = Some(deferred);
        s.pending.insert(id, Pending { deferred, settle });
        s.calls += 1;
        s.keep_alive(true);
    })?;
    Ok(PromiseRaw::new(env.raw(), raw_promise))
}

/// Runs `then` on the JavaScript thread with the output of `fut`: a watch (a lock's
/// `signal`), which unlike a call does not keep the event loop alive while it waits, and costs
/// no threadsafe function of its own (the thread's settler wakes it). On the thread's executor
/// it ends with the release that ends it. An end with nothing to tell (`None`: released,
/// detached, dropped) wakes nobody: `then` runs at the next settling (bench/notes.md, issue 55).
pub(crate) fn watch<O, F, S>(env: &Env, fut: F, then: S) -> Result<()>
where
    O: Send + 'static,
    F: Future<Output = Option<O>> + Send + 'static,
    S: FnOnce(&Env, Option<O>) -> Result<()> + 'static,
{
    let settle: Settle = Box::new(move |env, outcome: Outcome| {
        if let Ok(out) = outcome.downcast::<std::thread::Result<Option<O>>>() {
            if let Ok(out) = *out {
                then(env, out)?;
            }
        }
        // Never used: a watch has no Promise.
        Ok(ptr::null_mut())
    });
    let (id, shared, on_loop) = with_settler(env, |s| {
        s.next += 1;
        s.pending.insert(
            s.next,
            Pending {
                deferred: None,
                settle,
            },
        );
        (s.next, Arc::clone(&s.shared), s.on_loop)
    })?;
    // Recorded before it is spawned: its outcome is settled on this thread, after this
    // function returns.
    run(shared, id, on_loop, Box::pin(fut), Option::is_some);
    Ok(())
}

/// Runs `fut` (boxed, its panic caught) and delivers its outcome as `id`'s: on this thread's
/// executor when calls run `on_loop` (a task that runs before the event loop next polls, with
/// every call started until then, so their commands leave together), else on the runtime.
/// `wakes` says whether an outcome wakes the thread to be settled (see [`watch`]).
fn run<O, F>(shared: Arc<Shared>, id: u64, on_loop: bool, fut: Pin<Box<F>>, wakes: fn(&O) -> bool)
where
    O: Send + 'static,
    F: Future<Output = O> + Send + 'static,
{
    let home = Arc::clone(&shared.home);
    let task = async move {
        let out = AssertUnwindSafe(fut).catch_unwind().await;
        // A panic is always told.
        let wake = out.as_ref().map_or(true, wakes);
        shared.deliver(id, Box::new(out), wake);
    };
    if on_loop {
        home.spawn(Box::pin(task));
    } else {
        napi::bindgen_prelude::spawn(task);
    }
}

/// A new pending Promise and the handle that settles it.
fn new_promise(env: &Env) -> Result<(sys::napi_deferred, sys::napi_value)> {
    let mut deferred = ptr::null_mut();
    let mut raw_promise = ptr::null_mut();
    check_status!(
        // SAFETY: on the environment's thread (a method call's).
        unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut raw_promise) },
        "cannot create a Promise"
    )?;
    Ok((deferred, raw_promise))
}

/// A Promise already rejected with `failure` (bad arguments: no network call is made, and
/// nothing crosses threads).
pub(crate) fn rejected<'e, V: ToNapiValue>(
    env: &'e Env,
    failure: Failure,
) -> Result<PromiseRaw<'e, V>> {
    rejected_with(env, failure.into_js(env, None))
}

/// A Promise already rejected with `error` (made on this thread).
pub(crate) fn rejected_with<'e, V: ToNapiValue>(
    env: &'e Env,
    error: Error,
) -> Result<PromiseRaw<'e, V>> {
    let (deferred, raw_promise) = new_promise(env)?;
    // SAFETY: on the environment's thread; the deferred just made, settled once, here.
    let value = unsafe { ToNapiValue::to_napi_value(env.raw(), error)? };
    check_status!(
        // SAFETY: as above.
        unsafe { sys::napi_reject_deferred(env.raw(), deferred, value) },
        "cannot reject a Promise"
    )?;
    Ok(PromiseRaw::new(env.raw(), raw_promise))
}

/// How many watches this thread's settler holds (tests: a released lock's `signal` leaves
/// none behind).
// Called from JavaScript only: napi registers it when the module loads, which a unit-test
// build of the crate never does.
#[cfg_attr(test, allow(dead_code))]
#[napi(catch_unwind, js_name = "__pendingWatches", skip_typescript)]
pub fn pending_watches(env: Env) -> Result<u32> {
    with_settler(&env, |s| (s.pending.len() - s.calls) as u32)
}

#[cfg(test)]
mod tests {
    /// A watch's end with nothing to tell waits for the next settling; a call's wakes the thread.
    #[test]
    fn only_an_outcome_that_wakes_signals_the_thread() {
        let (home, done) = (super::Arc::new(super::Home::new()), Default::default());
        let shared = super::Shared { home, done };
        shared.deliver(1, Box::new(()), false);
        assert!(!shared.home.is_signalled());
        shared.deliver(2, Box::new(()), true);
        assert!(shared.home.is_signalled() && super::lock(&shared.done).len() == 2);
    }
}
