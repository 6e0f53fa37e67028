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
use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::hold::{Hold, HoldKind, Violation};

/// Wall-clock microseconds since the Unix epoch: the clock every holder on this machine shares.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
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
