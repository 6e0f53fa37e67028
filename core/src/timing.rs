//! The timing policy: every delay, timeout and cap the core applies, each with its reason.
//! Change the retry policy here; nothing else in the crate holds a duration of its own.
//!
//! The pure arithmetic of the Redlock algorithm (quorum, drift, validity) is in
//! [`crate::quorum`]; this module decides how long to wait for what.

use std::time::Duration;

use crate::error::{Error, Result};

/// Shortest TTL: Redis expiries have millisecond resolution.
pub const MIN_TTL: Duration = Duration::from_millis(1);
/// Longest TTL: 2^53 - 1 ms (about 285,000 years), the largest whole number of milliseconds
/// every binding represents exactly (a JavaScript number, a Lua number in the scripts); far
/// below what `PX` and the monotonic clock can hold. (node-redlock's own tests lock for about
/// 28,500 years.)
pub const MAX_TTL: Duration = Duration::from_millis((1 << 53) - 1);

/// Default TTL of the bindings' acquire calls (DESIGN.md: 30 s in every language).
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);
/// Default retry delay: the longest sleep between tries when no release notification comes.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(200);
/// Default bound on opening a connection (TCP, TLS handshake, authentication).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Lower bound of the retry delay, jitter, server timeout and connect timeout options: the
/// resolution of Redis' clock and of ours.
pub const MIN_OPTION_DURATION: Duration = Duration::from_millis(1);
/// Upper bound of the retry delay, jitter, server timeout and connect timeout options: longer
/// is a unit mistake (seconds given as milliseconds), not a wish.
pub const MAX_OPTION_DURATION: Duration = Duration::from_secs(3600);

/// Per-server timeout of a release by name and token when the manager has no fixed one: there
/// is no TTL to derive it from, and the longest default (of a TTL of 20 s or more) is 1 s.
pub const RELEASE_BY_TOKEN_TIMEOUT: Duration = Duration::from_secs(1);

/// Per-server timeout of a clean-up nobody waits for (the release of a dropped lock, the undo
/// of a cancelled acquire): no caller is held up, so slow servers get longer than a call's
/// own limit.
pub const BACKGROUND_CLEANUP_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a waiter handed the lock on fewer than a quorum of servers waits for the other
/// servers' messages before it tries (at most the server timeout): a holder releases on every
/// server at once, so their messages come within moments of each other; when they do not (the
/// servers' queues disagree, a server is slow), an attempt settles it.
pub const PARTIAL_HANDOFF_WAIT: Duration = Duration::from_millis(50);

/// Least time allowed for subscribing to a release channel: it may need a new connection,
/// which a 10 ms server timeout would never allow.
pub const MIN_SUBSCRIBE_TIME: Duration = Duration::from_millis(100);

/// How long an unused release subscription is kept, so that a busy lock does not cost a
/// SUBSCRIBE/UNSUBSCRIBE pair per wait.
pub const SUBSCRIPTION_LINGER: Duration = Duration::from_secs(2);

/// Bound on an UNSUBSCRIBE of an idle channel (best effort: a failure only leaves an idle
/// subscription behind).
pub const UNSUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Pause before a script refused with TRYAGAIN (its cluster slot is being migrated) is sent
/// again, within the call's time.
pub const TRYAGAIN_PAUSE: Duration = Duration::from_millis(20);

/// How long a server's connection failure that retrying cannot cure (credentials, TLS, an
/// address that cannot be) is told to every call at once instead of connecting again: long
/// enough for a wait that retries to see it, short enough that a fixed server is used soon.
pub const CONFIG_FAILURE_HOLD: Duration = Duration::from_secs(2);

/// How often a wait that keeps being refused for unreachable servers says so (a warning event
/// naming the servers and the reason): a wait without limit must not be silent.
pub const WAIT_WARNING_EVERY: Duration = Duration::from_secs(3);

/// After how many attempts in a row refused by every server's address (nothing listens) a
/// wait gives up: a server that is not started or a wrong port fails in about two retry
/// delays' time each, not after the wait limit; a restart takes far less than 10 attempts.
pub const DEFAULT_REFUSED_ATTEMPTS: u32 = 10;

/// The longest an election's observer goes without reading the election again when no
/// message comes (`election/observe.rs`): every change is announced and every extension's
/// renewal moves its timer, so this only bounds a message lost without a lost connection (and
/// is what 100 observers of an idle election cost the servers: one read each per bound).
pub const ELECTION_RECHECK: Duration = Duration::from_secs(300);

/// How often an observer reads the election while some server's subscription is missing.
pub const UNLISTENED_RECHECK: Duration = Duration::from_secs(1);

/// The shortest wait of an observer's timer at a term's end (the term's remaining time is
/// its conservative bound: the key can outlive it by the drift allowance).
pub const MIN_RECHECK: Duration = Duration::from_millis(10);

/// Margin added to how long a waiter's place in a queue lasts, over its two retry periods:
/// covers the script's own time and the servers' clocks ticking apart.
const PLACE_MARGIN: Duration = Duration::from_millis(250);

/// Checks a TTL and returns it in whole milliseconds (sub-millisecond parts are dropped).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) below [`MIN_TTL`] or above [`MAX_TTL`].
pub fn check_ttl(ttl: Duration) -> Result<u64> {
    if ttl < MIN_TTL {
        return Err(Error::invalid(format!(
            "ttl must be at least 1 ms, got {ttl:?}"
        )));
    }
    if ttl > MAX_TTL {
        return Err(Error::invalid(format!(
            "ttl must be at most {} ms (about 285,000 years), got {} ms",
            MAX_TTL.as_millis(),
            ttl.as_millis()
        )));
    }
    // In range, so the cast cannot truncate.
    Ok(ttl.as_millis() as u64)
}

/// The default per-server call timeout for a lock of `ttl`: `ttl / 20`, at least 10 ms and at
/// most 1 s. Small against the TTL so that one slow server cannot eat the validity; at least
/// 10 ms for a round trip on a busy machine.
pub fn default_server_timeout(ttl: Duration) -> Duration {
    (ttl / 20).clamp(Duration::from_millis(10), MAX_DEFAULT_SERVER_TIMEOUT)
}

/// The longest [`default_server_timeout`].
pub const MAX_DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a cluster's nodes have to answer the cluster layer (redis-rs' response timeout):
/// the connect timeout, or the server timeout when that is longer (no call of ours, `WAIT`
/// included, waits longer for a reply, so none is cut short). Without one, the layer's own
/// check of a node (a `PING` to every node it knows, replicas included, when it refreshes
/// its slot map, while every call waits) waited for ever on a node that was frozen after it
/// connected: its kernel still holds the connection, its server answers nothing.
pub fn cluster_response_timeout(connect: Duration, server: Option<Duration>) -> Duration {
    connect.max(server.unwrap_or(MAX_DEFAULT_SERVER_TIMEOUT))
}

/// How long a waiter keeps its place in a queue without a new attempt: waiters try at least
/// every retry delay (plus jitter and one attempt's time), so two of those and a margin. A
/// waiter that stopped trying (gone, paused) loses its place after that.
pub fn place_lasts(retry_delay: Duration, jitter: Duration, server_timeout: Duration) -> Duration {
    (retry_delay + jitter + server_timeout) * 2 + PLACE_MARGIN
}

/// The most a waiter's wake-up at its holder's expiry is spread by (see [`retry_sleep`]).
pub const EXPIRY_SPREAD: Duration = Duration::from_millis(2);

/// How long a waiter sleeps before its next try when no release notification arrives.
///
/// `holder_pttl` is the largest remaining TTL the servers reported for the current holder
/// (`None` when unknown, e.g. a key without expiry). The sleep is at most `retry_delay`. When
/// the holder's TTL ends sooner, the waiter wakes just after it, spread by up to
/// [`EXPIRY_SPREAD`] (or `jitter`, when smaller): a crashed holder is replaced at its TTL's end
/// and one attempt, not up to a whole jitter later; the queue, not the timing, decides who is
/// next. Otherwise it wakes after `retry_delay` less up to `jitter`, so that waiters do not
/// move in lockstep. `random` is a uniform sample from `[0, 1)`. Never below 1 ms: no busy
/// loop.
pub fn retry_sleep(
    holder_pttl: Option<Duration>,
    retry_delay: Duration,
    jitter: Duration,
    random: f64,
) -> Duration {
    let random = if random.is_finite() {
        random.clamp(0.0, 1.0)
    } else {
        0.0
    };
    match holder_pttl {
        Some(pttl) if pttl < retry_delay => {
            (pttl + jitter.min(EXPIRY_SPREAD).mul_f64(random)).min(retry_delay)
        }
        _ => retry_delay.saturating_sub(jitter.mul_f64(random)),
    }
    .max(Duration::from_millis(1))
}

/// Auto-extension's period: a third of the TTL, so that two extensions can fail (a server
/// restarting, a slow network) before the lock expires.
pub fn extend_every(ttl: Duration) -> Duration {
    ttl / 3
}

/// When auto-extension tries again after a failed extension that did not find the lock lost:
/// a quarter of the validity left (several tries before it runs out), at least 5 ms (no busy
/// loop), at most the normal period.
pub fn extend_retry(validity_left: Duration, ttl: Duration) -> Duration {
    (validity_left / 4)
        .max(Duration::from_millis(5))
        .min(extend_every(ttl))
}

/// A waiter handed the lock counts its validity from before its first attempt; with less than
/// this share of the TTL left that way, one attempt resets the TTL first.
pub fn handoff_fresh_enough(validity: Duration, ttl: Duration) -> bool {
    validity >= ttl / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn ttl_bounds() {
        assert!(check_ttl(Duration::ZERO).is_err());
        assert!(check_ttl(Duration::from_micros(999)).is_err());
        assert_eq!(check_ttl(Duration::from_micros(1500)).unwrap(), 1);
        assert_eq!(check_ttl(Duration::from_secs(30)).unwrap(), 30_000);
        assert!(check_ttl(MAX_TTL).is_ok());
        assert!(check_ttl(MAX_TTL + Duration::from_millis(1)).is_err());
        assert!(check_ttl(Duration::MAX).is_err());
    }

    #[test]
    fn default_server_timeout_is_a_twentieth_clamped() {
        assert_eq!(default_server_timeout(Duration::from_secs(30)), MS(1000));
        assert_eq!(default_server_timeout(Duration::from_secs(10)), MS(500));
        assert_eq!(default_server_timeout(MS(100)), MS(10));
        assert_eq!(default_server_timeout(Duration::from_secs(3600)), MS(1000));
    }

    #[test]
    fn a_place_outlasts_two_retry_periods() {
        assert_eq!(place_lasts(MS(200), MS(100), MS(50)), MS(950));
    }

    #[test]
    fn retry_sleep_follows_a_short_holder_ttl() {
        let d = retry_sleep(Some(MS(30)), MS(200), MS(100), 0.0);
        assert_eq!(d, MS(30));
        // spread by at most EXPIRY_SPREAD, not the whole jitter: fail-over at the TTL's end
        let d = retry_sleep(Some(MS(30)), MS(200), MS(100), 0.5);
        assert_eq!(d, MS(31));
        let d = retry_sleep(Some(MS(30)), MS(200), MS(1), 0.5);
        assert_eq!(d, Duration::from_micros(30_500));
        // never beyond the retry delay
        let d = retry_sleep(Some(MS(199)), MS(200), MS(100), 0.99);
        assert_eq!(d, MS(200));
    }

    #[test]
    fn retry_sleep_is_capped_by_the_retry_delay_and_spread_below_it() {
        assert_eq!(retry_sleep(Some(MS(5000)), MS(200), MS(100), 0.0), MS(200));
        assert_eq!(retry_sleep(Some(MS(5000)), MS(200), MS(100), 0.5), MS(150));
        assert_eq!(retry_sleep(None, MS(200), MS(100), 0.5), MS(150));
    }

    #[test]
    fn retry_sleep_never_spins_and_ignores_bad_randoms() {
        assert_eq!(retry_sleep(Some(MS(0)), MS(200), MS(0), 0.0), MS(1));
        assert_eq!(retry_sleep(None, MS(200), MS(100), f64::NAN), MS(200));
        assert_eq!(retry_sleep(None, MS(200), MS(100), 7.0), MS(100));
    }

    #[test]
    fn auto_extension_retries_within_the_validity_left() {
        assert_eq!(extend_every(MS(3000)), MS(1000));
        assert_eq!(extend_retry(MS(800), MS(3000)), MS(200));
        assert_eq!(extend_retry(MS(8), MS(3000)), MS(5));
        assert_eq!(extend_retry(MS(60_000), MS(3000)), MS(1000));
    }
}
