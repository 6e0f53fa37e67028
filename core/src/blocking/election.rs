//! The blocking face of leader election: [`Election`], its [`Term`] and [`Observer`] over the
//! async handles, on the manager's runtime.

use std::future::Future;
use std::time::{Duration, SystemTime};

use super::LockManager;
use crate::error::Result;
use crate::{AcquireOptions, Leader};

/// A blocking [`crate::Election`] (from [`LockManager::election`]).
#[derive(Clone, Debug)]
pub struct Election {
    inner: crate::Election,
    manager: LockManager,
}

/// A blocking [`crate::Term`]: dropping it resigns in the background.
#[derive(Debug)]
pub struct Term {
    inner: crate::Term,
    manager: LockManager,
}

/// A blocking [`crate::Observer`].
#[derive(Debug)]
pub struct Observer {
    inner: crate::Observer,
    manager: LockManager,
}

impl LockManager {
    /// See [`crate::LockManager::election`].
    ///
    /// # Errors
    /// As [`crate::LockManager::election`].
    pub fn election(&self, name: impl AsRef<[u8]>) -> Result<Election> {
        Ok(Election {
            inner: self.as_async().election(name)?,
            manager: self.clone(),
        })
    }
}

impl Election {
    /// The async election underneath.
    pub fn as_async(&self) -> &crate::Election {
        &self.inner
    }

    /// See [`crate::Election::name`].
    pub fn name(&self) -> &[u8] {
        self.inner.name()
    }

    fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        self.manager.block_on(fut)
    }

    fn term(&self, term: crate::Term) -> Term {
        Term {
            inner: term,
            manager: self.manager.clone(),
        }
    }

    blocking_calls! { Election;
        fn leader() -> Option<Leader>;
    }

    /// See [`crate::Election::campaign`].
    ///
    /// # Errors
    /// As [`crate::Election::campaign`].
    pub fn campaign(&self, value: &str, ttl: Duration, wait: Option<Duration>) -> Result<Term> {
        let term = self.run(self.inner.campaign(value, ttl, wait))??;
        Ok(self.term(term))
    }

    /// See [`crate::Election::campaign_with`].
    ///
    /// # Errors
    /// As [`crate::Election::campaign_with`].
    pub fn campaign_with(&self, value: &str, opts: &AcquireOptions) -> Result<Term> {
        let term = self.run(self.inner.campaign_with(value, opts))??;
        Ok(self.term(term))
    }

    /// See [`crate::Election::try_campaign`].
    ///
    /// # Errors
    /// As [`crate::Election::try_campaign`].
    pub fn try_campaign(&self, value: &str, ttl: Duration) -> Result<Option<Term>> {
        let term = self.run(self.inner.try_campaign(value, ttl))??;
        Ok(term.map(|t| self.term(t)))
    }

    /// See [`crate::Election::observe`].
    pub fn observe(&self) -> Observer {
        Observer {
            inner: self.inner.observe(),
            manager: self.manager.clone(),
        }
    }
}

impl Term {
    /// The async term underneath.
    pub fn as_async(&self) -> &crate::Term {
        &self.inner
    }

    /// See [`crate::Term::value`].
    pub fn value(&self) -> String {
        self.inner.value()
    }

    /// See [`crate::Term::fencing_token`].
    pub fn fencing_token(&self) -> u64 {
        self.inner.fencing_token()
    }

    /// See [`crate::Term::since`].
    pub fn since(&self) -> SystemTime {
        self.inner.since()
    }

    /// See [`crate::Term::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }

    fn run<F: Future>(&self, fut: F) -> Result<F::Output> {
        self.manager.block_on(fut)
    }

    blocking_calls! { Term;
        fn proclaim(value: &str) -> ();
        fn finish_scope() -> ();
    }

    /// See [`crate::Term::into_lock`].
    pub fn into_lock(self) -> super::Lock {
        let Term { inner, manager } = self;
        manager.wrap(inner.into_lock())
    }

    /// See [`crate::Term::resign`].
    ///
    /// # Errors
    /// As [`crate::Term::resign`].
    pub fn resign(self) -> Result<()> {
        let Term { inner, manager } = self;
        manager.block_on(inner.resign())?
    }
}

/// Each report of [`crate::Observer::next`], blocking until it comes; never ends (an item
/// is an error when a read failed: the observer stays usable).
impl Iterator for Observer {
    type Item = Result<Option<Leader>>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.manager.block_on(self.inner.next()).and_then(|r| r))
    }
}

impl Observer {
    /// [`next`](Self::next) for at most `timeout`: `None` when no change came by then (the
    /// observer stays where it was; the C binding's long poll).
    ///
    /// # Errors
    /// As [`crate::Observer::next`].
    pub fn next_within(&mut self, timeout: Duration) -> Result<Option<Option<Leader>>> {
        // The timer is made on the runtime, inside the future.
        let next = async { tokio::time::timeout(timeout, self.inner.next()).await };
        match self.manager.block_on(next)? {
            Ok(report) => report.map(Some),
            Err(_) => Ok(None),
        }
    }
}

/// A term held as its lock (the C binding's way): see [`crate::ffi_support::election`].
impl super::Lock {
    /// A term's value now; `None` for a lock that is not a term.
    pub fn term_value(&self) -> Option<String> {
        crate::election::term_value(self.as_async())
    }

    /// Proclaims a term's new value (see [`crate::Term::proclaim`]).
    ///
    /// # Errors
    /// As [`crate::Term::proclaim`]; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for a lock that is not a term.
    pub fn proclaim(&self, value: &str) -> Result<()> {
        self.run(crate::election::proclaim(self.as_async(), value))?
    }
}
