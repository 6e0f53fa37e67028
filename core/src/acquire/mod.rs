//! One acquire call: attempts until acquired or out of time, and the wait between them.
//!
//! A caller that waits takes a place in each server's queue at its first refusal
//! ([`crate::queue`]); its arrival orders the queue, and a release hands the lock to the first
//! in line. Between attempts the caller sleeps until a release's message names it, the
//! holder's TTL runs out or the retry delay passes ([`crate::timing::retry_sleep`]). Leaving
//! without the lock (wait limit, error, cancellation) gives the place up, through the guard.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::attempt::{attempt, Attempt, Own, Refusal};
use crate::engine::{Acquired, Engine, Target};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{check_name, display_name, MAX_NAMES};
use crate::kind::LeaseKind;
use crate::lock::Lock;
use crate::measure::{self, AcquireWatch, SpanValue};
use crate::pubsub::Subscription;
use crate::queue::Place;
use crate::timing::WAIT_WARNING_EVERY;
use crate::token;
use crate::undo::UndoGuard;

mod wait;

use wait::join_subscribed;

/// Options of one acquisition, for [`LockManager::acquire_with`](crate::LockManager::acquire_with).
#[derive(Clone, PartialEq, Eq)]
pub struct AcquireOptions {
    /// How long the lock lives unless extended.
    pub ttl: Duration,
    /// How long to keep trying: `None` waits until acquired, `Some(Duration::ZERO)` tries
    /// once.
    pub wait: Option<Duration>,
    /// A caller-chosen token (non-empty, at most 512 bytes) instead of a random one. It is
    /// exclusive, as a plain `SET NX` is: while the name is held with it (by another process
    /// passing the same token, or an earlier acquisition), a new acquisition with it is not
    /// acquired, unless [`reentrant`](Self::reentrant).
    pub token: Option<Vec<u8>>,
    /// With a caller's `token`: a name already held with it is acquired again (its TTL reset,
    /// a new fencing token), instead of being refused as held.
    pub reentrant: bool,
    /// Keep the acquired lock alive in the background (see
    /// [`Lock::auto_extend`](crate::Lock::auto_extend)).
    pub auto_extend: bool,
    /// With `auto_extend`: the longest the lock is kept alive, counted from acquisition.
    pub max_hold: Option<Duration>,
    /// The caller's trace context, captured by a binding while a span sink is set: the
    /// call's and its hold's span records carry it ([`measure::TraceParent`]).
    pub trace: Option<measure::TraceParent>,
}

impl AcquireOptions {
    /// Options with the given TTL, waiting forever, with a random token.
    pub fn new(ttl: Duration) -> AcquireOptions {
        AcquireOptions {
            ttl,
            wait: None,
            token: None,
            reentrant: false,
            auto_extend: false,
            max_hold: None,
            trace: None,
        }
    }
    /// Sets the caller's trace context (see [`trace`](AcquireOptions::trace)).
    pub fn trace(mut self, parent: Option<measure::TraceParent>) -> AcquireOptions {
        self.trace = parent;
        self
    }
    /// Sets the wait limit (`None`: forever; zero: one try).
    pub fn wait(mut self, wait: Option<Duration>) -> AcquireOptions {
        self.wait = wait;
        self
    }
    /// Sets a caller-chosen token (exclusive unless [`reentrant`](Self::reentrant)).
    pub fn token(mut self, token: impl AsRef<[u8]>) -> AcquireOptions {
        self.token = Some(token.as_ref().to_vec());
        self
    }
    /// Lets a caller's token re-acquire a name it already holds (see
    /// [`reentrant`](AcquireOptions::reentrant)).
    pub fn reentrant(mut self, reentrant: bool) -> AcquireOptions {
        self.reentrant = reentrant;
        self
    }
    /// Keeps the acquired lock alive in the background, for at most `max_hold` since
    /// acquisition when given (see [`Lock::auto_extend`](crate::Lock::auto_extend)).
    pub fn auto_extend(mut self, max_hold: Option<Duration>) -> AcquireOptions {
        self.auto_extend = true;
        self.max_hold = max_hold;
        self
    }
}

impl std::fmt::Debug for AcquireOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcquireOptions")
            .field("ttl", &self.ttl)
            .field("wait", &self.wait)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("reentrant", &self.reentrant)
            .field("auto_extend", &self.auto_extend)
            .field("max_hold", &self.max_hold)
            .finish()
    }
}

/// The state of one acquire call between its attempts.
pub(crate) struct AcquireCall {
    engine: Arc<Engine>,
    target: Arc<Target>,
    ttl: Duration,
    /// Per-server timeout of each call.
    timeout: Duration,
    started: Instant,
    /// When to give up; `None`: never.
    deadline: Option<Instant>,
    /// When the call returns at the latest: the deadline plus one per-server timeout (an
    /// attempt begun just before the deadline is allowed its time). Clean-ups still running
    /// then (the undo, leaving the queue: a hung server) finish in the background.
    hard_stop: Option<Instant>,
    /// The place in the queues of a caller that waits (none for a single try).
    place: Option<Place>,
    /// Gives the place up when the call ends without the lock.
    leave_queue: Option<UndoGuard>,
    /// Per server, whether a key already holding the token counts as this call's (see
    /// [`Own`]); `None`: everywhere (a token of the call's own, or re-entry asked for).
    own: Option<Vec<bool>>,
    /// The wake-up subscriptions, once listening (see [`AcquireCall::wait_for_turn`]), each
    /// with the index of its server.
    subscriptions: Option<Vec<(usize, Subscription)>>,
    /// Its measurements, and its attempts so far (`watch.attempts`).
    watch: AcquireWatch,
    /// When the call last warned that it keeps waiting for unreachable servers.
    warned: Instant,
    /// Attempts in a row on which every server refused the connection (see
    /// [`Builder::refused_attempts`](crate::Builder::refused_attempts)).
    refused_in_a_row: u32,
    /// Handoffs are taken on the messages' word until an attempt of this call is undone: the
    /// undo may have released a server's handoff whose message is still on its way, and from
    /// then on only attempts count.
    trust_handoffs: bool,
}

/// An acquisition's arguments, checked once (before any network call): its target (name or
/// names, token, kind) and TTL. [`AcquireCall::start`] makes the call of it where it runs.
pub struct Checked {
    target: Target,
    ttl: Duration,
}

impl AcquireCall {
    /// Checks the arguments (before any network call) and prepares the call.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad name, TTL or token.
    pub fn new(engine: &Arc<Engine>, name: &[u8], opts: &AcquireOptions) -> Result<AcquireCall> {
        Self::new_lease(engine, name, opts, LeaseKind::Lock)
    }

    /// As [`new`](Self::new), for a lease of `kind` (its limit and count already checked).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn new_lease(
        engine: &Arc<Engine>,
        name: &[u8],
        opts: &AcquireOptions,
        kind: LeaseKind,
    ) -> Result<AcquireCall> {
        let checked = Self::check_lease(engine, name, opts, kind)?;
        Ok(Self::start(engine, checked, opts))
    }

    /// The checks of [`new_lease`](Self::new_lease), for a call started later, outside the
    /// runtime that runs it (its guards are made there: they clean up on that runtime).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn check_lease(
        engine: &Engine,
        name: &[u8],
        opts: &AcquireOptions,
        kind: LeaseKind,
    ) -> Result<Checked> {
        check_name(name)?;
        let token = Self::token(engine, opts)?;
        let ttl = engine.check_ttl(opts.ttl)?;
        Ok(Checked {
            target: engine.target_of(name, token, kind),
            ttl,
        })
    }

    /// The checks of [`new_many`](Self::new_many) (see [`check_lease`](Self::check_lease)).
    ///
    /// # Errors
    /// As [`new_many`](Self::new_many).
    pub fn check_many(
        engine: &Engine,
        names: &[Vec<u8>],
        opts: &AcquireOptions,
    ) -> Result<Checked> {
        check_names(names)?;
        let token = Self::token(engine, opts)?;
        let target = engine.target_many(names, token);
        if engine.has_cluster() {
            check_one_slot(&target)?;
        }
        let ttl = engine.check_ttl(opts.ttl)?;
        Ok(Checked { target, ttl })
    }

    /// As [`new`](Self::new), for a lock on all of `names` at once (see
    /// [`LockManager::acquire_many_with`](crate::LockManager::acquire_many_with)).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for no names, too many, a bad or repeated name, names in
    /// different hash slots when a server is a Redis Cluster, a bad TTL or token.
    pub fn new_many(
        engine: &Arc<Engine>,
        names: &[Vec<u8>],
        opts: &AcquireOptions,
    ) -> Result<AcquireCall> {
        let checked = Self::check_many(engine, names, opts)?;
        Ok(Self::start(engine, checked, opts))
    }

    /// The caller's token, checked, or a new one.
    fn token(engine: &Engine, opts: &AcquireOptions) -> Result<Vec<u8>> {
        match &opts.token {
            Some(t) => {
                token::check_token(t)?;
                Ok(t.clone())
            }
            None => Ok(token::generate(&engine.wake_id)),
        }
    }

    /// The call of checked arguments: its place in line, its guards and subscriptions (made
    /// on the runtime that runs it) and its measurements.
    pub fn start(engine: &Arc<Engine>, checked: Checked, opts: &AcquireOptions) -> AcquireCall {
        let Checked { target, ttl } = checked;
        let target = Arc::new(target);
        let started = Instant::now();
        let timeout = engine.server_timeout(ttl);
        let waits = opts.wait != Some(Duration::ZERO);
        let place = waits.then(|| Place::new(engine.place_lasts(timeout)));
        let leave_queue = waits.then(|| UndoGuard::new(engine, &target, timeout));
        let exclusive = opts.token.is_some() && !opts.reentrant;
        let own = exclusive.then(|| vec![false; engine.n()]);
        let mut leave_queue = leave_queue;
        if let (Some(own), Some(leave)) = (own.as_ref(), leave_queue.as_mut()) {
            leave.limit_to(own.clone());
        }
        let subscriptions = if waits {
            join_subscribed(engine, &target)
        } else {
            None
        };
        let deadline = opts.wait.and_then(|w| started.checked_add(w));
        let names = &engine.config.metric_names;
        let n = engine.n();
        let trace = measure::Traced::begin(opts.trace.as_ref(), || {
            vec![
                (
                    "lock",
                    SpanValue::Text(target.span_name().to_string().into()),
                ),
                ("kind", SpanValue::Text(measure::kind(target.kind))),
                ("servers", SpanValue::Int(n as u64)),
                ("quorum", SpanValue::Int(target.quorum(n) as u64)),
            ]
        });
        let kind = measure::kind(target.kind);
        let watch = AcquireWatch::new(kind, names.label(&target.name), waits, trace);
        AcquireCall {
            engine: Arc::clone(engine),
            target,
            ttl,
            timeout,
            started,
            deadline,
            hard_stop: deadline.and_then(|d| d.checked_add(timeout)),
            place,
            leave_queue,
            own,
            subscriptions,
            watch,
            warned: started,
            refused_in_a_row: 0,
            // With replica acknowledgment a handoff is confirmed by an attempt, whose write
            // the replicas acknowledge.
            trust_handoffs: engine.config.replica_ack.is_none(),
        }
    }

    /// [`run`](Self::run), then the held [`Lock`], kept alive in the background when `opts`
    /// ask for auto-extension.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub async fn lock(self, opts: &AcquireOptions) -> Result<Lock> {
        self.lock_noting(opts, None).await
    }

    /// [`lock`](Self::lock), for an election's term: the lock notes `value` (see
    /// [`crate::election`]) before it is returned.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub async fn lock_noting(self, opts: &AcquireOptions, value: Option<&str>) -> Result<Lock> {
        let engine = Arc::clone(&self.engine);
        let span = tracing::info_span!(
            target: "fencelock",
            "fencelock.acquire",
            lock = %self.target.span_name(),
            kind = %measure::kind(self.target.kind),
            servers = engine.n(),
            quorum = self.target.quorum(engine.n()),
            outcome = tracing::field::Empty,
            attempts = tracing::field::Empty,
            handed_over = tracing::field::Empty,
            fencing_token = tracing::field::Empty,
            waited_ms = tracing::field::Empty,
        );
        let labels = self.watch.labels();
        let (target, ttl, acquired) = self.run().instrument(span).await?;
        let lock = Lock::new(engine, target, ttl, acquired, labels);
        if let Some(value) = value {
            lock.set_value(value);
        }
        lock.note_holder().await;
        if opts.auto_extend {
            lock.auto_extend(opts.max_hold);
        }
        Ok(lock)
    }

    /// Attempts until acquired, the wait limit passes or retrying cannot help.
    ///
    /// # Errors
    /// As [`LockManager::acquire`](crate::LockManager::acquire).
    pub async fn run(mut self) -> Result<(Arc<Target>, Duration, Acquired)> {
        // A lock a release handed over while this call waited.
        let mut handed: Option<Acquired> = None;
        loop {
            let handed_over = handed.is_some();
            let outcome = match handed.take() {
                Some(a) => Attempt::Acquired(a),
                None => self.attempt().await,
            };
            let Refusal {
                holder_pttl,
                error,
                fatal,
                undo,
                may_hold,
                nobody_listens,
            } = match outcome {
                Attempt::Acquired(a) => return Ok(self.acquired(a, handed_over)),
                Attempt::Refused(r) => r,
            };
            self.trust_handoffs &= undo.is_none();
            let (error, fatal) = self.give_up_if_nobody_listens(error, fatal, nobody_listens);
            let remaining = self.after_refusal(error, fatal, undo, may_hold).await?;
            handed = self.wait_for_turn(holder_pttl, remaining).await;
        }
    }

    async fn attempt(&mut self) -> Attempt {
        self.note_handoffs();
        for (_, s) in self.subscriptions.iter_mut().flatten() {
            s.mark_seen();
        }
        self.watch.attempts += 1;
        let own = self.own.as_deref().map_or(Own::All, Own::Only);
        let times = (self.ttl, self.timeout);
        let place = self.place.as_ref();
        attempt(
            &self.engine,
            &self.target,
            times,
            place,
            own,
            self.hard_stop,
        )
        .await
    }

    fn acquired(mut self, a: Acquired, handed_over: bool) -> (Arc<Target>, Duration, Acquired) {
        self.watch
            .finish("acquired", handed_over, Some(a.fencing_token));
        tracing::debug!(
            target: "fencelock",
            lock = %self.target.label(),
            attempts = self.watch.attempts,
            handed_over,
            elapsed_ms = self.started.elapsed().as_millis() as u64,
            fencing_token = a.fencing_token,
            "acquired"
        );
        // Places left on servers that did not grant go with the lock's release.
        if let Some(g) = self.leave_queue.as_mut() {
            g.disarm();
        }
        // Refused before (with a place: it waited in line), the lock's release goes straight to
        // the queue's code.
        if self.place.is_some() && (handed_over || self.watch.attempts > 1) {
            self.target.note_waited();
        }
        (Arc::clone(&self.target), self.ttl, a)
    }

    /// After a refused attempt: runs its undo and returns the time left, or the error when
    /// the call ends here (retrying cannot help, or the wait limit passed: the place in the
    /// queue is given up first, within the call's hard stop). `may_hold`: the servers that
    /// may hold the attempt's token until the undo answers there.
    async fn after_refusal(
        &mut self,
        error: Error,
        fatal: bool,
        mut undo: Option<UndoGuard>,
        may_hold: Vec<bool>,
    ) -> Result<Option<Duration>> {
        let out_of_time = |d: &Option<Instant>| matches!(d, Some(d) if Instant::now() >= *d);
        if !(fatal || out_of_time(&self.deadline)) {
            // The next attempt must not be overtaken by this one's undo (same token).
            let answered = match undo.as_mut() {
                Some(u) => u.run(self.hard_stop).await,
                None => Some(Vec::new()),
            };
            let undone = answered.is_some();
            self.note_may_hold(&may_hold, answered.as_deref().unwrap_or(&[]));
            if undone && !out_of_time(&self.deadline) {
                self.warn_if_unavailable(&error);
                let now = Instant::now();
                return Ok(self.deadline.map(|d| d.saturating_duration_since(now)));
            }
        }
        tracing::debug!(
            target: "fencelock",
            lock = %self.target.label(),
            attempts = self.watch.attempts,
            elapsed_ms = self.started.elapsed().as_millis() as u64,
            error = %error,
            "acquire failed"
        );
        let outcome = match error.kind() {
            ErrorKind::NotAcquired if self.place.is_none() => "not_acquired",
            ErrorKind::NotAcquired => "wait_limit",
            ErrorKind::Cancelled => "cancelled",
            _ => "error",
        };
        self.watch.finish(outcome, false, None);
        // Give the place in the queue up before returning, so that a caller's next try-once
        // (or anyone else's) is not refused on its account; leaving also undoes the attempt's
        // votes. What a hung server keeps from finishing by the hard stop goes on in the
        // background.
        self.keep_watching_handoffs();
        match (self.leave_queue.take(), undo.as_mut()) {
            (Some(mut leave), undo) => {
                if let Some(u) = undo {
                    u.disarm();
                }
                leave.leave(self.hard_stop).await;
            }
            (None, Some(u)) => {
                u.run(self.hard_stop).await;
            }
            (None, None) => {}
        }
        if fatal {
            return Err(error);
        }
        let attempts = self.watch.attempts;
        let message = format!(
            "{} (gave up after {attempts} attempt{} in {} ms)",
            error.message(),
            if attempts == 1 { "" } else { "s" },
            self.started.elapsed().as_millis()
        );
        Err(error.with_message(message))
    }

    /// Where the next attempt counts a key holding the token as its own: a server that may
    /// hold it from this attempt (it granted, or its reply was lost) and whose undo did not
    /// answer, or one marked so before that still has not answered an undo.
    fn note_may_hold(&mut self, may_hold: &[bool], undo_answered: &[bool]) {
        let Some(own) = self.own.as_mut() else {
            return;
        };
        for (i, mine) in own.iter_mut().enumerate() {
            let answered = undo_answered.get(i).copied().unwrap_or(false);
            *mine = (*mine || may_hold.get(i).copied().unwrap_or(false)) && !answered;
        }
        self.limit_leaving();
    }

    /// Leaving the queue deletes the key only where it may hold the token for this call.
    fn limit_leaving(&mut self) {
        if let (Some(own), Some(leave)) = (self.own.as_ref(), self.leave_queue.as_mut()) {
            leave.limit_to(own.clone());
        }
    }

    /// A wait whose every server refused the connection on
    /// [`refused_attempts`](crate::Builder::refused_attempts) attempts in a row ends there:
    /// nothing listens at any address (a server not started, a wrong port), which waiting
    /// seldom cures. The error says so and how to wait longer.
    fn give_up_if_nobody_listens(
        &mut self,
        error: Error,
        fatal: bool,
        nobody_listens: bool,
    ) -> (Error, bool) {
        self.refused_in_a_row = if nobody_listens {
            self.refused_in_a_row + 1
        } else {
            0
        };
        let limit = self.engine.config.refused_attempts;
        if fatal || limit == 0 || self.refused_in_a_row < limit {
            return (error, fatal);
        }
        let message = format!(
            "{}; every server refused the connection on {limit} attempts in a row: is the \
             server running, at this address? (refused_attempts sets how many refusals a \
             wait takes; 0 waits through them)",
            error.message()
        );
        (error.with_message(message), true)
    }

    /// A wait that keeps being refused because too few servers answer says so, naming them
    /// and why, every [`WAIT_WARNING_EVERY`]: a wait without limit is never silent.
    fn warn_if_unavailable(&mut self, error: &Error) {
        if error.kind() != ErrorKind::Unavailable || self.warned.elapsed() < WAIT_WARNING_EVERY {
            return;
        }
        self.warned = Instant::now();
        tracing::warn!(
            target: "fencelock",
            lock = %self.target.label(),
            attempts = self.watch.attempts,
            waited_ms = self.started.elapsed().as_millis() as u64,
            error = %error,
            "acquire still waiting: too few servers answer"
        );
    }
}

/// The names of a lock on several names: at least one, at most [`MAX_NAMES`], each a valid
/// name, none twice.
fn check_names(names: &[Vec<u8>]) -> Result<()> {
    if names.is_empty() || names.len() > MAX_NAMES {
        return Err(Error::invalid(format!(
            "a lock on several names takes 1 to {MAX_NAMES} names, got {}",
            names.len()
        )));
    }
    for (i, name) in names.iter().enumerate() {
        check_name(name)?;
        if names[..i].contains(name) {
            return Err(Error::invalid(format!(
                "name {} is given twice",
                display_name(name)
            )));
        }
    }
    Ok(())
}

/// On a Redis Cluster one script's keys must share a hash slot: so must the names of a lock
/// on several names.
fn check_one_slot(target: &Target) -> Result<()> {
    let first = target.keys.slot;
    let Some((other, keys)) = target.more.iter().find(|(_, k)| k.slot != first) else {
        return Ok(());
    };
    Err(Error::invalid(format!(
        "the names of a lock on several names must share a Redis Cluster hash slot (a server is \
         a cluster): give them a common hash tag, the part between {{ and }}, as in \
         {{order-42}}:payment and {{order-42}}:stock; {} is in slot {first}, {} in slot {}",
        display_name(&target.name),
        display_name(other),
        keys.slot
    )))
}
