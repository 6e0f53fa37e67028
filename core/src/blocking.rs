//! The same surface for callers that are not async (the C and synchronous Python layers use
//! it): each manager owns a small Tokio runtime, and every call blocks the calling thread
//! until the core's future completes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::error::{Error, Result};
use crate::{AcquireOptions, Builder, Config};

#[macro_use]
mod calls;
mod election;
mod family;
mod pending;
pub use election::{Election, Observer, Term};
pub use family::{RwLock, Semaphore};
pub use pending::Pending;

/// Owns the runtime; shuts it down without blocking when the last user goes.
struct RuntimeHolder(Option<Runtime>);

impl Drop for RuntimeHolder {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A blocking lock manager: [`crate::LockManager`] on a runtime of its own.
#[derive(Clone)]
pub struct LockManager {
    inner: crate::LockManager,
    runtime: Arc<RuntimeHolder>,
}

impl std::fmt::Debug for LockManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// A lock held through the blocking API; dropping it releases it in the background.
pub struct Lock {
    inner: crate::Lock,
    runtime: Arc<RuntimeHolder>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl LockManager {
    /// See [`crate::LockManager::new`].
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad configuration; [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) if the
    /// runtime's threads cannot be started.
    pub fn new<I, S>(urls: I) -> Result<LockManager>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        LockManager::from_config(Builder::new(urls).config()?)
    }

    /// A blocking manager from a checked configuration (see [`Builder::config`]).
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) if the runtime's threads cannot be started.
    pub fn from_config(config: Config) -> Result<LockManager> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fencelock")
            .on_thread_start(block_sigpipe)
            .enable_all()
            .build()
            .map_err(|e| Error::unavailable(format!("cannot start the fencelock runtime: {e}")))?;
        Ok(LockManager {
            inner: crate::LockManager::from_config(config),
            runtime: Arc::new(RuntimeHolder(Some(runtime))),
        })
    }

    /// The async manager underneath (sharing connections with this one).
    pub fn as_async(&self) -> &crate::LockManager {
        &self.inner
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        self.inner.config()
    }

    /// Runs a future to completion on the calling thread, with this manager's runtime for
    /// what it spawns; where the manager has a single plain server its script calls ride the
    /// thread's own connection ([`crate::lane::on_caller`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when called from inside an async runtime (blocking there
    /// would stall it: use the async API).
    pub fn block_on<F: Future>(&self, fut: F) -> Result<F::Output> {
        block_on(&self.runtime, fut)
    }

    /// Runs a future on this manager's runtime, calling `interrupted` on the calling thread
    /// every `every`; when it returns true the future is dropped (which cleans up: votes won
    /// are released in the background) and [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) is returned. The Python
    /// binding uses this to honour Ctrl-C. Like [`block_on`](Self::block_on), the future is
    /// polled on the calling thread in the caller lane ([`crate::lane`]), so a script call
    /// under way on the thread's own connection (at most the server timeout) ends before
    /// `interrupted` is asked again.
    ///
    /// # Errors
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) when interrupted; as [`block_on`](Self::block_on) otherwise.
    pub fn block_on_interruptible<F: Future>(
        &self,
        fut: F,
        every: Duration,
        mut interrupted: impl FnMut() -> bool,
    ) -> Result<F::Output> {
        let rt = runtime(&self.runtime)?;
        let mut fut = std::pin::pin!(fut);
        loop {
            let step = rt.block_on(crate::lane::on_caller(std::pin::pin!(
                crate::deadline::within(self.inner.clock(), every, fut.as_mut())
            )));
            match step {
                Ok(out) => return Ok(out),
                Err(_) if interrupted() => {
                    return Err(Error::cancelled("interrupted while waiting"))
                }
                Err(_) => {}
            }
        }
    }

    fn wrap(&self, lock: crate::Lock) -> Lock {
        Lock {
            inner: lock,
            runtime: Arc::clone(&self.runtime),
        }
    }

    fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        self.block_on(fut)
    }

    /// Blocks on `acquisition` (an acquire of the async API underneath, or an election's
    /// [`prepare_campaign`](crate::Election::prepare_campaign)) and gives its lock.
    ///
    /// # Errors
    /// The acquisition's.
    pub fn acquire_future(
        &self,
        acquisition: impl Future<Output = Result<crate::Lock>>,
    ) -> Result<Lock> {
        let lock = self.block_on(acquisition)??;
        Ok(self.wrap(lock))
    }

    /// Blocks on `acquisition` (an acquire of the async API underneath: this manager's
    /// [`as_async`](Self::as_async), or one of its semaphores' or read-write locks') as
    /// [`block_on_interruptible`](Self::block_on_interruptible) does: `interrupted` is asked
    /// every `every`, and a `true` gives the acquisition up. The Python binding honours
    /// Ctrl-C with it, the C binding its interrupt callback.
    ///
    /// # Errors
    /// The acquisition's, or [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled).
    pub fn acquire_interruptible(
        &self,
        acquisition: impl Future<Output = Result<crate::Lock>>,
        every: Duration,
        interrupted: impl FnMut() -> bool,
    ) -> Result<Lock> {
        let lock = self.block_on_interruptible(acquisition, every, interrupted)??;
        Ok(self.wrap(lock))
    }

    blocking_calls! { LockManager;
        fn acquire(name: impl AsRef<[u8]>, ttl: Duration, wait: Option<Duration>) -> Lock;
        fn acquire_with(name: impl AsRef<[u8]>, opts: &AcquireOptions) -> Lock;
        fn acquire_lease_with(name: impl AsRef<[u8]>, kind: crate::LeaseKind, opts: &AcquireOptions) -> Lock;
        fn acquire_many[N: AsRef<[u8]>](names: impl IntoIterator<Item = N>, ttl: Duration, wait: Option<Duration>) -> Lock;
        fn acquire_many_with[N: AsRef<[u8]>](names: impl IntoIterator<Item = N>, opts: &AcquireOptions) -> Lock;
        fn acquire_scoped(name: impl AsRef<[u8]>, opts: &AcquireOptions) -> Lock;
        fn try_acquire(name: impl AsRef<[u8]>, ttl: Duration) -> Option<Lock>;
        fn is_held_by_token(name: impl AsRef<[u8]>, token: impl AsRef<[u8]>) -> bool;
        fn is_locked(name: impl AsRef<[u8]>) -> bool;
        fn remaining(name: impl AsRef<[u8]>) -> Option<Duration>;
        fn state(name: impl AsRef<[u8]>) -> crate::LockState;
        fn holder(name: impl AsRef<[u8]>) -> Option<crate::LockHolder>;
        fn extend_by_token(name: impl AsRef<[u8]>, token: impl AsRef<[u8]>, ttl: Duration) -> Duration;
        fn release_by_token(name: impl AsRef<[u8]>, token: impl AsRef<[u8]>) -> ();
    }

    /// Runs `f` while holding `name` (waiting until acquired), auto-extending the lock, then
    /// releases it.
    ///
    /// # Errors
    /// As [`crate::LockManager::with_lock`].
    pub fn with_lock<T>(
        &self,
        name: impl AsRef<[u8]>,
        ttl: Duration,
        f: impl FnOnce(&Lock) -> T,
    ) -> Result<T> {
        self.with_lock_with(name, &AcquireOptions::new(ttl), f)
    }

    /// See [`crate::LockManager::with_lock_with`].
    ///
    /// # Errors
    /// As [`crate::LockManager::with_lock_with`].
    pub fn with_lock_with<T>(
        &self,
        name: impl AsRef<[u8]>,
        opts: &AcquireOptions,
        f: impl FnOnce(&Lock) -> T,
    ) -> Result<T> {
        let lock = self.acquire_scoped(name, opts)?;
        let out = f(&lock);
        lock.finish_scope().map(|()| out)
    }
}

impl Lock {
    /// The async lock underneath.
    pub fn as_async(&self) -> &crate::Lock {
        &self.inner
    }
    /// See [`crate::Lock::name`].
    pub fn name(&self) -> &[u8] {
        self.inner.name()
    }
    /// See [`crate::Lock::token`].
    pub fn token(&self) -> &[u8] {
        self.inner.token()
    }
    /// See [`crate::Lock::fencing_token`].
    pub fn fencing_token(&self) -> u64 {
        self.inner.fencing_token()
    }
    /// See [`crate::Lock::names`].
    pub fn names(&self) -> Vec<&[u8]> {
        self.inner.names()
    }
    /// See [`crate::Lock::fencing_tokens`].
    pub fn fencing_tokens(&self) -> &[u64] {
        self.inner.fencing_tokens()
    }
    /// See [`crate::Lock::ttl`].
    pub fn ttl(&self) -> Duration {
        self.inner.ttl()
    }
    /// See [`crate::Lock::validity`].
    pub fn validity(&self) -> Duration {
        self.inner.validity()
    }
    /// See [`crate::Lock::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }
    /// See [`crate::Lock::is_auto_extending`].
    pub fn is_auto_extending(&self) -> bool {
        self.inner.is_auto_extending()
    }
    /// See [`crate::Lock::lost_reason`].
    pub fn lost_reason(&self) -> Option<crate::LostReason> {
        self.inner.lost_reason()
    }
    /// See [`crate::Lock::lost_view`].
    pub fn lost_view(&self) -> crate::LostView {
        self.inner.lost_view()
    }
    /// See [`crate::Lock::on_lost`].
    pub fn on_lost(&self, f: impl FnOnce(crate::LostReason) + Send + 'static) {
        self.inner.on_lost(f)
    }
    /// Blocks until the lock is lost (`Some(Some(why))`), released or detached
    /// (`Some(None)`), or `timeout` passes (`None`).
    ///
    /// # Errors
    /// As [`LockManager::block_on`].
    pub fn wait_lost(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Option<Option<crate::LostReason>>> {
        let lost = self.inner.lost();
        block_on(&self.runtime, async move {
            match timeout {
                None => Some(lost.await),
                Some(t) => tokio::time::timeout(t, lost).await.ok(),
            }
        })
    }
    fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        block_on(&self.runtime, fut)
    }
    blocking_calls! { Lock;
        fn extend_by(add: Duration) -> ();
        fn is_held() -> bool;
        fn extend(ttl: Duration) -> ();
        fn finish_scope() -> ();
    }
    /// See [`crate::Lock::auto_extend`].
    pub fn auto_extend(&self, max_hold: Option<Duration>) {
        self.inner.auto_extend(max_hold)
    }
    /// See [`crate::Lock::release`].
    ///
    /// # Errors
    /// As [`crate::Lock::release`].
    pub fn release(self) -> Result<()> {
        let Lock { inner, runtime } = self;
        block_on(&runtime, inner.release())?
    }
}

impl LockManager {
    /// Drops this manager. When it is the last user of its runtime (no clone of it and no lock
    /// from it is alive), waits up to `timeout` for the runtime's thread to stop, instead of
    /// letting it wind down in the background as a plain drop does. For callers that must
    /// leave no thread behind: the C binding's `fl_manager_free`, or a process about to exit
    /// under a leak checker. The manager's background cleanups (an interrupted acquisition's
    /// place given up, a dropped lock's release) are awaited first, up to `timeout` too, so
    /// that a program that frees its manager and exits leaves nothing in the queues; other
    /// tasks are cancelled. Called from inside an async runtime it is a plain drop.
    pub fn close(self, timeout: Duration) {
        let LockManager { inner, runtime } = self;
        if tokio::runtime::Handle::try_current().is_err() {
            if let Ok(rt) = self::runtime(&runtime) {
                rt.block_on(inner.settle(timeout));
            }
        }
        drop(inner);
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        if let Ok(mut holder) = Arc::try_unwrap(runtime) {
            if let Some(rt) = holder.0.take() {
                rt.shutdown_timeout(timeout);
            }
        }
    }
}

impl Lock {
    /// See [`crate::Lock::detach`]: gives up the handle, leaving the lock held on the servers.
    pub fn detach(self) {
        self.inner.detach()
    }
}

fn runtime(holder: &RuntimeHolder) -> Result<&Runtime> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::invalid_argument(
            "fencelock::blocking called from inside an async runtime; use the async API there",
        ));
    }
    holder
        .0
        .as_ref()
        .ok_or_else(|| Error::unavailable("the fencelock runtime has shut down"))
}

/// Runs `fut` on the calling thread, its calls riding the thread's own connection where the
/// manager has a single plain server ([`crate::lane::on_caller`]).
fn block_on<F: Future>(holder: &RuntimeHolder, fut: F) -> Result<F::Output> {
    let rt = runtime(holder)?;
    let fut = std::pin::pin!(fut);
    Ok(rt.block_on(crate::lane::on_caller(fut)))
}

/// Blocks SIGPIPE on the runtime's own threads. redis-rs writes a command with `writev`, which
/// cannot ask for `MSG_NOSIGNAL`: a write to a connection the server has closed (a restart, a
/// failover, `CLIENT KILL`) raises SIGPIPE on the writing thread, and a process that has not
/// ignored it dies of it. Python, Node and the JVM ignore it; a C program does not, and a Go
/// program lets a SIGPIPE on a thread it did not start take the default action (the Go
/// binding's tests died of it once, stage 47). Blocked on these threads, the write fails with
/// `EPIPE`, which the connection handles as a lost connection; the program's own threads and
/// signal handlers are untouched.
fn block_sigpipe() {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use;
    // pthread_sigmask changes only the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
