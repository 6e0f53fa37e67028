//! Faults on a real Redis Cluster (3 masters, 3 replicas) while holders contend, judged by the
//! history checker (no two holds on a name overlap within their reported validity; fencing
//! tokens strictly increase per name in hold order): the contended names' slots migrated to
//! other masters mid-run (MOVED and ASK), and a master killed mid-run with replica
//! acknowledgment on (its replica promoted, the old master back as a replica).

use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::keys::LockKeys;
use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::contend::{
    acknowledged_cluster_manager, contend, contend_family, finish, runtime, Contention, Family,
};
use fencelock_chaos::history::History;
use fencelock_testkit::cluster::RedisCluster;

const MS: fn(u64) -> Duration = Duration::from_millis;
/// Longest a whole contention run may take beyond its planned end before it counts as hung.
const HANG_LIMIT: Duration = Duration::from_secs(30);

fn names() -> Vec<String> {
    ["alpha", "beta", "gamma"].map(String::from).to_vec()
}

/// Every contended name's slot moves to another master while six holders contend; then back.
/// No overlap, tokens increasing per name (the counters move with their slots), and no error
/// reaches the holders: a script refused while its slot is half moved (TRYAGAIN) is retried
/// within the call's time.
#[test]
fn resharding_while_holders_contend_keeps_exclusion_and_fencing() {
    let c = RedisCluster::start(3, 1);
    let m = LockManager::builder([c.url()])
        .server_timeout(MS(1000))
        .retry_delay(MS(50))
        .build()
        .unwrap();
    let history = History::new();
    let until = Instant::now() + Duration::from_secs(8);
    let rt = runtime();
    let spec = Contention {
        holders: 6,
        names: names(),
        ttl: MS(2000),
        wait: MS(10_000),
        max_hold: MS(5),
        until,
    };
    let job = rt.spawn(contend(m, spec, history.clone()));
    sleep(MS(1000));
    let mut moved = 0;
    for round in 0..2 {
        for name in names() {
            let slot = LockKeys::new(b"", name.as_bytes()).slot;
            let from = c.master_of_slot(slot).port();
            let to = c
                .topology()
                .into_iter()
                .filter(|n| n.master && n.port != from)
                .nth(round % 2)
                .unwrap()
                .port;
            c.migrate_slot(slot, to, || sleep(MS(200)));
            moved += 1;
            sleep(MS(300));
        }
    }
    let report = finish(&rt, job, until, HANG_LIMIT);
    let verdict = history.check();
    println!("resharding ({moved} slot moves): {report}\n{verdict}");
    verdict.assert_ok();
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
