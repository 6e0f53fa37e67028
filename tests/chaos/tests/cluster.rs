//! Faults on a real Redis Cluster (3 masters, 3 replicas) while holders contend, judged by the
//! history checker (no two holds on a name overlap within their reported validity; fencing
//! tokens strictly increase per name in hold order): the contended names' slots migrated to
//! other masters mid-run (MOVED and ASK; the keys moved one at a time with REPLACE, and in
//! batches without it), for locks, a semaphore and a read-write lock, and a master killed
//! mid-run with replica acknowledgment on (its replica promoted, the old master back as a
//! replica). Stage 55 runs them on Redis 7.0, stage 57 on Redis 6.2 and Valkey 8.1.

use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::ffi_support::keys::LockKeys;
use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::contend::{
    acknowledged_cluster_manager, contend_family, finish, runtime, Contention, Family,
};
use fencelock_chaos::history::History;
use fencelock_testkit::cluster::{Migrate, RedisCluster};

const MS: fn(u64) -> Duration = Duration::from_millis;
/// Longest a whole contention run may take beyond its planned end before it counts as hung.
const HANG_LIMIT: Duration = Duration::from_secs(30);

fn names() -> Vec<String> {
    ["alpha", "beta", "gamma"].map(String::from).to_vec()
}

/// Every contended name's slot moves to another master while six holders contend; then back.
/// No overlap, tokens increasing per name (the counters move with their slots), and no error
/// reaches the holders: a script refused while its slot is half moved (TRYAGAIN) is retried
/// within the call's time. The keys move one at a time with REPLACE in the first round, in
/// batches without it in the second.
#[test]
fn resharding_while_holders_contend_keeps_exclusion_and_fencing() {
    reshard_under_contention(Family::Lock, names(), 1, 6);
}

/// Issue 51: one name, as contended as a user's hot lock (eight holders in two managers, each
/// hold a few milliseconds), its slot moved back and forth by both procedures. On Redis 6.2,
/// whose cluster carries PUBLISH to every node while its count of listeners sees one, every
/// waiter's wake-up subscription stayed on the old master, and the scripts' hand-offs, reading
/// a count of 0 as "nobody listens", told each waiter in turn that it held the lock: thousands
/// of overlaps. The scripts now ask who listens before telling anyone, and a waiter they cannot
/// see is only woken.
#[test]
fn a_hot_locks_slot_resharded_keeps_exclusion_and_fencing() {
    reshard_under_contention(Family::Lock, vec!["{resharded}:lock".into()], 2, 4);
}

/// The same for a semaphore's permits: never more than its limit held at one instant.
#[test]
fn a_hot_semaphores_slot_resharded_keeps_its_limit() {
    let family = Family::Semaphore {
        limit: 2,
        max_count: 2,
    };
    reshard_under_contention(family, vec!["{resharded}:sem".into()], 2, 4);
}

/// The same for a read-write lock: a writer alone, readers only beside readers.
#[test]
fn a_hot_rwlocks_slot_resharded_keeps_writers_alone() {
    let family = Family::RwLock { write_one_in: 3 };
    reshard_under_contention(family, vec!["{resharded}:rw".into()], 2, 4);
}

/// `managers` managers of `holders` holders each contend for `names` (leases of `family`) for
/// 8 s while each name's slot moves to another master (the keys one at a time with REPLACE),
/// then on (in batches without REPLACE), four moves a name. The history checker judges every
/// hold; no error may reach a holder and every release must find its lease.
fn reshard_under_contention(family: Family, names: Vec<String>, managers: usize, holders: usize) {
    let c = RedisCluster::start(3, 1);
    // Which server this proves the scenario on (stage 57 passes Redis 6.2's and Valkey's).
    println!("{family:?} on a cluster of {}", c.nodes[0].version());
    let history = History::new();
    let until = Instant::now() + Duration::from_secs(8);
    let rt = runtime();
    let spec = Contention {
        holders,
        names: names.clone(),
        ttl: MS(2000),
        wait: MS(10_000),
        max_hold: MS(3),
        until,
    };
    let jobs: Vec<_> = (0..managers)
        .map(|_| {
            let m = LockManager::builder([c.url()])
                .server_timeout(MS(1000))
                .retry_delay(MS(50))
                .build()
                .unwrap();
            rt.spawn(contend_family(m, spec.clone(), family, history.clone()))
        })
        .collect();
    sleep(MS(1000));
    let mut moved = 0;
    for round in 0..4 {
        let how = [Migrate::OneByOne, Migrate::Batched][round / 2];
        for name in &names {
            let slot = LockKeys::new(b"", name.as_bytes()).slot;
            let from = c.master_of_slot(slot).port();
            let to = c
                .topology()
                .into_iter()
                .filter(|n| n.master && n.port != from)
                .nth(round % 2)
                .unwrap()
                .port;
            c.migrate_slot_by(slot, to, how, || sleep(MS(200)));
            moved += 1;
            sleep(MS(300));
        }
    }
    let reports: Vec<_> = jobs
        .into_iter()
        .map(|job| finish(&rt, job, until, HANG_LIMIT))
        .collect();
    let verdict = history.check();
    for report in &reports {
        println!("{family:?}, resharding ({moved} slot moves): {report}");
    }
    println!("{verdict}");
    verdict.assert_ok();
    for report in &reports {
        let unexpected = report.unexpected_errors(&[]);
        assert!(
            unexpected.is_empty(),
            "errors reached the holders: {unexpected:?}"
        );
        assert_eq!(
            report.releases.keys().collect::<Vec<_>>(),
            vec!["ok"],
            "{:?}",
            report.releases
        );
        assert!(report.acquired() >= 50, "too few holds: {report}");
    }
}

/// A master killed mid-run, its replica promoted, the old master restarted as the new one's
/// replica; with replica acknowledgment on, every hold the checker sees is exclusive within its
/// validity, tokens keep increasing, and locks are granted again after the failover.
#[test]
fn a_master_killed_mid_run_with_replica_ack_keeps_exclusion_and_fencing() {
    master_killed_mid_run(Family::Lock);
}

/// The same failover under holders of a semaphore's permits (issue 34 item 6): never more
/// than its limit held at one instant.
#[test]
fn a_master_killed_mid_run_with_replica_ack_keeps_a_semaphores_limit() {
    master_killed_mid_run(Family::Semaphore {
        limit: 2,
        max_count: 2,
    });
}

fn master_killed_mid_run(family: Family) {
    let mut c = RedisCluster::start(3, 1);
    let m = acknowledged_cluster_manager(c.url());
    let history = History::new();
    let until = Instant::now() + Duration::from_secs(15);
    let rt = runtime();
    let spec = Contention {
        holders: 6,
        names: names(),
        ttl: MS(2000),
        wait: MS(5000),
        max_hold: MS(5),
        until,
    };
    let job = rt.spawn(contend_family(m, spec, family, history.clone()));
    sleep(MS(1500));
    let slot = LockKeys::new(b"", b"alpha").slot;
    let old = c.master_of_slot(slot).port();
    let promoted = c.kill_master_of_slot(slot);
    // The old master comes back empty, as the new one's replica: acknowledgments resume.
    c.node_mut(old).restart();
    c.wait_ready(Duration::from_secs(30));
    assert_eq!(c.replicas_of(promoted), vec![old]);
    let recovered = Instant::now();
    let report = finish(&rt, job, until, HANG_LIMIT);
    let verdict = history.check();
    println!("{family:?}, master killed (acknowledged writes): {report}\n{verdict}");
    verdict.assert_ok();
    let unexpected = report.unexpected_errors(&[ErrorKind::NotAcquired, ErrorKind::Unavailable]);
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    assert!(
        report.acquired_after(recovered) > 0,
        "no lock granted after the failover: {report}"
    );
}
