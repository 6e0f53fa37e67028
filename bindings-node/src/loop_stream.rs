//! The manager's connections to plain TCP servers on the JavaScript thread's event loop
//! (`event_loop.rs`): each a [`LoopStream`], a socket that libuv watches (`uv_poll_t`) on that
//! thread, so that the thread writes each command and reads each reply itself, as ioredis
//! does. [`NodeLoopIo`] is the core's hook that opens them.
//!
//! The contract: a stream is read, written and dropped on the JavaScript thread (its
//! connection's task runs on that thread's executor); the poll handle's `data` points at the
//! stream's [`Watch`] for as long as both live, and is cleared before either goes.

use std::cell::RefCell;
use std::future::Future;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::raw::{c_int, c_void};
use std::pin::Pin;
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread::ThreadId;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, RedisResult};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::event_loop::{
    self, free_handle, run_settling, uv_close, uv_handle_size, uv_poll_init, uv_poll_start,
    uv_poll_stop, uv_unref, Home, UV_POLL, UV_READABLE, UV_WRITABLE,
};

thread_local! {
    /// The poll handles open on this thread's loop (closed at its teardown).
    static HANDLES: RefCell<Vec<*mut c_void>> = const { RefCell::new(Vec::new()) };
}

/// The JavaScript thread is going away: closes the poll handles still open (a worker's loop
/// must have none left when it closes), then forgets the loop ([`event_loop::teardown`]).
/// Connections then fail.
pub(crate) fn teardown() {
    for handle in HANDLES.with(|h| std::mem::take(&mut *h.borrow_mut())) {
        // SAFETY: an open `uv_poll_t` of this thread's loop (listed until closed), whose `data`
        // is null or its live stream's `Watch`: the stream forgets the handle, which is closed
        // once and freed by libuv through `free_handle`.
        unsafe {
            let watch = *(handle as *mut *mut Watch);
            if !watch.is_null() {
                (*watch).handle = ptr::null_mut();
                *(handle as *mut *mut c_void) = ptr::null_mut();
            }
            uv_close(handle, Some(free_handle));
        }
    }
    event_loop::teardown();
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
    /// False from a read that would block until libuv reports the socket readable: a read
    /// asked for meanwhile waits without a system call (the connection's task is polled
    /// again for every command it sends, and each such read found nothing, bench/notes.md).
    /// While false, `watching` holds `UV_READABLE`, so the report comes.
    readable: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

// SAFETY: the stream moves between threads only as part of the connection task's future
// before it first runs, and is dropped on the JavaScript thread or, off it, never touches
// libuv (see Drop); every read and write checks the thread (`check_thread`).
unsafe impl Send for LoopStream {}

impl LoopStream {
    fn new(sock: TcpStream, thread: ThreadId) -> LoopStream {
        LoopStream {
            io: std::mem::ManuallyDrop::new(Box::new(Watch {
                sock,
                thread,
                handle: ptr::null_mut(),
                watching: 0,
                readable: true,
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
            let Some(uv) = event_loop::uv_loop() else {
                return Err(io::Error::other("fencelock: the event loop is gone"));
            };
            // SAFETY: libuv's size of a `uv_poll_t`, allocated for it.
            let handle = unsafe { libc::malloc(uv_handle_size(UV_POLL)) };
            if handle.is_null() {
                return Err(io::Error::from(io::ErrorKind::OutOfMemory));
            }
            // SAFETY: this thread's loop (`set_watch` runs on it: `check_thread`), the handle
            // just allocated, and the open socket the handle watches until it is closed.
            let rc = unsafe { uv_poll_init(uv, handle, self.sock.as_raw_fd()) };
            if rc != 0 {
                // SAFETY: allocated above, never initialised.
                unsafe { libc::free(handle) };
                return Err(io::Error::other(format!("uv_poll_init failed ({rc})")));
            }
            // The handle's `data` is its first field.
            // SAFETY: the initialised handle; `data` points at this `Watch`, which is boxed
            // (it does not move) and clears it before it goes (Drop, `teardown`).
            unsafe {
                *(handle as *mut *mut c_void) = self as *mut Watch as *mut c_void;
                // A connection never keeps the process alive by itself (pending calls do).
                uv_unref(handle);
            }
            HANDLES.with(|h| h.borrow_mut().push(handle));
            self.handle = handle;
        }
        let rc = if want == 0 {
            // SAFETY: our initialised, not yet closed handle (closing nulls it first).
            unsafe { uv_poll_stop(self.handle) }
        } else {
            // SAFETY: as above.
            unsafe { uv_poll_start(self.handle, want, on_ready) }
        };
        if rc != 0 {
            return Err(io::Error::other(format!("uv_poll_start failed ({rc})")));
        }
        self.watching = want;
        Ok(())
    }
}

/// libuv's callback of a poll handle, on the loop's thread: wakes who waits on the socket.
unsafe extern "C" fn on_ready(handle: *mut c_void, status: c_int, events: c_int) {
    // SAFETY: a `uv_poll_t` of ours, whose first field (`data`) is null or its live `Watch`.
    let watch = unsafe { *(handle as *mut *mut Watch) };
    if watch.is_null() {
        return;
    }
    // The wakes only queue tasks: the stream is still alive while this closure runs (the
    // tasks, which may drop it, run after it). The calls they finish are settled here, in
    // the poll phase.
    run_settling(|| {
        // SAFETY: not null, and alive: only this thread's tasks, which run after this
        // closure, can drop it; nothing else borrows it while libuv calls us.
        let watch = unsafe { &mut *watch };
        let events = if status < 0 {
            UV_READABLE | UV_WRITABLE
        } else {
            events
        };
        watch.readable |= events & UV_READABLE != 0;
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

impl Drop for LoopStream {
    fn drop(&mut self) {
        let handle = self.io.handle;
        if handle.is_null() {
            // SAFETY: dropped once, here; no handle points at it.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.io) };
            return;
        }
        if std::thread::current().id() == self.io.thread && event_loop::uv_loop().is_some() {
            HANDLES.with(|h| h.borrow_mut().retain(|&x| x != handle));
            // SAFETY: on the loop's thread with the loop alive: the handle forgets the
            // `Watch` before it is closed (once: it left HANDLES) and the `Watch` is dropped
            // once; libuv frees the handle through `free_handle`.
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
        if event == UV_READABLE && !self.io.readable {
            // Nothing came since the last read found nothing: wait for libuv's report.
            self.io.reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
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
                    // Watched now: libuv reports when it is readable again.
                    io.readable &= event != UV_READABLE;
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
            // SAFETY: the unfilled part is only written (by `recv`), never read; `recv` writes
            // at most `dst.len()` bytes into it, from our open socket.
            let dst = unsafe { buf.unfilled_mut() };
            let n = unsafe { libc::recv(sock.as_raw_fd(), dst.as_mut_ptr().cast(), dst.len(), 0) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        }))?;
        // SAFETY: `recv` initialised the first `n` bytes of the unfilled part.
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
