//! The JavaScript thread's executor: calls run on the JavaScript thread, with connections
//! driven by its libuv event loop (the default; with `FENCELOCK_NODE_IO=runtime` calls run on
//! the runtime, see `promise.rs`).
//!
//! A call crossing to a runtime thread and back costs two thread wake-ups, which on a small
//! machine are a fifth of an uncontended acquire's time (bench/notes.md). Here the core's call
//! futures are polled on the JavaScript thread itself ([`fencelock::ffi_support::lane::on_loop`]), and the
//! manager's connections to plain TCP servers are sockets that libuv watches on the same
//! thread (`loop_stream.rs`). What the core runs in the background (auto-extension, release
//! on drop, the wait's subscriptions, connections to TLS, Sentinel and cluster servers) stays
//! on the runtime, so a busy event loop cannot delay a lock's extension; an attempt's undo
//! rides the attempt's connection wherever it runs (`core/src/lane.rs`).
//!
//! The executor is the thread's [`Home`]: a queue of runnable tasks, run when a call starts,
//! when libuv reports a socket ready, and when a task is woken from another thread (through
//! the wake-up the thread's settler gives it, `crate::promise`, which calls finished on
//! other threads use too). What a round run from the event loop finishes is settled right
//! after the round, on the same thread, by the hook the settler sets (`Home::after_rounds`),
//! without a wake-up.
//!
//! The contract, which its users keep: [`init_thread`] and [`teardown`] run on the JavaScript
//! thread (at the settler's creation and at the environment's cleanup); [`run`] and
//! [`run_soon`] only there (libuv calls its callbacks there); [`Home::spawn`] and a task's
//! waker from any thread; a task's future is polled only on the JavaScript thread. This module
//! uses nothing of `promise.rs` or `loop_stream.rs`; they build on it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::os::raw::{c_int, c_void};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

use napi::sys;

/// A JavaScript thread as other threads see it: its executor's tasks woken and not yet run,
/// and its wake-up (the settler's threadsafe function, set by `crate::promise`), sent at most
/// once until the thread runs.
pub(crate) struct Home {
    /// `None` once the environment is being torn down: nothing wakes the thread any more.
    wake: Mutex<Option<Wakeup>>,
    /// Runs the thread's woken tasks before its loop next polls (`run_soon`, once the thread
    /// has a loop of ours).
    soon: std::sync::OnceLock<fn() -> bool>,
    /// Settles on this thread, once a round of its tasks run by [`run_settling`] has ended,
    /// what they finished (`promise.rs`), instead of waking the thread again for it.
    after: std::sync::OnceLock<fn()>,
    /// Tasks woken and not yet run.
    tasks: Mutex<VecDeque<Arc<Task>>>,
    /// Whether a wake-up of the JavaScript thread is on its way.
    signalled: AtomicBool,
    /// Set at teardown ([`Home::close`]): a task woken after it is dropped, not queued.
    closed: AtomicBool,
    /// The JavaScript thread.
    thread: ThreadId,
}

/// The thread's wake-up: the settler's threadsafe function and how to call it (`promise.rs`,
/// so that this module calls nothing of napi's).
struct Wakeup {
    tsfn: sys::napi_threadsafe_function,
    call: unsafe fn(sys::napi_threadsafe_function),
}

// SAFETY: calling a threadsafe function from any thread is its purpose; the mutex in `Home`
// serialises the calls with its release at environment teardown.
unsafe impl Send for Wakeup {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data: a panic elsewhere while holding it leaves nothing half-done.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Home {
    /// The calling thread's home, with no wake-up yet.
    pub(crate) fn new() -> Home {
        Home {
            wake: Mutex::new(None),
            soon: std::sync::OnceLock::new(),
            after: std::sync::OnceLock::new(),
            tasks: Mutex::new(VecDeque::new()),
            signalled: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            thread: std::thread::current().id(),
        }
    }

    /// Sets what runs after each round of the thread's tasks (see `after`).
    pub(crate) fn after_rounds(&self, after: fn()) {
        let _ = self.after.set(after);
    }

    /// Whether this is the JavaScript thread running a round of its tasks that settles what
    /// they finish when it ends (`after`, [`run_settling`]), so that no wake-up is needed.
    pub(crate) fn in_round(&self) -> bool {
        SETTLING.with(Cell::get)
            && std::thread::current().id() == self.thread
            && self.after.get().is_some()
    }

    /// Sets the threadsafe function that wakes the thread, and `call`, which calls it.
    pub(crate) fn set_wake(
        &self,
        tsfn: sys::napi_threadsafe_function,
        call: unsafe fn(sys::napi_threadsafe_function),
    ) {
        *lock(&self.wake) = Some(Wakeup { tsfn, call });
    }

    /// At teardown: the tasks are dropped (never to run again) and the wake-up is handed back
    /// to be released. A task woken afterwards is dropped instead of queued ([`Home::schedule`]).
    ///
    /// The queue's lock is never held while a task drops: a future may wake another task as
    /// it drops (a tokio mutex guard it holds wakes the next waiter), and that wake takes the
    /// lock. (Dropped inside one statement with the guard, the queue deadlocked the thread
    /// ending a worker with calls in flight, and with it every runtime thread that woke one.)
    pub(crate) fn close(&self) -> Option<sys::napi_threadsafe_function> {
        let tasks = {
            let mut queue = lock(&self.tasks);
            // Under the queue's lock: no task is queued after this.
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *queue)
        };
        drop(tasks);
        lock(&self.wake).take().map(|w| w.tsfn)
    }

    /// Runs `fut` on the JavaScript thread's executor.
    pub(crate) fn spawn(self: &Arc<Self>, fut: LocalFuture) {
        Wake::wake(Task::new(self, fut));
    }

    /// Queues a woken task. Woken on the JavaScript thread, it runs in the round running now
    /// or before the loop next polls; woken elsewhere, the JavaScript thread is woken.
    fn schedule(&self, task: Arc<Task>) {
        let mut queue = lock(&self.tasks);
        if self.closed.load(Ordering::Acquire) {
            // Torn down: it never runs again, and is dropped with no lock held (see `close`).
            drop(queue);
            drop(task);
            return;
        }
        queue.push_back(task);
        drop(queue);
        let here = std::thread::current().id() == self.thread;
        let soon = || self.soon.get().is_some_and(|run_soon| run_soon());
        if !(here && (running() || soon())) {
            self.signal();
        }
    }

    fn next_task(&self) -> Option<Arc<Task>> {
        lock(&self.tasks).pop_front()
    }

    /// Wakes the JavaScript thread, unless a wake-up is on its way already (it handles
    /// everything queued before it runs).
    pub(crate) fn signal(&self) {
        if !self.signalled.swap(true, Ordering::AcqRel) {
            if let Some(w) = lock(&self.wake).as_ref() {
                // SAFETY: a threadsafe function not yet released (`close` takes it out of
                // the mutex we hold before the settler releases it).
                unsafe { (w.call)(w.tsfn) };
            }
        }
    }

    /// Whether a wake-up of the JavaScript thread is on its way.
    #[cfg(test)]
    pub(crate) fn is_signalled(&self) -> bool {
        self.signalled.load(Ordering::Acquire)
    }

    /// The thread's wake-up arrived: runs the woken tasks with `signalled` still set (calls
    /// they finish are settled by the same wake-up), then clears it, looking once more for
    /// tasks woken from other threads just before (one woken after it signals anew).
    pub(crate) fn woken(&self) {
        loop {
            run(|| {});
            self.signalled.store(false, Ordering::Release);
            if lock(&self.tasks).is_empty() {
                break;
            }
            self.signalled.store(true, Ordering::Release);
        }
    }
}

/// A future run on the JavaScript thread's executor.
pub(crate) type LocalFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One task of the executor: a future and whether it is queued to run.
pub(crate) struct Task {
    fut: Mutex<Option<LocalFuture>>,
    queued: AtomicBool,
    home: Arc<Home>,
}

impl Task {
    fn new(home: &Arc<Home>, fut: LocalFuture) -> Arc<Task> {
        Arc::new(Task {
            fut: Mutex::new(Some(fut)),
            queued: AtomicBool::new(false),
            home: Arc::clone(home),
        })
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.home.schedule(Arc::clone(self));
        }
    }
}

thread_local! {
    /// Whether this thread is running its executor's tasks (a task woken meanwhile on this
    /// thread runs in the same round, with no wake-up of the loop).
    static RUNNING: Cell<bool> = const { Cell::new(false) };
    /// Whether the round running now settles what it finishes when it ends ([`run_settling`]).
    static SETTLING: Cell<bool> = const { Cell::new(false) };
    /// This thread's libuv loop and the runtime the core's background work goes to.
    static LOOP: RefCell<Option<LoopThread>> = const { RefCell::new(None) };
}

/// The JavaScript thread is going away: forgets its loop (`loop_stream::teardown` closed the
/// sockets' handles first). Calls then keep the runtime's connections.
pub(crate) fn teardown() {
    if let Some(l) = LOOP.with(|l| l.borrow_mut().take()) {
        // SAFETY: our initialised `uv_prepare_t`, closed once (the loop is forgotten with it)
        // on its loop's thread; libuv frees it through `free_handle` when closed.
        unsafe { uv_close(l.prepare, Some(free_handle)) };
    }
}

/// This thread's libuv loop, when calls run on it.
pub(crate) fn uv_loop() -> Option<*mut sys::uv_loop_s> {
    LOOP.with(|l| l.borrow().as_ref().map(|l| l.uv))
}

struct LoopThread {
    uv: *mut sys::uv_loop_s,
    runtime: tokio::runtime::Handle,
    /// The thread's home, whose queue the executor runs.
    home: Arc<Home>,
    /// A `uv_prepare_t` that runs the queued calls once per turn of the loop, just before it
    /// polls: calls started in one turn write their commands together.
    prepare: *mut c_void,
    prepared: bool,
}

/// Records this JavaScript thread's event loop and the runtime; `false` when either is
/// missing (then calls keep the runtime's connections).
pub(crate) fn init_thread(env: sys::napi_env, home: &Arc<Home>) -> bool {
    let mut uv = ptr::null_mut();
    // SAFETY: `env` is the environment of the JavaScript thread calling (the settler's).
    let status = unsafe { sys::napi_get_uv_event_loop(env, &mut uv) };
    let runtime = std::panic::catch_unwind(|| {
        napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current)
    });
    match (status == sys::Status::napi_ok && !uv.is_null(), runtime) {
        (true, Ok(runtime)) => {
            // SAFETY: libuv's size of a `uv_prepare_t`, allocated for it; initialised on
            // this thread's loop (freed again if that fails); `free_handle` frees it once
            // closed (`teardown`).
            let prepare = unsafe { libc::malloc(uv_handle_size(UV_PREPARE)) };
            if prepare.is_null() || unsafe { uv_prepare_init(uv, prepare) } != 0 {
                // SAFETY: allocated above (or null), never initialised.
                unsafe { libc::free(prepare) };
                return false;
            }
            // Never keeps the process alive (pending calls do).
            // SAFETY: the handle initialised above.
            unsafe { uv_unref(prepare) };
            let _ = home.soon.set(run_soon);
            LOOP.with(|l| {
                *l.borrow_mut() = Some(LoopThread {
                    uv,
                    runtime,
                    home: Arc::clone(home),
                    prepare,
                    prepared: false,
                })
            });
            true
        }
        _ => false,
    }
}

/// Whether calls run on the JavaScript thread with connections driven by its event loop (the
/// default, or `FENCELOCK_NODE_IO=loop`), or on the runtime's threads
/// (`FENCELOCK_NODE_IO=runtime`); read once per process. The loop saves two thread crossings
/// per call (bench/notes.md); the runtime keeps calls moving while JavaScript code holds the
/// thread. Any other value is an error, reported when a manager is made (`promise::loop_io`).
pub(crate) fn calls_on_loop() -> std::result::Result<bool, &'static str> {
    static MODE: std::sync::OnceLock<std::result::Result<bool, &'static str>> =
        std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var_os("FENCELOCK_NODE_IO") {
        None => Ok(true),
        Some(v) if v == "loop" || v.is_empty() => Ok(true),
        Some(v) if v == "runtime" => Ok(false),
        Some(_) => Err(r#"FENCELOCK_NODE_IO must be "loop" (the default) or "runtime""#),
    })
}

/// Runs this thread's queued tasks before its event loop next polls: once for every task
/// woken on the thread in this turn (calls started in it write their commands together), with
/// no system call. `false` when the thread has no loop of ours.
pub(crate) fn run_soon() -> bool {
    LOOP.with(|l| match l.borrow_mut().as_mut() {
        Some(l) => {
            // SAFETY: our initialised `uv_prepare_t`, on its loop's thread (LOOP is per thread).
            if !l.prepared && unsafe { uv_prepare_start(l.prepare, on_prepare) } == 0 {
                l.prepared = true;
            }
            l.prepared
        }
        None => false,
    })
}

/// libuv's callback of the `uv_prepare_t`, on the loop's thread.
unsafe extern "C" fn on_prepare(handle: *mut c_void) {
    // SAFETY: the started `uv_prepare_t` libuv calls us with.
    unsafe { uv_prepare_stop(handle) };
    LOOP.with(|l| {
        if let Some(l) = l.borrow_mut().as_mut() {
            l.prepared = false;
        }
    });
    run(|| {});
}

/// Whether this thread is running its executor's tasks now.
pub(crate) fn running() -> bool {
    RUNNING.with(Cell::get)
}

/// Runs `wake` (which may wake tasks of this thread), then every runnable task of this
/// JavaScript thread. Inside a round already running, only `wake`: the round runs them.
/// Without a loop of ours (calls on the runtime), only `wake`.
pub(crate) fn run(wake: impl FnOnce()) {
    round(wake, false)
}

/// [`run`], then settles what the round finished (`Home::after_rounds`) without a wake-up.
/// Only from a callback of libuv's poll phase: calls that settling starts (the Promises'
/// reactions run as it ends) must be run by the prepare phase that comes before the loop
/// polls again. Run from the prepare phase itself they would wait for the next poll's events.
pub(crate) fn run_settling(wake: impl FnOnce()) {
    round(wake, true)
}

fn round(wake: impl FnOnce(), settle: bool) {
    let this = LOOP.with(|l| {
        l.borrow()
            .as_ref()
            .map(|l| (Arc::clone(&l.home), l.runtime.clone()))
    });
    let Some((home, runtime)) = this.filter(|_| !RUNNING.with(Cell::get)) else {
        wake();
        return;
    };
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(false));
            SETTLING.with(|r| r.set(false));
        }
    }
    let settle = settle && home.after.get().is_some();
    {
        RUNNING.with(|r| r.set(true));
        SETTLING.with(|r| r.set(settle));
        let _stop = Stop;
        wake();
        let _entered = runtime.enter();
        run_tasks(&home);
    }
    // Out of the round: what its tasks finished is settled now, and calls that starts run in
    // a round of their own (before the loop next polls).
    if let Some(after) = home.after.get().filter(|_| settle) {
        after();
    }
}

/// Runs every runnable task of `home` (inside [`run`]'s round).
fn run_tasks(home: &Home) {
    while let Some(task) = home.next_task() {
        task.queued.store(false, Ordering::Release);
        let waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&waker);
        let mut slot = task.fut.lock().unwrap_or_else(|e| e.into_inner());
        let Some(fut) = slot.as_mut() else { continue };
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fencelock::ffi_support::lane::on_loop(|| fut.as_mut().poll(&mut cx))
        }));
        if !matches!(polled, Ok(Poll::Pending)) {
            // Done, or panicked (a call's own panic is caught inside its future and rejects
            // its Promise; a connection's ends the connection, which the core reopens).
            *slot = None;
        }
    }
}

// --- libuv -----------------------------------------------------------------------------------

pub(crate) const UV_POLL: c_int = 8;
const UV_PREPARE: c_int = 9;
pub(crate) const UV_READABLE: c_int = 1;
pub(crate) const UV_WRITABLE: c_int = 2;

pub(crate) type UvPollCb = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
type UvCloseCb = unsafe extern "C" fn(handle: *mut c_void);
type UvPrepareCb = unsafe extern "C" fn(handle: *mut c_void);

// Exported by the node executable for addons (node's own headers declare them).
extern "C" {
    pub(crate) fn uv_handle_size(kind: c_int) -> usize;
    pub(crate) fn uv_poll_init(uv: *mut sys::uv_loop_s, handle: *mut c_void, fd: c_int) -> c_int;
    pub(crate) fn uv_poll_start(handle: *mut c_void, events: c_int, cb: UvPollCb) -> c_int;
    pub(crate) fn uv_poll_stop(handle: *mut c_void) -> c_int;
    pub(crate) fn uv_close(handle: *mut c_void, cb: Option<UvCloseCb>);
    pub(crate) fn uv_unref(handle: *mut c_void);
    pub(crate) fn uv_prepare_init(uv: *mut sys::uv_loop_s, handle: *mut c_void) -> c_int;
    pub(crate) fn uv_prepare_start(handle: *mut c_void, cb: UvPrepareCb) -> c_int;
    pub(crate) fn uv_prepare_stop(handle: *mut c_void) -> c_int;
}

/// libuv's close callback of the handles we allocate with `malloc`.
pub(crate) unsafe extern "C" fn free_handle(handle: *mut c_void) {
    // SAFETY: a handle we allocated with `malloc`, which libuv hands back once, closed.
    unsafe { libc::free(handle) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task's future that never finishes and counts its drops; with a waker, it wakes that
    /// task as it drops (as a tokio mutex guard it holds wakes the next waiter).
    struct Tracked(Arc<AtomicUsize>, Option<Waker>);

    impl Future for Tracked {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Pending
        }
    }

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            if let Some(w) = self.1.take() {
                w.wake();
            }
        }
    }

    fn tracked(drops: &Arc<AtomicUsize>) -> LocalFuture {
        Box::pin(Tracked(Arc::clone(drops), None))
    }

    fn queued(home: &Home) -> usize {
        lock(&home.tasks).len()
    }

    #[test]
    fn tasks_run_in_the_order_they_were_woken() {
        let home = Arc::new(Home::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<Arc<Task>> = (0..3).map(|_| Task::new(&home, tracked(&drops))).collect();
        for i in [2, 0, 1] {
            Wake::wake_by_ref(&tasks[i]);
        }
        for i in [2, 0, 1] {
            let next = home.next_task().expect("a queued task");
            assert!(Arc::ptr_eq(&next, &tasks[i]), "task {i} next");
        }
        assert!(home.next_task().is_none());
    }

    #[test]
    fn a_task_woken_twice_before_it_runs_is_queued_once() {
        let home = Arc::new(Home::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let task = Task::new(&home, tracked(&drops));
        Wake::wake_by_ref(&task);
        Wake::wake_by_ref(&task);
        assert_eq!(queued(&home), 1);
        // Taken to run (as `run` does), it may be queued again by a later wake.
        let next = home.next_task().unwrap();
        next.queued.store(false, Ordering::Release);
        Wake::wake_by_ref(&task);
        assert_eq!(queued(&home), 1);
    }

    #[test]
    fn a_wake_from_another_thread_queues_the_task_and_signals_once() {
        let home = Arc::new(Home::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<Arc<Task>> = (0..2).map(|_| Task::new(&home, tracked(&drops))).collect();
        let waker = Waker::from(Arc::clone(&tasks[0]));
        std::thread::spawn(move || waker.wake()).join().unwrap();
        assert_eq!(queued(&home), 1);
        assert!(
            home.signalled.load(Ordering::Acquire),
            "the thread is woken"
        );
        // A second wake before the thread ran sends no second wake-up (the flag stays set,
        // and without a wake-up function nothing is sent at all).
        let waker = Waker::from(Arc::clone(&tasks[1]));
        std::thread::spawn(move || waker.wake()).join().unwrap();
        assert_eq!(queued(&home), 2);
        assert!(home.signalled.load(Ordering::Acquire));
    }

    #[test]
    fn the_woken_thread_clears_its_signal_once_the_queue_is_empty() {
        let home = Arc::new(Home::new());
        home.signal();
        assert!(home.signalled.load(Ordering::Acquire));
        home.woken();
        assert!(!home.signalled.load(Ordering::Acquire));
    }

    #[test]
    fn closing_drops_the_queued_tasks_and_hands_back_no_wake_up_when_none_was_set() {
        let home = Arc::new(Home::new());
        let drops = Arc::new(AtomicUsize::new(0));
        home.spawn(tracked(&drops));
        home.spawn(tracked(&drops));
        assert_eq!(queued(&home), 2);
        assert!(home.close().is_none());
        assert_eq!(queued(&home), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 2, "both futures dropped");
    }

    #[test]
    fn closing_drops_a_task_that_wakes_another_as_it_drops_and_the_woken_one_too() {
        let home = Arc::new(Home::new());
        let drops = Arc::new(AtomicUsize::new(0));
        // `other` is held only by the waker the first task's future keeps.
        let other = Task::new(&home, tracked(&drops));
        let waker = Waker::from(other);
        home.spawn(Box::pin(Tracked(Arc::clone(&drops), Some(waker))));
        let (done, closed) = std::sync::mpsc::channel();
        let h = Arc::clone(&home);
        std::thread::spawn(move || {
            let _ = h.close();
            let _ = done.send(());
        });
        // A bound for a hang, not a speed: closing takes microseconds. (Dropped under the
        // queue's lock, the first future's wake took the same lock and never returned.)
        closed
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("close returned");
        assert_eq!(drops.load(Ordering::SeqCst), 2, "both futures dropped");
        assert_eq!(
            queued(&home),
            0,
            "the task woken while closing is not queued"
        );
    }

    #[test]
    fn a_task_woken_after_closing_is_dropped_not_queued() {
        let home = Arc::new(Home::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let task = Task::new(&home, tracked(&drops));
        let waker = Waker::from(Arc::clone(&task));
        drop(task);
        assert!(home.close().is_none());
        waker.wake();
        assert_eq!(queued(&home), 0);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "its future dropped with its last waker"
        );
    }
}
