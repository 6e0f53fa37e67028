//! The lock manager: the quorum engine shared by the single-server lock (one server) and
//! Redlock (several), and the wait loop.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{join_all, select_all};
use futures_util::FutureExt;
use redis::Value;

use crate::config::{Builder, Config};
use crate::deadline::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::Lock;
use crate::quorum;
use crate::scripts;
use crate::server::{Failure, Server, Subscription};
use crate::token::{self, display_name};

/// Options of one acquisition, for [`LockManager::acquire_with`].
#[derive(Clone, PartialEq, Eq)]
pub struct AcquireOptions {
    /// How long the lock lives unless extended.
    pub ttl: Duration,
    /// How long to keep trying: `None` waits until acquired, `Some(Duration::ZERO)` tries
    /// once.
    pub wait: Option<Duration>,
    /// A caller-chosen token (non-empty, at most 512 bytes) instead of a random one. Makes the
    /// acquisition re-entrant for that token: acquiring again resets the TTL.
    pub token: Option<Vec<u8>>,
    /// Keep the acquired lock alive in the background (see [`Lock::auto_extend`]).
    pub auto_extend: bool,
    /// With `auto_extend`: the longest the lock is kept alive, counted from acquisition.
    pub max_hold: Option<Duration>,
}

impl AcquireOptions {
    /// Options with the given TTL, waiting forever, with a random token.
    pub fn new(ttl: Duration) -> AcquireOptions {
        AcquireOptions {
            ttl,
            wait: None,
            token: None,
            auto_extend: false,
            max_hold: None,
        }
    }
    /// Sets the wait limit (`None`: forever; zero: one try).
    pub fn wait(mut self, wait: Option<Duration>) -> AcquireOptions {
        self.wait = wait;
        self
    }
    /// Sets a caller-chosen token.
    pub fn token(mut self, token: impl AsRef<[u8]>) -> AcquireOptions {
        self.token = Some(token.as_ref().to_vec());
        self
    }
    /// Keeps the acquired lock alive in the background, for at most `max_hold` since
    /// acquisition when given (see [`Lock::auto_extend`]).
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
            .field("auto_extend", &self.auto_extend)
            .field("max_hold", &self.max_hold)
            .finish()
    }
}

/// A distributed lock manager over one Redis server (the single-server lock) or several
/// independent ones (Redlock, quorum N/2+1).
///
/// Cheap to clone: clones share connections. Servers are contacted in parallel, on first use;
/// a server that is down never makes construction fail.
#[derive(Clone)]
pub struct LockManager {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for LockManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockManager")
            .field("config", &self.inner.config)
            .finish()
    }
}

pub(crate) struct Inner {
    pub config: Config,
    pub servers: Vec<Arc<Server>>,
    pub fence_key: Vec<u8>,
    /// The leading bytes of this manager's tokens, naming its waiters' wake-up channels.
    pub wake_id: [u8; token::WAKE_ID_LEN],
    /// Keeps time limits (the servers hold shares of the same thread).
    pub clock: Clock,
}

/// One server's answer to an acquire.
enum Vote {
    Granted(u64),
    Held { pttl: Option<Duration>, fence: u64 },
    Failed(Failure),
}

/// One server's answer to a release or extend: 1 done, 0 key gone, -1 other token.
type Outcome = std::result::Result<i64, Failure>;

pub(crate) struct Acquired {
    pub fencing_token: u64,
    pub valid_until: Instant,
}

/// How long a waiter handed the lock on fewer than a quorum of servers waits for the other
/// servers' messages before it tries (at most the server timeout): a holder releases on every
/// server at once, so their messages come within moments of each other; when they do not (the
/// servers' queues disagree, a server is slow), an attempt settles it.
const PARTIAL_HANDOFF_WAIT: Duration = Duration::from_millis(50);

/// What the releases' messages say about a waiting acquire call (`Inner::handed_over`).
enum HandOver {
    /// Handed over on a quorum, with this much validity.
    Done(Acquired),
    /// Handed over on some servers, not yet on a quorum.
    Partial,
    /// Handed over, but an attempt must confirm it (too little validity left to count on the
    /// handoff alone, or the servers' fencing counters differ).
    Stale,
    /// No handoff to this call.
    Nothing,
}

enum Attempt {
    Acquired(Acquired),
    Refused {
        holder_pttl: Option<Duration>,
        error: Error,
        /// Retrying cannot help (e.g. WRONGTYPE on a quorum-breaking number of servers).
        fatal: bool,
        /// The attempt's votes were released again: that may have released a lock a server
        /// had handed over, whose message may still arrive.
        undone: bool,
    },
}

impl LockManager {
    /// A manager with default options over the given server URLs
    /// (`redis://[user:password@]host[:port][/db]`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty list, a bad URL or a duplicate server (see
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
        let clock = Clock::share();
        let servers = config
            .servers
            .iter()
            .map(|s| Arc::new(Server::new(s, config.connect_timeout, clock.clone())))
            .collect();
        let mut fence_key = config.prefix.clone();
        fence_key.extend_from_slice(token::FENCE_KEY);
        LockManager {
            inner: Arc::new(Inner {
                config,
                servers,
                fence_key,
                wake_id: token::wake_id(),
                clock,
            }),
        }
    }

    /// The thread that keeps this manager's time limits.
    pub(crate) fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Number of servers a decision needs (N/2+1).
    pub fn quorum(&self) -> usize {
        quorum::quorum(self.inner.servers.len())
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
    /// two retry delays plus two server timeouts; one that crashed while first in line holds
    /// the lock until its TTL runs out, like a crashed holder. Dropping the future cancels
    /// cleanly: votes already won (handed over or not) and the place in line are given up in
    /// the background.
    ///
    /// Too few reachable servers is retried like a held lock, until the wait limit: with no
    /// limit, acquire waits for the servers to come back (cancel it to stop). Failures that
    /// retrying cannot cure (authentication, permissions, a key of the wrong type) end it at
    /// once.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name or TTL (before any network call);
    /// [`Error::NotAcquired`] when the wait limit passes while others hold the lock;
    /// [`Error::Unavailable`] when too few servers answer; [`Error::Redis`] when servers
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
    /// As [`acquire`](Self::acquire); also [`Error::InvalidArgument`] for a bad token.
    pub async fn acquire_with(
        &self,
        name: impl AsRef<[u8]>,
        opts: &AcquireOptions,
    ) -> Result<Lock> {
        let name = name.as_ref();
        token::check_name(name)?;
        let ttl_ms = token::check_ttl(opts.ttl)?;
        let ttl = Duration::from_millis(ttl_ms);
        let token = match &opts.token {
            Some(t) => {
                token::check_token(t)?;
                t.clone()
            }
            None => token::generate(&self.inner.wake_id),
        };
        let key = self.inner.key(name);
        let started = Instant::now();
        let deadline = opts.wait.map(|w| started.checked_add(w));
        let timeout = self.inner.server_timeout(ttl);
        // A caller that waits takes a place in each server's queue at its first refusal; its
        // arrival time (the same on every server) orders the queue, and a release hands the
        // lock to the first in line. Leaving without the lock (wait limit, error,
        // cancellation) gives the place up, through the guard.
        let place = (opts.wait != Some(Duration::ZERO)).then(|| Place::new(&self.inner, timeout));
        let mut leave_queue = place
            .as_ref()
            .map(|_| UndoGuard::new(&self.inner, name, &key, &token, timeout));
        let mut subscriptions: Option<Vec<Subscription>> = place
            .as_ref()
            .and_then(|_| self.inner.join_subscribed(name, &token));
        let mut attempts = 0u32;
        // A lock a release handed over while this call waited (see `handed_over`).
        let mut handed: Option<Acquired> = None;
        // Handoffs are taken on the messages' word until an attempt of this call is undone:
        // the undo may have released a server's handoff whose message is still on its way,
        // and from then on only attempts count.
        let mut trust_handoffs = true;
        loop {
            let handed_over = handed.is_some();
            let attempt = match handed.take() {
                Some(a) => Attempt::Acquired(a),
                None => {
                    for s in subscriptions.iter_mut().flatten() {
                        s.mark_seen();
                    }
                    attempts += 1;
                    self.inner
                        .attempt(name, &key, &token, ttl, timeout, place.as_ref())
                        .await
                }
            };
            let (holder_pttl, error, fatal) = match attempt {
                Attempt::Acquired(a) => {
                    tracing::debug!(
                        target: "fencelock",
                        lock = %display_name(name),
                        attempts,
                        handed_over,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        fencing_token = a.fencing_token,
                        "acquired"
                    );
                    // Places left on servers that did not grant go with the lock's release.
                    if let Some(g) = leave_queue.as_mut() {
                        g.disarm();
                    }
                    let lock =
                        Lock::new(Arc::clone(&self.inner), name.to_vec(), key, token, ttl, a);
                    if opts.auto_extend {
                        lock.auto_extend(opts.max_hold);
                    }
                    return Ok(lock);
                }
                Attempt::Refused {
                    holder_pttl,
                    error,
                    fatal,
                    undone,
                } => {
                    trust_handoffs &= !undone;
                    (holder_pttl, error, fatal)
                }
            };
            let now = Instant::now();
            let out_of_time = matches!(deadline, Some(Some(d)) if now >= d);
            if fatal || out_of_time {
                tracing::debug!(
                    target: "fencelock",
                    lock = %display_name(name),
                    attempts,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    error = %error,
                    "acquire failed"
                );
                // Give the place in the queue up before returning, so that a caller's next
                // try-once (or anyone else's) is not refused on its account.
                if let Some(mut g) = leave_queue.take() {
                    g.leave().await;
                }
            }
            if fatal {
                return Err(error);
            }
            let remaining = match deadline {
                None | Some(None) => None,
                Some(Some(_)) if out_of_time => {
                    return Err(Error::new(
                        error.kind(),
                        format!(
                            "{} (gave up after {attempts} attempt{} in {} ms)",
                            error.message(),
                            if attempts == 1 { "" } else { "s" },
                            started.elapsed().as_millis()
                        ),
                    ))
                }
                Some(Some(d)) => Some(d - now),
            };
            let Some(subs) = subscriptions.as_mut() else {
                // First refusal, not yet listening (see `join_subscribed`): listen for the
                // holder's release, then try again at once so a release that came before the
                // subscription is not missed.
                // Subscribing may need a new connection: allow it at least 100 ms.
                let allowed = timeout.max(Duration::from_millis(100));
                let bound = remaining.map_or(allowed, |r| r.min(allowed));
                subscriptions = Some(self.inner.subscribe(name, &token, bound).await);
                continue;
            };
            let random: f64 = rand::random();
            let cfg = &self.inner.config;
            let mut sleep =
                quorum::retry_sleep(holder_pttl, cfg.retry_delay, cfg.retry_jitter, random);
            if let Some(r) = remaining {
                sleep = sleep.min(r);
            }
            // A release hands the lock to the first waiter in line and tells only it, so
            // waiters do not race each other in lockstep; the others sleep on until their turn
            // (or their timer).
            let Some(place) = place.as_ref().filter(|_| !subs.is_empty()) else {
                tokio::time::sleep(sleep).await;
                continue;
            };
            let mut wake_by = tokio::time::Instant::now() + sleep;
            let mut partial_by = None;
            loop {
                let notified = select_all(subs.iter_mut().map(|s| s.notified().boxed()));
                let woke = tokio::time::timeout_at(wake_by, notified).await.is_ok();
                let handover = if trust_handoffs {
                    self.inner.handed_over(subs, place, ttl, started)
                } else {
                    HandOver::Nothing
                };
                match handover {
                    HandOver::Done(a) => handed = Some(a),
                    // Other servers' messages are on their way (they release in parallel):
                    // wait for them a little, then try.
                    HandOver::Partial if woke => {
                        let by = *partial_by.get_or_insert_with(|| {
                            tokio::time::Instant::now() + timeout.min(PARTIAL_HANDOFF_WAIT)
                        });
                        wake_by = wake_by.min(by);
                        continue;
                    }
                    HandOver::Partial | HandOver::Stale | HandOver::Nothing => {}
                }
                break;
            }
        }
    }

    /// Releases `name` if it is held with `token`, without a lock object (for locks handed
    /// across processes).
    ///
    /// # Errors
    /// [`Error::NotHeld`] when fewer than a quorum deleted it (the message says whether the key
    /// was gone or held by another token); [`Error::Unavailable`] when too few servers
    /// answered; [`Error::InvalidArgument`] for a bad name or token.
    pub async fn release_by_token(
        &self,
        name: impl AsRef<[u8]>,
        token: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (name, token) = (name.as_ref(), token.as_ref());
        token::check_name(name)?;
        token::check_token(token)?;
        let key = self.inner.key(name);
        let timeout = self
            .inner
            .config
            .server_timeout
            .unwrap_or(Duration::from_secs(1));
        self.inner.release(name, &key, token, timeout).await
    }

    /// Runs `f` while holding `name`: acquires (waiting until acquired), extends the lock in
    /// the background every ttl/3 while `f` runs, then releases it.
    ///
    /// # Errors
    /// Any error of [`acquire`](Self::acquire); [`Error::NotHeld`] when the lock was lost while
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

impl Inner {
    pub fn key(&self, name: &[u8]) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.config.prefix.len() + name.len());
        key.extend_from_slice(&self.config.prefix);
        key.extend_from_slice(name);
        key
    }

    /// The wait queue of `name` (token -> arrival), its deadlines (token -> server time after
    /// which a waiter that stopped trying loses its place) and the waiters' TTLs (token -> ms,
    /// for the release that hands the lock over).
    fn queue_keys(&self, name: &[u8]) -> [Vec<u8>; 3] {
        let mut queue = self.config.prefix.clone();
        queue.extend_from_slice(token::QUEUE_PREFIX);
        queue.extend_from_slice(name);
        let mut deadlines = queue.clone();
        deadlines.extend_from_slice(b":deadlines");
        let mut ttls = queue.clone();
        ttls.extend_from_slice(b":ttls");
        [queue, deadlines, ttls]
    }

    /// How long a waiter keeps its place in the queue without a new attempt: waiters try at
    /// least every retry delay (plus one attempt's time), so two of those and a margin.
    fn place_lasts(&self, timeout: Duration) -> Duration {
        (self.config.retry_delay + self.config.retry_jitter + timeout) * 2
            + Duration::from_millis(250)
    }

    fn channel(&self, name: &[u8]) -> Vec<u8> {
        let mut c = self.config.prefix.clone();
        c.extend_from_slice(token::CHANNEL_PREFIX);
        c.extend_from_slice(name);
        c
    }

    pub fn server_timeout(&self, ttl: Duration) -> Duration {
        self.config
            .server_timeout
            .unwrap_or_else(|| quorum::default_server_timeout(ttl))
    }

    pub fn drift_factor(&self) -> f64 {
        self.config.drift_factor
    }

    pub(crate) fn n(&self) -> usize {
        self.servers.len()
    }

    /// One acquisition attempt on every server in parallel, undone everywhere if it fails.
    async fn attempt(
        self: &Arc<Self>,
        name: &[u8],
        key: &[u8],
        token: &[u8],
        ttl: Duration,
        timeout: Duration,
        place: Option<&Place>,
    ) -> Attempt {
        let ttl_ms = ttl.as_millis().to_string();
        let start = Instant::now();
        let mut undo = UndoGuard::new(self, name, key, token, timeout);
        let [queue, deadlines, ttls] = self.queue_keys(name);
        let ttl_arg = match place {
            Some(p) => format!("{ttl_ms} {}", p.arg),
            None => ttl_ms,
        };
        let votes: Vec<Vote> = join_all(self.servers.iter().map(|s| {
            let keys: [&[u8]; 5] = [key, &self.fence_key, &queue, &deadlines, &ttls];
            let args: [&[u8]; 2] = [token, ttl_arg.as_bytes()];
            async move {
                match s
                    .eval::<Value>(&scripts::ACQUIRE, &keys, &args, timeout)
                    .await
                {
                    Ok(v) => parse_vote(v),
                    Err(f) => Vote::Failed(f),
                }
            }
        }))
        .await;

        let granted = votes
            .iter()
            .filter(|v| matches!(v, Vote::Granted(_)))
            .count();
        tracing::trace!(
            target: "fencelock",
            lock = %display_name(name),
            servers = self.n(),
            answered = votes.iter().filter(|v| !matches!(v, Vote::Failed(_))).count(),
            granted,
            elapsed_us = start.elapsed().as_micros() as u64,
            "acquire attempt"
        );
        let holder_pttl = votes
            .iter()
            .filter_map(|v| match v {
                Vote::Held { pttl, .. } => *pttl,
                _ => None,
            })
            .max();
        if !quorum::has_quorum(granted, self.n()) {
            let (error, fatal) = self.refusal(name, &votes);
            // Only a server that granted, or that may have acted on a call whose reply was
            // lost, can hold this token: when every server answered "held", nothing to undo.
            let maybe_written = votes.iter().any(|v| {
                matches!(
                    v,
                    Vote::Granted(_) | Vote::Failed(Failure::Timeout(_) | Failure::Connection(_))
                )
            });
            if maybe_written {
                undo.run().await;
            } else {
                undo.disarm();
            }
            return Attempt::Refused {
                holder_pttl,
                error,
                fatal,
                undone: maybe_written,
            };
        }

        // Fencing: the token is the largest counter any server reported; servers that reported
        // less are raised to it, and a quorum must hold at least it.
        let counters = votes.iter().filter_map(|v| match v {
            Vote::Granted(f) | Vote::Held { fence: f, .. } => Some(*f),
            Vote::Failed(_) => None,
        });
        let fence = quorum::fencing_max(counters).unwrap_or(0);
        let behind: Vec<&Arc<Server>> = self
            .servers
            .iter()
            .zip(&votes)
            .filter(
                |(_, v)| matches!(v, Vote::Granted(f) | Vote::Held { fence: f, .. } if *f < fence),
            )
            .map(|(s, _)| s)
            .collect();
        let mut at_fence = votes
            .iter()
            .filter(|v| matches!(v, Vote::Granted(f) | Vote::Held { fence: f, .. } if *f >= fence))
            .count();
        if !behind.is_empty() {
            let fence_arg = fence.to_string();
            let raised = join_all(behind.iter().map(|s| {
                let keys: [&[u8]; 1] = [&self.fence_key];
                let args: [&[u8]; 1] = [fence_arg.as_bytes()];
                async move {
                    s.eval::<u64>(&scripts::RAISE_FENCE, &keys, &args, timeout)
                        .await
                }
            }))
            .await;
            at_fence += raised
                .iter()
                .filter(|r| matches!(r, Ok(v) if *v >= fence))
                .count();
        }
        if !quorum::has_quorum(at_fence, self.n()) {
            undo.run().await;
            return Attempt::Refused {
                holder_pttl,
                error: Error::Unavailable(format!(
                    "lock {}: only {at_fence} of {} servers confirmed fencing token {fence}, quorum is {}",
                    display_name(name),
                    self.n(),
                    quorum::quorum(self.n())
                )),
                fatal: false,
                undone: true,
            };
        }

        let Some(validity) = quorum::validity(ttl, start.elapsed(), self.drift_factor()) else {
            undo.run().await;
            return Attempt::Refused {
                holder_pttl,
                error: Error::NotAcquired(format!(
                    "lock {}: acquiring took {} ms, too long for a ttl of {} ms with the drift allowance; it would have been expired when handed out",
                    display_name(name),
                    start.elapsed().as_millis(),
                    ttl.as_millis()
                )),
                fatal: false,
                undone: true,
            };
        };
        undo.disarm();
        Attempt::Acquired(Acquired {
            fencing_token: fence,
            valid_until: Instant::now() + validity,
        })
    }

    /// The error of a refused attempt, and whether retrying is hopeless.
    fn refusal(&self, name: &[u8], votes: &[Vote]) -> (Error, bool) {
        let n = self.n();
        let q = quorum::quorum(n);
        let held = votes
            .iter()
            .filter(|v| matches!(v, Vote::Held { .. }))
            .count();
        let granted = votes
            .iter()
            .filter(|v| matches!(v, Vote::Granted(_)))
            .count();
        let failures = self.failures(votes.iter().map(|v| match v {
            Vote::Failed(f) => Some(f),
            _ => None,
        }));
        let permanent = votes
            .iter()
            .filter(|v| matches!(v, Vote::Failed(f) if f.is_permanent()))
            .count();
        let answered = held + granted;
        let lock = display_name(name);
        if !quorum::quorum_possible(permanent, n) {
            let replies = votes
                .iter()
                .any(|v| matches!(v, Vote::Failed(Failure::Reply(_))));
            let kind = if replies {
                ErrorKind::Redis
            } else {
                ErrorKind::Unavailable
            };
            return (Error::new(kind, format!("lock {lock}: {failures}")), true);
        }
        if answered < q {
            return (
                Error::Unavailable(format!(
                    "lock {lock}: only {answered} of {n} servers answered, quorum is {q}: {failures}"
                )),
                false,
            );
        }
        let mut msg = if held > 0 {
            format!("lock {lock} is held by another owner ({held} of {n} servers)")
        } else {
            format!("lock {lock}: no quorum agreed")
        };
        if !failures.is_empty() {
            msg.push_str(&format!("; {failures}"));
        }
        (Error::NotAcquired(msg), false)
    }

    /// `label: failure` for each failed server, comma-separated.
    fn failures<'a>(&self, per_server: impl Iterator<Item = Option<&'a Failure>>) -> String {
        self.servers
            .iter()
            .zip(per_server)
            .filter_map(|(s, f)| f.map(|f| format!("{} {f}", s.label)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs a compare-and-X script on every server in parallel.
    async fn on_all(
        &self,
        script: &redis::Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        timeout: Duration,
    ) -> Vec<Outcome> {
        join_all(
            self.servers
                .iter()
                .map(|s| async move { s.eval::<i64>(script, keys, args, timeout).await }),
        )
        .await
    }

    /// Judges release/extend outcomes: Ok when a quorum did it, else NotHeld or Unavailable.
    fn judge(&self, what: &str, name: &[u8], outcomes: &[Outcome]) -> Result<()> {
        let n = self.n();
        let q = quorum::quorum(n);
        let done = outcomes.iter().filter(|o| matches!(o, Ok(1))).count();
        if done >= q {
            return Ok(());
        }
        let gone = outcomes.iter().filter(|o| matches!(o, Ok(0))).count();
        let other = outcomes.iter().filter(|o| matches!(o, Ok(-1))).count();
        let failures = self.failures(outcomes.iter().map(|o| o.as_ref().err()));
        let lock = display_name(name);
        if done + gone + other < q {
            if outcomes
                .iter()
                .all(|o| matches!(o, Err(f) if f.is_permanent()))
            {
                let kind = if outcomes.iter().any(|o| matches!(o, Err(Failure::Reply(_)))) {
                    ErrorKind::Redis
                } else {
                    ErrorKind::Unavailable
                };
                return Err(Error::new(
                    kind,
                    format!("{what} of lock {lock}: {failures}"),
                ));
            }
            return Err(Error::Unavailable(format!(
                "{what} of lock {lock}: only {} of {n} servers answered, quorum is {q}: {failures}",
                done + gone + other
            )));
        }
        let mut why = Vec::new();
        if gone > 0 {
            why.push(format!("the key was gone (expired or deleted) on {gone}"));
        }
        if other > 0 {
            why.push(format!("another owner holds it on {other}"));
        }
        Err(Error::NotHeld(format!(
            "{what} of lock {lock} failed: this token holds it on {done} of {n} servers, quorum is {q}; {}",
            why.join(", ")
        )))
    }

    /// Compare-and-delete on every server; publishes on the release channel.
    pub async fn release(
        &self,
        name: &[u8],
        key: &[u8],
        token: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        self.release_and(name, key, token, timeout, true).await
    }

    /// Compare-and-delete on every server; with `leave`, the token also gives up its place in
    /// the wait queue (a waiter that stops waiting; a holder's leftover places).
    async fn release_and(
        &self,
        name: &[u8],
        key: &[u8],
        token: &[u8],
        timeout: Duration,
        leave: bool,
    ) -> Result<()> {
        let mut leave_channel = vec![if leave { b'1' } else { b'0' }];
        leave_channel.extend_from_slice(&self.channel(name));
        let [queue, deadlines, ttls] = self.queue_keys(name);
        let start = Instant::now();
        let outcomes = self
            .on_all(
                &scripts::RELEASE,
                &[key, &queue, &deadlines, &ttls, &self.fence_key],
                &[token, &leave_channel],
                timeout,
            )
            .await;
        let judged = self.judge("release", name, &outcomes);
        trace_outcome("release", name, &outcomes, start, &judged);
        judged
    }

    /// Compare-and-PEXPIRE on every server. On success returns the new end of validity. When
    /// no quorum holds it any more, the token is deleted where it survived.
    pub async fn extend(
        &self,
        name: &[u8],
        key: &[u8],
        token: &[u8],
        ttl: Duration,
    ) -> Result<Instant> {
        let ttl_ms = token::check_ttl(ttl)?;
        let ttl = Duration::from_millis(ttl_ms);
        let ttl_arg = ttl_ms.to_string();
        let start = Instant::now();
        let outcomes = self
            .on_all(
                &scripts::EXTEND,
                &[key],
                &[token, ttl_arg.as_bytes()],
                self.server_timeout(ttl),
            )
            .await;
        let judged = self.judge("extend", name, &outcomes);
        trace_outcome("extend", name, &outcomes, start, &judged);
        if let Err(e) = judged {
            if e.kind() == ErrorKind::NotHeld {
                let _ = self
                    .release(name, key, token, self.server_timeout(ttl))
                    .await;
            }
            return Err(e);
        }
        match quorum::validity(ttl, start.elapsed(), self.drift_factor()) {
            Some(v) => Ok(Instant::now() + v),
            None => Err(Error::NotHeld(format!(
                "extend of lock {}: took {} ms, longer than the ttl of {} ms allows",
                display_name(name),
                start.elapsed().as_millis(),
                ttl.as_millis()
            ))),
        }
    }

    /// Whether releases handed the lock to this acquire call (named by its place's arrival) on
    /// a quorum of servers, all at the same fencing counter. Each of them set the key with the
    /// call's TTL after the call had taken its place there, hence after `started` on this
    /// machine's clock: the validity counts from there. When less than half the TTL is left
    /// that way, [`HandOver::Stale`]: an attempt resets the TTL (the key holds this token).
    fn handed_over(
        &self,
        subs: &[Subscription],
        place: &Place,
        ttl: Duration,
        started: Instant,
    ) -> HandOver {
        let fences: Vec<u64> = subs
            .iter()
            .filter_map(Subscription::handoff)
            .filter(|h| h.arrival == place.arrival)
            .map(|h| h.fence)
            .collect();
        let Some(&fence) = fences.iter().max() else {
            return HandOver::Nothing;
        };
        if !quorum::has_quorum(fences.len(), self.n()) {
            return HandOver::Partial;
        }
        let at_fence = fences.iter().filter(|&&f| f == fence).count();
        if !quorum::has_quorum(at_fence, self.n()) {
            return HandOver::Stale;
        }
        match quorum::validity(ttl, started.elapsed(), self.drift_factor()) {
            Some(v) if v >= ttl / 2 => HandOver::Done(Acquired {
                fencing_token: fence,
                valid_until: Instant::now() + v,
            }),
            _ => HandOver::Stale,
        }
    }

    /// The waiter's wake-up channel for the lock: the lock's channel, `|`, the token's
    /// [`wake_part`](token::wake_part).
    fn wake_channel(&self, name: &[u8], token: &[u8]) -> Vec<u8> {
        let mut channel = self.channel(name);
        channel.push(b'|');
        channel.extend_from_slice(token::wake_part(token));
        channel
    }

    /// Joins the waiter's wake-up channel with no network call, when every server's
    /// subscriber already listens to it (another waiter of this manager, or a recent wait on
    /// the same lock): then a waiter joins before its first attempt, and a refusal needs no
    /// second attempt to cover a release that came before the subscription.
    fn join_subscribed(&self, name: &[u8], token: &[u8]) -> Option<Vec<Subscription>> {
        let channel = self.wake_channel(name, token);
        self.servers
            .iter()
            .map(|s| s.join_subscribed(&channel, token))
            .collect()
    }

    /// Subscribes to the waiter's wake-up channel for the lock (the lock's channel, `|`, the
    /// token's [`wake_part`](token::wake_part): shared by this manager's waiters) on every
    /// server that answers in time.
    async fn subscribe(&self, name: &[u8], token: &[u8], timeout: Duration) -> Vec<Subscription> {
        let channel = self.wake_channel(name, token);
        join_all(
            self.servers
                .iter()
                .map(|s| s.subscribe(&channel, token, timeout)),
        )
        .await
        .into_iter()
        .filter_map(|r| r.ok())
        .collect()
    }
}

fn trace_outcome<T>(
    what: &str,
    name: &[u8],
    outcomes: &[Outcome],
    start: Instant,
    judged: &Result<T>,
) {
    tracing::debug!(
        target: "fencelock",
        lock = %display_name(name),
        servers = outcomes.len(),
        answered = outcomes.iter().filter(|o| o.is_ok()).count(),
        elapsed_us = start.elapsed().as_micros() as u64,
        error = judged.as_ref().err().map(tracing::field::display),
        "{what}"
    );
}

fn parse_vote(v: Value) -> Vote {
    let bad = |v: &Value| Vote::Failed(Failure::Reply(format!("acquire script returned {v:?}")));
    let Value::Array(items) = &v else {
        return bad(&v);
    };
    let ints: Vec<i64> = items
        .iter()
        .filter_map(|i| match i {
            Value::Int(n) => Some(*n),
            _ => None,
        })
        .collect();
    match ints.as_slice() {
        [1, fence] if *fence >= 0 => Vote::Granted(*fence as u64),
        [0, pttl, fence] if *fence >= 0 => Vote::Held {
            pttl: u64::try_from(*pttl).ok().map(Duration::from_millis),
            fence: *fence as u64,
        },
        _ => bad(&v),
    }
}

/// A waiter's place in the servers' wait queues: when it arrived (microseconds of its own
/// wall clock, the same on every server so that they all order waiters alike) and how long
/// the place lasts without a new attempt.
pub(crate) struct Place {
    /// The arrival: it also names this acquire call in the messages of releases that hand the
    /// lock over.
    arrival: u64,
    /// The acquire script's argument after the TTL: "ARRIVAL LASTS".
    arg: String,
}

impl Place {
    fn new(inner: &Inner, timeout: Duration) -> Place {
        let arrival = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let lasts = inner.place_lasts(timeout).as_millis().max(1);
        Place {
            arrival,
            arg: format!("{arrival} {lasts}"),
        }
    }
}

/// Releases an attempt's votes on every server unless disarmed: awaited on the normal path,
/// spawned in the background when the attempt's future is dropped mid-way (on the runtime the
/// attempt started on, since the drop may happen outside it).
struct UndoGuard {
    armed: Option<Undo>,
}

struct Undo {
    inner: Arc<Inner>,
    name: Vec<u8>,
    key: Vec<u8>,
    token: Vec<u8>,
    /// Per-server timeout of the undo when awaited: the attempt's (a dead server must not
    /// hold a waiter up longer than it held up the attempt).
    timeout: Duration,
    runtime: Option<tokio::runtime::Handle>,
}

impl Undo {
    /// Releases the attempt's votes; with `leave`, also the waiter's place in the queue.
    async fn run(&self, leave: bool) {
        let _ = self
            .inner
            .release_and(&self.name, &self.key, &self.token, self.timeout, leave)
            .await;
    }
}

impl UndoGuard {
    fn new(
        inner: &Arc<Inner>,
        name: &[u8],
        key: &[u8],
        token: &[u8],
        timeout: Duration,
    ) -> UndoGuard {
        UndoGuard {
            armed: Some(Undo {
                inner: Arc::clone(inner),
                name: name.to_vec(),
                key: key.to_vec(),
                token: token.to_vec(),
                timeout,
                runtime: tokio::runtime::Handle::try_current().ok(),
            }),
        }
    }

    fn disarm(&mut self) {
        self.armed = None;
    }

    /// Gives the waiter's place in the queue up (and any vote), and waits for it; cancel-safe
    /// like [`run`](Self::run).
    async fn leave(&mut self) {
        self.finish(true).await;
    }

    /// Runs the undo (keeping the waiter's place in the queue) and waits for it.
    async fn run(&mut self) {
        self.finish(false).await;
    }

    /// The undo runs as its own task, so that cancelling the attempt while it waits (an
    /// aborted acquire dropping its future) cannot stop the undo half-way and leave a vote
    /// behind on some server until its TTL runs out.
    async fn finish(&mut self, leave: bool) {
        if let Some(undo) = self.armed.take() {
            match undo.runtime.clone() {
                Some(runtime) => {
                    let _ = runtime.spawn(async move { undo.run(leave).await }).await;
                }
                None => undo.run(leave).await,
            }
        }
    }
}

/// Timeout of a background clean-up call to one server.
pub(crate) const UNDO_TIMEOUT: Duration = Duration::from_secs(1);

impl Drop for UndoGuard {
    fn drop(&mut self) {
        if let Some(mut undo) = self.armed.take() {
            if let Some(runtime) = undo.runtime.clone() {
                // Nobody waits for it: give slow servers longer.
                undo.timeout = undo.timeout.max(UNDO_TIMEOUT);
                runtime.spawn(async move { undo.run(true).await });
            }
        }
    }
}
