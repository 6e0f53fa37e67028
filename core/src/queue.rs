//! The wait queue and its hand-off protocol, the Rust side of `scripts/queue.lua`,
//! `scripts/acquire.lua` and `scripts/release.lua`.
//!
//! A caller that waits takes a [`Place`] in each server's queue at its first refusal: its
//! arrival (the same on every server, so they all order waiters alike) and how long the place
//! lasts without a new attempt. A release hands the lock straight to the first in line whose
//! process the server sees listening (its token, its TTL, a new fencing counter) and only then
//! tells that waiter's process, on its wake-up channel (`keys::LockKeys::wake_channel`), with
//! the message `"COUNTER ARRIVAL TOKEN"` ([`parse_wake`]): a message that names a counter is
//! sent only for a grant the script made. A waiter the server cannot see listen where a
//! message would still reach it (a Redis 6.2 cluster) is woken instead ([`unheard`]) and the
//! name kept free for it. The waiter then judges the messages of all servers ([`judge_handoffs`]):
//! handed over on a quorum at one counter is a lock, with no further round trip.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(doc)]
use crate::kind::LeaseKind;
use crate::quorum;
use crate::timing;

/// A waiter's place in the servers' wait queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// When the waiter arrived, in microseconds of its own wall clock: it orders the queue
    /// (the same on every server) and names the acquire call in the messages of releases that
    /// hand the lock over.
    pub arrival: u64,
    /// How long the place is kept without a new attempt.
    pub lasts: Duration,
}

impl Place {
    /// A place arriving now, kept for `lasts` between attempts.
    pub fn new(lasts: Duration) -> Place {
        let arrival = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        Place { arrival, lasts }
    }
}

/// The token an election's observers register as on the lock's release channel: a term's
/// renewal (`note.lua`) names it, so that no waiter is woken by it (a waiter's token is never
/// this short).
pub(crate) const OBSERVERS: &[u8] = b"observer";

/// A release that handed the lock to a waiter, as its message told it: the fencing counter the
/// server gave it and the arrival of the place it was handed to (which names the acquire call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handoff {
    pub fence: u64,
    pub arrival: u64,
}

/// Parses a release message, "COUNTER ARRIVAL TOKEN" (queue.lua's `tell`): the token it names
/// and the handoff (`None` for a counter of 0, or `?`: a plain wake-up). Anything else names
/// the whole payload as the token (an empty one wakes every waiter).
pub(crate) fn parse_wake(payload: &[u8]) -> (&[u8], Option<Handoff>) {
    let mut parts = payload.splitn(3, |&b| b == b' ');
    let number = |p: Option<&[u8]>| std::str::from_utf8(p?).ok()?.parse::<u64>().ok();
    let counter = |p: Option<&[u8]>| match p {
        Some(b"?") => Some(0),
        p => number(p),
    };
    match (counter(parts.next()), number(parts.next()), parts.next()) {
        (Some(fence), Some(arrival), Some(token)) => {
            (token, (fence > 0).then_some(Handoff { fence, arrival }))
        }
        _ => (payload, None),
    }
}

/// Whether a release message is a wake-up the server sent without seeing the waiter's process
/// listen there ("? ARRIVAL TOKEN"): on a cluster without sharded pub/sub (Redis 6.2) a
/// message reaches every node, and its receiver learns that its subscription is on a node
/// that no longer owns the channel's slot (`pubsub.rs` then subscribes again at the owner).
pub(crate) fn unheard(payload: &[u8]) -> bool {
    payload.starts_with(b"? ")
}

/// What the releases' messages say about a waiting acquire call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Handed over on a quorum at this fencing counter, with this much validity.
    Done { fence: u64, validity: Duration },
    /// Handed over on some servers, not yet on a quorum.
    Partial,
    /// Handed over, but an attempt must confirm it (too little validity left to count on the
    /// handoff alone, or the servers' fencing counters differ).
    Stale,
    /// No handoff to this call.
    Nothing,
}

/// Judges the handoffs the servers' messages reported (one per server at most) for the call
/// that holds `place`, of which `q` make a quorum (the lease's: [`LeaseKind::quorum`]). Each server that handed over set the key with the
/// call's TTL after the call had taken its place there, hence after `since_start` ago on this
/// machine's clock: the validity counts from there. When less than half the TTL is left that
/// way, [`Verdict::Stale`]: an attempt resets the TTL (the key holds this call's token).
pub(crate) fn judge_handoffs(
    handoffs: impl IntoIterator<Item = Handoff>,
    place: &Place,
    q: usize,
    ttl: Duration,
    since_start: Duration,
    drift_factor: f64,
) -> Verdict {
    let fences: Vec<u64> = handoffs
        .into_iter()
        .filter(|h| h.arrival == place.arrival)
        .map(|h| h.fence)
        .collect();
    let Some(&fence) = fences.iter().max() else {
        return Verdict::Nothing;
    };
    if fences.len() < q {
        return Verdict::Partial;
    }
    let at_fence = fences.iter().filter(|&&f| f == fence).count();
    if at_fence < q {
        return Verdict::Stale;
    }
    match quorum::validity(ttl, since_start, drift_factor) {
        Some(validity) if timing::handoff_fresh_enough(validity, ttl) => {
            Verdict::Done { fence, validity }
        }
        _ => Verdict::Stale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn release_messages_name_the_token_and_the_handoff() {
        assert_eq!(
            parse_wake(b"42 1795481775922188 abc.def"),
            (
                &b"abc.def"[..],
                Some(Handoff {
                    fence: 42,
                    arrival: 1795481775922188
                })
            )
        );
        // Tokens are any bytes, spaces included: everything after the second space.
        assert_eq!(
            parse_wake(b"7 1 a b c"),
            (
                &b"a b c"[..],
                Some(Handoff {
                    fence: 7,
                    arrival: 1
                })
            )
        );
        // A counter of 0 is a plain wake-up, and so is '?', which says the server did not see
        // the waiter's process listen.
        assert_eq!(parse_wake(b"0 0 tok"), (&b"tok"[..], None));
        assert_eq!(parse_wake(b"? 5 tok"), (&b"tok"[..], None));
        assert!(unheard(b"? 5 tok") && !unheard(b"0 5 tok") && !unheard(b"?5 tok"));
        // Anything else is a token as a whole (an empty one wakes everyone).
        assert_eq!(parse_wake(b"tok"), (&b"tok"[..], None));
        assert_eq!(parse_wake(b"x 1 tok"), (&b"x 1 tok"[..], None));
        assert_eq!(parse_wake(b"1 tok"), (&b"1 tok"[..], None));
        assert_eq!(parse_wake(b""), (&b""[..], None));
    }

    #[test]
    fn a_handoff_counts_on_a_quorum_at_one_counter_with_enough_validity_left() {
        let place = Place {
            arrival: 5,
            lasts: MS(900),
        };
        let h = |fence, arrival| Handoff { fence, arrival };
        let judge = |hs: Vec<Handoff>, n, since| {
            judge_handoffs(hs, &place, quorum::quorum(n), MS(1000), MS(since), 0.0)
        };
        assert_eq!(judge(vec![], 3, 0), Verdict::Nothing);
        assert_eq!(
            judge(vec![h(9, 4)], 1, 0),
            Verdict::Nothing,
            "another call's"
        );
        assert_eq!(judge(vec![h(9, 5)], 3, 0), Verdict::Partial);
        assert_eq!(
            judge(vec![h(9, 5), h(8, 5)], 3, 0),
            Verdict::Stale,
            "counters differ"
        );
        assert_eq!(
            judge(vec![h(9, 5), h(9, 5)], 3, 100),
            Verdict::Done {
                fence: 9,
                validity: MS(898)
            }
        );
        assert_eq!(
            judge(vec![h(9, 5)], 1, 600),
            Verdict::Stale,
            "half the TTL gone"
        );
    }
}
