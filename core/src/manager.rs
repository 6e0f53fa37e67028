//! The public API: [`LockManager`] and its builder entry points. The work is done below it:
//! [`crate::acquire`] (one acquire call and its waiting), [`crate::attempt`] (one attempt on
//! every server), [`crate::engine`] (servers, release, extend), [`crate::lock`] (a held lock).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::acquire::{AcquireCall, AcquireOptions};
use crate::config::{Builder, Config};
use crate::deadline::Clock;
use crate::engine::Engine;
use crate::error::{ErrorKind, Result};
use crate::keys::check_name;
use crate::kind::LeaseKind;
use crate::lock::Lock;
use crate::quorum;
use crate::rwlock::RwLock;
use crate::semaphore::Semaphore;
use crate::token;

/// A distributed lock manager over one Redis server (the single-server lock) or several
/// independent ones (Redlock, quorum N/2+1).
///
/// Cheap to clone: clones share connections. Servers are contacted in parallel, on first use;
/// a server that is down never makes construction fail.
#[derive(Clone)]
pub struct LockManager {
    engine: Arc<Engine>,
}

impl std::fmt::Debug for LockManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockManager")
            .field("config", &self.engine.config)
            .finish()
    }
}

impl LockManager {
    /// A manager with default options over the given server URLs
    /// (`redis://[user:password@]host[:port][/db]`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for an empty list, a bad URL or a duplicate server (see
    /// [`Builder::config`]). Never a network error: nothing is contacted yet.
    pub fn new<I, S>(urls: I) -> Result<LockManager>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Builder::new(urls).build()
    }

    /// A builder for the key prefix, retry delay, jitter, drift factor and server timeout.
    pub fn builder<I, S>(urls: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Builder::new(urls)
    }

    /// A manager from a checked configuration.
    pub fn from_config(config: Config) -> LockManager {
        LockManager {
            engine: Arc::new(Engine::new(config)),
        }
    }

    /// The thread that keeps this manager's time limits.
    pub(crate) fn clock(&self) -> &Clock {
        &self.engine.clock
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.engine.config
    }

    /// Waits, at most `limit`, for the cleanups this manager left running in the background:
    /// the releases of locks dropped unreleased and the undo of acquisitions whose future was
    /// dropped (votes won and places in line given up). A process that is about to exit calls
    /// it so that what it leaves on the servers is given back now rather than expiring later
    /// (the command line does, after Ctrl-C stopped a wait). Returns whether none is left.
    /// Each cleanup gives up on a server after about a second, so a limit of a few seconds
    /// covers them.
    pub async fn settle(&self, limit: Duration) -> bool {
        let until = Instant::now().checked_add(limit);
        self.engine.cleanups.settle(until).await
    }

    /// Number of servers a decision needs (N/2+1).
    pub fn quorum(&self) -> usize {
        quorum::quorum(self.engine.n())
    }

    /// Acquires `name` for `ttl`, waiting up to `wait` (`None`: until acquired). Waiting does
    /// not poll, and waiters are served first come, first served: a waiter takes a place in a
    /// queue on each server (ordered by when its `acquire` began), a release hands the lock
    /// straight to the first in line (its token, its TTL, a new fencing token) and tells only
    /// it, and the others sleep until they are first, the holder's TTL or the retry delay,
    /// whichever comes first. The waiter handed the lock on a quorum needs no further round
    /// trip: its validity counts from before its first attempt (the servers set its TTL after
    /// it took its place), and when less than half the TTL is left that way, one attempt
    /// resets the TTL. A waiter that stops trying (gone, paused) loses its place after about
    /// two retry delays plus two server timeouts; one whose process died is passed over at
    /// once (a handoff goes only to a waiter the server counts as listening), and a newcomer
    /// never passes a listening waiter, also when the holder's key expired. Dropping the
    /// future cancels cleanly: votes already won (handed over or not) and the place in line are given up in
    /// the background.
    ///
    /// Too few reachable servers is retried like a held lock, until the wait limit: with no
    /// limit, acquire waits for the servers to come back (cancel it to stop). Failures that
    /// retrying cannot cure (authentication, permissions, a key of the wrong type) end it at
    /// once.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name or TTL (before any network call);
    /// [`ErrorKind::NotAcquired`](crate::ErrorKind::NotAcquired) when the wait limit passes while others hold the lock;
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers answer; [`ErrorKind::Redis`](crate::ErrorKind::Redis) when servers
    /// answer with errors (e.g. the key holds a list).
    pub async fn acquire(
        &self,
        name: impl AsRef<[u8]>,
        ttl: Duration,
        wait: Option<Duration>,
    ) -> Result<Lock> {
        self.acquire_with(name, &AcquireOptions::new(ttl).wait(wait))
            .await
    }

    /// One attempt: `Ok(None)` when another owner holds the lock.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire), except that "held by another" is `Ok(None)`.
    pub async fn try_acquire(&self, name: impl AsRef<[u8]>, ttl: Duration) -> Result<Option<Lock>> {
        let opts = AcquireOptions::new(ttl).wait(Some(Duration::ZERO));
        match self.acquire_with(name, &opts).await {
            Ok(lock) => Ok(Some(lock)),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Acquires with every option: TTL, wait limit and a caller-chosen token.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); also [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad token.
    pub async fn acquire_with(
        &self,
        name: impl AsRef<[u8]>,
        opts: &AcquireOptions,
    ) -> Result<Lock> {
        let call = AcquireCall::new(&self.engine, name.as_ref(), opts)?;
        call.lock(opts).await
    }

    /// Acquires all of `names` at once, or none: on each server one script sets every key
    /// (one token, one fencing token per name) or none, so no other owner ever sees a part of
    /// them held for this lock, and a waiter never holds one name while it waits for another
    /// (no hold-and-wait, no deadlock between locks on overlapping names). It waits in every
    /// name's queue in the order callers came, as for one name; a release wakes it rather
    /// than handing it one name alone. The lock is extended and released as one; its
    /// [`names`](Lock::names) and [`fencing_tokens`](Lock::fencing_tokens) list every name.
    ///
    /// On a Redis Cluster (a `redis+cluster://` server) the names must share a hash slot: give
    /// them a common hash tag (`{order-42}:payment`, `{order-42}:stock`).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); also [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for no names, more than [`MAX_NAMES`](crate::keys::MAX_NAMES), a name given twice, or
    /// names in different hash slots when a server is a cluster.
    pub async fn acquire_many<N: AsRef<[u8]>>(
        &self,
        names: impl IntoIterator<Item = N>,
        ttl: Duration,
        wait: Option<Duration>,
    ) -> Result<Lock> {
        self.acquire_many_with(names, &AcquireOptions::new(ttl).wait(wait))
            .await
    }

    /// [`acquire_many`](Self::acquire_many) with every option.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many); also
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad token.
    pub async fn acquire_many_with<N: AsRef<[u8]>>(
        &self,
        names: impl IntoIterator<Item = N>,
        opts: &AcquireOptions,
    ) -> Result<Lock> {
        let names: Vec<Vec<u8>> = names.into_iter().map(|n| n.as_ref().to_vec()).collect();
        let call = AcquireCall::new_many(&self.engine, &names, opts)?;
        call.lock(opts).await
    }

    /// Acquires a lease of any `kind` on `name`: a lock ([`acquire_with`](Self::acquire_with)),
    /// a semaphore's permits ([`Semaphore::acquire_with`]), a read share or the write hold
    /// ([`RwLock::read_with`], [`RwLock::write_with`]). For the bindings, whose scoped forms
    /// and calls take the kind as an argument.
    ///
    /// # Errors
    /// As the call of that kind; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for a limit or count out of range.
    pub async fn acquire_lease_with(
        &self,
        name: impl AsRef<[u8]>,
        kind: LeaseKind,
        opts: &AcquireOptions,
    ) -> Result<Lock> {
        if let LeaseKind::Permits { count, limit } = kind {
            crate::kind::check_limit(limit)?;
            crate::kind::check_count(count, limit)?;
        }
        self.acquire_lease(name.as_ref(), opts, kind).await
    }

    /// [`acquire_lease_with`](Self::acquire_lease_with) in two steps: the arguments are
    /// checked now (before any network call), and the acquisition is returned as a future
    /// that owns what it needs, for
    /// [`blocking::LockManager::start`](crate::blocking::LockManager::start).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) as
    /// [`acquire_lease_with`](Self::acquire_lease_with).
    pub fn prepare_lease(
        &self,
        name: impl AsRef<[u8]>,
        kind: LeaseKind,
        opts: &AcquireOptions,
    ) -> Result<impl std::future::Future<Output = Result<Lock>> + Send + 'static> {
        if let LeaseKind::Permits { count, limit } = kind {
            crate::kind::check_limit(limit)?;
            crate::kind::check_count(count, limit)?;
        }
        let checked = AcquireCall::check_lease(&self.engine, name.as_ref(), opts, kind)?;
        // The call itself is made where it runs: its guards clean up on that runtime.
        let (engine, opts) = (Arc::clone(&self.engine), opts.clone());
        Ok(async move {
            AcquireCall::start(&engine, checked, &opts)
                .lock(&opts)
                .await
        })
    }

    /// [`acquire_many_with`](Self::acquire_many_with) in two steps, as
    /// [`prepare_lease`](Self::prepare_lease).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) as
    /// [`acquire_many_with`](Self::acquire_many_with).
    pub fn prepare_many<N: AsRef<[u8]>>(
        &self,
        names: impl IntoIterator<Item = N>,
        opts: &AcquireOptions,
    ) -> Result<impl std::future::Future<Output = Result<Lock>> + Send + 'static> {
        let names: Vec<Vec<u8>> = names.into_iter().map(|n| n.as_ref().to_vec()).collect();
        let checked = AcquireCall::check_many(&self.engine, &names, opts)?;
        let (engine, opts) = (Arc::clone(&self.engine), opts.clone());
        Ok(async move {
            AcquireCall::start(&engine, checked, &opts)
                .lock(&opts)
                .await
        })
    }

    /// Acquires a lease of `kind` on `name` (a semaphore's permits, a read-write lock's share
    /// or hold; their handles check the limit and count first).
    async fn acquire_lease(
        &self,
        name: &[u8],
        opts: &AcquireOptions,
        kind: LeaseKind,
    ) -> Result<Lock> {
        AcquireCall::new_lease(&self.engine, name, opts, kind)?
            .lock(opts)
            .await
    }

    /// A counting semaphore: at most `limit` permits of `name` held at any instant, each
    /// acquisition a lease of its own (see [`Semaphore`]). Nothing is contacted yet.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name, or a
    /// limit outside 1 to [`MAX_LIMIT`](crate::kind::MAX_LIMIT).
    pub fn semaphore(&self, name: impl AsRef<[u8]>, limit: u32) -> Result<Semaphore> {
        Semaphore::new(Arc::clone(&self.engine), name.as_ref(), limit)
    }

    /// A leader election on `name`: candidates campaign for terms (each a lock lease of the
    /// name), everyone reads and follows the leader (see [`Election`](crate::Election)).
    /// Nothing is contacted yet.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name.
    pub fn election(&self, name: impl AsRef<[u8]>) -> Result<crate::Election> {
        crate::Election::new(Arc::clone(&self.engine), name.as_ref())
    }

    /// A fair read-write lock on `name`: many readers or one writer, each a lease of its own
    /// (see [`RwLock`]). Nothing is contacted yet.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name.
    pub fn rwlock(&self, name: impl AsRef<[u8]>) -> Result<RwLock> {
        RwLock::new(Arc::clone(&self.engine), name.as_ref())
    }

    /// The manager's engine, for the API's other modules (`family.rs`).
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Extends `name` if it is held with `token`, without a lock object (a lock handed over by
    /// token, as [`release_by_token`](Self::release_by_token) releases one): its expiry
    /// becomes now + `ttl` on every server that holds it with `token`. Returns the validity
    /// this gives, computed as for an acquisition.
    ///
    /// # Errors
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when fewer than a quorum hold it with `token` (the message says
    /// whether the key was gone or held by another token; it is then released where it
    /// survived); [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers answered;
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name, token or TTL.
    pub async fn extend_by_token(
        &self,
        name: impl AsRef<[u8]>,
        token: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Duration> {
        let (name, token) = (name.as_ref(), token.as_ref());
        check_name(name)?;
        token::check_token(token)?;
        let target = self.engine.target(name, token.to_vec());
        self.engine.extend_by_token(&target, ttl).await
    }

    /// Releases `name` if it is held with `token`, without a lock object (for locks handed
    /// across processes).
    ///
    /// # Errors
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when fewer than a quorum deleted it (the message says whether the key
    /// was gone or held by another token); [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers
    /// answered; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name or token.
    pub async fn release_by_token(
        &self,
        name: impl AsRef<[u8]>,
        token: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (name, token) = (name.as_ref(), token.as_ref());
        check_name(name)?;
        token::check_token(token)?;
        let target = self.engine.target(name, token.to_vec());
        self.engine.release_by_token(&target).await
    }

    /// Whether `name` is held with `token` on a quorum of the servers (read-only: nothing is
    /// extended or released). For a lock handed across processes by name and token, and for
    /// drop-ins whose API asks it (redsync's `Valid`).
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers
    /// answered; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad
    /// name or token.
    pub async fn is_held_by_token(
        &self,
        name: impl AsRef<[u8]>,
        token: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let (name, token) = (name.as_ref(), token.as_ref());
        check_name(name)?;
        token::check_token(token)?;
        let target = self.engine.target(name, token.to_vec());
        Ok(self.engine.holds(&target).await?.is_ok())
    }

    /// Whether `name` is held: a quorum of servers hold its key under one token (by
    /// fencelock or by any client's classic `SET name value NX PX`). Acquires nothing and
    /// changes nothing; the holder's token is never revealed.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name (before any network call);
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when fewer than a quorum of servers answer, as for acquire;
    /// [`ErrorKind::Redis`](crate::ErrorKind::Redis) when the key holds another type.
    pub async fn is_locked(&self, name: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.remaining(name).await?.is_some())
    }

    /// How long `name` stays held at least, `None` when it is free: the quorum's view (the
    /// time a quorum of the servers that hold it under one token still keep it, less this
    /// call's time and the clock drift, never more), `Duration::MAX` for a key without expiry.
    ///
    /// # Errors
    /// As [`is_locked`](Self::is_locked).
    pub async fn remaining(&self, name: impl AsRef<[u8]>) -> Result<Option<Duration>> {
        Ok(self.state(name).await?.remaining)
    }

    /// Lock `name`'s state, changing nothing: how long it stays held at least (as
    /// [`remaining`](Self::remaining)) and how many callers wait in line for it.
    ///
    /// # Errors
    /// As [`is_locked`](Self::is_locked).
    pub async fn state(&self, name: impl AsRef<[u8]>) -> Result<crate::LockState> {
        let name = name.as_ref();
        check_name(name)?;
        self.engine.inspect(name).await
    }

    /// Who holds `name` now, changing nothing: `None` when it is free; else how long it stays
    /// held at least (as [`remaining`](Self::remaining)) and, when its holder's manager has a
    /// holder label ([`Builder::holder_label`](crate::Builder::holder_label)), that label,
    /// since when it holds the lock and its fencing token (`who.rs`). An election's leader
    /// shows its value as the label, and its term as the fencing token.
    ///
    /// # Errors
    /// As [`is_locked`](Self::is_locked).
    pub async fn holder(&self, name: impl AsRef<[u8]>) -> Result<Option<crate::LockHolder>> {
        let state = self.state(name).await?;
        Ok(state.remaining.map(|remaining| crate::LockHolder {
            remaining,
            note: state.holder,
        }))
    }

    /// Runs `f` while holding `name`: acquires (waiting until acquired), extends the lock in
    /// the background every ttl/3 while `f` runs, then releases it.
    ///
    /// # Errors
    /// Any error of [`acquire`](Self::acquire); [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when the lock was lost while
    /// `f` ran (then `f`'s result is dropped: its work was not protected) or could not be
    /// released as held.
    pub async fn with_lock<T>(
        &self,
        name: impl AsRef<[u8]>,
        ttl: Duration,
        f: impl AsyncFnOnce(&Lock) -> T,
    ) -> Result<T> {
        self.with_lock_with(name, &AcquireOptions::new(ttl), f)
            .await
    }

    /// The scoped form with every option: acquires as [`acquire_with`](Self::acquire_with)
    /// (wait limit, token), keeps the lock alive while `f` runs (always; up to
    /// `opts.max_hold` when set), then releases it. Every binding's scoped form (`with`,
    /// `using`, `fl_with_lock`) is this sequence.
    ///
    /// # Errors
    /// As [`with_lock`](Self::with_lock) and [`acquire_with`](Self::acquire_with).
    pub async fn with_lock_with<T>(
        &self,
        name: impl AsRef<[u8]>,
        opts: &AcquireOptions,
        f: impl AsyncFnOnce(&Lock) -> T,
    ) -> Result<T> {
        let lock = self.acquire_scoped(name, opts).await?;
        let out = f(&lock).await;
        lock.finish_scope().await.map(|()| out)
    }

    /// The start of a scoped use: [`acquire_with`](Self::acquire_with) with auto-extension on
    /// (up to `opts.max_hold`). End it with [`Lock::finish_scope`]; for scopes that are not a
    /// closure (Python's `with`, a JavaScript callback).
    ///
    /// # Errors
    /// As [`acquire_with`](Self::acquire_with).
    pub async fn acquire_scoped(
        &self,
        name: impl AsRef<[u8]>,
        opts: &AcquireOptions,
    ) -> Result<Lock> {
        let mut opts = opts.clone();
        opts.auto_extend = true;
        self.acquire_with(name, &opts).await
    }
}
