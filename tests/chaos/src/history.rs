//! The history checker: every holder records what it saw, and the checker decides whether the
//! lock kept its promises.
//!
//! A [`Hold`] is one holder's view of one acquisition: the lock name, the fencing token, when
//! the holder got the lock and when it stopped using it (wall-clock microseconds, one clock
//! shared by every process on the machine: [`now_us`]), and the validity the library reported
//! at acquisition. The verdict:
//!
//! - **no overlap**: on one name, no two hold periods overlap *within the validity the library
//!   reported* (a hold counts from its start to the earlier of its end and `start + validity`);
//! - **not held past validity**: a holder that kept working after `start + validity` is itself
//!   a violation (the lock no longer protected it: the classic paused-client case);
//! - **fencing order**: in hold order (by start), fencing tokens on one name strictly increase.
//!
//! Holds of a semaphore or a read-write lock ([`HoldKind`]) are judged by their weight against
//! the name's capacity instead: never more than the limit at one instant, never a writer with
//! anyone else ([`crate::capacity`]).
//!
//! Record `start` right after the acquire returned and read the validity after that, and
//! record `end` before calling release: then a correct lock never produces a violation.
//!
//! Worker processes (in any language) report holds on their stdout, one line each, in the
//! format of [`Hold::to_line`] / [`Hold::parse_line`]:
//!
//! ```text
//! HOLD name=alpha token=42 start_us=1795330453749048 end_us=1795330453751002 validity_us=985197 holder=rust-1234/0
//! ```
//!
//! (names and holder labels without spaces or `=`); a semaphore's or read-write lock's hold
//! adds its kind: `kind=semaphore count=2 limit=4`, `kind=read`, `kind=write`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use crate::capacity::HoldKind;

/// Wall-clock microseconds since the Unix epoch: the clock every holder on this machine shares.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// One holder's record of one acquisition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Lock name.
    pub name: String,
    /// The fencing token the library reported.
    pub fencing_token: u64,
    /// When the holder got the lock ([`now_us`] right after the acquire returned).
    pub start_us: u64,
    /// When the holder stopped relying on it ([`now_us`] before releasing).
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

/// The checker's verdict over a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Number of holds checked.
    pub holds: usize,
    /// Number of distinct names.
    pub names: usize,
    /// Every violation found (empty: the history is clean).
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// No violation at all.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The overlaps found.
    pub fn overlaps(&self) -> Vec<&Violation> {
        self.of(|v| matches!(v, Violation::Overlap { .. }))
    }

    /// The instants a semaphore or read-write lock was held past its capacity.
    pub fn over_limit(&self) -> Vec<&Violation> {
        self.of(|v| matches!(v, Violation::OverLimit { .. }))
    }

    /// The holds used past their validity.
    pub fn held_past_validity(&self) -> Vec<&Violation> {
        self.of(|v| matches!(v, Violation::HeldPastValidity { .. }))
    }

    /// The fencing-order violations found.
    pub fn token_violations(&self) -> Vec<&Violation> {
        self.of(|v| matches!(v, Violation::TokenNotIncreasing { .. }))
    }

    fn of(&self, pred: impl Fn(&Violation) -> bool) -> Vec<&Violation> {
        self.violations.iter().filter(|v| pred(v)).collect()
    }

    /// Panics with the full list of violations unless the history is clean.
    #[track_caller]
    pub fn assert_ok(&self) {
        assert!(self.is_ok(), "history checker: {self}");
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ok() {
            return write!(
                f,
                "OK: {} holds on {} names, no overlap, none past validity, fencing tokens strictly increasing",
                self.holds, self.names
            );
        }
        write!(
            f,
            "{} VIOLATIONS in {} holds on {} names:",
            self.violations.len(),
            self.holds,
            self.names
        )?;
        for v in &self.violations {
            write!(f, "\n  - {v}")?;
        }
        Ok(())
    }
}

/// Checks a history: see the [module docs](self) for the rules.
pub fn check(holds: &[Hold]) -> Verdict {
    let mut violations = Vec::new();
    let mut by_name: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for h in holds {
        if h.end_us < h.start_us {
            violations.push(Violation::Malformed { hold: h.clone() });
            continue;
        }
        if h.end_us > h.valid_until_us() {
            violations.push(Violation::HeldPastValidity {
                hold: h.clone(),
                over_us: h.end_us - h.valid_until_us(),
            });
        }
        by_name.entry(&h.name).or_default().push(h);
    }
    let names = by_name.len();
    for list in by_name.values_mut() {
        list.sort_by_key(|h| (h.start_us, h.end_us));
        if list.iter().any(|h| h.kind != HoldKind::Lock) {
            crate::capacity::check_shared(list, &mut violations);
            continue;
        }
        // Sweep in start order, remembering the protected period that reaches furthest.
        let mut reach: Option<&Hold> = None;
        for (i, h) in list.iter().enumerate() {
            if let Some(r) = reach {
                let r_end = r.protected_end_us();
                if h.start_us < r_end {
                    let overlap_us = r_end.min(h.protected_end_us()) - h.start_us;
                    violations.push(Violation::Overlap {
                        earlier: r.clone(),
                        later: (*h).clone(),
                        overlap_us,
                    });
                }
            }
            match reach {
                Some(r) if r.protected_end_us() >= h.protected_end_us() => {}
                _ => reach = Some(h),
            }
            if i > 0 && h.fencing_token <= list[i - 1].fencing_token {
                violations.push(Violation::TokenNotIncreasing {
                    earlier: list[i - 1].clone(),
                    later: (*h).clone(),
                });
            }
        }
    }
    Verdict {
        holds: holds.len(),
        names,
        violations,
    }
}

/// A history shared by many holders (tasks and threads); clones share it.
#[derive(Debug, Clone, Default)]
pub struct History {
    holds: Arc<Mutex<Vec<Hold>>>,
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// Adds one hold.
    pub fn record(&self, hold: Hold) {
        self.holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(hold);
    }

    /// Every hold recorded so far.
    pub fn holds(&self) -> Vec<Hold> {
        self.holds.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Number of holds recorded so far.
    pub fn len(&self) -> usize {
        self.holds.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The checker's verdict over everything recorded so far.
    pub fn check(&self) -> Verdict {
        check(&self.holds())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1000;

    fn hold(name: &str, token: u64, start_ms: u64, end_ms: u64, validity_ms: u64) -> Hold {
        Hold {
            name: name.into(),
            fencing_token: token,
            start_us: start_ms * MS,
            end_us: end_ms * MS,
            validity_us: validity_ms * MS,
            holder: format!("h{token}"),
            kind: HoldKind::Lock,
        }
    }

    #[test]
    fn a_clean_history_passes() {
        let holds = vec![
            hold("a", 1, 0, 10, 100),
            hold("a", 3, 10, 20, 100), // starts exactly when the previous ended: no overlap
            hold("b", 2, 5, 50, 100),  // another name may overlap in time
            hold("a", 7, 30, 31, 100),
            hold("b", 9, 60, 61, 100),
        ];
        let v = check(&holds);
        assert!(v.is_ok(), "{v}");
        assert_eq!((v.holds, v.names), (5, 2));
        assert!(v.to_string().starts_with("OK: 5 holds on 2 names"), "{v}");
        v.assert_ok();
    }

    #[test]
    fn a_planted_overlap_fails() {
        let holds = vec![
            hold("a", 1, 0, 10, 100),
            hold("a", 2, 20, 40, 100),
            hold("a", 3, 35, 50, 100), // starts 5 ms before the previous holder stopped
        ];
        let v = check(&holds);
        assert!(!v.is_ok());
        assert_eq!(v.violations.len(), 1, "{v}");
        match &v.violations[0] {
            Violation::Overlap {
                earlier,
                later,
                overlap_us,
            } => {
                assert_eq!((earlier.fencing_token, later.fencing_token), (2, 3));
                assert_eq!(*overlap_us, 5 * MS);
            }
            other => panic!("expected an overlap, got {other}"),
        }
        assert!(v.to_string().contains("overlap of 5000 us"), "{v}");
        let caught = std::panic::catch_unwind(|| v.assert_ok());
        assert!(caught.is_err(), "assert_ok panics on a violation");
    }

    #[test]
    fn an_overlap_hidden_behind_a_short_hold_is_found() {
        // The long hold reaches past the short one: the third overlaps the first.
        let holds = vec![
            hold("a", 1, 0, 100, 1000),
            hold("a", 2, 10, 20, 1000),
            hold("a", 3, 50, 60, 1000),
        ];
        let v = check(&holds);
        assert_eq!(v.overlaps().len(), 2, "{v}");
    }

    #[test]
    fn a_planted_non_increasing_token_fails() {
        let holds = vec![
            hold("a", 5, 0, 10, 100),
            hold("a", 5, 20, 30, 100), // equal: not strictly increasing
            hold("a", 4, 40, 50, 100), // smaller
        ];
        let v = check(&holds);
        assert_eq!(v.token_violations().len(), 2, "{v}");
        assert!(v.overlaps().is_empty(), "{v}");
        assert!(v.to_string().contains("did not increase"), "{v}");
    }

    #[test]
    fn holding_past_validity_is_a_violation_but_not_an_overlap_beyond_it() {
        // The first holder was told 10 ms and kept going for 100 ms (a paused client); the
        // second took over after the validity ended: the lock kept its promise, the first
        // holder broke it.
        let holds = vec![hold("a", 1, 0, 100, 10), hold("a", 2, 50, 60, 100)];
        let v = check(&holds);
        assert_eq!(v.violations.len(), 1, "{v}");
        match &v.violations[0] {
            Violation::HeldPastValidity { hold, over_us } => {
                assert_eq!(hold.fencing_token, 1);
                assert_eq!(*over_us, 90 * MS);
            }
            other => panic!("expected held past validity, got {other}"),
        }
        // But a takeover inside the reported validity is an overlap.
        let holds = vec![hold("a", 1, 0, 100, 60), hold("a", 2, 50, 60, 100)];
        let v = check(&holds);
        assert_eq!(v.overlaps().len(), 1, "{v}");
        assert_eq!(v.held_past_validity().len(), 1, "{v}");
    }

    #[test]
    fn malformed_records_are_reported() {
        let v = check(&[hold("a", 1, 10, 5, 100)]);
        assert!(
            matches!(v.violations[..], [Violation::Malformed { .. }]),
            "{v}"
        );
    }

    #[test]
    fn hold_lines_round_trip() {
        let h = hold("alpha", 42, 10, 20, 100);
        let line = h.to_line();
        assert_eq!(
            line,
            "HOLD name=alpha token=42 start_us=10000 end_us=20000 validity_us=100000 holder=h42"
        );
        assert_eq!(Hold::parse_line(&line), Some(h));
        assert_eq!(Hold::parse_line("HOLD name=alpha token=x"), None);
        assert_eq!(Hold::parse_line("ACQUIRED token=1"), None);
    }

    #[test]
    fn the_shared_history_collects_from_threads() {
        let h = History::new();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let h = h.clone();
                s.spawn(move || h.record(hold("n", t + 1, t * 10, t * 10 + 5, 100)));
            }
        });
        assert_eq!(h.len(), 4);
        h.check().assert_ok();
    }
}
