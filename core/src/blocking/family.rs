//! The blocking face of the coordination family: [`Semaphore`] and [`RwLock`] over their async
//! handles, on the manager's runtime; their leases are blocking [`Lock`]s.

use std::time::Duration;

use super::{Lock, LockManager};
use crate::error::Result;
use crate::{AcquireOptions, RwLockState, SemaphoreState};

/// A blocking [`crate::Semaphore`] (from [`LockManager::semaphore`]).
#[derive(Clone, Debug)]
pub struct Semaphore {
    inner: crate::Semaphore,
    manager: LockManager,
}

/// A blocking [`crate::RwLock`] (from [`LockManager::rwlock`]).
#[derive(Clone, Debug)]
pub struct RwLock {
    inner: crate::RwLock,
    manager: LockManager,
}

impl LockManager {
    /// See [`crate::LockManager::semaphore`].
    ///
    /// # Errors
    /// As [`crate::LockManager::semaphore`].
    pub fn semaphore(&self, name: impl AsRef<[u8]>, limit: u32) -> Result<Semaphore> {
        Ok(Semaphore {
            inner: self.as_async().semaphore(name, limit)?,
            manager: self.clone(),
        })
    }

    /// See [`crate::LockManager::rwlock`].
    ///
    /// # Errors
    /// As [`crate::LockManager::rwlock`].
    pub fn rwlock(&self, name: impl AsRef<[u8]>) -> Result<RwLock> {
        Ok(RwLock {
            inner: self.as_async().rwlock(name)?,
            manager: self.clone(),
        })
    }

    /// Blocks on an acquisition of a lease, interruptibly when `interrupt` is given (as
    /// [`block_on_interruptible`](Self::block_on_interruptible): checked every `.0`).
    fn lease(
        &self,
        fut: impl std::future::Future<Output = Result<crate::Lock>>,
        interrupt: Option<(Duration, &mut dyn FnMut() -> bool)>,
    ) -> Result<Lock> {
        let lease = match interrupt {
            Some((every, interrupted)) => {
                self.block_on_interruptible(fut, every, interrupted)??
            }
            None => self.block_on(fut)??,
        };
        Ok(self.wrap(lease))
    }
}

impl Semaphore {
    /// The async semaphore underneath.
    pub fn as_async(&self) -> &crate::Semaphore {
        &self.inner
    }

    /// See [`crate::Semaphore::acquire_with`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire_with`].
    pub fn acquire_with(&self, count: u32, opts: &AcquireOptions) -> Result<Lock> {
        self.manager
            .lease(self.inner.acquire_with(count, opts), None)
    }

    /// [`acquire_with`](Self::acquire_with) that can be interrupted: `interrupted` is asked
    /// every `every`, and a `true` cancels the wait ([`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled)).
    ///
    /// # Errors
    /// As [`acquire_with`](Self::acquire_with), or `Cancelled`.
    pub fn acquire_interruptible(
        &self,
        count: u32,
        opts: &AcquireOptions,
        every: Duration,
        mut interrupted: impl FnMut() -> bool,
    ) -> Result<Lock> {
        let fut = self.inner.acquire_with(count, opts);
        self.manager.lease(fut, Some((every, &mut interrupted)))
    }

    /// See [`crate::Semaphore::try_acquire`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::try_acquire`].
    pub fn try_acquire(&self, count: u32, ttl: Duration) -> Result<Option<Lock>> {
        let lease = self
            .manager
            .block_on(self.inner.try_acquire(count, ttl))??;
        Ok(lease.map(|l| self.manager.wrap(l)))
    }

    /// See [`crate::Semaphore::state`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::state`].
    pub fn state(&self) -> Result<SemaphoreState> {
        self.manager.block_on(self.inner.state())?
    }

    /// See [`crate::Semaphore::holders`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::holders`].
    pub fn holders(&self) -> Result<Vec<crate::LockHolder>> {
        self.manager.block_on(self.inner.holders())?
    }

    /// See [`crate::Semaphore::release_by_token`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::release_by_token`].
    pub fn release_by_token(&self, token: impl AsRef<[u8]>) -> Result<()> {
        self.manager.block_on(self.inner.release_by_token(token))?
    }

    /// See [`crate::Semaphore::extend_by_token`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::extend_by_token`].
    pub fn extend_by_token(&self, token: impl AsRef<[u8]>, ttl: Duration) -> Result<Duration> {
        self.manager
            .block_on(self.inner.extend_by_token(token, ttl))?
    }
}

impl RwLock {
    /// The async read-write lock underneath.
    pub fn as_async(&self) -> &crate::RwLock {
        &self.inner
    }

    /// See [`crate::RwLock::read_with`] (`write`: [`crate::RwLock::write_with`]); interruptible
    /// as [`Semaphore::acquire_interruptible`] when `interrupt` is given.
    ///
    /// # Errors
    /// As [`crate::RwLock::read_with`], or `Cancelled`.
    pub fn acquire_interruptible(
        &self,
        write: bool,
        opts: &AcquireOptions,
        interrupt: Option<(Duration, &mut dyn FnMut() -> bool)>,
    ) -> Result<Lock> {
        match write {
            true => self.manager.lease(self.inner.write_with(opts), interrupt),
            false => self.manager.lease(self.inner.read_with(opts), interrupt),
        }
    }

    /// See [`crate::RwLock::read_with`].
    ///
    /// # Errors
    /// As [`crate::RwLock::read_with`].
    pub fn read_with(&self, opts: &AcquireOptions) -> Result<Lock> {
        self.acquire_interruptible(false, opts, None)
    }

    /// See [`crate::RwLock::write_with`].
    ///
    /// # Errors
    /// As [`crate::RwLock::write_with`].
    pub fn write_with(&self, opts: &AcquireOptions) -> Result<Lock> {
        self.acquire_interruptible(true, opts, None)
    }

    /// See [`crate::RwLock::state`].
    ///
    /// # Errors
    /// As [`crate::RwLock::state`].
    pub fn state(&self) -> Result<RwLockState> {
        self.manager.block_on(self.inner.state())?
    }

    /// See [`crate::RwLock::holders`].
    ///
    /// # Errors
    /// As [`crate::RwLock::holders`].
    pub fn holders(&self) -> Result<Vec<crate::LockHolder>> {
        self.manager.block_on(self.inner.holders())?
    }

    /// See [`crate::RwLock::release_by_token`].
    ///
    /// # Errors
    /// As [`crate::RwLock::release_by_token`].
    pub fn release_by_token(&self, token: impl AsRef<[u8]>) -> Result<()> {
        self.manager.block_on(self.inner.release_by_token(token))?
    }

    /// See [`crate::RwLock::extend_by_token`].
    ///
    /// # Errors
    /// As [`crate::RwLock::extend_by_token`].
    pub fn extend_by_token(&self, token: impl AsRef<[u8]>, ttl: Duration) -> Result<Duration> {
        self.manager
            .block_on(self.inner.extend_by_token(token, ttl))?
    }
}
