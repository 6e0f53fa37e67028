//! Semaphores and read-write locks on a real Redis Cluster (issue 34 item 4): every key of one
//! in the name's slot, waiters handed their leases through sharded pub/sub, and with replica
//! acknowledgment a lease that survives the failover of its master.

use std::time::Duration;

use fencelock::ffi_support::keys::LockKeys;
use fencelock::LockManager;
use fencelock_testkit::cluster::RedisCluster;
use fencelock_testkit::{wait_for, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_and_a_rwlock_keep_their_keys_in_one_slot_and_hand_off_by_sharded_pubsub() {
    let c = RedisCluster::start(3, 1);
    // Only a handoff can let the waiters in within the test's limits.
    let m = LockManager::builder([c.url()])
        .retry_delay(Duration::from_secs(60))
        .build()
        .unwrap();
    for name in ["jobs", "{tenant-7}:pool"] {
        let sem = m.semaphore(name, 2).unwrap();
        let all = sem.acquire(2, MS(60_000), Some(MS(0))).await.unwrap();
        let keys = LockKeys::new(b"", name.as_bytes());
        let master = c.master_of(name.as_bytes());
        assert_eq!(
            master.cmd(&[b"HGET", name.as_bytes(), b"kind"]),
            Reply::Bulk(Some(b"semaphore".to_vec()))
        );
        assert_eq!(master.cmd(&[b"ZCARD", &keys.holders]), Reply::Int(1));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let sem = sem.clone();
                tokio::spawn(async move { sem.acquire(1, MS(60_000), None).await })
            })
            .collect();
        let lined_up = || async { sem.state().await.unwrap().waiters == 2 };
        wait_for(Duration::from_secs(10), "two waiters in line", lined_up).await;
        all.release().await.unwrap();
        for w in waiters {
            let lease = tokio::time::timeout(Duration::from_secs(10), w)
                .await
                .expect("handed a permit through SPUBLISH")
                .unwrap()
                .unwrap();
            lease.release().await.unwrap();
        }
    }
    let rw = m.rwlock("{tenant-7}:doc").unwrap();
    let reader = rw.read(MS(60_000), Some(MS(0))).await.unwrap();
    let writer = {
        let rw = rw.clone();
        tokio::spawn(async move { rw.write(MS(60_000), None).await })
    };
    let lined_up = || async { rw.state().await.unwrap().waiters == 1 };
    wait_for(Duration::from_secs(10), "the writer in line", lined_up).await;
    assert!(rw.try_read(MS(10_000)).await.unwrap().is_none());
    reader.release().await.unwrap();
    let w = tokio::time::timeout(Duration::from_secs(10), writer)
        .await
        .expect("the writer is handed the lock")
        .unwrap()
        .unwrap();
    assert!(rw.state().await.unwrap().writer);
    w.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_replica_ack_a_lease_survives_the_failover_of_its_master() {
    let mut c = RedisCluster::start(3, 1);
    let acked = |c: &RedisCluster| {
        LockManager::builder([c.url()])
            .replica_ack(1, MS(500))
            .server_timeout(Duration::from_secs(2))
            .build()
            .unwrap()
    };
    let m = acked(&c);
    let sem = m.semaphore("durable-sem", 1).unwrap();
    let lease = sem.acquire(1, MS(60_000), None).await.unwrap();
    let keys = LockKeys::new(b"", b"durable-sem");
    // Killed at once after the grant: only the acknowledgment says the replica has it.
    c.kill_master_of_slot(keys.slot);
    // Checked without acknowledgment: the new master has no replica left.
    let plain = LockManager::new([c.url()]).unwrap();
    let other = plain.semaphore("durable-sem", 1).unwrap();
    assert!(
        other.try_acquire(1, MS(5000)).await.unwrap().is_none(),
        "the permit is still held through the new master"
    );
    assert_eq!(other.state().await.unwrap().held, 1);
    assert!(lease.is_held().await.unwrap());
}

/// An election on a cluster (issue 54): its term is a lock of the name's slot, its notes and
/// releases are announced in that slot (SPUBLISH; PUBLISH on Redis 6.2, which stage 57 runs),
/// and an observer hears each change long before a term's timer could tell it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_on_a_cluster_is_observed_through_its_slots_channel() {
    let c = RedisCluster::start(3, 0);
    let m = LockManager::builder([c.url()]).build().unwrap();
    let e = m.election("{tenant-7}:leader").unwrap();
    let mut observer = e.observe();
    assert_eq!(next(&mut observer).await.unwrap(), None);
    let term = e.campaign("a", MS(60_000), Some(MS(0))).await.unwrap();
    let leader = next(&mut observer).await.unwrap().unwrap();
    assert_eq!(
        (leader.value.as_str(), leader.fencing_token),
        ("a", term.fencing_token())
    );
    term.proclaim("b").await.unwrap();
    assert_eq!(next(&mut observer).await.unwrap().unwrap().value, "b");
    let keys = LockKeys::new(b"", b"{tenant-7}:leader");
    let master = c.master_of(b"{tenant-7}:leader");
    assert!(matches!(
        master.cmd(&[b"GET", &keys.who]),
        Reply::Bulk(Some(_))
    ));
    term.resign().await.unwrap();
    assert_eq!(next(&mut observer).await.unwrap(), None);
}

/// The observer's next report, within 10 s (more is a hang).
async fn next(o: &mut fencelock::Observer) -> fencelock::Result<Option<fencelock::Leader>> {
    tokio::time::timeout(Duration::from_secs(10), o.next())
        .await
        .expect("an observer hung")
}
