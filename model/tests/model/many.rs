//! A lock on several names checked at the bounds CI uses: client 0 takes the first name,
//! client 2 the second, client 1 both at once. No two holders of a name at once, tokens
//! increasing per name, no grant passing a listening waiter on either name, and the holder of
//! both holding both keys or neither (never handed one alone), in every interleaving of the
//! faults the timing assumptions allow; a release waking the waiter of both, and that waiter
//! holding both in its critical section, are reached.

use stateright::{Checker, Model};

use fencelock_model::lock::{Faults, LockModel};
use fencelock_model::properties::*;

#[test]
fn a_lock_on_two_names_is_all_or_none_and_exclusive_under_the_faults_the_assumptions_allow() {
    let m = LockModel {
        wants: vec![1, 3, 2],
        max_time: 2,
        ..LockModel::small(3, Faults::ASSUMED)
    };
    let c = m.checker().spawn_bfs().join();
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(CRASHED_WAITER_BOUNDED);
    c.assert_no_discovery(ALL_OR_NONE);
    c.assert_any_discovery(WOKE_A_WAITER_OF_MANY);
    c.assert_any_discovery(HELD_MANY);
    c.assert_any_discovery(HANDED_OFF);
    eprintln!("two names: {} unique states", c.unique_state_count());
}
