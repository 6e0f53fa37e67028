//! A semaphore or a read-write lock picked by a lease's kind, for faces that carry the kind as
//! an argument (the Python and Node handles call one native function for both primitives):
//! the calls by token and the inspection, dispatched here once rather than in each binding.

use std::time::Duration;

use crate::SemaphoreState;
use crate::{Error, LeaseKind, LockManager, Result, RwLock, RwLockState, Semaphore};

/// A [`Semaphore`] or an [`RwLock`], as [`LockManager::family`] picks it.
#[derive(Debug, Clone)]
pub enum Family {
    /// A semaphore (its limit from the kind).
    Semaphore(Semaphore),
    /// A read-write lock (a read or a write kind).
    RwLock(RwLock),
}

/// What [`Family::state`] reads: the primitive's own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyState {
    /// A semaphore's limit, permits held, holders and waiters.
    Semaphore(SemaphoreState),
    /// A read-write lock's readers, writer and waiters.
    RwLock(RwLockState),
}

impl LockManager {
    /// The semaphore (of the kind's limit) or read-write lock that leases of `kind` belong
    /// to. Nothing is contacted yet.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name or
    /// limit, or for [`LeaseKind::Lock`] (a lock is not one of the family).
    pub fn family(&self, name: impl AsRef<[u8]>, kind: LeaseKind) -> Result<Family> {
        match kind {
            LeaseKind::Permits { limit, .. } => self.semaphore(name, limit).map(Family::Semaphore),
            LeaseKind::Read | LeaseKind::Write => self.rwlock(name).map(Family::RwLock),
            LeaseKind::Lock => Err(Error::invalid(
                "a lock is not a semaphore or a read-write lock",
            )),
        }
    }
}

impl LockManager {
    /// The semaphore or read-write lock `name` holds on the servers, with the semaphore's
    /// limit as the servers keep it; `None` when the name holds neither (free, or a lock).
    /// For tools that are given a name alone (`fencelock status`). Reads the servers once.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name;
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers answer.
    pub async fn family_of(&self, name: impl AsRef<[u8]>) -> Result<Option<Family>> {
        let name = name.as_ref();
        crate::keys::check_name(name)?;
        let view = match self.engine().inspect_permits_of_any_kind(name).await {
            Ok(view) => view,
            // A lock (a string) on the name: not one of the family.
            Err(e) if e.kind() == crate::ErrorKind::WrongKind => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(match view.kind.as_str() {
            "semaphore" => {
                let limit = u32::try_from(view.limit).map_err(|_| {
                    Error::invalid(format!("the servers keep a limit of {}", view.limit))
                })?;
                Some(Family::Semaphore(self.semaphore(name, limit)?))
            }
            "rwlock" => Some(Family::RwLock(self.rwlock(name)?)),
            _ => None,
        })
    }
}

impl Family {
    /// The primitive's state, changing nothing ([`Semaphore::state`], [`RwLock::state`]).
    ///
    /// # Errors
    /// As theirs.
    pub async fn state(&self) -> Result<FamilyState> {
        Ok(match self {
            Family::Semaphore(s) => FamilyState::Semaphore(s.state().await?),
            Family::RwLock(rw) => FamilyState::RwLock(rw.state().await?),
        })
    }

    /// The holders that left a note ([`Semaphore::holders`], [`RwLock::holders`]).
    ///
    /// # Errors
    /// As theirs.
    pub async fn holders(&self) -> Result<Vec<crate::LockHolder>> {
        match self {
            Family::Semaphore(s) => s.holders().await,
            Family::RwLock(rw) => rw.holders().await,
        }
    }

    /// Releases the lease held with `token` ([`Semaphore::release_by_token`],
    /// [`RwLock::release_by_token`]).
    ///
    /// # Errors
    /// As theirs.
    pub async fn release_by_token(&self, token: impl AsRef<[u8]>) -> Result<()> {
        match self {
            Family::Semaphore(s) => s.release_by_token(token).await,
            Family::RwLock(rw) => rw.release_by_token(token).await,
        }
    }

    /// Extends the lease held with `token` to `ttl` from now; returns the validity this gives
    /// ([`Semaphore::extend_by_token`], [`RwLock::extend_by_token`]).
    ///
    /// # Errors
    /// As theirs.
    pub async fn extend_by_token(
        &self,
        token: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Duration> {
        match self {
            Family::Semaphore(s) => s.extend_by_token(token, ttl).await,
            Family::RwLock(rw) => rw.extend_by_token(token, ttl).await,
        }
    }
}
