//! Which connection a call rides: the runtime's (the default), or one that a binding drives
//! from its own event loop's thread.
//!
//! A binding whose calls come from an event loop (Node.js) can poll the core's futures on that
//! thread ([`on_loop`]) and give the manager a [`LoopIo`] that opens connections whose I/O
//! runs there too: a call then makes no thread crossing at all (the JavaScript thread writes
//! the command and reads the reply itself), as a client written in the language would. Only
//! the calls polled inside [`on_loop`] ride those connections; everything the core runs in
//! the background (auto-extension, release on drop, the wait's subscriptions) keeps the
//! runtime's, so a busy event loop cannot delay a lock's extension. The undo of an attempt
//! rides the attempt's own connection wherever it runs ([`in_lane`]), so that the server
//! always runs it after the attempt.
//!
//! A blocking call (the [`crate::blocking`] facade, which the C ABI and through it Java and Go
//! use) runs its future on the calling thread ([`OnCaller`]): where the manager has a single
//! plain server, its scripts ride a connection of the calling thread's own, written and read
//! synchronously inside the poll (`direct.rs`), so an uncontended call costs one round trip
//! and no thread wake-up beyond the reply's. Only the thread polling inside [`OnCaller`]
//! rides it: the same lane carried into a background task (an undo) rides the runtime's.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionInfo, RedisResult};

/// Opens connections whose I/O runs on a binding's event loop.
pub trait LoopIo: Send + Sync {
    /// A connection to `info` (a plain TCP server: no TLS, Sentinel or cluster), set up with
    /// `config`. Called on the runtime; the connection's I/O must run on the loop's thread.
    fn connect(
        &self,
        info: ConnectionInfo,
        config: AsyncConnectionConfig,
    ) -> Pin<Box<dyn Future<Output = RedisResult<MultiplexedConnection>> + Send>>;
}

/// The connections a call rides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The runtime's connections.
    #[default]
    Runtime,
    /// The [`LoopIo`]'s connections, where the manager has one.
    Loop,
    /// The calling thread's own connection, where the manager has a single plain server and
    /// the thread polls inside [`OnCaller`].
    Caller,
}

thread_local! {
    static LANE: Cell<Lane> = const { Cell::new(Lane::Runtime) };
    /// Whether this thread is polling inside [`OnCaller`] (and so may block on a socket).
    static CALLER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (a poll of a core future, on the event loop's thread) with the calls it makes
/// riding the connections of the manager's [`LoopIo`].
pub fn on_loop<R>(f: impl FnOnce() -> R) -> R {
    with_lane(Lane::Loop, f)
}

/// The lane of the calls polled now.
pub(crate) fn current() -> Lane {
    LANE.with(Cell::get)
}

/// Whether the calls polled now may ride the calling thread's own connections.
pub(crate) fn on_caller_thread() -> bool {
    CALLER.with(Cell::get) && current() == Lane::Caller
}

fn with_lane<R>(lane: Lane, f: impl FnOnce() -> R) -> R {
    struct Restore(Lane);
    impl Drop for Restore {
        fn drop(&mut self) {
            LANE.with(|l| l.set(self.0));
        }
    }
    let _restore = Restore(LANE.with(|l| l.replace(lane)));
    f()
}

/// `fut` (pinned by the caller), polled on a caller's thread (never a runtime worker: it may
/// block there for a round trip, see the module's text), its calls riding the thread's own
/// connections.
pub fn on_caller<F: Future + Unpin>(fut: F) -> OnCaller<F> {
    OnCaller { fut }
}

/// See [`on_caller`].
pub struct OnCaller<F> {
    fut: F,
}

impl<F: Future + Unpin> Future for OnCaller<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                CALLER.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CALLER.with(|c| c.replace(true)));
        with_lane(Lane::Caller, || Pin::new(&mut self.fut).poll(cx))
    }
}

/// `fut`, whose calls ride `lane` wherever it is polled (boxed: undos are rare).
pub(crate) fn in_lane<F: Future>(lane: Lane, fut: F) -> InLane<F> {
    InLane {
        lane,
        fut: Box::pin(fut),
    }
}

pub(crate) struct InLane<F> {
    lane: Lane,
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for InLane<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let lane = self.lane;
        with_lane(lane, || self.fut.as_mut().poll(cx))
    }
}
