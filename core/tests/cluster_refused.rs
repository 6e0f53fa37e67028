//! Issue 57 item 3 on a Redis Cluster (see refused.rs): a cluster none of whose seed nodes
//! listens gives up after `refused_attempts`; a master its slot map names that refuses while
//! a replica takes its slots over is waited through.

use std::time::Duration;

use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::cluster::RedisCluster;
use fencelock_testkit::free_port;

/// Far above the few seconds any of these waits takes: a hang, not a speed check.
const HANG: Duration = Duration::from_secs(60);

async fn acquire_within_hang(
    m: &LockManager,
    name: &str,
) -> Result<fencelock::Lock, fencelock::Error> {
    tokio::time::timeout(HANG, m.acquire(name, Duration::from_secs(10), None))
        .await
        .unwrap_or_else(|_| panic!("acquire {name:?} still waiting after {HANG:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_whose_every_seed_node_refuses_gives_up() {
    let url = format!(
        "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
        free_port(),
        free_port()
    );
    let m = LockManager::builder([url])
        .refused_attempts(3)
        .build()
        .unwrap();
    let e = acquire_within_hang(&m, "no-cluster").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("on 3 attempts in a row"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_master_refusing_during_its_failover_is_waited_through() {
    let mut c = RedisCluster::start(3, 1);
    let m = LockManager::builder([c.url()])
        .refused_attempts(2)
        .build()
        .unwrap();
    m.acquire("cluster-failing-over", Duration::from_secs(10), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    // Until a replica takes the slot over (the node timeout), the slot map names the dead
    // master: every attempt is refused there, far more than 2.
    let slot = c.keyslot(b"cluster-failing-over");
    let old = c.master_of_slot(slot).port();
    c.node_mut(old).kill();
    let lock = acquire_within_hang(&m, "cluster-failing-over")
        .await
        .expect("acquired on the promoted replica");
    assert!(lock.fencing_token() > 0);
    lock.release().await.unwrap();
}
