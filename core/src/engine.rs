//! The engine under a manager: its servers, configuration and clock, and the calls made on
//! every server at once with the quorum's verdict on them (release, extend). An acquisition
//! attempt builds on it in [`crate::attempt`], the wait between attempts in
//! [`crate::acquire`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::cleanup::Cleanups;
use crate::config::Config;
use crate::deadline::Clock;
use crate::deferred::Deferred;
use crate::error::{Error, ErrorKind, Result};
use crate::failure::ServerFailure;
use crate::identity::Identities;
use crate::keys::{display_name, LockKeys};
use crate::kind::LeaseKind;
use crate::lost::LostReason;
use crate::queue::Place;
use crate::quorum;
use crate::scripts::{Compared, ScriptCall};
use crate::server::Server;
use crate::timing;
use crate::token::{self, WAKE_ID_LEN};

/// The servers and settings of one manager (shared by its clones and its locks).
pub(crate) struct Engine {
    pub config: Config,
    pub servers: Vec<Arc<Server>>,
    /// The leading bytes of this manager's tokens, naming its waiters' wake-up channels.
    pub wake_id: [u8; WAKE_ID_LEN],
    /// Keeps time limits (the servers hold shares of the same thread).
    pub clock: Clock,
    /// The shortest TTL the validity rule can grant with this drift factor
    /// ([`quorum::min_ttl`]), worked out once.
    pub min_ttl: Duration,
    /// Releases and undos left running in the background ([`crate::cleanup`]).
    pub cleanups: Arc<Cleanups>,
    /// Its locks' auto-extensions, each started when first due ([`crate::deferred`]).
    pub deferred: Arc<Deferred>,
}

/// One lock as a call addresses it: its name, its keys, the token acting on it and the kind
/// of lease; a lock on several names has the further names in `more` (acquired, extended and
/// released together).
#[derive(Debug)]
pub(crate) struct Target {
    pub name: Vec<u8>,
    pub keys: LockKeys,
    pub more: Vec<(Vec<u8>, LockKeys)>,
    pub token: Vec<u8>,
    /// A lock, or a semaphore's permits or a read-write lock's share or hold (one name).
    pub kind: LeaseKind,
    /// Set when the acquisition got the lock after waiting in line (see
    /// [`note_waited`](Self::note_waited)).
    waited: AtomicBool,
}

impl Target {
    /// How many names the lock has.
    pub fn count(&self) -> usize {
        1 + self.more.len()
    }

    /// Every name, the first first.
    pub fn names(&self) -> impl Iterator<Item = &[u8]> {
        std::iter::once(self.name.as_slice()).chain(self.more.iter().map(|(n, _)| n.as_slice()))
    }

    /// Every name's keys, in the names' order.
    pub fn all_keys(&self) -> Vec<&LockKeys> {
        std::iter::once(&self.keys)
            .chain(self.more.iter().map(|(_, k)| k))
            .collect()
    }

    /// The lock as messages name it: its name, and how many more it has or what of it the
    /// lease holds.
    pub fn label(&self) -> String {
        match (self.more.len(), self.kind) {
            (0, LeaseKind::Lock) => display_name(&self.name),
            (0, LeaseKind::Permits { .. }) => {
                format!("{} (semaphore: {})", display_name(&self.name), self.kind)
            }
            (0, _) => format!(
                "{} (read-write lock: {})",
                display_name(&self.name),
                self.kind
            ),
            (more, _) => format!("{} (and {more} more names)", display_name(&self.name)),
        }
    }

    /// The lock's name as a span's `lock` attribute: the name as text (bytes that are not
    /// UTF-8 replaced), and how many more names a lock on several has. Written only when a
    /// subscriber's layer reads the field (nothing is built for a span no one formats).
    pub fn span_name(&self) -> SpanName<'_> {
        SpanName {
            name: &self.name,
            more: self.more.len(),
        }
    }

    /// How many of `n` servers must grant and hold the lease ([`LeaseKind::quorum`]).
    pub fn quorum(&self, n: usize) -> usize {
        self.kind.quorum(n)
    }

    /// The acquire script's call (see [`ScriptCall::acquire`]).
    pub fn acquire_call(&self, ttl: Duration, place: Option<&Place>, own: bool) -> ScriptCall {
        match (self.more.is_empty(), self.kind.is_permits()) {
            (true, false) => ScriptCall::acquire(&self.keys, &self.token, ttl, place, own),
            (true, true) => {
                ScriptCall::permits_acquire(&self.keys, &self.token, (ttl, self.kind), place, own)
            }
            (false, _) => ScriptCall::acquire_many(&self.all_keys(), &self.token, ttl, place, own),
        }
    }

    /// Notes that the acquisition got the lock after waiting in line: someone was in line then
    /// and likely still is, so its release goes straight to the queue's code (the release
    /// script's mode 3), without the lean path's check for an empty queue.
    pub fn note_waited(&self) {
        self.waited.store(true, Ordering::Relaxed);
    }

    /// The release script's call (`mode`: 0 keep the place in the queue, 1 leave it too, 2
    /// leave the place only).
    pub fn release_call(&self, mode: u8) -> ScriptCall {
        if self.kind.is_permits() {
            return ScriptCall::permits_release(&self.keys, &self.token, mode);
        }
        match self.more.is_empty() {
            true if mode == 2 => ScriptCall::leave_queue(&self.keys, &self.token),
            true if mode == 1 && self.waited.load(Ordering::Relaxed) => {
                ScriptCall::release_after_waiting(&self.keys, &self.token)
            }
            true => ScriptCall::release(&self.keys, &self.token, mode == 1),
            false => ScriptCall::release_many(&self.all_keys(), &self.token, mode),
        }
    }

    /// The extend script's call (`add`: to the remaining TTL).
    pub fn extend_call(&self, ttl: Duration, add: bool) -> ScriptCall {
        if self.kind.is_permits() {
            return ScriptCall::permits_extend(&self.keys, &self.token, ttl, add);
        }
        match (self.more.is_empty(), add) {
            (true, false) => ScriptCall::extend(&self.keys, &self.token, ttl),
            (true, true) => ScriptCall::extend_by(&self.keys, &self.token, ttl),
            (false, _) => ScriptCall::extend_many(&self.all_keys(), &self.token, ttl, add),
        }
    }
}

/// What a successful acquisition established.
#[derive(Debug, Clone)]
pub(crate) struct Acquired {
    pub fencing_token: u64,
    /// The fencing tokens of a lock's further names (empty for one name).
    pub more_fences: Vec<u64>,
    pub valid_until: Instant,
}

/// One server's answer to a release or extend.
pub(crate) type Outcome = std::result::Result<Compared, ServerFailure>;

impl Engine {
    /// The engine of a checked configuration; nothing is contacted yet.
    pub fn new(config: Config) -> Engine {
        let clock = Clock::share();
        let preflight = Arc::new(ScriptCall::preflight(&config.prefix));
        let identities = Arc::new(Identities::default());
        let servers = config
            .servers
            .iter()
            .map(|s| {
                let shared = (Arc::clone(&preflight), Arc::clone(&identities));
                let only = config.servers.len() == 1;
                Arc::new(Server::new(
                    s,
                    (config.connect_timeout, config.replica_ack, only),
                    clock.clone(),
                    shared,
                    config.loop_io.as_ref(),
                ))
            })
            .collect();
        Engine {
            min_ttl: quorum::min_ttl(config.drift_factor),
            config,
            servers,
            wake_id: token::wake_id(),
            clock,
            cleanups: Arc::default(),
            deferred: Arc::default(),
        }
    }

    /// [`timing::check_ttl`], and also at least [`min_ttl`](Engine::min_ttl): a shorter lock
    /// could never be granted (an acquire without a wait limit would wait forever).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument), naming the minimum.
    pub fn check_ttl(&self, ttl: Duration) -> Result<Duration> {
        let ms = timing::check_ttl(ttl)?;
        if ttl < self.min_ttl {
            return Err(Error::invalid(format!(
                "ttl must be at least {} ms, got {ttl:?}: with drift_factor {} a shorter lock \
                 can never be granted (its validity, ttl - elapsed - ttl * drift_factor - 2 ms, \
                 would be zero or less)",
                self.min_ttl.as_millis(),
                self.drift_factor()
            )));
        }
        Ok(Duration::from_millis(ms))
    }

    /// The call target for lock `name` with `token` (both already checked).
    pub fn target(&self, name: &[u8], token: Vec<u8>) -> Target {
        self.target_of(name, token, LeaseKind::Lock)
    }

    /// The call target for a lease of `kind` on `name` with `token` (all already checked).
    pub fn target_of(&self, name: &[u8], token: Vec<u8>, kind: LeaseKind) -> Target {
        Target {
            name: name.to_vec(),
            keys: LockKeys::new(&self.config.prefix, name),
            more: Vec::new(),
            token,
            kind,
            waited: AtomicBool::new(false),
        }
    }

    /// The call target for a lock on all of `names` (at least one; each already checked).
    pub fn target_many(&self, names: &[Vec<u8>], token: Vec<u8>) -> Target {
        let keys = |n: &[u8]| LockKeys::new(&self.config.prefix, n);
        Target {
            name: names[0].clone(),
            keys: keys(&names[0]),
            more: names[1..].iter().map(|n| (n.clone(), keys(n))).collect(),
            token,
            kind: LeaseKind::Lock,
            waited: AtomicBool::new(false),
        }
    }

    /// Whether any of the servers is a Redis Cluster (where one call's keys share a slot).
    pub fn has_cluster(&self) -> bool {
        self.config.servers.iter().any(|s| s.cluster.is_some())
    }

    /// Number of servers.
    pub fn n(&self) -> usize {
        self.servers.len()
    }

    /// The per-server timeout of calls for a lock of `ttl`.
    pub fn server_timeout(&self, ttl: Duration) -> Duration {
        self.config
            .server_timeout
            .unwrap_or_else(|| timing::default_server_timeout(ttl))
    }

    pub fn drift_factor(&self) -> f64 {
        self.config.drift_factor
    }

    /// How long a waiter's place lasts between attempts of `timeout` each.
    pub fn place_lasts(&self, timeout: Duration) -> Duration {
        timing::place_lasts(self.config.retry_delay, self.config.retry_jitter, timeout)
    }

    /// `label failure` for each failed server, comma-separated.
    pub fn failures<'a>(
        &self,
        per_server: impl Iterator<Item = Option<&'a ServerFailure>>,
    ) -> String {
        self.servers
            .iter()
            .zip(per_server)
            .filter_map(|(s, f)| f.map(|f| format!("{} {f}", s.label)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs a compare-and-X call on every server in parallel.
    async fn on_all(&self, call: &ScriptCall, timeout: Duration) -> Vec<Outcome> {
        join_all(self.servers.iter().map(|s| async move {
            let reply = s.eval::<i64>(call, timeout).await?;
            Compared::parse(reply).map_err(ServerFailure::Reply)
        }))
        .await
    }

    /// Judges release/extend outcomes of `t`: Ok when a quorum did it, else NotHeld or
    /// Unavailable.
    fn judge(&self, what: &str, t: &Target, outcomes: &[Outcome]) -> Result<()> {
        let n = self.n();
        let q = t.quorum(n);
        let lock = &t.label();
        let count = |c: Compared| {
            outcomes
                .iter()
                .filter(|o| matches!(o, Ok(x) if *x == c))
                .count()
        };
        let (done, gone, other) = (
            count(Compared::Done),
            count(Compared::Gone),
            count(Compared::Other),
        );
        if done >= q {
            return Ok(());
        }
        let failures = self.failures(outcomes.iter().map(|o| o.as_ref().err()));
        if done + gone + other < q {
            if outcomes
                .iter()
                .all(|o| matches!(o, Err(f) if f.is_permanent()))
            {
                let kind =
                    ServerFailure::error_kind(outcomes.iter().filter_map(|o| o.as_ref().err()));
                return Err(Error::new(
                    kind,
                    format!("{what} of lock {lock}: {failures}"),
                ));
            }
            return Err(Error::unavailable(format!(
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
        Err(Error::not_held(format!(
            "{what} of lock {lock} failed: this token holds it on {done} of {n} servers, quorum is {q}; {}",
            why.join(", ")
        )))
    }

    /// Compare-and-delete on every server, handing the lock to the first waiter in line; with
    /// `leave`, the token also gives up its place in the wait queue (a holder's release, a
    /// waiter that stops waiting), without it keeps it (a failed attempt's undo).
    pub async fn release(&self, t: &Target, timeout: Duration, leave: bool) -> Result<()> {
        self.release_reporting(t, timeout, leave)
            .await
            .map_err(|f| f.error)
    }

    /// A release by token, without a lease object (`release_by_token` of the handles): within
    /// the configured server timeout, or [`timing::RELEASE_BY_TOKEN_TIMEOUT`].
    pub async fn release_by_token(&self, t: &Target) -> Result<()> {
        let timeout = self
            .config
            .server_timeout
            .unwrap_or(timing::RELEASE_BY_TOKEN_TIMEOUT);
        self.release(t, timeout, true).await
    }

    /// An extension by token, without a lease object (`extend_by_token` of the handles): the
    /// validity it gives.
    pub async fn extend_by_token(&self, t: &Target, ttl: Duration) -> Result<Duration> {
        let valid_until = self.extend(t, ttl).await.map_err(|failed| failed.error)?;
        Ok(valid_until.saturating_duration_since(Instant::now()))
    }

    /// [`release`](Self::release), saying why the lock was lost when no quorum held it.
    pub async fn release_reporting(
        &self,
        t: &Target,
        timeout: Duration,
        leave: bool,
    ) -> std::result::Result<(), Failed> {
        let start = Instant::now();
        let outcomes = self.release_each(t, timeout, leave).await;
        let judged = self.judge("release", t, &outcomes);
        trace_outcome("release", t, &outcomes, start, &judged);
        judged.map_err(|error| Failed::judged(error, &outcomes))
    }

    /// The release script on every server, each one's answer (see [`release`](Self::release)).
    pub async fn release_each(&self, t: &Target, timeout: Duration, leave: bool) -> Vec<Outcome> {
        self.on_all(&t.release_call(u8::from(leave)), timeout).await
    }

    /// [`release_each`](Self::release_each) on the servers `mine` marks (those that may hold
    /// the token for this call); elsewhere the key is another acquisition's with the same
    /// caller token and is left alone: with `leave` only the place in the queue is given up,
    /// without nothing is sent (the answer counts as gone).
    pub async fn release_mine(
        &self,
        t: &Target,
        timeout: Duration,
        leave: bool,
        mine: &[bool],
    ) -> Vec<Outcome> {
        let release = t.release_call(u8::from(leave));
        let queue_only = t.release_call(2);
        join_all(self.servers.iter().enumerate().map(|(i, s)| {
            let call = match (mine.get(i).copied().unwrap_or(true), leave) {
                (true, _) => Some(&release),
                (false, true) => Some(&queue_only),
                (false, false) => None,
            };
            async move {
                let Some(call) = call else {
                    return Ok(Compared::Gone);
                };
                let reply = s.eval::<i64>(call, timeout).await?;
                Compared::parse(reply).map_err(ServerFailure::Reply)
            }
        }))
        .await
    }

    /// Compare-and-PEXPIRE on every server. On success returns the new end of validity. When
    /// no quorum holds it any more, the token is deleted where it survived, and the failure
    /// says why the lock was lost.
    pub async fn extend(&self, t: &Target, ttl: Duration) -> std::result::Result<Instant, Failed> {
        let ttl = self.check_ttl(ttl)?;
        let start = Instant::now();
        let timeout = self.server_timeout(ttl);
        let outcomes = self.on_all(&t.extend_call(ttl, false), timeout).await;
        self.settle_extend(t, start, timeout, &outcomes, ttl).await
    }

    /// The end of an extend: the quorum's verdict (when not held: the undo where the token
    /// survived, and why it was lost), then the validity that `ttl` on a quorum gives.
    async fn settle_extend(
        &self,
        t: &Target,
        start: Instant,
        timeout: Duration,
        outcomes: &[Outcome],
        ttl: Duration,
    ) -> std::result::Result<Instant, Failed> {
        let judged = self.judge("extend", t, outcomes);
        trace_outcome("extend", t, outcomes, start, &judged);
        if let Err(error) = judged {
            let failed = Failed::judged(error, outcomes);
            if failed.lost.is_some() {
                let _ = self.release(t, timeout, true).await;
            }
            return Err(failed);
        }
        match quorum::validity(ttl, start.elapsed(), self.drift_factor()) {
            Some(v) => Ok(Instant::now() + v),
            None => Err(Failed {
                error: Error::not_held(format!(
                    "extend of lock {}: took {} ms, longer than the {} ms it kept allow",
                    t.label(),
                    start.elapsed().as_millis(),
                    ttl.as_millis()
                )),
                lost: Some(LostReason::Expired),
            }),
        }
    }
}

impl Engine {
    /// Additive extend: on every server that holds `t`'s key under its token, its remaining
    /// TTL grows by `add`, atomically there. Returns the new end of validity: the quorum-th
    /// longest new TTL (what a quorum guarantees, never more), less the call's time and the
    /// drift allowance for it. When no quorum holds it any more, the token is deleted where it
    /// survived, and the failure says why the lock was lost.
    pub async fn extend_by(
        &self,
        t: &Target,
        add: Duration,
    ) -> std::result::Result<Instant, Failed> {
        let add = Duration::from_millis(timing::check_ttl(add)?);
        let start = Instant::now();
        let timeout = self.server_timeout(add);
        let call = t.extend_call(add, true);
        let replies = join_all(self.servers.iter().map(|s| async {
            let reply = s.eval::<i64>(&call, timeout).await?;
            Compared::parse_added(reply).map_err(ServerFailure::Reply)
        }))
        .await;
        let mut ttls: Vec<Duration> = replies
            .iter()
            .filter_map(|r| r.as_ref().ok().and_then(|(_, ttl)| *ttl))
            .collect();
        let outcomes: Vec<Outcome> = replies.into_iter().map(|r| r.map(|(c, _)| c)).collect();
        ttls.sort_by_key(|d| std::cmp::Reverse(*d));
        let ttl = ttls
            .get(t.quorum(self.n()) - 1)
            .copied()
            .unwrap_or_default();
        self.settle_extend(t, start, timeout, &outcomes, ttl).await
    }
}

/// A failed extend or release: the error, and why the lock is lost when it is (`NotHeld`).
pub struct Failed {
    pub error: Error,
    pub lost: Option<LostReason>,
}

impl Failed {
    /// The judged outcome of a compare-and-X call: a `NotHeld` is `Taken` when some server
    /// holds another token, else `Expired`.
    fn judged(error: Error, outcomes: &[Outcome]) -> Failed {
        let lost = (error.kind() == ErrorKind::NotHeld).then(|| {
            if outcomes.iter().any(|o| matches!(o, Ok(Compared::Other))) {
                LostReason::Taken
            } else {
                LostReason::Expired
            }
        });
        Failed { error, lost }
    }
}

impl From<Error> for Failed {
    fn from(error: Error) -> Failed {
        Failed { error, lost: None }
    }
}

fn trace_outcome<T>(
    what: &str,
    t: &Target,
    outcomes: &[Outcome],
    start: Instant,
    judged: &Result<T>,
) {
    tracing::debug!(
        target: "fencelock",
        lock = %t.label(),
        servers = outcomes.len(),
        answered = outcomes.iter().filter(|o| o.is_ok()).count(),
        elapsed_us = start.elapsed().as_micros() as u64,
        error = judged.as_ref().err().map(tracing::field::display),
        "{what}"
    );
}

/// A [`Target`]'s name as a span shows it ([`Target::span_name`]).
pub struct SpanName<'a> {
    name: &'a [u8],
    more: usize,
}

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for chunk in self.name.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{fffd}")?;
            }
        }
        match self.more {
            0 => Ok(()),
            more => write!(f, " (and {more} more names)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SpanName;

    #[test]
    fn a_span_name_is_the_name_as_text_and_how_many_more() {
        let shown = |name: &[u8], more| SpanName { name, more }.to_string();
        assert_eq!(shown(b"orders", 0), "orders");
        assert_eq!(shown(b"a\xffb", 0), "a\u{fffd}b");
        assert_eq!(shown(b"a", 2), "a (and 2 more names)");
        assert_eq!(
            shown(b"\xf0\x9f\x94", 0),
            String::from_utf8_lossy(b"\xf0\x9f\x94")
        );
    }
}
