//! Redlock over three servers, checked at the bounds CI uses: the lock's safety properties
//! hold in every interleaving of attempts, votes, write-backs, undos and hand-offs, and a
//! waiter does get the lock through a quorum of hand-off messages. Servers are alike, so the
//! checker explores one state of each order of them (depth first, with symmetry).

use stateright::{Checker, Model};

use fencelock_model::lock::Faults;
use fencelock_model::properties::*;
use fencelock_model::redlock::RedlockModel;

fn check(m: RedlockModel) -> impl Checker<RedlockModel> {
    m.checker().symmetry().spawn_dfs().join()
}

fn assert_safe(c: &impl Checker<RedlockModel>) {
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_any_discovery(ALL_DONE);
    c.assert_any_discovery(HELD_BY_HANDOFF);
}

/// Two clients on three servers for 2 ticks, every interleaving of their attempts, votes,
/// write-backs, undos, releases and hand-offs.
#[test]
fn redlock_is_safe_in_every_interleaving() {
    let mut m = RedlockModel::small(2, Faults::NONE);
    m.max_time = 2;
    let c = check(m);
    assert_safe(&c);
    eprintln!("Redlock: {} unique states", c.unique_state_count());
}

/// The same within a tick, with one fault anywhere: a reply lost, a request delayed past
/// its attempt's tally (then run), a hand-off message lost, or a client crashed.
#[test]
fn redlock_is_safe_under_any_one_fault() {
    let mut m = RedlockModel::small(2, Faults::ASSUMED);
    (m.max_time, m.max_faults) = (1, 1);
    let c = check(m);
    assert_safe(&c);
    eprintln!(
        "Redlock, one fault: {} unique states",
        c.unique_state_count()
    );
}
