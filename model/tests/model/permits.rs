//! The coordination family checked at the bounds CI uses: a semaphore never holds more than
//! its limit and a read-write lock never a writer with anyone else, in every interleaving of
//! the faults the timing assumptions allow; the line, the hand-out and fencing keep the
//! lock's properties; holders do share, so the limit is not kept by nobody holding; and a
//! pause past validity breaks the limit, as it breaks a lock's exclusion.

use stateright::{Checker, Model};

use fencelock_model::lock::{Faults, LockModel};
use fencelock_model::permits::Family;
use fencelock_model::properties::*;
use fencelock_model::scripts::Pubsub;

fn check(m: LockModel) -> impl Checker<LockModel> {
    m.checker().spawn_bfs().join()
}

fn model(family: Family, clients: usize, faults: Faults, max_time: u8) -> LockModel {
    LockModel {
        family,
        max_time,
        ..LockModel::small(clients, faults)
    }
}

/// A semaphore of 2 whose third client takes both permits: the two single permits are held
/// together, the double waits for both, and nobody passes it.
#[test]
fn a_semaphore_keeps_its_limit_under_the_faults_the_assumptions_allow() {
    let m = model(Family::semaphore(2, &[1, 1, 2]), 3, Faults::ASSUMED, 2);
    let c = check(m);
    c.assert_no_discovery(WITHIN_LIMIT);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_any_discovery(SHARED);
    c.assert_any_discovery(HANDED_OFF);
    c.assert_any_discovery(DEAD_PLACE_AHEAD);
    eprintln!("semaphore: {} unique states", c.unique_state_count());
}

/// Two readers and a writer: readers share, the writer holds alone.
#[test]
fn a_read_write_lock_never_holds_a_writer_with_anyone_else() {
    let m = model(Family::rwlock(&[false, false, true]), 3, Faults::ASSUMED, 2);
    let c = check(m);
    c.assert_no_discovery(WRITER_ALONE);
    c.assert_no_discovery(WITHIN_LIMIT);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_any_discovery(SHARED);
    c.assert_any_discovery(HANDED_OFF);
    eprintln!("read-write lock: {} unique states", c.unique_state_count());
}

/// A holder of one permit paused past its validity while the other takes both: three of two
/// permits in critical sections, as a pause gives two holders of a lock.
#[test]
fn a_pause_past_validity_exceeds_a_semaphores_limit() {
    let faults = Faults {
        pauses: true,
        ..Faults::NONE
    };
    let c = check(model(Family::semaphore(2, &[1, 2]), 2, faults, 5));
    c.assert_any_discovery(PAUSE_EXCEEDS);
    c.assert_no_discovery(FENCING_INCREASES);
}

/// Issue 51 for the permits: a semaphore on a Redis 6.2 cluster's node whose slot moves under
/// the waiters (their subscriptions left on the old node). The hand-out grants only to a
/// waiter the server sees listen and wakes one it cannot see, stopping the line there: the
/// limit, the tokens and the line hold.
#[test]
fn a_semaphore_on_a_6_2_cluster_keeps_its_limit_when_its_slot_moves() {
    let faults = Faults {
        moves: true,
        crashes: true,
        ..Faults::NONE
    };
    let mut m = model(Family::semaphore(2, &[1, 1, 2]), 3, faults, 2);
    m.pubsub = Pubsub::Broadcast;
    let c = check(m);
    c.assert_no_discovery(WITHIN_LIMIT);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_any_discovery(SHARED);
    c.assert_any_discovery(MOVED_UNDER_WAITERS);
    eprintln!(
        "semaphore, 6.2 cluster: {} unique states",
        c.unique_state_count()
    );
}
