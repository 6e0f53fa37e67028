//! Leader election on the lock: a term is a lock lease on the election's name, so candidates
//! wait in the lock's FIFO queue, a resign hands the lock (the leadership) to the next one at
//! once, a crashed leader is replaced when its TTL runs out, the term number is the lease's
//! fencing token, and a term is auto-extended with the lock's lost signal. Nothing of it is
//! written beside the lock: the leader's value is the holder note (`who.rs`, `note.lua`) of
//! its lease, noted at the grant and with every extension and proclaim.
//!
//! The note of a term is told apart from a holder label's by its empty label line (a label is
//! never empty): `token\nsince_ms\nterm\n\nVALUE`. A name held by a plain lock (with or
//! without a label) has no leader: the election and the mutex exclude each other.
//!
//! Every note of a term, and a term's release, is announced on the lock's release channel
//! (the bare channel; waiters listen on channels of their own, the same name plus `|` and a
//! wake id), where observers ([`Observer`]) listen.

mod observe;

pub use observe::Observer;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::acquire::{AcquireCall, AcquireOptions};
use crate::engine::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::inspect::LockState;
use crate::keys::{check_name, display_name};
use crate::kind::LeaseKind;
use crate::lock::Lock;
use crate::lost::LostReason;

/// The longest value a leader can proclaim, in bytes.
pub const MAX_VALUE_LEN: usize = 16 * 1024;

/// A leader election on one name (from [`LockManager::election`](crate::LockManager::election)):
/// at most one leader at any instant (within the lock's assumptions), whose value everyone can
/// read ([`leader`](Self::leader)) and follow ([`observe`](Self::observe)).
///
/// - **Terms.** A candidate's [`campaign`](Self::campaign) waits in line, first come first
///   served, and returns a [`Term`] when it leads: a lock lease of the name, auto-extended,
///   whose fencing token is the term number (larger than every earlier term's).
/// - **Hand-over.** A leader's [`resign`](Term::resign) hands the leadership to the next
///   candidate in line at once; a crashed leader's term ends with its TTL.
/// - **One name, one kind.** A plain lock on the name excludes the candidates (and shows no
///   leader); a semaphore or read-write lock on it makes a campaign fail with
///   [`ErrorKind::WrongKind`](crate::ErrorKind::WrongKind).
#[derive(Clone)]
pub struct Election {
    engine: Arc<Engine>,
    name: Vec<u8>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("name", &String::from_utf8_lossy(&self.name))
            .finish()
    }
}

/// The leader of an election, as [`Election::leader`] and [`Observer::next`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The value it proclaimed (at its campaign, or since by [`Term::proclaim`]).
    pub value: String,
    /// Its term number: the term's fencing token, larger than every earlier term's.
    pub fencing_token: u64,
    /// When its term began, by its own clock.
    pub since: SystemTime,
    /// How long its term lasts at least without another extension (as
    /// [`LockManager::remaining`](crate::LockManager::remaining)).
    pub remaining: Duration,
}

/// A candidate's term as leader (from [`Election::campaign`]): auto-extended until it is
/// resigned, lost or dropped (dropping it resigns in the background).
pub struct Term {
    lock: Lock,
    election: Election,
}

impl std::fmt::Debug for Term {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Term")
            .field("election", &String::from_utf8_lossy(&self.election.name))
            .field("fencing_token", &self.fencing_token())
            .field("lost", &self.lock.is_lost())
            .finish()
    }
}

/// What one read of an election finds: its leader, and how long the name stays held at least
/// when it is held (also by a candidate that has not noted its value yet, or a plain lock).
pub(crate) struct Reading {
    pub leader: Option<Leader>,
    pub held_for: Option<Duration>,
}

/// Checks a leader's value: at most [`MAX_VALUE_LEN`] bytes (any text, empty included).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the limit.
pub fn check_value(value: &str) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::invalid_argument(format!(
            "a leader's value is at most {MAX_VALUE_LEN} bytes, got {}",
            value.len()
        )));
    }
    Ok(())
}

impl Election {
    pub(crate) fn new(engine: Arc<Engine>, name: &[u8]) -> Result<Election> {
        check_name(name)?;
        Ok(Election {
            engine,
            name: name.to_vec(),
        })
    }

    /// The election's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Campaigns with `value` until this candidate leads, waiting up to `wait` in line (`None`:
    /// until it leads); the term lives `ttl` unless extended, and is extended in the background
    /// every ttl/3.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a value over [`MAX_VALUE_LEN`] or a bad TTL (before
    /// any network call); [`ErrorKind::NotAcquired`] when `wait` passed first; otherwise as
    /// [`LockManager::acquire`](crate::LockManager::acquire).
    pub async fn campaign(
        &self,
        value: &str,
        ttl: Duration,
        wait: Option<Duration>,
    ) -> Result<Term> {
        self.campaign_with(value, &AcquireOptions::new(ttl).wait(wait))
            .await
    }

    /// [`campaign`](Self::campaign) with every option of a lock's acquisition (a token of the
    /// caller's, a longest hold, the trace context); the term is auto-extended whatever
    /// `opts.auto_extend` says.
    ///
    /// # Errors
    /// As [`campaign`](Self::campaign).
    pub async fn campaign_with(&self, value: &str, opts: &AcquireOptions) -> Result<Term> {
        let lock = self.prepare_campaign(value, opts)?.await?;
        Ok(Term {
            lock,
            election: self.clone(),
        })
    }

    /// [`campaign_with`](Self::campaign_with) in two steps, for the bindings, which hold a
    /// term as its [`Lock`] (see [`proclaim`] and [`term_value`]): the arguments are checked
    /// now (before any network call), and the campaign is returned as a future that owns what
    /// it needs.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] as [`campaign`](Self::campaign).
    pub fn prepare_campaign(
        &self,
        value: &str,
        opts: &AcquireOptions,
    ) -> Result<impl std::future::Future<Output = Result<Lock>> + Send + 'static> {
        check_value(value)?;
        let mut opts = opts.clone();
        opts.auto_extend = true;
        let checked = AcquireCall::check_lease(&self.engine, &self.name, &opts, LeaseKind::Lock)?;
        let (engine, value) = (Arc::clone(&self.engine), value.to_owned());
        Ok(async move {
            AcquireCall::start(&engine, checked, &opts)
                .lock_noting(&opts, Some(&value))
                .await
        })
    }

    /// One campaign attempt: `Ok(None)` when someone else leads (or the name is held).
    ///
    /// # Errors
    /// As [`campaign`](Self::campaign), but never [`ErrorKind::NotAcquired`].
    pub async fn try_campaign(&self, value: &str, ttl: Duration) -> Result<Option<Term>> {
        match self.campaign(value, ttl, Some(Duration::ZERO)).await {
            Ok(term) => Ok(Some(term)),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The leader now, changing nothing: `None` when nobody leads (the name is free, held by a
    /// plain lock, or granted to a candidate that has not noted its value yet: a term begins
    /// when its value is noted). Any manager can read it, with no label configured.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`] when fewer than a quorum of servers answer;
    /// [`ErrorKind::WrongKind`](crate::ErrorKind::WrongKind) when the name is a semaphore or a
    /// read-write lock.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        Ok(self.read().await?.leader)
    }

    /// Follows the leader: the current state first, then every change (a new term, a
    /// proclaimed value, nobody leading), pushed by the servers (see [`Observer`]).
    pub fn observe(&self) -> Observer {
        Observer::new(self.clone())
    }

    pub(crate) async fn read(&self) -> Result<Reading> {
        let state = self.engine.inspect(&self.name).await?;
        Ok(Reading {
            leader: leader_of(&state),
            held_for: state.remaining,
        })
    }

    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

/// The leader a lock's state shows: a holder on a quorum whose note is a term's.
fn leader_of(state: &LockState) -> Option<Leader> {
    let remaining = state.remaining?;
    let note = state.holder.as_ref().filter(|n| n.is_term())?;
    Some(Leader {
        value: note.label.clone(),
        fencing_token: note.fencing_token,
        since: note.since,
        remaining,
    })
}

impl Term {
    /// The value this leader proclaims now.
    pub fn value(&self) -> String {
        term_value(&self.lock).unwrap_or_default()
    }

    /// The term number: the term's fencing token, larger than every earlier term's of the
    /// election. Pass it to the storage the leader writes, and have it reject smaller ones.
    pub fn fencing_token(&self) -> u64 {
        self.lock.fencing_token()
    }

    /// When the term began, by this machine's clock.
    pub fn since(&self) -> SystemTime {
        self.lock.since()
    }

    /// The term's lock lease: its validity, its lost signal ([`Lock::lost`],
    /// [`Lock::on_lost`]) and the rest of a lock's reading.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// The election this term is of.
    pub fn election(&self) -> &Election {
        &self.election
    }

    /// Whether the term is known to be lost (see [`Lock::is_lost`]).
    pub fn is_lost(&self) -> bool {
        self.lock.is_lost()
    }

    /// Completes when the term is lost, with why (see [`Lock::lost`]).
    pub fn lost(&self) -> impl std::future::Future<Output = Option<LostReason>> + Send + 'static {
        self.lock.lost()
    }

    /// Proclaims a new value, in the same term: noted on the servers and announced to the
    /// observers.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a value over [`MAX_VALUE_LEN`];
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when the term is lost;
    /// [`ErrorKind::Unavailable`] when fewer than a quorum of servers noted it (the value is
    /// noted again at the term's next extension).
    pub async fn proclaim(&self, value: &str) -> Result<()> {
        proclaim(&self.lock, value).await
    }

    /// Resigns: releases the term, which goes at once to the next candidate in line, and
    /// tells the observers.
    ///
    /// # Errors
    /// As [`Lock::release`]: [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when the
    /// term had been lost.
    pub async fn resign(self) -> Result<()> {
        self.lock.release().await
    }

    /// The end of a scoped term (the bindings' `with`, `using`): resigns, and reports a loss
    /// during the scope as [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld).
    ///
    /// # Errors
    /// As [`Lock::finish_scope`].
    pub async fn finish_scope(&self) -> Result<()> {
        self.lock.finish_scope().await
    }

    /// The term's lease as a [`Lock`], for faces that hold locks (the bindings): it stays a
    /// term (its value noted at each extension, its release announced).
    pub fn into_lock(self) -> Lock {
        self.lock
    }
}

/// The value a term's lease proclaims now; `None` for a lock that is not a term.
pub fn term_value(lock: &Lock) -> Option<String> {
    lock.value().map(|v| v.to_string())
}

/// [`Term::proclaim`] for a term held as its [`Lock`] (the bindings' way).
///
/// # Errors
/// As [`Term::proclaim`]; [`ErrorKind::InvalidArgument`] for a lock that is not a term.
pub async fn proclaim(lock: &Lock, value: &str) -> Result<()> {
    check_value(value)?;
    let name = display_name(lock.name());
    if lock.value().is_none() {
        return Err(Error::invalid_argument(format!(
            "lock {name} is not an election's term: only a leader proclaims"
        )));
    }
    let held = |lock: &Lock| match lock.lost_reason() {
        None => Ok(()),
        Some(why) => Err(Error::not_held(format!(
            "term {} of election {name} is lost ({why})",
            lock.fencing_token()
        ))),
    };
    held(lock)?;
    lock.set_value(value);
    let quorum = crate::quorum::quorum(lock.servers());
    let wrote = lock.note_holder().await;
    if wrote >= quorum {
        return Ok(());
    }
    if lock.is_held().await? {
        return Err(Error::unavailable(format!(
            "the leader of election {name} proclaimed its value on {wrote} servers, quorum is \
             {quorum}; it is noted again at the term's next extension"
        )));
    }
    held(lock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::who::HolderNote;

    fn state(label: &str, term: bool) -> LockState {
        LockState {
            remaining: Some(Duration::from_secs(3)),
            waiters: Some(0),
            holder: Some(HolderNote {
                label: label.into(),
                since: SystemTime::UNIX_EPOCH,
                fencing_token: 7,
                term,
            }),
        }
    }

    #[test]
    fn only_a_terms_note_makes_a_leader() {
        let leader = leader_of(&state("host-a:8080\nsecond line", true)).unwrap();
        assert_eq!(leader.value, "host-a:8080\nsecond line");
        assert_eq!(leader.fencing_token, 7);
        assert_eq!(leader_of(&state("", true)).unwrap().value, "");
        assert_eq!(
            leader_of(&state("web-1:4242", false)),
            None,
            "a labelled lock"
        );
        let mut unnoted = state("x", true);
        unnoted.holder = None;
        assert_eq!(leader_of(&unnoted), None, "held, not noted");
    }

    #[test]
    fn values_are_checked() {
        assert!(check_value("").is_ok());
        assert!(check_value(&"v".repeat(MAX_VALUE_LEN)).is_ok());
        let e = check_value(&"v".repeat(MAX_VALUE_LEN + 1)).unwrap_err();
        assert!(e.message().contains("16384"), "{}", e.message());
    }
}
