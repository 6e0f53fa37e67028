//! The lock model checked at the bounds CI uses (each within seconds): the safety properties
//! hold in every interleaving, the scenarios that make them meaningful are reached, and the
//! broken assumptions give the counterexamples docs/SAFETY.md describes.

use stateright::{Checker, HasDiscoveries, Model};

use fencelock_model::lock::{Action, Faults, Lean, LockModel, Phase};
use fencelock_model::properties::*;
use fencelock_model::scripts::Pubsub;

fn check(m: LockModel) -> impl Checker<LockModel> {
    m.checker().spawn_bfs().join()
}

/// Two clients, replies lost and delayed, clients crashing: mutual exclusion, increasing
/// fencing tokens and the order of the line hold in every interleaving.
#[test]
fn the_lock_is_safe_under_the_faults_the_assumptions_allow() {
    // 6 ticks: two whole holds with a hand-off between them, 4.5 million states.
    let mut m = LockModel::small(2, Faults::ASSUMED);
    m.max_time = 6;
    let c = check(m);
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_no_discovery(OBSERVER_NEVER_GOES_BACK);
    c.assert_any_discovery(OBSERVED_A_NEW_TERM);
    c.assert_any_discovery(ALL_DONE);
    c.assert_any_discovery(HANDED_OFF);
    c.assert_any_discovery(DEAD_PLACE_AHEAD);
    eprintln!("2 clients: {} unique states", c.unique_state_count());
}

/// Three clients, no faults: the line orders them and hands the lock on.
#[test]
fn three_clients_take_turns_in_line() {
    let mut m = LockModel::small(3, Faults::NONE);
    (m.max_time, m.max_extends) = (4, 0);
    let c = check(m);
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_any_discovery(HANDED_OFF);
    eprintln!("3 clients: {} unique states", c.unique_state_count());
}

/// Three clients, clients crashing: a crashed waiter's place ahead of a listening one is
/// passed over (a lock's line goes on as if it were not there), no script refreshes it, and
/// no release leaves the waiter behind it untold.
#[test]
fn a_crashed_waiter_holds_nobody_up() {
    let faults = Faults {
        crashes: true,
        ..Faults::NONE
    };
    let mut m = LockModel::small(3, faults);
    (m.max_time, m.max_extends) = (2, 0);
    let c = check(m);
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_any_discovery(DEAD_PLACE_AHEAD);
    eprintln!("a crashed waiter: {} unique states", c.unique_state_count());
}

/// A pause past validity (Kleppmann): the checker finds two holders in their critical
/// sections at once, and a late write the fenced store rejects; fencing tokens still increase.
#[test]
fn a_pause_past_validity_overlaps_and_fencing_catches_the_late_write() {
    let mut m = LockModel::small(
        2,
        Faults {
            pauses: true,
            ..Faults::NONE
        },
    );
    // The overlap needs a grant, a pause past its validity and a second grant: 5 ticks.
    m.max_time = 5;
    let c = check(m);
    let overlap = c.assert_any_discovery(PAUSE_OVERLAPS);
    let last = overlap.last_state();
    let holds: Vec<_> = (0..2)
        .map(|i| match last.clients[i].phase {
            Phase::Holding(h) => h,
            _ => unreachable!("both hold"),
        })
        .collect();
    // The holder furthest past its validity was paused, and its token is the older one.
    let stale = (0..2).min_by_key(|&i| holds[i].valid_until).unwrap();
    assert!(holds[stale].valid_until <= last.now, "{last:?}");
    assert!(last.clients[stale].was_paused, "{last:?}");
    assert!(
        holds[stale].fence < holds[1 - stale].fence,
        "the stale holder's token is the older one: {holds:?}"
    );
    assert!(overlap.into_actions().contains(&Action::Pause(stale)));
    c.assert_any_discovery(STALE_WRITE_REJECTED);
    c.assert_no_discovery(FENCING_INCREASES);
}

/// The server restarting empty (no persistence, docs/SAFETY.md "Servers that do not
/// forget"): a token is given again.
#[test]
fn a_server_restarted_empty_repeats_a_fencing_token() {
    let mut m = LockModel::small(
        2,
        Faults {
            restarts: true,
            ..Faults::NONE
        },
    );
    // A grant, the restart, a second grant: 4 ticks.
    m.max_time = 4;
    let c = check(m);
    c.assert_any_discovery(RESTART_REPEATS_A_TOKEN);
    // The election's observer too: the term it reads goes back (docs/SAFETY.md).
    c.assert_any_discovery(RESTART_SHOWS_AN_OLDER_TERM);
}

/// Issue 36's open case: a waiter's call ends while its process keeps listening, and a release
/// hands it the lock before its request giving the place up arrives (with a caller's own
/// token the core leaves such a key alone: it may be another acquisition's). Shown harmless:
/// the case is reached, exclusion, tokens and the line hold with it, and the lock is free
/// again within its TTL (nobody extends a key its call does not know it holds).
#[test]
fn a_hand_off_to_a_call_that_ended_waits_out_one_ttl_and_breaks_nothing() {
    let mut m = LockModel::small(
        2,
        Faults {
            gives_up: true,
            ..Faults::ASSUMED
        },
    );
    m.max_time = 4;
    let c = check(m);
    c.assert_any_discovery(HANDED_TO_AN_ENDED_CALL);
    c.assert_no_discovery(ENDED_CALL_FREED_IN_TTL);
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    eprintln!("calls that end: {} unique states", c.unique_state_count());
}

/// Issue 51, the hand-over before the fix: on a Redis 6.2 cluster whose slot moved under two
/// waiters (their subscriptions left on the old node, where the new owner's PUBLISH still
/// reaches them while its count says nobody listens), a release told each of them "handed to
/// you" and deleted the key, and a newcomer took it: two holders. The checker finds it.
#[test]
fn the_hand_over_before_issue_51_grants_twice_when_a_6_2_clusters_slot_moves() {
    let mut m = moved_slot_model(Faults::NONE);
    m.pubsub = Pubsub::BroadcastBefore51;
    let wanted = HasDiscoveries::AnyOf([MUTUAL_EXCLUSION].into_iter().collect());
    let c = m.checker().finish_when(wanted).spawn_bfs().join();
    let found = c.discovery(MUTUAL_EXCLUSION);
    assert!(found.is_some(), "the old hand-over kept exclusion");
    eprintln!("before issue 51: {:?}", found.unwrap().into_actions());
}

/// The hand-over since: the scripts ask who listens first, tell "handed to you" only to the
/// waiter they granted, and wake a waiter they cannot see (it may listen on another node),
/// keeping the name free for it. With the slot moved under the waiters, replies lost and
/// clients crashing: exclusion, increasing tokens, the line's order and its liveness hold.
#[test]
fn on_a_6_2_cluster_a_slot_moved_under_the_waiters_keeps_exclusion_and_the_line() {
    let faults = Faults {
        crashes: true,
        ..Faults::NONE
    };
    let c = check(moved_slot_model(faults));
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_any_discovery(MOVED_UNDER_WAITERS);
    c.assert_any_discovery(HANDED_OFF);
    eprintln!(
        "6.2 cluster, slot moved: {} unique states",
        c.unique_state_count()
    );
}

/// Three clients on a Redis 6.2 cluster's node whose slot may move once, with `faults`.
fn moved_slot_model(faults: Faults) -> LockModel {
    let mut m = LockModel::small(
        3,
        Faults {
            moves: true,
            ..faults
        },
    );
    (m.max_time, m.max_extends) = (2, 0);
    m.pubsub = Pubsub::Broadcast;
    m
}

/// Issue 56 item 5's question, whether the uncontended acquire could skip reading the line (a
/// plain `SET NX PX` and the counter's `INCR`, as a mark on the lock's key saying that someone
/// waits would allow): a holder's key expires while a waiter listens in line (its holder
/// stopped, or slow to release), and a newcomer's `SET NX` takes the name ahead of the waiter.
/// The checker finds the waiter passed at the bounds at which
/// `three_clients_take_turns_in_line` finds the scripts' lean path (which checks the line
/// first) never passes one.
#[test]
fn a_lean_path_that_reads_only_the_key_passes_a_waiter() {
    let mut m = LockModel::small(3, Faults::NONE);
    (m.max_time, m.max_extends) = (4, 0);
    m.lean = Lean::KeyOnly;
    let wanted = HasDiscoveries::AnyOf([NEVER_PASSES_A_WAITER].into_iter().collect());
    let c = m.checker().finish_when(wanted).spawn_bfs().join();
    let found = c.discovery(NEVER_PASSES_A_WAITER);
    assert!(
        found.is_some(),
        "a grant that reads only the key kept the line's order"
    );
    eprintln!("a key-only lean path: {:?}", found.unwrap().into_actions());
}
