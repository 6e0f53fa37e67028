//! The history checker's rules for shared holds: a semaphore's permits and a read-write lock's
//! shares and write holds ([`HoldKind`](crate::hold::HoldKind)). Each hold has a weight against the name's capacity
//! (a semaphore's limit; a read-write lock: a reader weighs 1, a writer the whole capacity):
//!
//! - **never over the limit**: at no instant do the protected periods (from the start to the
//!   earlier of the end and the end of the reported validity) of one name's holds weigh more
//!   than its capacity, so never more than `limit` permits, never a writer with anyone else;
//! - **fencing order**: when one of two holds is exclusive (a write hold, or all of a
//!   semaphore's permits) and the other started after it ended (or the other way round), the
//!   later one's token is larger. A hold's recorded start is when its acquire *returned*, so a
//!   hold that started after another ended may still have been granted first, while both were
//!   held; that is impossible beside an exclusive hold (it would have held with it on the
//!   servers). Holds that share the name (readers, permits that fit together) may have been
//!   granted in either order, and on Redlock may even share a token: each server's counter is
//!   incremented by every grant and a lease's token is the largest of a quorum's, so two
//!   leases granted at the same moment through different servers can both see it.
//!
//! A name whose holds disagree on the kind or the limit is a violation too: one name, one kind.

use std::collections::BTreeMap;

use crate::hold::{Hold, Violation};

/// The violations among one name's holds, which include a shared kind.
pub(crate) fn check_shared(holds: &[&Hold], violations: &mut Vec<Violation>) {
    let family = holds[0].kind.family();
    if let Some(other) = holds.iter().find(|h| h.kind.family() != family) {
        violations.push(Violation::KindMix {
            first: holds[0].clone(),
            other: (*other).clone(),
        });
        return;
    }
    over_capacity(holds, family.1, violations);
    fencing_order(holds, violations);
}

/// Sweeps the protected periods in time order, adding weights at starts and taking them off
/// at ends (ends first at one instant: a period is half-open); reports each time the weight
/// held passes the capacity, once per rise above it.
fn over_capacity(holds: &[&Hold], capacity: u64, violations: &mut Vec<Violation>) {
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(holds.len() * 2);
    for (i, h) in holds.iter().enumerate() {
        events.push((h.start_us, true, i));
        events.push((h.protected_end_us(), false, i));
    }
    // At one instant ends (false) sort before starts (true).
    events.sort();
    let mut held: u64 = 0;
    let mut inside: BTreeMap<usize, ()> = BTreeMap::new();
    let mut over = false;
    for (at_us, is_start, i) in events {
        let (weight, _) = holds[i].kind.weights();
        if is_start {
            held += weight;
            inside.insert(i, ());
            if held > capacity && !over {
                over = true;
                violations.push(Violation::OverLimit {
                    at_us,
                    held,
                    capacity,
                    holds: inside.keys().map(|&j| holds[j].clone()).collect(),
                });
            }
        } else if inside.remove(&i).is_some() {
            held -= weight;
            over &= held > capacity;
        }
    }
}

/// Whether a hold takes its name's whole capacity (a write hold, all of a semaphore's permits).
fn exclusive(h: &Hold) -> bool {
    let (weight, capacity) = h.kind.weights();
    weight >= capacity
}

/// Each hold's token larger than that of every exclusive hold whose protected period ended
/// before it started, and an exclusive hold's larger than that of every hold that ended before
/// it started (see the module doc).
fn fencing_order(holds: &[&Hold], violations: &mut Vec<Violation>) {
    let mut by_end: Vec<&&Hold> = holds.iter().collect();
    by_end.sort_by_key(|h| h.protected_end_us());
    let mut by_start: Vec<&&Hold> = holds.iter().collect();
    by_start.sort_by_key(|h| h.start_us);
    // Walk starts in order, folding in every hold that ended before: the largest token of an
    // exclusive one, and of any.
    let mut ended = 0;
    let (mut largest_exclusive, mut largest_any): (Option<&Hold>, Option<&Hold>) = (None, None);
    let larger =
        |l: Option<&Hold>, e: &'_ Hold| l.is_none_or(|l| e.fencing_token > l.fencing_token);
    for h in by_start {
        while ended < by_end.len() && by_end[ended].protected_end_us() <= h.start_us {
            let e: &Hold = by_end[ended];
            if larger(largest_any, e) {
                largest_any = Some(e);
            }
            if exclusive(e) && larger(largest_exclusive, e) {
                largest_exclusive = Some(e);
            }
            ended += 1;
        }
        let earlier = if exclusive(h) {
            largest_any
        } else {
            largest_exclusive
        };
        if let Some(l) = earlier {
            if h.fencing_token <= l.fencing_token && !std::ptr::eq(*h, l) {
                violations.push(Violation::TokenNotIncreasing {
                    earlier: l.clone(),
                    later: (*h).clone(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::check;
    use crate::hold::HoldKind;

    const MS: u64 = 1000;

    fn hold(kind: HoldKind, token: u64, start_ms: u64, end_ms: u64) -> Hold {
        Hold {
            name: "pool".into(),
            fencing_token: token,
            start_us: start_ms * MS,
            end_us: end_ms * MS,
            validity_us: 1000 * MS,
            holder: format!("h{token}"),
            kind,
        }
    }

    fn permits(count: u64) -> HoldKind {
        HoldKind::Permits { count, limit: 3 }
    }

    #[test]
    fn permits_up_to_the_limit_pass_and_one_more_is_caught() {
        let clean = [
            hold(permits(1), 1, 0, 50),
            hold(permits(2), 2, 10, 40),
            hold(permits(2), 3, 50, 60), // starts as the first ends: 2 + 2 would be 4, but not at once
            hold(permits(1), 4, 55, 70),
        ];
        let v = check(&clean);
        assert!(v.is_ok(), "{v}");
        let planted = [
            hold(permits(1), 1, 0, 50),
            hold(permits(2), 2, 10, 40),
            hold(permits(1), 3, 30, 45), // 4 permits held from 30 to 40
        ];
        let v = check(&planted);
        assert_eq!(v.over_limit().len(), 1, "{v}");
        match v.over_limit()[0] {
            Violation::OverLimit {
                at_us,
                held,
                capacity,
                holds,
            } => {
                assert_eq!((*at_us, *held, *capacity), (30 * MS, 4, 3));
                assert_eq!(holds.len(), 3);
            }
            other => panic!("{other}"),
        }
        assert!(v.to_string().contains("4 held of 3"), "{v}");
    }

    #[test]
    fn a_writer_with_a_reader_is_caught_and_readers_together_pass() {
        let clean = [
            hold(HoldKind::Read, 1, 0, 50),
            hold(HoldKind::Read, 2, 10, 60),
            hold(HoldKind::Write, 3, 60, 70),
            hold(HoldKind::Read, 4, 70, 80),
        ];
        assert!(check(&clean).is_ok(), "{}", check(&clean));
        let planted = [
            hold(HoldKind::Read, 1, 0, 50),
            hold(HoldKind::Write, 2, 49, 60),
        ];
        assert_eq!(check(&planted).over_limit().len(), 1);
        let two_writers = [
            hold(HoldKind::Write, 1, 0, 50),
            hold(HoldKind::Write, 2, 20, 30),
        ];
        assert_eq!(check(&two_writers).over_limit().len(), 1);
    }

    #[test]
    fn a_hold_past_its_validity_does_not_count_past_it() {
        // The first holder was told 10 ms and kept going: a violation of its own, but the
        // writer after its validity is not an overlap.
        let mut paused = hold(HoldKind::Read, 1, 0, 100);
        paused.validity_us = 10 * MS;
        let v = check(&[paused, hold(HoldKind::Write, 2, 50, 60)]);
        assert_eq!(v.held_past_validity().len(), 1, "{v}");
        assert!(v.over_limit().is_empty(), "{v}");
    }

    #[test]
    fn fencing_tokens_must_grow_across_an_exclusive_hold() {
        // Holds that share the name may have tokens in either order, or one token (Redlock),
        // also when one was recorded after the other ended (its acquire returned late).
        let clean = [
            hold(permits(1), 2, 0, 50),
            hold(permits(1), 1, 5, 60),
            hold(permits(1), 2, 6, 40),
            hold(permits(1), 1, 70, 80),
        ];
        assert!(check(&clean).is_ok(), "{}", check(&clean));
        // Before and after all of the permits, the order is sure.
        let stale = [hold(permits(3), 5, 0, 10), hold(permits(1), 4, 20, 30)];
        assert_eq!(check(&stale).token_violations().len(), 1);
        let stale = [hold(permits(1), 5, 0, 10), hold(permits(3), 4, 20, 30)];
        assert_eq!(check(&stale).token_violations().len(), 1);
        let equal_later = [
            hold(HoldKind::Write, 5, 0, 10),
            hold(HoldKind::Read, 5, 10, 20),
        ];
        assert_eq!(check(&equal_later).token_violations().len(), 1);
    }

    #[test]
    fn one_name_one_kind_in_a_history() {
        let v = check(&[hold(HoldKind::Read, 1, 0, 10), hold(permits(1), 2, 20, 30)]);
        assert!(v.to_string().contains("kinds"), "{v}");
        assert!(!v.is_ok());
    }

    #[test]
    fn kinds_round_trip_through_hold_lines() {
        for kind in [HoldKind::Lock, permits(2), HoldKind::Read, HoldKind::Write] {
            let h = hold(kind, 7, 1, 2);
            assert_eq!(Hold::parse_line(&h.to_line()), Some(h));
        }
        let line =
            "HOLD name=a token=1 start_us=1 end_us=2 validity_us=5 holder=x kind=semaphore count=2";
        assert_eq!(
            Hold::parse_line(line),
            None,
            "a semaphore's hold needs its limit"
        );
    }
}
