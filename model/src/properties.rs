//! What the checker holds the lock model to (docs/SAFETY.md, "The checked model"). `always`
//! properties must hold in every state explored; `sometimes` ones must be reachable: they
//! show that the model gets where the `always` ones matter (a property that holds because
//! nothing happens proves nothing), and two of them are the counterexamples a broken
//! assumption is known to give.

use stateright::Property;

use crate::votes::RedlockModel;
use crate::world::{LockModel, Phase, State};

pub const MUTUAL_EXCLUSION: &str = "mutual exclusion while the timing assumptions hold";
pub const FENCING_INCREASES: &str = "fencing tokens of new grants strictly increase";
pub const NEVER_PASSES_A_WAITER: &str = "a grant never passes a listening waiter in line";
pub const PAUSE_OVERLAPS: &str = "a pause past validity lets two holders overlap (Kleppmann)";
pub const STALE_WRITE_REJECTED: &str = "the fenced store rejects a paused holder's late write";
pub const ALL_DONE: &str = "every client acquired and released";
pub const HANDED_OFF: &str = "a release handed the lock to a waiter";
pub const HELD_BY_HANDOFF: &str = "a waiter held through a quorum of hand-off messages";
pub const RESTART_REPEATS_A_TOKEN: &str = "a server restarted empty gives a token again";
pub const HANDED_TO_AN_ENDED_CALL: &str = "a hand-off reached a call that had ended";
pub const ENDED_CALL_FREED_IN_TTL: &str = "a lock handed to an ended call is free within its TTL";
pub const WITHIN_LIMIT: &str = "the permits held never exceed the limit";
pub const WRITER_ALONE: &str = "never a writer with anyone else";
pub const SHARED: &str = "two holders at once";
pub const PAUSE_EXCEEDS: &str = "a pause past validity lets the holders exceed the limit";
pub const ALL_OR_NONE: &str = "a lock on several names holds all of them or none";
pub const WOKE_A_WAITER_OF_MANY: &str = "a release woke a waiter of several names";
pub const HELD_MANY: &str = "a holder of several names in its critical section";
pub const NO_LOST_WAKEUP: &str = "no script leaves a listening waiter untold that could go";
pub const CRASHED_WAITER_BOUNDED: &str =
    "a crashed waiter holds the line up no longer than its place's life";
pub const UNDO_LEAVES_NO_KEY: &str = "an attempt given up leaves no key behind";
pub const DEAD_PLACE_AHEAD: &str = "a crashed waiter's place ahead of a listening waiter";
pub const UNDID_A_GRANT: &str = "an undo took back what a server had granted";
pub const OBSERVER_NEVER_GOES_BACK: &str =
    "an election's observer never reads a term older than one it read";
pub const OBSERVED_A_NEW_TERM: &str = "an observer read a leader replaced by a newer term";
pub const RESTART_SHOWS_AN_OLDER_TERM: &str =
    "a server restarted empty shows an observer an older term";
pub const MOVED_UNDER_WAITERS: &str =
    "a waiter heard only elsewhere (its slot moved) was woken (Redis 6.2 cluster)";

/// The line's liveness as safety (stateright checks `eventually` only where a path ends, and
/// bounded runs end everywhere): no script leaves a waiter untold that it owed a word; a
/// crashed waiter's place ends a place's life after its last request (no script refreshes or
/// moves a place but its caller's), and a lock's line passes it.
fn liveness() -> Vec<Property<LockModel>> {
    vec![
        Property::always(NO_LOST_WAKEUP, |_, s: &State| !s.history.lost_wakeup),
        Property::always(CRASHED_WAITER_BOUNDED, |m: &LockModel, s: &State| {
            !s.history.moved_a_place && m.passes_the_dead(s)
        }),
        Property::sometimes(DEAD_PLACE_AHEAD, |_, s: &State| s.dead_place_ahead()),
    ]
}

/// A script woke a waiter whose subscription its slot's move left on another node: the model
/// reaches what issue 51's fix is for.
fn moved_under_waiters() -> Property<LockModel> {
    Property::sometimes(MOVED_UNDER_WAITERS, |_, s: &State| {
        s.history.unheard_woken && s.clients.iter().any(|c| c.elsewhere)
    })
}

pub fn lock() -> Vec<Property<LockModel>> {
    let mut properties = vec![
        Property::always(MUTUAL_EXCLUSION, |_, s: &State| {
            s.any_paused() || s.history.restarted || s.in_cs().len() <= 1
        }),
        Property::always(FENCING_INCREASES, |_, s: &State| {
            s.history.restarted || !s.history.fence_regressed
        }),
        Property::always(NEVER_PASSES_A_WAITER, |_, s: &State| {
            !s.history.passed_a_waiter
        }),
        Property::sometimes(PAUSE_OVERLAPS, |_, s: &State| {
            s.any_paused() && s.in_cs().len() >= 2
        }),
        Property::sometimes(STALE_WRITE_REJECTED, |_, s: &State| s.store.rejected),
        Property::sometimes(ALL_DONE, |_, s: &State| {
            s.clients.iter().all(|c| c.phase == Phase::Done)
        }),
        Property::sometimes(HANDED_OFF, |_, s: &State| s.history.handed_off),
        moved_under_waiters(),
        Property::always(OBSERVER_NEVER_GOES_BACK, |_, s: &State| {
            s.history.restarted || !s.history.observed_older
        }),
        Property::sometimes(OBSERVED_A_NEW_TERM, |_, s: &State| {
            s.history.observed_new_term
        }),
        Property::sometimes(RESTART_SHOWS_AN_OLDER_TERM, |_, s: &State| {
            s.history.restarted && s.history.observed_older
        }),
        Property::sometimes(RESTART_REPEATS_A_TOKEN, |_, s: &State| {
            s.history.restarted && s.history.fence_regressed
        }),
        Property::sometimes(HANDED_TO_AN_ENDED_CALL, |_, s: &State| {
            s.ended_holder(0).is_some()
        }),
        Property::always(ENDED_CALL_FREED_IN_TTL, |m: &LockModel, s: &State| {
            s.ended_holder(0).is_none_or(|k| k.expires <= s.now + m.ttl)
        }),
    ];
    properties.extend(liveness());
    properties
}

/// What the checker holds a lock on several names to (one server, names in different slots):
/// no two holders of one name at once, tokens increasing per name, no grant passing a
/// listening waiter on any name, and a holder of several names holding all or none of their
/// keys (never handed one alone) under every fault; a release waking such a waiter, and such a
/// holder in its critical section, as the scenarios reached.
pub fn many() -> Vec<Property<LockModel>> {
    let mut properties = vec![
        Property::always(MUTUAL_EXCLUSION, |m: &LockModel, s: &State| {
            s.any_paused() || s.history.restarted || s.exclusive(m)
        }),
        Property::always(FENCING_INCREASES, |_, s: &State| {
            s.history.restarted || !s.history.fence_regressed
        }),
        Property::always(NEVER_PASSES_A_WAITER, |_, s: &State| {
            !s.history.passed_a_waiter
        }),
        Property::always(ALL_OR_NONE, |m: &LockModel, s: &State| {
            (0..m.clients).filter(|&c| m.many(c)).all(|c| {
                let held = s.held_names(c);
                held == 0 || held == m.wants(c)
            })
        }),
        Property::sometimes(WOKE_A_WAITER_OF_MANY, |_, s: &State| s.history.woke),
        Property::sometimes(HELD_MANY, |m: &LockModel, s: &State| {
            s.in_cs().into_iter().any(|c| m.many(c))
        }),
        Property::sometimes(HANDED_OFF, |_, s: &State| s.history.handed_off),
        Property::sometimes(ALL_DONE, |_, s: &State| {
            s.clients.iter().all(|c| c.phase == Phase::Done)
        }),
    ];
    properties.extend(liveness());
    properties
}

/// What the checker holds a semaphore or read-write lock to (one server): the permits in
/// critical sections within the limit (for a read-write lock: a writer alone) while the
/// timing assumptions hold, tokens and the line as for the lock, and holders sharing the name
/// as the scenario that makes the limit matter.
pub fn permits() -> Vec<Property<LockModel>> {
    let mut properties = vec![
        Property::always(WITHIN_LIMIT, |m: &LockModel, s: &State| {
            let (limit, _) = m.family.weight(0);
            s.any_paused() || s.history.restarted || s.weight_in_cs(&m.family) <= limit
        }),
        Property::always(WRITER_ALONE, |m: &LockModel, s: &State| {
            let in_cs = s.in_cs();
            s.any_paused()
                || s.history.restarted
                || in_cs.len() <= 1
                || !in_cs.iter().any(|&c| m.family.writes(c))
        }),
        Property::always(FENCING_INCREASES, |_, s: &State| {
            s.history.restarted || !s.history.fence_regressed
        }),
        Property::always(NEVER_PASSES_A_WAITER, |_, s: &State| {
            !s.history.passed_a_waiter
        }),
        Property::sometimes(SHARED, |_, s: &State| s.in_cs().len() >= 2),
        moved_under_waiters(),
        Property::sometimes(PAUSE_EXCEEDS, |m: &LockModel, s: &State| {
            let (limit, _) = m.family.weight(0);
            s.any_paused() && s.weight_in_cs(&m.family) > limit
        }),
        Property::sometimes(ALL_DONE, |_, s: &State| {
            s.clients.iter().all(|c| c.phase == Phase::Done)
        }),
        Property::sometimes(HANDED_OFF, |_, s: &State| s.history.handed_off),
    ];
    properties.extend(liveness());
    properties
}

/// What the checker holds Redlock to: the lock's properties across three servers, and a
/// hold taken through a quorum of hand-off messages as the scenario that makes them matter.
/// Of a semaphore or read-write lock ([`RedlockModel::family`]): the permits in critical
/// sections within the limit and a writer alone (instead of one holder), and a lease's token
/// larger than every lease released before its call started (leases that overlap may be
/// granted in either order).
pub fn redlock() -> Vec<Property<RedlockModel>> {
    type S = crate::votes::State;
    vec![
        Property::always(MUTUAL_EXCLUSION, |m: &RedlockModel, s: &S| {
            !s.assumptions_hold() || m.family.is_permits() || s.in_cs() <= 1
        }),
        Property::always(WITHIN_LIMIT, |m: &RedlockModel, s: &S| {
            let (limit, _) = m.family.weight(0);
            !s.assumptions_hold() || s.weight_in_cs(&m.family) <= limit
        }),
        Property::always(WRITER_ALONE, |m: &RedlockModel, s: &S| {
            let in_cs = s.clients_in_cs();
            let writer = in_cs.iter().any(|&c| m.family.writes(c));
            !s.assumptions_hold() || in_cs.len() <= 1 || !writer
        }),
        Property::always(FENCING_INCREASES, |_, s: &S| {
            s.history.restarted || !s.history.fence_regressed
        }),
        Property::always(NEVER_PASSES_A_WAITER, |_, s: &S| !s.history.passed_a_waiter),
        Property::always(NO_LOST_WAKEUP, |_, s: &S| !s.history.lost_wakeup),
        Property::always(UNDO_LEAVES_NO_KEY, |_, s: &S| !s.history.left_behind),
        Property::sometimes(UNDID_A_GRANT, |_, s: &S| s.history.undid),
        Property::sometimes(PAUSE_OVERLAPS, |_, s: &S| s.any_paused() && s.in_cs() >= 2),
        Property::sometimes(STALE_WRITE_REJECTED, |_, s: &S| s.store.rejected),
        Property::sometimes(ALL_DONE, |_, s: &S| {
            s.clients
                .iter()
                .all(|c| c.phase == crate::votes::Phase::Done)
        }),
        Property::sometimes(HELD_BY_HANDOFF, |_, s: &S| s.history.held_by_handoff),
        Property::sometimes(SHARED, |_, s: &S| s.in_cs() >= 2),
    ]
}
