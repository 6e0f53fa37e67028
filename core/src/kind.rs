//! The kinds of lease fencelock grants on a name, and their pure rules: a lock (mutex), a
//! semaphore's permits, a read-write lock's read share or write hold.
//!
//! A semaphore and a read-write lock are one protocol (`scripts/permits*.lua`): a name has a
//! capacity, each holder a weight, and the holders' weights never sum past the capacity. A
//! semaphore's capacity is its limit and a holder's weight the permits it took; a read-write
//! lock's capacity is [`RW_CAPACITY`], a reader weighs 1 and a writer the whole capacity, so a
//! writer excludes everyone and readers share. The wait queue, the hand-off, fencing, the
//! leases' expiry, extension and the undo are the lock's own, and so is every line of Rust
//! above the scripts: a lease of any kind is a [`crate::Lock`].

use crate::error::{Error, Result};
use crate::quorum;

/// The largest limit of a semaphore.
pub const MAX_LIMIT: u32 = 1_000_000;

/// A read-write lock's capacity, which a writer takes whole: more than any number of readers
/// (each weighs 1) and exact in Lua's numbers (below 2^53).
pub(crate) const RW_CAPACITY: u64 = 1 << 50;

/// What a lease holds of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseKind {
    /// The whole name: a lock ([`LockManager::acquire`](crate::LockManager::acquire)).
    Lock,
    /// `count` permits of a semaphore of `limit`
    /// ([`Semaphore::acquire`](crate::Semaphore::acquire)).
    Permits {
        /// How many permits the lease holds.
        count: u32,
        /// The semaphore's limit.
        limit: u32,
    },
    /// A read share of a read-write lock ([`RwLock::read`](crate::RwLock::read)).
    Read,
    /// The write hold of a read-write lock ([`RwLock::write`](crate::RwLock::write)).
    Write,
}

impl LeaseKind {
    /// `"lock"`, `"semaphore"`, `"read"` or `"write"`: the stable name the bindings expose.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseKind::Lock => "lock",
            LeaseKind::Permits { .. } => "semaphore",
            LeaseKind::Read => "read",
            LeaseKind::Write => "write",
        }
    }

    /// Whether the lease is granted by the permit scripts (semaphore, read-write lock).
    pub(crate) fn is_permits(self) -> bool {
        self != LeaseKind::Lock
    }

    /// What the permit scripts are passed: the kind's letter, the name's capacity and the
    /// lease's weight (`None` for a lock).
    pub(crate) fn weights(self) -> Option<(u8, u64, u64)> {
        match self {
            LeaseKind::Lock => None,
            LeaseKind::Permits { count, limit } => Some((b's', limit.into(), count.into())),
            LeaseKind::Read => Some((b'r', RW_CAPACITY, 1)),
            LeaseKind::Write => Some((b'w', RW_CAPACITY, RW_CAPACITY)),
        }
    }

    /// A plain lock (not a semaphore's permits or a read-write lock's share or hold).
    pub fn is_lock(self) -> bool {
        matches!(self, LeaseKind::Lock)
    }

    /// How many of `n` servers must grant (and still hold) a lease of this kind.
    ///
    /// A lock, a read share and a write hold need a majority: two majorities share a server,
    /// which never holds a writer beside anyone else. A semaphore of limit `k` needs more once
    /// `k > 1`: holders weighing `k + 1` together, each on `q` servers, put `(k + 1) q`
    /// permits on servers that hold at most `k n`, which is impossible only when
    /// `(k + 1) q > k n`. So `q = floor(k n / (k + 1)) + 1` (a majority for `k = 1`; all
    /// servers once `k >= n - 1`): with fewer, limit + 1 permits could be held at once
    /// through different majorities.
    pub fn quorum(self, n: usize) -> usize {
        match self {
            LeaseKind::Permits { limit, .. } if limit > 1 => {
                let k = limit as usize;
                (k.saturating_mul(n) / (k + 1) + 1).min(n)
            }
            _ => quorum::quorum(n),
        }
    }
}

impl std::fmt::Display for LeaseKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaseKind::Lock => f.write_str("lock"),
            LeaseKind::Permits { count: 1, limit } => write!(f, "1 permit of {limit}"),
            LeaseKind::Permits { count, limit } => write!(f, "{count} permits of {limit}"),
            LeaseKind::Read => f.write_str("read share"),
            LeaseKind::Write => f.write_str("write hold"),
        }
    }
}

/// Checks a semaphore's limit: 1 to [`MAX_LIMIT`].
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the range.
pub fn check_limit(limit: u32) -> Result<()> {
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::invalid(format!(
            "a semaphore's limit must be 1 to {MAX_LIMIT}, got {limit}"
        )));
    }
    Ok(())
}

/// Checks how many permits an acquisition takes: 1 to the semaphore's `limit`.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming both.
pub fn check_count(count: u32, limit: u32) -> Result<()> {
    if count == 0 || count > limit {
        return Err(Error::invalid(format!(
            "an acquisition takes 1 to {limit} permits of a semaphore of limit {limit}, got {count}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permits(limit: u32) -> LeaseKind {
        LeaseKind::Permits { count: 1, limit }
    }

    /// The quorum is the smallest that keeps limit + 1 permits from being held at once.
    #[test]
    fn a_semaphores_quorum_keeps_limit_plus_one_permits_out() {
        for n in 1..=7usize {
            assert_eq!(LeaseKind::Lock.quorum(n), quorum::quorum(n));
            assert_eq!(LeaseKind::Write.quorum(n), quorum::quorum(n));
            assert_eq!(LeaseKind::Read.quorum(n), quorum::quorum(n));
            assert_eq!(permits(1).quorum(n), quorum::quorum(n));
            for k in 1..=40u32 {
                let q = permits(k).quorum(n);
                let k = k as usize;
                assert!(q <= n);
                assert!((k + 1) * q > k * n, "n {n} k {k} q {q}");
                assert!(
                    q == 1 || (k + 1) * (q - 1) <= k * n,
                    "n {n} k {k}: {q} is not the least"
                );
            }
        }
        assert_eq!(permits(2).quorum(3), 3);
        assert_eq!(permits(2).quorum(5), 4);
        assert_eq!(permits(4).quorum(5), 5);
        assert_eq!(permits(MAX_LIMIT).quorum(5), 5);
    }

    #[test]
    fn limits_and_counts_are_checked() {
        assert!(check_limit(0).is_err());
        assert!(check_limit(1).is_ok());
        assert!(check_limit(MAX_LIMIT).is_ok());
        assert!(check_limit(MAX_LIMIT + 1).is_err());
        assert!(check_count(0, 4).is_err());
        assert!(check_count(4, 4).is_ok());
        let e = check_count(5, 4).unwrap_err();
        assert!(e.message().contains("limit 4") && e.message().contains("got 5"));
    }
}
