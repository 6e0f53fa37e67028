//! One acquisition attempt, the quorum engine proper: the acquire script on every server in
//! parallel, the votes counted, the fencing token settled (the largest counter, written back
//! where it was less), the validity checked, and everything undone when the attempt fails.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::engine::{Acquired, Engine, Target};
use crate::error::{Error, ServerOutcome, ServerReport};
use crate::failure::ServerFailure;
use crate::queue::Place;
use crate::quorum;
use crate::scripts::{parse_acquire, AcquireReply, ScriptCall};
use crate::undo::UndoGuard;

/// One server's vote, with the fencing counters it reported (one per name).
enum Vote {
    Granted(Vec<u64>),
    Held {
        pttl: Option<Duration>,
        fences: Vec<u64>,
        /// Held with this call's token by another acquisition (re-entry not asked for).
        same_token: bool,
    },
    Failed(ServerFailure),
}

/// Which servers may count a key that already holds the attempt's token as this call's (the
/// acquire script's OWN).
#[derive(Clone, Copy)]
pub(crate) enum Own<'a> {
    /// Every server: the token is this call's alone (generated for it), or the caller asked
    /// for re-entry.
    All,
    /// The servers marked `true`: those that may still hold the token from an earlier attempt
    /// of this call (it granted, or its reply was lost, and no undo answered since). Anywhere
    /// else a key with the token is another acquisition's with the same caller token.
    Only(&'a [bool]),
}

impl Vote {
    /// The fencing counter the server reported for the lock's name `i`.
    fn counter(&self, i: usize) -> Option<u64> {
        match self {
            Vote::Granted(f) | Vote::Held { fences: f, .. } => f.get(i).copied(),
            Vote::Failed(_) => None,
        }
    }

    /// Whether the server may hold the attempt's token: it granted, or the reply was lost.
    fn may_hold_the_token(&self) -> bool {
        matches!(
            self,
            Vote::Granted(_)
                | Vote::Failed(
                    ServerFailure::Timeout(_)
                        | ServerFailure::Connection(_)
                        | ServerFailure::NotListening(_)
                        | ServerFailure::NotReplicated(_)
                )
        )
    }

    fn failure(&self) -> Option<&ServerFailure> {
        match self {
            Vote::Failed(f) => Some(f),
            _ => None,
        }
    }

    /// The vote as the error of a failed acquisition reports it.
    fn report(&self, server: &str) -> ServerReport {
        let (outcome, detail) = match self {
            Vote::Granted(f) => (
                ServerOutcome::Granted,
                format!("granted (fencing counter {})", f[0]),
            ),
            Vote::Held {
                same_token: true, ..
            } => (
                ServerOutcome::Held,
                "held with this token by another acquisition (re-entry not asked for)".to_owned(),
            ),
            Vote::Held { pttl: Some(p), .. } => (
                ServerOutcome::Held,
                format!("held by another owner for {} ms more", p.as_millis()),
            ),
            Vote::Held { pttl: None, .. } => (
                ServerOutcome::Held,
                "held by another owner without expiry, or kept free for a waiter ahead in line"
                    .to_owned(),
            ),
            Vote::Failed(f) => {
                let outcome = match f {
                    ServerFailure::Timeout(_) => ServerOutcome::TimedOut,
                    ServerFailure::Connection(_)
                    | ServerFailure::NotListening(_)
                    | ServerFailure::Unready(_)
                    | ServerFailure::SlotMoving(_)
                    | ServerFailure::NotReplicated(_) => ServerOutcome::Unreachable,
                    ServerFailure::Config(_)
                    | ServerFailure::Reply(_)
                    | ServerFailure::Refused(..) => ServerOutcome::Error,
                };
                (outcome, f.to_string())
            }
        };
        ServerReport {
            server: server.to_owned(),
            outcome,
            detail,
        }
    }
}

/// What every server answered, for the error of a failed acquisition.
fn reports(engine: &Engine, votes: &[Vote]) -> Vec<ServerReport> {
    engine
        .servers
        .iter()
        .zip(votes)
        .map(|(s, v)| v.report(&s.label))
        .collect()
}

/// The outcome of an attempt.
pub(crate) enum Attempt {
    Acquired(Acquired),
    Refused(Refusal),
}

/// Why an attempt did not acquire, and what that means for the next.
pub(crate) struct Refusal {
    /// The largest remaining TTL the servers reported for the holder.
    pub holder_pttl: Option<Duration>,
    pub error: Error,
    /// Retrying cannot help (e.g. WRONGTYPE on a quorum-breaking number of servers).
    pub fatal: bool,
    /// The undo of the attempt's votes, still to run (the caller decides how long it may
    /// wait for it), when a server may hold them. Running it may release a lock a server had
    /// handed over, whose message may still arrive.
    pub undo: Option<UndoGuard>,
    /// Per server: whether it may hold the attempt's token (it granted, or the reply was
    /// lost) until the undo answers there.
    pub may_hold: Vec<bool>,
    /// Every server's address refused the connection: nothing listens at any of them.
    pub nobody_listens: bool,
}

/// One acquisition attempt on every server in parallel; a refused attempt hands its undo to
/// the caller. With a `place`, a refused attempt takes (or keeps) the caller's place in the
/// wait queues. `own` says where a key already holding the token counts as this call's. Each
/// round of server calls takes at most `timeout`, and none runs past `until`.
pub(crate) async fn attempt(
    engine: &Arc<Engine>,
    target: &Arc<Target>,
    (ttl, timeout): (Duration, Duration),
    place: Option<&Place>,
    own: Own<'_>,
    until: Option<Instant>,
) -> Attempt {
    let start = Instant::now();
    let mut undo = UndoGuard::new(engine, target, timeout);
    let round = bounded(timeout, until);
    let votes = collect_votes(engine, target, (ttl, round), place, own).await;
    let may_hold: Vec<bool> = votes.iter().map(Vote::may_hold_the_token).collect();
    if let Own::Only(mine) = own {
        let mine = (0..engine.n()).map(|i| may_hold[i] || mine.get(i) == Some(&true));
        undo.limit_to(mine.collect());
    }
    let granted = votes
        .iter()
        .filter(|v| matches!(v, Vote::Granted(_)))
        .count();
    let holder_pttl = votes
        .iter()
        .filter_map(|v| match v {
            Vote::Held { pttl, .. } => *pttl,
            _ => None,
        })
        .max();
    let nobody_listens = votes
        .iter()
        .all(|v| v.failure().is_some_and(ServerFailure::not_listening));
    let refused = |error: Error, fatal, undo| {
        Attempt::Refused(Refusal {
            holder_pttl,
            error: error.with_servers(reports(engine, &votes)),
            fatal,
            undo,
            may_hold: may_hold.clone(),
            nobody_listens,
        })
    };
    if granted < target.quorum(engine.n()) {
        let (error, fatal) = refusal(engine, target, &votes);
        // Only a server that granted, or that may have acted on a call whose reply was lost,
        // can hold this token: when every server answered "held", nothing to undo.
        if may_hold.contains(&true) {
            return refused(error, fatal, Some(undo));
        }
        undo.disarm();
        return refused(error, fatal, None);
    }
    let timeout = bounded(timeout, until);
    match confirm(engine, target, &votes, ttl, timeout, start).await {
        Ok(acquired) => {
            undo.disarm();
            Attempt::Acquired(acquired)
        }
        Err(error) => refused(error, false, Some(undo)),
    }
}

/// After a quorum granted: settles the fencing token on a quorum and checks that validity is
/// left. Started at `start`.
async fn confirm(
    engine: &Engine,
    target: &Target,
    votes: &[Vote],
    ttl: Duration,
    timeout: Duration,
    start: Instant,
) -> Result<Acquired, Error> {
    let (n, q) = (engine.n(), quorum::quorum(engine.n()));
    let settled =
        join_all((0..target.count()).map(|i| settle_fence(engine, target, votes, i, timeout)))
            .await;
    let mut fences = Vec::with_capacity(settled.len());
    for (fence, at_fence) in settled {
        if !quorum::has_quorum(at_fence, n) {
            let lock = target.label();
            return Err(Error::unavailable(format!(
                "lock {lock}: only {at_fence} of {n} servers confirmed fencing token {fence}, quorum is {q}"
            )));
        }
        fences.push(fence);
    }
    let Some(validity) = quorum::validity(ttl, start.elapsed(), engine.drift_factor()) else {
        let lock = target.label();
        return Err(Error::not_acquired(format!(
            "lock {lock}: acquiring took {} ms, too long for a ttl of {} ms with the drift allowance; it would have been expired when handed out",
            start.elapsed().as_millis(),
            ttl.as_millis()
        )));
    };
    Ok(Acquired {
        fencing_token: fences[0],
        more_fences: fences.split_off(1),
        valid_until: Instant::now() + validity,
    })
}

/// `timeout`, cut short to end by `until` (at least 1 ms: a call needs some time).
fn bounded(timeout: Duration, until: Option<Instant>) -> Duration {
    match until {
        Some(u) => timeout
            .min(u.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(1)),
        None => timeout,
    }
}

/// The acquire script on every server in parallel, one vote each.
async fn collect_votes(
    engine: &Engine,
    target: &Target,
    (ttl, timeout): (Duration, Duration),
    place: Option<&Place>,
    own: Own<'_>,
) -> Vec<Vote> {
    let start = Instant::now();
    let call = |own| target.acquire_call(ttl, place, own);
    let names = target.count();
    let (owned, foreign) = match own {
        Own::All => (call(true), None),
        Own::Only(_) => (call(true), Some(call(false))),
    };
    let votes: Vec<Vote> = join_all(engine.servers.iter().enumerate().map(|(i, s)| {
        let call = match (&foreign, own) {
            (Some(foreign), Own::Only(mine)) if !mine.get(i).copied().unwrap_or(false) => foreign,
            _ => &owned,
        };
        async move {
            match s.eval(call, timeout).await {
                Ok(v) => match parse_acquire(&v, names) {
                    Ok(AcquireReply::Granted(f)) => Vote::Granted(f),
                    Ok(AcquireReply::Held {
                        pttl,
                        fences,
                        same_token,
                    }) => Vote::Held {
                        pttl,
                        fences,
                        same_token,
                    },
                    Err(e) => Vote::Failed(ServerFailure::Reply(e)),
                },
                Err(f) => Vote::Failed(f),
            }
        }
    }))
    .await;
    tracing::trace!(
        target: "fencelock",
        lock = %target.label(),
        servers = engine.n(),
        answered = votes.iter().filter(|v| v.failure().is_none()).count(),
        granted = votes.iter().filter(|v| matches!(v, Vote::Granted(_))).count(),
        elapsed_us = start.elapsed().as_micros() as u64,
        "acquire attempt"
    );
    votes
}

/// Fencing of the lock's name `i`: the token is the largest counter any server reported;
/// servers that reported less are raised to it. Returns the token and how many servers hold at
/// least it.
async fn settle_fence(
    engine: &Engine,
    target: &Target,
    votes: &[Vote],
    i: usize,
    timeout: Duration,
) -> (u64, usize) {
    let fence = quorum::fencing_max(votes.iter().filter_map(|v| v.counter(i))).unwrap_or(0);
    let behind: Vec<_> = engine
        .servers
        .iter()
        .zip(votes)
        .filter(|(_, v)| matches!(v.counter(i), Some(f) if f < fence))
        .map(|(s, _)| s)
        .collect();
    let mut at_fence = votes
        .iter()
        .filter(|v| matches!(v.counter(i), Some(f) if f >= fence))
        .count();
    if behind.is_empty() {
        // All counters equal: no extra round trip.
        return (fence, at_fence);
    }
    let keys = if i == 0 {
        &target.keys
    } else {
        &target.more[i - 1].1
    };
    let call = ScriptCall::raise_fence(keys, fence);
    let raised = join_all(behind.iter().map(|s| s.eval::<u64>(&call, timeout))).await;
    at_fence += raised
        .iter()
        .filter(|r| matches!(r, Ok(v) if *v >= fence))
        .count();
    (fence, at_fence)
}

/// The error of a refused attempt, and whether retrying is hopeless.
fn refusal(engine: &Engine, target: &Target, votes: &[Vote]) -> (Error, bool) {
    let n = engine.n();
    let q = target.quorum(n);
    let lock = &target.label();
    let count = |f: fn(&Vote) -> bool| votes.iter().filter(|v| f(v)).count();
    let held = count(|v| matches!(v, Vote::Held { .. }));
    let granted = count(|v| matches!(v, Vote::Granted(_)));
    let permanent = count(|v| matches!(v, Vote::Failed(f) if f.is_permanent()));
    let failures = engine.failures(votes.iter().map(Vote::failure));
    let answered = held + granted;
    if n.saturating_sub(permanent) < q {
        let kind = ServerFailure::error_kind(votes.iter().filter_map(Vote::failure));
        return (Error::new(kind, format!("lock {lock}: {failures}")), true);
    }
    if answered < q {
        return (
            Error::unavailable(format!(
                "lock {lock}: only {answered} of {n} servers answered, quorum is {q}: {failures}"
            )),
            false,
        );
    }
    let same = count(|v| {
        matches!(
            v,
            Vote::Held {
                same_token: true,
                ..
            }
        )
    });
    let mut msg = if held > 0 && same == held {
        format!(
            "lock {lock} is already held with this token by another acquisition ({held} of {n} \
             servers); a caller's token is exclusive unless re-entry is asked for (reentrant)"
        )
    } else if held > 0 {
        format!("lock {lock} is held by another owner ({held} of {n} servers)")
    } else {
        format!("lock {lock}: no quorum agreed")
    };
    if !failures.is_empty() {
        msg.push_str(&format!("; {failures}"));
    }
    (Error::not_acquired(msg), false)
}
