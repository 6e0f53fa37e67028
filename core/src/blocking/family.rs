//! The blocking face of the coordination family: [`Semaphore`] and [`RwLock`] over their async
//! handles, on the manager's runtime; their leases are blocking [`Lock`]s.

use std::future::Future;
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
}

impl Semaphore {
    /// The async semaphore underneath.
    pub fn as_async(&self) -> &crate::Semaphore {
        &self.inner
    }

    /// See [`crate::Semaphore::name`].
    pub fn name(&self) -> &[u8] {
        self.inner.name()
    }

    /// See [`crate::Semaphore::limit`].
    pub fn limit(&self) -> u32 {
        self.inner.limit()
    }

    fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        self.manager.block_on(fut)
    }

    fn wrap(&self, lease: crate::Lock) -> Lock {
        self.manager.wrap(lease)
    }

    blocking_calls! { Semaphore;
        fn acquire(count: u32, ttl: Duration, wait: Option<Duration>) -> Lock;
        fn acquire_with(count: u32, opts: &AcquireOptions) -> Lock;
        fn acquire_scoped(count: u32, opts: &AcquireOptions) -> Lock;
        fn try_acquire(count: u32, ttl: Duration) -> Option<Lock>;
        fn state() -> SemaphoreState;
        fn holders() -> Vec<crate::LockHolder>;
        fn release_by_token(token: impl AsRef<[u8]>) -> ();
        fn extend_by_token(token: impl AsRef<[u8]>, ttl: Duration) -> Duration;
    }
}

impl RwLock {
    /// The async read-write lock underneath.
    pub fn as_async(&self) -> &crate::RwLock {
        &self.inner
    }

    /// See [`crate::RwLock::name`].
    pub fn name(&self) -> &[u8] {
        self.inner.name()
    }

    fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        self.manager.block_on(fut)
    }

    fn wrap(&self, lease: crate::Lock) -> Lock {
        self.manager.wrap(lease)
    }

    blocking_calls! { RwLock;
        fn read(ttl: Duration, wait: Option<Duration>) -> Lock;
        fn write(ttl: Duration, wait: Option<Duration>) -> Lock;
        fn read_with(opts: &AcquireOptions) -> Lock;
        fn write_with(opts: &AcquireOptions) -> Lock;
        fn read_scoped(opts: &AcquireOptions) -> Lock;
        fn write_scoped(opts: &AcquireOptions) -> Lock;
        fn try_read(ttl: Duration) -> Option<Lock>;
        fn try_write(ttl: Duration) -> Option<Lock>;
        fn state() -> RwLockState;
        fn holders() -> Vec<crate::LockHolder>;
        fn release_by_token(token: impl AsRef<[u8]>) -> ();
        fn extend_by_token(token: impl AsRef<[u8]>, ttl: Duration) -> Duration;
    }
}
