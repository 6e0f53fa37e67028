//! Calls run on the JavaScript thread, with connections driven by its libuv event loop
//! (the default; with `FENCELOCK_NODE_IO=runtime` calls run on the runtime, see `promise.rs`).
//!
//! A call crossing to a runtime thread and back costs two thread wake-ups, which on a small
//! machine are a fifth of an uncontended acquire's time (bench/notes.md). Here the core's call
//! futures are polled on the JavaScript thread itself ([`fencelock::ffi_support::lane::on_loop`]), and the
//! manager's connections to plain TCP servers are [`LoopStream`]s: sockets that libuv watches
//! (`uv_poll_t`) on the same thread. The JavaScript thread writes each command and reads each
//! reply itself, as ioredis does. What the core runs in the background (auto-extension, release
//! on drop, the wait's subscriptions, connections to TLS, Sentinel and cluster servers) stays
//! on the runtime, so a busy event loop cannot delay a lock's extension; an attempt's undo
//! rides the attempt's connection wherever it runs (`core/src/lane.rs`).
//!
//! The executor is the thread's [`Home`]: a queue of runnable tasks, run when a call starts,
//! when libuv reports a socket ready, and when a task is woken from another thread (through
//! the wake-up the thread's settler gives it, `crate::promise`, which finished calls use too).
//! This module uses nothing of `promise.rs`; the settler builds on it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::raw::{c_int, c_void};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

use napi::sys;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, RedisResult};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A JavaScript thread as other threads see it: its executor's tasks woken and not yet run,
/// and its wake-up (the settler's threadsafe function, set by `crate::promise`), sent at most
/// once until the thread runs.
pub(crate) struct Home {
    /// `None` once the environment is being torn down: nothing wakes the thread any more.
    wake: Mutex<Option<Tsfn>>,
    /// Tasks woken and not yet run.
    tasks: Mutex<VecDeque<Arc<Task>>>,
    /// Whether a wake-up of the JavaScript thread is on its way.
    signalled: AtomicBool,
    /// The JavaScript thread.
    thread: ThreadId,
}

struct Tsfn(sys::napi_threadsafe_function);

// Calling a threadsafe function from any thread is its purpose; the mutex in `Home`
// serialises the calls with its release at environment teardown.
unsafe impl Send for Tsfn {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data: a panic elsewhere while holding it leaves nothing half-done.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Home {
    /// The calling thread's home, with no wake-up yet.
    pub(crate) fn new() -> Home {
        Home {
            wake: Mutex::new(None),
            tasks: Mutex::new(VecDeque::new()),
            signalled: AtomicBool::new(false),
            thread: std::thread::current().id(),
        }
    }

    /// Sets the threadsafe function that wakes the thread.
    pub(crate) fn set_wake(&self, tsfn: sys::napi_threadsafe_function) {
        *lock(&self.wake) = Some(Tsfn(tsfn));
    }

    /// At teardown: the tasks are dropped (never to run again) and the wake-up is handed back
    /// to be released.
    pub(crate) fn close(&self) -> Option<sys::napi_threadsafe_function> {
        drop(std::mem::take(&mut *lock(&self.tasks)));
        lock(&self.wake).take().map(|t| t.0)
    }

    /// Runs `fut` on the JavaScript thread's executor.
    pub(crate) fn spawn(self: &Arc<Self>, fut: LocalFuture) {
        Wake::wake(Task::new(self, fut));
    }

    /// Queues a woken task. Woken on the JavaScript thread, it runs in the round running now
    /// or before the loop next polls; woken elsewhere, the JavaScript thread is woken.
    fn schedule(&self, task: Arc<Task>) {
        lock(&self.tasks).push_back(task);
        let here = std::thread::current().id() == self.thread;
        if !(here && (running() || run_soon())) {
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
            if let Some(tsfn) = lock(&self.wake).as_ref() {
                // Non-blocking with an unbounded queue: fails only while closing, when
                // nothing can be settled anyway.
                unsafe {
                    sys::napi_call_threadsafe_function(
                        tsfn.0,
                        ptr::null_mut(),
                        sys::ThreadsafeFunctionCallMode::nonblocking,
                    )
                };
            }
        }
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
    /// This thread's libuv loop and the runtime the core's background work goes to.
    static LOOP: RefCell<Option<LoopThread>> = const { RefCell::new(None) };
    /// The poll handles open on this thread's loop (closed at its teardown).
    static HANDLES: RefCell<Vec<*mut c_void>> = const { RefCell::new(Vec::new()) };
}

/// The JavaScript thread is going away: closes the poll handles still open (a worker's loop
/// must have none left when it closes) and forgets the loop. Connections then fail.
pub(crate) fn teardown() {
    for handle in HANDLES.with(|h| std::mem::take(&mut *h.borrow_mut())) {
        unsafe {
            let watch = *(handle as *mut *mut Watch);
            if !watch.is_null() {
                (*watch).handle = ptr::null_mut();
                *(handle as *mut *mut c_void) = ptr::null_mut();
            }
            uv_close(handle, Some(free_handle));
        }
    }
    if let Some(l) = LOOP.with(|l| l.borrow_mut().take()) {
        unsafe { uv_close(l.prepare, Some(free_handle)) };
    }
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
    let status = unsafe { sys::napi_get_uv_event_loop(env, &mut uv) };
    let runtime = std::panic::catch_unwind(|| {
        napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current)
    });
    match (status == sys::Status::napi_ok && !uv.is_null(), runtime) {
        (true, Ok(runtime)) => {
            let prepare = unsafe { libc::malloc(uv_handle_size(UV_PREPARE)) };
            if prepare.is_null() || unsafe { uv_prepare_init(uv, prepare) } != 0 {
                unsafe { libc::free(prepare) };
                return false;
            }
            // Never keeps the process alive (pending calls do).
            unsafe { uv_unref(prepare) };
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

/// Runs this thread's queued tasks before its event loop next polls: once for every task
/// woken on the thread in this turn (calls started in it write their commands together), with
/// no system call. `false` when the thread has no loop of ours.
pub(crate) fn run_soon() -> bool {
    LOOP.with(|l| match l.borrow_mut().as_mut() {
        Some(l) => {
            if !l.prepared && unsafe { uv_prepare_start(l.prepare, on_prepare) } == 0 {
                l.prepared = true;
            }
            l.prepared
        }
        None => false,
    })
}

unsafe extern "C" fn on_prepare(handle: *mut c_void) {
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
        }
    }
    RUNNING.with(|r| r.set(true));
    let _stop = Stop;
    wake();
    let _entered = runtime.enter();
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

const UV_POLL: c_int = 8;
const UV_PREPARE: c_int = 9;
const UV_READABLE: c_int = 1;
const UV_WRITABLE: c_int = 2;

type UvPollCb = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
type UvCloseCb = unsafe extern "C" fn(handle: *mut c_void);
type UvPrepareCb = unsafe extern "C" fn(handle: *mut c_void);

// Exported by the node executable for addons (node's own headers declare them).
extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_poll_init(uv: *mut sys::uv_loop_s, handle: *mut c_void, fd: c_int) -> c_int;
    fn uv_poll_start(handle: *mut c_void, events: c_int, cb: UvPollCb) -> c_int;
    fn uv_poll_stop(handle: *mut c_void) -> c_int;
    fn uv_close(handle: *mut c_void, cb: Option<UvCloseCb>);
    fn uv_unref(handle: *mut c_void);
    fn uv_prepare_init(uv: *mut sys::uv_loop_s, handle: *mut c_void) -> c_int;
    fn uv_prepare_start(handle: *mut c_void, cb: UvPrepareCb) -> c_int;
    fn uv_prepare_stop(handle: *mut c_void) -> c_int;
}

/// A socket whose readiness libuv reports on the JavaScript thread; a connection's stream.
/// Read and written on that thread only (its executor runs the connection's task).
pub(crate) struct LoopStream {
    io: std::mem::ManuallyDrop<Box<Watch>>,
}

/// What the poll handle's callback reaches (its `data`): the socket and who waits on it.
struct Watch {
    sock: TcpStream,
    thread: ThreadId,
    /// The `uv_poll_t` (made on first wait), or null.
    handle: *mut c_void,
    watching: c_int,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

// The stream moves between threads only as part of the connection task's future before it
// first runs, and is dropped on the JavaScript thread or, off it, never touches libuv (see Drop).
unsafe impl Send for LoopStream {}

impl LoopStream {
    fn new(sock: TcpStream, thread: ThreadId) -> LoopStream {
        LoopStream {
            io: std::mem::ManuallyDrop::new(Box::new(Watch {
                sock,
                thread,
                handle: ptr::null_mut(),
                watching: 0,
                reader: None,
                writer: None,
            })),
        }
    }

    fn check_thread(&self) -> io::Result<()> {
        if std::thread::current().id() == self.io.thread {
            Ok(())
        } else {
            Err(io::Error::other(
                "fencelock: a connection of the event loop used off its thread",
            ))
        }
    }
}

impl Watch {
    /// Watches for `events` as well as what is watched already.
    fn want(&mut self, events: c_int) -> io::Result<()> {
        self.set_watch(self.watching | events)
    }

    /// Watches for exactly `want` (none: stops).
    fn set_watch(&mut self, want: c_int) -> io::Result<()> {
        if want == self.watching {
            return Ok(());
        }
        if self.handle.is_null() {
            let uv = LOOP.with(|l| l.borrow().as_ref().map(|l| l.uv));
            let Some(uv) = uv else {
                return Err(io::Error::other("fencelock: the event loop is gone"));
            };
            let handle = unsafe { libc::malloc(uv_handle_size(UV_POLL)) };
            if handle.is_null() {
                return Err(io::Error::from(io::ErrorKind::OutOfMemory));
            }
            let rc = unsafe { uv_poll_init(uv, handle, self.sock.as_raw_fd()) };
            if rc != 0 {
                unsafe { libc::free(handle) };
                return Err(io::Error::other(format!("uv_poll_init failed ({rc})")));
            }
            // The handle's `data` is its first field.
            unsafe {
                *(handle as *mut *mut c_void) = self as *mut Watch as *mut c_void;
                // A connection never keeps the process alive by itself (pending calls do).
                uv_unref(handle);
            }
            HANDLES.with(|h| h.borrow_mut().push(handle));
            self.handle = handle;
        }
        let rc = if want == 0 {
            unsafe { uv_poll_stop(self.handle) }
        } else {
            unsafe { uv_poll_start(self.handle, want, on_ready) }
        };
        if rc != 0 {
            return Err(io::Error::other(format!("uv_poll_start failed ({rc})")));
        }
        self.watching = want;
        Ok(())
    }
}

unsafe extern "C" fn on_ready(handle: *mut c_void, status: c_int, events: c_int) {
    let watch = unsafe { *(handle as *mut *mut Watch) };
    if watch.is_null() {
        return;
    }
    // The wakes only queue tasks: the stream is still alive while this closure runs (the
    // tasks, which may drop it, run after it).
    run(|| {
        let watch = unsafe { &mut *watch };
        let events = if status < 0 {
            UV_READABLE | UV_WRITABLE
        } else {
            events
        };
        let mut idle = 0;
        for (event, waiter) in [
            (UV_READABLE, &mut watch.reader),
            (UV_WRITABLE, &mut watch.writer),
        ] {
            if events & event != 0 {
                match waiter.take() {
                    Some(w) => w.wake(),
                    None => idle |= event,
                }
            }
        }
        // Level-triggered: stop watching for what nobody waited for. (A woken reader or
        // writer stays watched: it reads or writes until it would block and waits again.)
        if idle != 0 {
            let _ = watch.set_watch(watch.watching & !idle);
        }
    });
}

unsafe extern "C" fn free_handle(handle: *mut c_void) {
    unsafe { libc::free(handle) };
}

impl Drop for LoopStream {
    fn drop(&mut self) {
        let handle = self.io.handle;
        if handle.is_null() {
            unsafe { std::mem::ManuallyDrop::drop(&mut self.io) };
            return;
        }
        if std::thread::current().id() == self.io.thread && LOOP.with(|l| l.borrow().is_some()) {
            HANDLES.with(|h| h.borrow_mut().retain(|&x| x != handle));
            unsafe {
                *(handle as *mut *mut c_void) = ptr::null_mut();
                uv_close(handle, Some(free_handle));
                std::mem::ManuallyDrop::drop(&mut self.io);
            }
        }
        // Off the loop's thread (only when the JavaScript thread is being torn down) libuv
        // must not be touched: the handle and its socket are left as they are.
    }
}

impl LoopStream {
    /// Runs `op` on the socket until it neither is interrupted nor would block; when it would
    /// block, waits for `event` (the waker is called when libuv reports it).
    fn ready<T>(
        &mut self,
        cx: &mut Context<'_>,
        event: c_int,
        mut op: impl FnMut(&TcpStream) -> io::Result<T>,
    ) -> Poll<io::Result<T>> {
        self.check_thread()?;
        loop {
            match op(&self.io.sock) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let io = &mut *self.io;
                    let waiter = if event == UV_READABLE {
                        &mut io.reader
                    } else {
                        &mut io.writer
                    };
                    *waiter = Some(cx.waker().clone());
                    io.want(event)?;
                    return Poll::Pending;
                }
                done => return Poll::Ready(done),
            }
        }
    }
}

impl AsyncRead for LoopStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Into the buffer's uninitialised part as it is (no zeroing first), as tokio's own
        // sockets read.
        let n = std::task::ready!(self.ready(cx, UV_READABLE, |sock| {
            let dst = unsafe { buf.unfilled_mut() };
            let n = unsafe { libc::recv(sock.as_raw_fd(), dst.as_mut_ptr().cast(), dst.len(), 0) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        }))?;
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for LoopStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.ready(cx, UV_WRITABLE, |mut sock| sock.write(data))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = self.io.sock.shutdown(std::net::Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}

// --- the core's hook -------------------------------------------------------------------------

/// Opens a manager's connections to plain TCP servers on the event loop of the JavaScript
/// thread that made the manager.
pub(crate) struct NodeLoopIo {
    home: Arc<Home>,
    thread: ThreadId,
}

impl NodeLoopIo {
    pub(crate) fn new(home: Arc<Home>) -> NodeLoopIo {
        NodeLoopIo {
            home,
            thread: std::thread::current().id(),
        }
    }
}

impl fencelock::ffi_support::lane::LoopIo for NodeLoopIo {
    fn connect(
        &self,
        info: ConnectionInfo,
        config: AsyncConnectionConfig,
    ) -> Pin<Box<dyn Future<Output = RedisResult<MultiplexedConnection>> + Send>> {
        let (home, thread) = (Arc::clone(&self.home), self.thread);
        Box::pin(async move {
            let ConnectionAddr::Tcp(host, port) = info.addr().clone() else {
                return Err(io::Error::other("fencelock: not a plain TCP server").into());
            };
            // Connected on the runtime (name resolution may block), then handed to the loop.
            let sock = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            sock.set_nodelay(true)?;
            let sock = sock.into_std()?;
            let (tx, rx) = tokio::sync::oneshot::channel();
            let settings = info.redis_settings().clone();
            let stream = LoopStream::new(sock, thread);
            home.spawn(Box::pin(async move {
                match MultiplexedConnection::new_with_config(&settings, stream, config).await {
                    Ok((conn, driver)) => {
                        let _ = tx.send(Ok(conn));
                        // The connection's reads and writes, in this task, until every
                        // handle of it is gone.
                        driver.await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            }));
            rx.await.unwrap_or_else(|_| {
                Err(
                    io::Error::other("fencelock: the JavaScript thread's event loop is gone")
                        .into(),
                )
            })
        })
    }
}
