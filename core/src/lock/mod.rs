//! A held lock: token, fencing token, validity, extension and release (this module),
//! auto-extension (`auto_extend.rs`) and the lost signal (`lost_signal.rs`: `lost()`,
//! `on_lost`, `LostView`).

mod auto_extend;
mod lost_signal;

use auto_extend::Extending;
pub use lost_signal::LostView;

use std::sync::{Arc, Mutex as StdMutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::engine::{Acquired, Engine, Target};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::display_name;
use crate::lost::LostReason;
use crate::measure::{self, HoldWatch, SpanValue};
use crate::timing::BACKGROUND_CLEANUP_TIMEOUT;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Held,
    Lost(LostReason),
    Released,
}

/// What a lock handle and its auto-extension task share.
struct Holding {
    engine: Arc<Engine>,
    target: Arc<Target>,
    /// One per name, the first name's first.
    fencing_tokens: Vec<u64>,
    acquired_at: Instant,
    /// When it was granted, by this machine's clock (the holder label's note, `who.rs`).
    since: std::time::SystemTime,
    /// The runtime the lock was acquired on: auto-extension and drop-release run there, even
    /// when the lock is dropped on a thread outside any runtime.
    runtime: Option<tokio::runtime::Handle>,
    state: StdMutex<State>,
    status: watch::Sender<Status>,
    /// Its measurements: counted as held, its end and its extensions.
    measured: HoldWatch,
    /// An election's term: the leader's value, noted with every grant and extension and
    /// announced to the observers, who also hear its release (`election/`).
    value: StdMutex<Option<Arc<str>>>,
    /// The value last noted on a quorum with a change's announcement: an extension that notes
    /// the same value announces a renewal, which its observers take without a read.
    announced: StdMutex<Option<Arc<str>>>,
}

struct State {
    ttl: Duration,
    valid_until: Instant,
    /// Extensions started, and the newest whose outcome set `valid_until` (see
    /// [`Holding::note_extended`]).
    extensions: (u64, u64),
    auto_extend: Option<Extending>,
    /// The last extension failed for want of servers (not because the lock was gone): if
    /// validity now runs out, the lock was lost as [`LostReason::Unreachable`].
    unreachable: bool,
    /// Why the lock had been lost when it was released: known lost before, or found so by the
    /// release itself.
    released_lost: Option<LostReason>,
}

impl Holding {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn status(&self) -> Status {
        *self.status.borrow()
    }

    fn valid_until(&self) -> Instant {
        self.state().valid_until
    }

    /// Why the lock is lost if its validity has run out while it is still marked held.
    fn expiry_reason(&self) -> LostReason {
        if self.state().unreachable {
            LostReason::Unreachable
        } else {
            LostReason::Expired
        }
    }

    /// Why the lock is lost, if it is: marked lost, or held past its validity.
    fn lost_reason(&self) -> Option<LostReason> {
        match self.status() {
            Status::Lost(why) => Some(why),
            Status::Released => None,
            Status::Held => (Instant::now() >= self.valid_until()).then(|| self.expiry_reason()),
        }
    }

    /// Why the lock was lost, also after its release: see [`LostView`].
    fn lost_reason_ever(&self) -> Option<LostReason> {
        match self.status() {
            Status::Released => self.state().released_lost,
            _ => self.lost_reason(),
        }
    }

    /// Marks the lock lost if it is still held; returns whether it did.
    fn mark_lost(&self, why: LostReason) -> bool {
        self.status.send_if_modified(|s| {
            if *s != Status::Held {
                return false;
            }
            *s = Status::Lost(why);
            // Emitted before the watchers of `lost()` are woken, so they find it.
            tracing::warn!(
                target: "fencelock",
                lock = %display_name(&self.target.name),
                fencing_token = self.fencing_tokens[0],
                held_ms = self.acquired_at.elapsed().as_millis() as u64,
                reason = why.as_str(),
                "lock lost"
            );
            self.measured.lost(why.as_str());
            true
        })
    }

    /// Marks the lock released (the end of its hold: `how`, or `lost` when it was lost
    /// before) and stops auto-extension; returns the status before.
    fn mark_released(&self, how: &'static str) -> Status {
        let before = self.status.send_replace(Status::Released);
        match before {
            Status::Held => self.measured.end(how),
            Status::Lost(_) => self.measured.end("lost"),
            Status::Released => {}
        }
        let extending = self.state().auto_extend.take();
        match extending {
            Some(Extending::Due(ticket)) => {
                self.engine.deferred.cancel(ticket);
            }
            Some(Extending::Running(task)) => task.abort(),
            None => {}
        }
        before
    }

    async fn extend(&self, ttl: Duration) -> Result<()> {
        let seq = self.extension_started();
        let extended = self.engine.extend(&self.target, ttl).await;
        if extended.is_ok() {
            self.state().ttl = ttl;
            self.note_holder(true).await;
        }
        self.note_extended(seq, extended)
    }

    /// An additive extension's outcome: the lock's TTL (the pace of auto-extension) stays.
    async fn extend_by(&self, add: Duration) -> Result<()> {
        let seq = self.extension_started();
        let extended = self.engine.extend_by(&self.target, add).await;
        if extended.is_ok() {
            self.note_holder(true).await;
        }
        self.note_extended(seq, extended)
    }

    /// Numbers an extension as it starts, for [`note_extended`](Self::note_extended).
    fn extension_started(&self) -> u64 {
        let mut st = self.state();
        st.extensions.0 += 1;
        st.extensions.0
    }

    /// Leaves (or renews, with the lock's new remaining time) the holder's note: a term's
    /// value, or the manager's label when it has one (`who.rs`); how many servers of the
    /// quorum that answered wrote it. A term's note is announced as a renewal when it is an
    /// `extension`'s and its value the one last announced on a quorum, else as a change.
    async fn note_holder(&self, extension: bool) -> usize {
        let value = self.value();
        let announced = self
            .announced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let renewal = extension && value.is_some() && value == announced;
        let fences = &self.fencing_tokens;
        let wrote = self
            .engine
            .note_holder(&self.target, fences, self.since, value.as_deref(), renewal)
            .await;
        if value.is_some() && wrote >= self.target.quorum(self.engine.n()) {
            *self.announced.lock().unwrap_or_else(|e| e.into_inner()) = value;
        }
        wrote
    }

    fn value(&self) -> Option<Arc<str>> {
        self.value.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Releases on every server (see [`Engine::release_reporting`]); a term's release is then
    /// announced to the election's observers.
    async fn release(&self, timeout: Duration) -> std::result::Result<(), crate::engine::Failed> {
        let released = self
            .engine
            .release_reporting(&self.target, timeout, true)
            .await;
        if self.value().is_some() {
            self.engine.announce(&self.target).await;
        }
        released
    }

    /// An extension's outcome. Its validity replaces the lock's when it is the newest to
    /// succeed so far, also when shorter: the servers set the key's TTL to what it asked, so a
    /// validity kept at a longer one would let the holder act on a lock the servers have let
    /// go (an extension to a shorter TTL, a max hold's last capped extension). An older one
    /// that succeeds after a newer can only shorten it: which of the two the servers ran last
    /// is not known here, and the shorter validity is the safe one.
    fn note_extended(
        &self,
        seq: u64,
        extended: std::result::Result<Instant, crate::engine::Failed>,
    ) -> Result<()> {
        self.measured.extended(extended.is_ok());
        match extended {
            Ok(valid_until) => {
                let shortened = {
                    let mut st = self.state();
                    let before = st.valid_until;
                    if seq > st.extensions.1 {
                        st.extensions.1 = seq;
                        st.valid_until = valid_until;
                    } else {
                        st.valid_until = st.valid_until.min(valid_until);
                    }
                    st.unreachable = false;
                    st.valid_until < before
                };
                if shortened {
                    // `lost()` sleeps until the validity it saw: it must look again.
                    self.status.send_modify(|_| {});
                }
                Ok(())
            }
            Err(failed) => {
                match failed.lost {
                    Some(why) => {
                        self.mark_lost(why);
                    }
                    None => {
                        self.state().unreachable = failed.error.kind() == ErrorKind::Unavailable
                    }
                }
                Err(failed.error)
            }
        }
    }
}

/// A lock held on a quorum of servers.
///
/// Dropping a `Lock` that is still held releases it in the background (best effort, never
/// blocking); call [`release`](Lock::release) to learn whether the release succeeded.
pub struct Lock {
    shared: Arc<Holding>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token: it is the key to release the lock.
        f.debug_struct("Lock")
            .field("name", &String::from_utf8_lossy(&self.shared.target.name))
            .field("fencing_token", &self.shared.fencing_tokens[0])
            .field("validity", &self.validity())
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(
        engine: Arc<Engine>,
        target: Arc<Target>,
        ttl: Duration,
        acquired: Acquired,
        labels: measure::HoldLabels,
    ) -> Lock {
        let span = tracing::info_span!(
            target: "fencelock",
            "fencelock.hold",
            lock = %target.span_name(),
            kind = %measure::kind(target.kind),
            fencing_token = acquired.fencing_token,
            outcome = tracing::field::Empty,
            held_ms = tracing::field::Empty,
        );
        let measured = HoldWatch::new(labels, span, || {
            vec![
                (
                    "lock",
                    SpanValue::Text(target.span_name().to_string().into()),
                ),
                ("kind", SpanValue::Text(measure::kind(target.kind))),
                ("fencing_token", SpanValue::Int(acquired.fencing_token)),
            ]
        });
        Lock {
            shared: Arc::new(Holding {
                engine,
                target,
                fencing_tokens: std::iter::once(acquired.fencing_token)
                    .chain(acquired.more_fences)
                    .collect(),
                acquired_at: Instant::now(),
                since: std::time::SystemTime::now(),
                runtime: tokio::runtime::Handle::try_current().ok(),
                state: StdMutex::new(State {
                    ttl,
                    valid_until: acquired.valid_until,
                    extensions: (0, 0),
                    auto_extend: None,
                    unreachable: false,
                    released_lost: None,
                }),
                status: watch::channel(Status::Held).0,
                measured,
                value: StdMutex::new(None),
                announced: StdMutex::new(None),
            }),
        }
    }

    /// The lock's name (without the key prefix); of a lock on several names, the first.
    pub fn name(&self) -> &[u8] {
        &self.shared.target.name
    }

    /// What the lease holds of its name: the whole name (a lock), permits of a semaphore, a
    /// read share or the write hold of a read-write lock.
    pub fn kind(&self) -> crate::LeaseKind {
        self.shared.target.kind
    }

    /// Every name of the lock, in the order they were given (one for a lock on one name).
    pub fn names(&self) -> Vec<&[u8]> {
        self.shared.target.names().collect()
    }

    /// This acquisition's token: the value of the lock key on the servers.
    pub fn token(&self) -> &[u8] {
        &self.shared.target.token
    }

    /// The fencing token: larger than that of every earlier acquisition of any lock on this
    /// server set. Pass it to the storage you protect and have it reject smaller ones. Of a
    /// lock on several names, the first name's (see [`fencing_tokens`](Self::fencing_tokens)).
    pub fn fencing_token(&self) -> u64 {
        self.shared.fencing_tokens[0]
    }

    /// One fencing token per name, in the order of [`names`](Self::names): each larger than
    /// every earlier acquisition's of that name.
    pub fn fencing_tokens(&self) -> &[u64] {
        &self.shared.fencing_tokens
    }

    /// Leaves the holder's note once granted (see [`crate::who`]); how many servers of the
    /// quorum that answered wrote it.
    pub(crate) async fn note_holder(&self) -> usize {
        self.shared.note_holder(false).await
    }

    /// Makes the lock an election's term with `value` (noted by the next
    /// [`note_holder`](Self::note_holder), and by every extension).
    pub(crate) fn set_value(&self, value: &str) {
        *self.shared.value.lock().unwrap_or_else(|e| e.into_inner()) = Some(value.into());
    }

    /// A term's value (`None`: not an election's term).
    pub(crate) fn value(&self) -> Option<Arc<str>> {
        self.shared.value()
    }

    /// How many servers it is held on a quorum of.
    pub(crate) fn servers(&self) -> usize {
        self.shared.engine.n()
    }

    /// When it was granted, by this machine's clock.
    pub(crate) fn since(&self) -> std::time::SystemTime {
        self.shared.since
    }

    /// The TTL of the last acquire or extend.
    pub fn ttl(&self) -> Duration {
        self.shared.state().ttl
    }

    /// Time the lock is still safe to use: counts down from acquisition (or the last extend),
    /// already net of the time acquiring took and of the clock drift allowance. Zero once
    /// released, lost or expired.
    pub fn validity(&self) -> Duration {
        if self.shared.status() != Status::Held {
            return Duration::ZERO;
        }
        self.shared
            .valid_until()
            .saturating_duration_since(Instant::now())
    }

    /// Whether the lock is known to be lost: an extension found it gone or taken, no quorum
    /// could be reached before its validity ran out, or its validity simply ran out.
    pub fn is_lost(&self) -> bool {
        self.shared.lost_reason().is_some()
    }

    /// Whether auto-extension runs for this lock (it was started and the lock is still held).
    pub fn is_auto_extending(&self) -> bool {
        self.shared.status() == Status::Held && self.shared.state().auto_extend.is_some()
    }

    /// Why the lock is lost, or `None` while it is held (and once released or detached).
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.shared.lost_reason()
    }

    /// Asks the servers whether this lock is still held: a quorum of them hold its key under
    /// its token (read-only; never extends it). Unlike [`is_lost`](Lock::is_lost), which is
    /// this process's view, it notices a key deleted or overwritten behind the holder's back;
    /// when it finds the lock not held, the lock is marked lost (taken, or expired).
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when fewer than a quorum of servers answer;
    /// [`ErrorKind::Redis`](crate::ErrorKind::Redis) for unexpected replies.
    pub async fn is_held(&self) -> Result<bool> {
        let s = &self.shared;
        if s.status() == Status::Released {
            return Ok(false);
        }
        match s.engine.holds(&s.target).await? {
            Ok(()) => Ok(true),
            Err(why) => {
                s.mark_lost(why);
                Ok(false)
            }
        }
    }

    /// Extends the lock: its expiry on the servers becomes now + `ttl`, and its validity is
    /// recomputed as for an acquisition.
    ///
    /// # Errors
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when no quorum holds it any more (the lock is then marked lost);
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers answered; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a
    /// bad TTL.
    pub async fn extend(&self, ttl: Duration) -> Result<()> {
        self.shared.extend(ttl).await
    }

    /// Adds `add` to the lock's remaining time on every server, atomically on each (what
    /// redis-py's `extend(t)` does), instead of setting it as [`extend`](Lock::extend) does. Its
    /// validity becomes what a quorum now guarantees: the quorum-th longest new remaining time,
    /// less this call's time and the drift allowance.
    ///
    /// # Errors
    /// As [`extend`](Lock::extend).
    pub async fn extend_by(&self, add: Duration) -> Result<()> {
        self.shared.extend_by(add).await
    }

    /// Releases the lock on every server.
    ///
    /// # Errors
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when fewer than a quorum still held it (it had expired or been
    /// taken; the message says which); [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when too few servers answered.
    pub async fn release(self) -> Result<()> {
        self.release_inner().await
    }

    async fn release_inner(&self) -> Result<()> {
        let s = &self.shared;
        let known = s.lost_reason();
        s.mark_released("released");
        s.state().released_lost = known;
        let timeout = s.engine.server_timeout(s.state().ttl);
        let released = s.release(timeout).await;
        released.map_err(|failed| {
            let mut st = s.state();
            st.released_lost = st.released_lost.or(failed.lost);
            failed.error
        })
    }

    /// The end of a scoped use (`with_lock` and the bindings' scoped forms): releases, and
    /// reports a loss during the scope as [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld).
    pub async fn finish_scope(&self) -> Result<()> {
        let lost = match self.shared.status() {
            Status::Lost(why) => Some(why),
            _ => None,
        };
        let released = self.release_inner().await;
        if let Some(why) = lost {
            return Err(Error::not_held(format!(
                "lock {} was lost while its scope ran ({why}): the work done under it was not \
                 protected",
                display_name(&self.shared.target.name)
            )));
        }
        released
    }

    /// Gives up this handle without releasing the lock: it stays held on the servers until its
    /// TTL runs out or someone calls [`LockManager::release_by_token`](crate::LockManager::release_by_token)
    /// with its token (the classic "request id" pattern, or a lock handed to another process).
    /// Auto-extension stops; dropping the handle afterwards releases nothing.
    pub fn detach(self) {
        self.shared.mark_released("detached");
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let s = &self.shared;
        if s.mark_released("dropped") == Status::Released {
            return;
        }
        let Some(runtime) = &s.runtime else {
            return;
        };
        let shared = Arc::clone(s);
        s.engine.cleanups.spawn(runtime, async move {
            let _ = shared.release(BACKGROUND_CLEANUP_TIMEOUT).await;
        });
    }
}
