//! What the history checker judges: a [`Hold`] (one holder's record of one acquisition, and
//! what it held of the name: [`HoldKind`]) and a [`Violation`] (one broken promise). A leaf:
//! the checker's rules ([`crate::history`], [`crate::capacity`]) use it.

use std::fmt;
use std::time::Duration;

/// A reader's share in a read-write lock's capacity (a writer takes all of it).
const RW_CAPACITY: u64 = 1 << 50;

/// What a hold held of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum HoldKind {
    /// A lock: the whole name.
    #[default]
    Lock,
    /// `count` permits of a semaphore of `limit`.
    Permits {
        /// Permits held.
        count: u64,
        /// The semaphore's limit.
        limit: u64,
    },
    /// A read share of a read-write lock.
    Read,
    /// The write hold of a read-write lock.
    Write,
}

impl HoldKind {
    /// `(weight, capacity)`: what the hold takes of the name, and what the name has.
    pub fn weights(self) -> (u64, u64) {
        match self {
            HoldKind::Lock => (1, 1),
            HoldKind::Permits { count, limit } => (count, limit),
            HoldKind::Read => (1, RW_CAPACITY),
            HoldKind::Write => (RW_CAPACITY, RW_CAPACITY),
        }
    }

    /// The family the kind belongs to: holds of one name must share it.
    pub(crate) fn family(self) -> (&'static str, u64) {
        match self {
            HoldKind::Lock => ("lock", 1),
            HoldKind::Permits { limit, .. } => ("semaphore", limit),
            HoldKind::Read | HoldKind::Write => ("rwlock", RW_CAPACITY),
        }
    }

    /// The fields of a `HOLD` line after the lock's (none for a lock).
    pub fn to_fields(self) -> String {
        match self {
            HoldKind::Lock => String::new(),
            HoldKind::Permits { count, limit } => {
                format!(" kind=semaphore count={count} limit={limit}")
            }
            HoldKind::Read => " kind=read".into(),
            HoldKind::Write => " kind=write".into(),
        }
    }

    /// From a `HOLD` line's fields (`get` reads one); a lock without `kind`.
    pub fn from_fields(get: impl Fn(&str) -> Option<String>) -> Option<HoldKind> {
        Some(match get("kind").as_deref() {
            None | Some("lock") => HoldKind::Lock,
            Some("semaphore") => HoldKind::Permits {
                count: get("count")?.parse().ok()?,
                limit: get("limit")?.parse().ok()?,
            },
            Some("read") => HoldKind::Read,
            Some("write") => HoldKind::Write,
            Some(_) => return None,
        })
    }
}

/// One holder's record of one acquisition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Lock name.
    pub name: String,
    /// The fencing token the library reported.
    pub fencing_token: u64,
    /// When the holder got the lock ([`now_us`](crate::history::now_us) right after the acquire returned).
    pub start_us: u64,
    /// When the holder stopped relying on it ([`now_us`](crate::history::now_us) before releasing).
    pub end_us: u64,
    /// The validity the library reported at `start_us`, in microseconds.
    pub validity_us: u64,
    /// Who held it (for messages), e.g. `task 3` or `worker pid 1234`.
    pub holder: String,
    /// What it held of the name: the whole name (a lock), permits, a read share, a write hold.
    pub kind: HoldKind,
}

impl Hold {
    /// A hold with the validity given as a `Duration`.
    pub fn new(
        name: impl Into<String>,
        fencing_token: u64,
        start_us: u64,
        end_us: u64,
        validity: Duration,
        holder: impl Into<String>,
    ) -> Hold {
        Hold {
            name: name.into(),
            fencing_token,
            start_us,
            end_us,
            validity_us: validity.as_micros() as u64,
            holder: holder.into(),
            kind: HoldKind::Lock,
        }
    }

    /// The same hold, of `kind`.
    pub fn of_kind(self, kind: HoldKind) -> Hold {
        Hold { kind, ..self }
    }

    /// The hold as a worker's stdout line: `HOLD name=.. token=.. start_us=.. end_us=..
    /// validity_us=.. holder=..`.
    pub fn to_line(&self) -> String {
        format!(
            "HOLD name={} token={} start_us={} end_us={} validity_us={} holder={}{}",
            self.name,
            self.fencing_token,
            self.start_us,
            self.end_us,
            self.validity_us,
            self.holder,
            self.kind.to_fields()
        )
    }

    /// Parses a line written by [`to_line`](Hold::to_line) (by a worker in any language);
    /// `None` if it is not a complete `HOLD` line.
    pub fn parse_line(line: &str) -> Option<Hold> {
        let mut parts = line.split_whitespace();
        if parts.next()? != "HOLD" {
            return None;
        }
        let get = |key: &str| -> Option<String> {
            line.split_whitespace()
                .find_map(|p| p.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_owned)
        };
        Some(Hold {
            name: get("name")?,
            fencing_token: get("token")?.parse().ok()?,
            start_us: get("start_us")?.parse().ok()?,
            end_us: get("end_us")?.parse().ok()?,
            validity_us: get("validity_us")?.parse().ok()?,
            holder: get("holder")?,
            kind: HoldKind::from_fields(get)?,
        })
    }

    /// The end of the validity the library reported.
    pub fn valid_until_us(&self) -> u64 {
        self.start_us.saturating_add(self.validity_us)
    }

    /// The part of the hold the lock was responsible for: up to the end of its validity.
    pub(crate) fn protected_end_us(&self) -> u64 {
        self.end_us.min(self.valid_until_us())
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} held {:?} with token {} from {} to {} us (+{} us), valid until +{} us",
            self.holder,
            self.name,
            self.fencing_token,
            self.start_us,
            self.end_us,
            self.end_us.saturating_sub(self.start_us),
            self.validity_us
        )
    }
}

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A record that makes no sense (ends before it starts).
    Malformed {
        /// The record.
        hold: Hold,
    },
    /// The holder kept using the lock after the validity the library reported.
    HeldPastValidity {
        /// The record.
        hold: Hold,
        /// By how much, in microseconds.
        over_us: u64,
    },
    /// Two holders held one name at once, within their validity.
    Overlap {
        /// The hold that started first.
        earlier: Hold,
        /// The hold that started while `earlier` was still valid and in use.
        later: Hold,
        /// Length of the overlap, in microseconds.
        overlap_us: u64,
    },
    /// The holds of a semaphore or read-write lock held at one instant weighed more than its
    /// capacity: more permits than the limit, or a writer with someone else.
    OverLimit {
        /// When the weight passed the capacity.
        at_us: u64,
        /// The weight held then.
        held: u64,
        /// The name's capacity (the limit; a read-write lock's is 2^50, a writer's weight).
        capacity: u64,
        /// Every hold held then.
        holds: Vec<Hold>,
    },
    /// Holds of one name disagree on its kind (a lock, a semaphore, a read-write lock) or
    /// limit.
    KindMix {
        /// The first hold of the name.
        first: Hold,
        /// One of another kind.
        other: Hold,
    },
    /// A later hold on a name got a fencing token not larger than an earlier one's.
    TokenNotIncreasing {
        /// The earlier hold.
        earlier: Hold,
        /// The later hold, whose token is not larger.
        later: Hold,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Malformed { hold } => {
                write!(f, "malformed record (ends before it starts): {hold}")
            }
            Violation::HeldPastValidity { hold, over_us } => {
                write!(f, "held past validity by {over_us} us: {hold}")
            }
            Violation::Overlap {
                earlier,
                later,
                overlap_us,
            } => write!(
                f,
                "overlap of {overlap_us} us on {:?}:\n    {earlier}\n    {later}",
                earlier.name
            ),
            Violation::OverLimit {
                at_us,
                held,
                capacity,
                holds,
            } => {
                write!(
                    f,
                    "{held} held of {capacity} at {at_us} us on {:?}:",
                    holds.first().map_or("", |h| h.name.as_str())
                )?;
                for h in holds {
                    write!(f, "\n    {h}{}", h.kind.to_fields())?;
                }
                Ok(())
            }
            Violation::KindMix { first, other } => write!(
                f,
                "two kinds on {:?}:\n    {first}{}\n    {other}{}",
                first.name,
                first.kind.to_fields(),
                other.kind.to_fields()
            ),
            Violation::TokenNotIncreasing { earlier, later } => write!(
                f,
                "fencing token did not increase on {:?} ({} then {}):\n    {earlier}\n    {later}",
                earlier.name, earlier.fencing_token, later.fencing_token
            ),
        }
    }
}
