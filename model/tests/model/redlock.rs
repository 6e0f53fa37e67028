//! Redlock over three servers, checked at the bounds CI uses: the lock's safety properties
//! hold in every interleaving of attempts, votes, write-backs, undos and hand-offs, and a
//! waiter does get the lock through a quorum of hand-off messages; a semaphore and a
//! read-write lock keep their limits on the quorum the core asks of their kind, and a
//! semaphore does not on a plain majority. Servers are alike, so the checker explores one
//! state of each order of them (depth first, with symmetry).

use stateright::{Checker, Model};

use fencelock_model::lock::Faults;
use fencelock_model::permits::Family;
use fencelock_model::properties::*;
use fencelock_model::redlock::RedlockModel;

fn check(m: RedlockModel) -> impl Checker<RedlockModel> {
    m.checker().symmetry().spawn_dfs().join()
}

fn assert_safe(c: &impl Checker<RedlockModel>) {
    c.assert_no_discovery(MUTUAL_EXCLUSION);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(UNDO_LEAVES_NO_KEY);
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
    c.assert_any_discovery(UNDID_A_GRANT);
    eprintln!(
        "Redlock, one fault: {} unique states",
        c.unique_state_count()
    );
}

/// A semaphore of 2 on three servers, three clients taking a permit each, all within the
/// first tick. On the quorum the core asks of it (all three: `floor(2 × 3 / 3) + 1`) the
/// permits in critical sections never exceed the limit, a lease's token exceeds every lease
/// released before its call started, and holders do share. On a plain majority the checker
/// finds what docs/SAFETY.md describes: three holders through {A,B}, {A,C} and {B,C}, every
/// server holding two permits, three in critical sections.
#[test]
fn a_semaphore_on_redlock_keeps_its_limit_on_its_quorum_and_not_on_a_majority() {
    let mut m = RedlockModel::family(3, Faults::NONE, Family::semaphore(2, &[1, 1, 1]));
    m.max_time = 0;
    assert_eq!(m.quorum, 3);
    let c = check(m.clone());
    c.assert_no_discovery(WITHIN_LIMIT);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(UNDO_LEAVES_NO_KEY);
    c.assert_any_discovery(SHARED);
    c.assert_any_discovery(ALL_DONE);
    eprintln!(
        "Redlock semaphore: {} unique states",
        c.unique_state_count()
    );
    m.quorum = 2;
    let c = check(m);
    c.assert_any_discovery(WITHIN_LIMIT);
    c.assert_no_discovery(FENCING_INCREASES);
}

/// A read-write lock on three servers (a majority, as for a lock): two readers and a writer
/// within the first tick. The writer is never in its critical section with anyone, readers
/// share, tokens and the line hold.
#[test]
fn a_rwlock_on_redlock_keeps_its_writer_alone() {
    let mut m = RedlockModel::family(3, Faults::NONE, Family::rwlock(&[false, false, true]));
    m.max_time = 0;
    assert_eq!(m.quorum, 2);
    let c = check(m);
    c.assert_no_discovery(WRITER_ALONE);
    c.assert_no_discovery(WITHIN_LIMIT);
    c.assert_no_discovery(FENCING_INCREASES);
    c.assert_no_discovery(NEVER_PASSES_A_WAITER);
    c.assert_no_discovery(NO_LOST_WAKEUP);
    c.assert_no_discovery(UNDO_LEAVES_NO_KEY);
    c.assert_any_discovery(SHARED);
    c.assert_any_discovery(ALL_DONE);
    eprintln!(
        "Redlock read-write lock: {} unique states",
        c.unique_state_count()
    );
}
