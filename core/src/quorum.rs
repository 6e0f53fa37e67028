//! Pure arithmetic of the Redlock algorithm: quorum size, clock-drift allowance, validity and
//! the fencing maximum. No I/O here, so all of it is unit-tested without a server. How long to
//! wait for what is [`crate::timing`]'s.

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

/// The shortest TTL, in whole milliseconds, that the validity rule can ever grant with
/// `drift_factor`: below it `ttl - ttl * drift_factor - 2 ms` leaves nothing, even for an
/// attempt that took no time (3 ms with the default 0.01).
pub fn min_ttl(drift_factor: f64) -> Duration {
    (1..)
        .map(Duration::from_millis)
        .find(|&ttl| validity(ttl, Duration::ZERO, drift_factor).is_some())
        .unwrap_or(Duration::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_grantable_ttl_follows_the_drift_factor() {
        assert_eq!(min_ttl(0.01), Duration::from_millis(3));
        assert_eq!(min_ttl(0.0), Duration::from_millis(3));
        assert_eq!(min_ttl(0.49), Duration::from_millis(4));
        for df in [0.0, 0.01, 0.1, 0.3, 0.49] {
            let min = min_ttl(df);
            assert!(validity(min, Duration::ZERO, df).is_some());
            assert!(validity(min - Duration::from_millis(1), Duration::ZERO, df).is_none());
        }
    }

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
    fn fencing_max_takes_the_largest_counter() {
        assert_eq!(fencing_max([3, 9, 4]), Some(9));
        assert_eq!(fencing_max(Vec::<u64>::new()), None);
    }
}
