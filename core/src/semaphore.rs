//! A counting semaphore: at most `limit` permits of a name held at any instant, on the
//! lock's machinery. Each acquisition takes `count` permits, all or none, as a lease of its
//! own: a [`Lock`] with its token, TTL, fencing token, extension, auto-extension and lost
//! signal. The limit and the leases live on the servers (`scripts/permits*.lua`); waiters
//! queue first come, first served, and a release hands the freed permits to every waiter at
//! the head of the line they satisfy.

use std::sync::Arc;
use std::time::Duration;

use crate::acquire::AcquireOptions;
use crate::engine::Engine;
use crate::error::Result;
use crate::kind::{check_count, check_limit, LeaseKind};
use crate::leases::Leases;
use crate::lock::Lock;

/// A counting semaphore on one name: at most [`limit`](Self::limit) permits held at any
/// instant, across every process and language that uses the name (from
/// [`LockManager::semaphore`](crate::LockManager::semaphore)).
///
/// - **Leases.** Each acquisition is a [`Lock`]: its own token and TTL, a fencing token larger
///   than every earlier acquisition's of the name, [`extend`](Lock::extend), auto-extension,
///   the lost signal. A holder that crashed gives its permits back when its lease ends: not
///   before, not later.
/// - **First come, first served.** A waiter for 3 permits is not passed by later waiters for
///   1; a release hands the freed permits to every waiter at the head of the line they
///   satisfy, at once (the waiters whose process listens: a dead one is passed over).
/// - **The limit is the servers'.** While permits are held or waited for, an acquisition that
///   names another limit fails with [`ErrorKind::InvalidArgument`] naming both; once none
///   are, the next acquisition's limit holds.
/// - **One name, one kind.** On a name held as a lock or a read-write lock (or by a classic
///   `SET NX`), acquiring fails with [`ErrorKind::WrongKind`].
/// - **Redlock.** With `n` servers a lease counts when `floor(limit n / (limit + 1)) + 1` of
///   them grant it ([`LeaseKind::quorum`]: a majority for a limit of 1, every server once the
///   limit reaches `n - 1`): with a plain majority, different majorities could hold more than
///   `limit` permits at once.
#[derive(Clone)]
pub struct Semaphore {
    leases: Leases,
    limit: u32,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("limit", &self.limit)
            .finish()
    }
}

/// A semaphore's occupancy, as [`Semaphore::state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemaphoreState {
    /// The limit on the servers (the handle's when nobody holds or waits).
    pub limit: u32,
    /// Permits held by leases that have not ended.
    pub held: u64,
    /// Leases that have not ended.
    pub holders: u64,
    /// Callers waiting in line.
    pub waiters: u64,
}

impl Semaphore {
    pub(crate) fn new(engine: Arc<Engine>, name: &[u8], limit: u32) -> Result<Semaphore> {
        check_limit(limit)?;
        // A lease found by token is one permit's: the count does not matter to it.
        let by_token = LeaseKind::Permits { count: 1, limit };
        Ok(Semaphore {
            leases: Leases::new(engine, name, by_token, "semaphore")?,
            limit,
        })
    }

    /// The semaphore's name.
    pub fn name(&self) -> &[u8] {
        self.leases.name()
    }

    /// The semaphore's limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    fn kind(&self, count: u32) -> Result<LeaseKind> {
        check_count(count, self.limit)?;
        Ok(LeaseKind::Permits {
            count,
            limit: self.limit,
        })
    }

    /// Takes `count` permits for `ttl`, waiting up to `wait` (`None`: until acquired) in line
    /// first come, first served.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a count outside 1 to the limit, a bad TTL (before
    /// any network call), or another limit on the servers; [`ErrorKind::WrongKind`] when the
    /// name is held as another kind; the rest as [`crate::LockManager::acquire`].
    pub async fn acquire(&self, count: u32, ttl: Duration, wait: Option<Duration>) -> Result<Lock> {
        self.acquire_with(count, &AcquireOptions::new(ttl).wait(wait))
            .await
    }

    /// One attempt: `Ok(None)` when the permits are not free (or others wait ahead).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire), except that "not free" is `Ok(None)`.
    pub async fn try_acquire(&self, count: u32, ttl: Duration) -> Result<Option<Lock>> {
        self.leases.try_acquire(self.kind(count)?, ttl).await
    }

    /// Takes `count` permits with every option of a lock's acquisition (wait limit, token,
    /// auto-extension, `max_hold`). A caller's token already holding permits of the name is
    /// refused as held, unless `reentrant`: then the same lease is renewed (same count, a new
    /// fencing token; its end the later of the two, so that a shorter re-entrant TTL never
    /// cuts the outer hold short).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); also [`ErrorKind::InvalidArgument`] for a bad token, or
    /// a token holding another count.
    pub async fn acquire_with(&self, count: u32, opts: &AcquireOptions) -> Result<Lock> {
        self.leases.acquire(self.kind(count)?, opts).await
    }

    /// The start of a scoped use: [`acquire_with`](Self::acquire_with) with auto-extension
    /// on. End it with [`Lock::finish_scope`].
    ///
    /// # Errors
    /// As [`acquire_with`](Self::acquire_with).
    pub async fn acquire_scoped(&self, count: u32, opts: &AcquireOptions) -> Result<Lock> {
        let mut opts = opts.clone();
        opts.auto_extend = true;
        self.acquire_with(count, &opts).await
    }

    /// Runs `f` holding `count` permits, kept alive meanwhile, then releases them.
    ///
    /// # Errors
    /// As [`crate::LockManager::with_lock_with`].
    pub async fn with_permits<T>(
        &self,
        count: u32,
        opts: &AcquireOptions,
        f: impl AsyncFnOnce(&Lock) -> T,
    ) -> Result<T> {
        let lease = self.acquire_scoped(count, opts).await?;
        let out = f(&lease).await;
        lease.finish_scope().await.map(|()| out)
    }

    /// Permits held, holders and waiters, changing nothing (with several servers, the largest
    /// any answering server reports).
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`] when fewer than a quorum of servers answer;
    /// [`ErrorKind::WrongKind`] when the name is held as another kind.
    pub async fn state(&self) -> Result<SemaphoreState> {
        let view = self.leases.occupancy().await?;
        Ok(SemaphoreState {
            limit: u32::try_from(view.limit)
                .ok()
                .filter(|l| *l > 0)
                .unwrap_or(self.limit),
            held: view.held,
            holders: view.holders,
            waiters: view.waiters,
        })
    }

    /// Who holds it: the holders that left a note (their managers have a holder label,
    /// `who.rs`), each with its label, since when, its fencing token and how long its
    /// lease still runs at least, longest first. Leases without a note are counted by
    /// [`state`](Self::state) only.
    ///
    /// # Errors
    /// As [`state`](Self::state).
    pub async fn holders(&self) -> Result<Vec<crate::LockHolder>> {
        self.leases.holders().await
    }

    /// Releases the lease held with `token`, without a lease object (one handed across
    /// processes).
    ///
    /// # Errors
    /// [`ErrorKind::NotHeld`] when fewer than a quorum held it; as
    /// [`crate::LockManager::release_by_token`].
    pub async fn release_by_token(&self, token: impl AsRef<[u8]>) -> Result<()> {
        self.leases.release_by_token(token.as_ref()).await
    }

    /// Extends the lease held with `token` to `ttl` from now, without a lease object. Returns
    /// the validity this gives.
    ///
    /// # Errors
    /// As [`crate::LockManager::extend_by_token`].
    pub async fn extend_by_token(
        &self,
        token: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Duration> {
        self.leases.extend_by_token(token.as_ref(), ttl).await
    }
}
