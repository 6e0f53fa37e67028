//! Pure arithmetic of the Redlock algorithm: quorum size, clock-drift allowance, validity,
//! the fencing maximum and the retry schedule. No I/O here, so all of it is unit-tested
//! without a server.

use std::time::Duration;

/// Fixed part of the drift allowance, covering the resolution of Redis' own expiry clock.
pub const DRIFT_CONSTANT: Duration = Duration::from_millis(2);

/// The number of servers that must agree: a strict majority of `n`.
pub fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// The clock-drift allowance for a lock of `ttl`: `ttl * drift_factor + 2 ms`.
pub fn drift(ttl: Duration, drift_factor: f64) -> Duration {
    // drift_factor is validated to [0, 0.5), so the product stays finite and below ttl.
    ttl.mul_f64(drift_factor) + DRIFT_CONSTANT
}

/// Time the lock is still safe to use after an attempt that took `elapsed`:
/// `ttl - elapsed - drift`, or `None` when that is zero or less (the lock must not be handed
/// out).
pub fn validity(ttl: Duration, elapsed: Duration, drift_factor: f64) -> Option<Duration> {
    ttl.checked_sub(elapsed)
        .and_then(|left| left.checked_sub(drift(ttl, drift_factor)))
        .filter(|v| !v.is_zero())
}

/// The default per-server call timeout for a lock of `ttl`: `ttl / 20`, at least 10 ms and at
/// most 1 s.
pub fn default_server_timeout(ttl: Duration) -> Duration {
    (ttl / 20).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// The fencing token of an attempt: the largest counter any server reported, or `None` when no
/// server reported one.
pub fn fencing_max(counters: impl IntoIterator<Item = u64>) -> Option<u64> {
    counters.into_iter().max()
}

/// Whether `granted` servers out of `n` make a quorum.
pub fn has_quorum(granted: usize, n: usize) -> bool {
    granted >= quorum(n)
}

/// Whether a quorum is still possible when `failed` of `n` servers can never agree.
pub fn quorum_possible(failed: usize, n: usize) -> bool {
    n.saturating_sub(failed) >= quorum(n)
}

/// How long a waiter sleeps before its next try when no release notification arrives.
///
/// `holder_pttl` is the largest remaining TTL the servers reported for the current holder
/// (`None` when unknown, e.g. a key without expiry). The sleep is at most `retry_delay`. When
/// the holder's TTL ends sooner, the waiter wakes just after it, spread by up to `jitter`;
/// otherwise it wakes after `retry_delay` less up to `jitter`, so that waiters do not move in
/// lockstep. `random` is a uniform sample from `[0, 1)`.
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
    let spread = jitter.mul_f64(random);
    match holder_pttl {
        Some(pttl) if pttl < retry_delay => (pttl + spread).min(retry_delay),
        _ => retry_delay.saturating_sub(spread),
    }
    .max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn quorum_is_a_strict_majority() {
        let expected = [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (6, 4), (7, 4)];
        for (n, q) in expected {
            assert_eq!(quorum(n), q, "n = {n}");
        }
        assert!(has_quorum(3, 5));
        assert!(!has_quorum(2, 5));
        assert!(has_quorum(1, 1));
        assert!(!has_quorum(1, 2));
    }

    #[test]
    fn quorum_possible_counts_the_servers_left() {
        assert!(quorum_possible(2, 5));
        assert!(!quorum_possible(3, 5));
        assert!(!quorum_possible(1, 1));
        assert!(quorum_possible(0, 1));
    }

    #[test]
    fn drift_is_factor_times_ttl_plus_two_ms() {
        assert_eq!(drift(Duration::from_secs(10), 0.01), MS(102));
        assert_eq!(drift(Duration::from_secs(10), 0.0), MS(2));
    }

    #[test]
    fn validity_subtracts_elapsed_and_drift() {
        // 10 s ttl, 1 % drift: 10000 - 500 - (100 + 2) = 9398 ms.
        assert_eq!(
            validity(Duration::from_secs(10), MS(500), 0.01),
            Some(MS(9398))
        );
    }

    #[test]
    fn validity_is_none_when_the_attempt_ate_the_ttl() {
        assert_eq!(validity(MS(100), MS(98), 0.0), None, "exactly zero left");
        assert_eq!(
            validity(MS(100), MS(99), 0.0),
            None,
            "drift exceeds the rest"
        );
        assert_eq!(
            validity(MS(100), MS(200), 0.0),
            None,
            "attempt longer than ttl"
        );
        assert_eq!(validity(MS(100), MS(97), 0.0), Some(MS(1)));
    }

    #[test]
    fn default_server_timeout_is_a_twentieth_clamped() {
        assert_eq!(default_server_timeout(Duration::from_secs(30)), MS(1000));
        assert_eq!(default_server_timeout(Duration::from_secs(10)), MS(500));
        assert_eq!(default_server_timeout(MS(100)), MS(10));
        assert_eq!(default_server_timeout(Duration::from_secs(3600)), MS(1000));
    }

    #[test]
    fn fencing_max_takes_the_largest_counter() {
        assert_eq!(fencing_max([3, 9, 4]), Some(9));
        assert_eq!(fencing_max(Vec::<u64>::new()), None);
    }

    #[test]
    fn retry_sleep_follows_a_short_holder_ttl() {
        let d = retry_sleep(Some(MS(30)), MS(200), MS(100), 0.0);
        assert_eq!(d, MS(30));
        let d = retry_sleep(Some(MS(30)), MS(200), MS(100), 0.5);
        assert_eq!(d, MS(80));
        // never beyond the retry delay
        let d = retry_sleep(Some(MS(190)), MS(200), MS(100), 0.99);
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
}
