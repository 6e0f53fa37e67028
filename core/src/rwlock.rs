//! A fair read-write lock: many readers or one writer, on the lock's machinery. Each read
//! share and each write hold is a lease of its own (a [`Lock`]); on the servers it is a
//! semaphore whose writer takes the whole capacity ([`crate::kind`]), so the queue that keeps
//! a semaphore first come, first served makes the lock phase-fair.

use std::sync::Arc;
use std::time::Duration;

use crate::acquire::AcquireOptions;
use crate::engine::Engine;
use crate::error::Result;
use crate::kind::{LeaseKind, RW_CAPACITY};
use crate::leases::Leases;
use crate::lock::Lock;

/// A read-write lock on one name: any number of readers, or one writer (from
/// [`crate::LockManager::rwlock`]).
///
/// - **Leases.** Each [`read`](Self::read) and [`write`](Self::write) is a [`Lock`] of its
///   own: a crashed reader's share comes back when its TTL ends, and auto-extension renews
///   exactly that reader.
/// - **Phase-fair.** A waiting writer stops new readers from entering; when it releases,
///   every reader that queued before the next writer enters at once.
/// - **Fencing.** Every acquisition's fencing token is larger than every earlier one's on the
///   name: a write's exceeds every earlier read's and write's, a read's every earlier write's.
/// - **No self-deadlock.** Acquiring to write with the token of a read share (or to read with
///   the write hold's) fails at once with [`ErrorKind::WrongKind`]: it would wait for itself.
///   Acquisitions with different tokens are different holders, as across processes.
/// - **One name, one kind**, and **Redlock** with a majority, as for [`Semaphore`](crate::Semaphore).
#[derive(Clone)]
pub struct RwLock {
    leases: Leases,
}

impl std::fmt::Debug for RwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RwLock")
            .field("name", &String::from_utf8_lossy(self.name()))
            .finish()
    }
}

/// A read-write lock's occupancy, as [`RwLock::state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RwLockState {
    /// Read shares held (0 while a writer holds it).
    pub readers: u64,
    /// Whether a writer holds it.
    pub writer: bool,
    /// Callers waiting in line, readers and writers.
    pub waiters: u64,
}

impl RwLock {
    pub(crate) fn new(engine: Arc<Engine>, name: &[u8]) -> Result<RwLock> {
        // Release and extend find a lease by token: the mode does not matter to them.
        Ok(RwLock {
            leases: Leases::new(engine, name, LeaseKind::Read, "rwlock")?,
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &[u8] {
        self.leases.name()
    }

    /// Takes a read share for `ttl`, waiting up to `wait` (`None`: until acquired).
    ///
    /// # Errors
    /// [`ErrorKind::WrongKind`] when the name is held as another kind; the rest as
    /// [`crate::LockManager::acquire`].
    pub async fn read(&self, ttl: Duration, wait: Option<Duration>) -> Result<Lock> {
        self.read_with(&AcquireOptions::new(ttl).wait(wait)).await
    }

    /// Takes the write hold for `ttl`, waiting up to `wait` (`None`: until acquired).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn write(&self, ttl: Duration, wait: Option<Duration>) -> Result<Lock> {
        self.write_with(&AcquireOptions::new(ttl).wait(wait)).await
    }

    /// One attempt to read: `Ok(None)` when a writer holds it or waits.
    ///
    /// # Errors
    /// As [`read`](Self::read), except that "not free" is `Ok(None)`.
    pub async fn try_read(&self, ttl: Duration) -> Result<Option<Lock>> {
        self.leases.try_acquire(LeaseKind::Read, ttl).await
    }

    /// One attempt to write: `Ok(None)` when anyone holds it or waits.
    ///
    /// # Errors
    /// As [`try_read`](Self::try_read).
    pub async fn try_write(&self, ttl: Duration) -> Result<Option<Lock>> {
        self.leases.try_acquire(LeaseKind::Write, ttl).await
    }

    /// [`read`](Self::read) with every option of a lock's acquisition.
    ///
    /// # Errors
    /// As [`read`](Self::read); [`ErrorKind::WrongKind`] when `opts.token` holds the write
    /// hold.
    pub async fn read_with(&self, opts: &AcquireOptions) -> Result<Lock> {
        self.leases.acquire(LeaseKind::Read, opts).await
    }

    /// [`write`](Self::write) with every option of a lock's acquisition.
    ///
    /// # Errors
    /// As [`write`](Self::write); [`ErrorKind::WrongKind`] when `opts.token` holds a read
    /// share.
    pub async fn write_with(&self, opts: &AcquireOptions) -> Result<Lock> {
        self.leases.acquire(LeaseKind::Write, opts).await
    }

    /// The start of a scoped read (auto-extended); end it with [`Lock::finish_scope`].
    ///
    /// # Errors
    /// As [`read_with`](Self::read_with).
    pub async fn read_scoped(&self, opts: &AcquireOptions) -> Result<Lock> {
        self.leases
            .acquire(LeaseKind::Read, &opts.clone().auto_extend(opts.max_hold))
            .await
    }

    /// The start of a scoped write (auto-extended); end it with [`Lock::finish_scope`].
    ///
    /// # Errors
    /// As [`write_with`](Self::write_with).
    pub async fn write_scoped(&self, opts: &AcquireOptions) -> Result<Lock> {
        self.leases
            .acquire(LeaseKind::Write, &opts.clone().auto_extend(opts.max_hold))
            .await
    }

    /// Readers, whether a writer holds it, and waiters, changing nothing (with several
    /// servers, the largest any answering server reports).
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`] when fewer than a quorum of servers answer;
    /// [`ErrorKind::WrongKind`] when the name is held as another kind.
    pub async fn state(&self) -> Result<RwLockState> {
        let view = self.leases.occupancy().await?;
        let writer = view.held >= RW_CAPACITY;
        Ok(RwLockState {
            readers: if writer { 0 } else { view.held },
            writer,
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

    /// Releases the share or hold held with `token`, without a lease object.
    ///
    /// # Errors
    /// As [`crate::LockManager::release_by_token`].
    pub async fn release_by_token(&self, token: impl AsRef<[u8]>) -> Result<()> {
        self.leases.release_by_token(token.as_ref()).await
    }

    /// Extends the share or hold held with `token` to `ttl` from now, without a lease object.
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
