//! The lock on a real Redis Cluster (3 masters, 3 replicas) that each test starts for itself:
//! one cluster URL is one server of the quorum; every key of a lock lands in the lock key's
//! slot; waiters are woken by sharded pub/sub; a lock survives its slot moving to another
//! master; Redlock mixes a cluster with standalone servers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fencelock::ffi_support::keys::{hash_slot, LockKeys};
use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::cluster::RedisCluster;
use fencelock_testkit::{wait_until_async, RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn cluster() -> RedisCluster {
    RedisCluster::start(3, 1)
}

fn manager(c: &RedisCluster) -> LockManager {
    LockManager::new([c.url()]).unwrap()
}

/// How many waiters hold a place in the queue of `name`, on the master of its slot.
fn queued(c: &RedisCluster, name: &[u8]) -> i64 {
    let keys = LockKeys::new(b"", name);
    match c.master_of_slot(keys.slot).cmd(&[b"ZCARD", &keys.queue]) {
        Reply::Int(n) => n,
        other => panic!("ZCARD: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_is_one_server_for_acquire_extend_release_and_fencing() {
    let c = cluster();
    let m = manager(&c);
    assert_eq!(
        m.config().server_labels(),
        vec![format!(
            "cluster:127.0.0.1:{},127.0.0.1:{}",
            c.nodes[0].port(),
            c.nodes[1].port()
        )]
    );
    let mut last = 0;
    for name in ["jobs", "reports", "{user1000}.following", "a{b}c"] {
        let lock = m.acquire(name, MS(5000), None).await.unwrap();
        let keys = LockKeys::new(b"", name.as_bytes());
        let master = c.master_of(name.as_bytes());
        assert_eq!(master.get(name.as_bytes()).as_deref(), Some(lock.token()));
        // The slot's fencing counter is on the same master, and is the token.
        assert_eq!(
            master.get(&keys.fence),
            Some(lock.fencing_token().to_string().into_bytes())
        );
        lock.extend(MS(20_000)).await.unwrap();
        assert!(master.pttl(name.as_bytes()) > 10_000);
        assert!(m.remaining(name).await.unwrap().unwrap() > MS(10_000));
        let again = lock.fencing_token();
        lock.release().await.unwrap();
        assert_eq!(master.get(name.as_bytes()), None);
        assert!(!m.is_locked(name).await.unwrap());
        // Tokens increase per name.
        let next = m.acquire(name, MS(5000), None).await.unwrap();
        assert!(next.fencing_token() > again);
        last = last.max(next.fencing_token());
        next.release().await.unwrap();
    }
    assert!(last >= 2);
    // The classic SET NX PX lock of another client excludes ours on a cluster too.
    assert!(c
        .master_of(b"shared")
        .set_nx_px(b"shared", b"someone-else", 5000));
    assert!(m.try_acquire("shared", MS(5000)).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_on_several_names_needs_them_in_one_slot_on_a_cluster() {
    let c = cluster();
    let m = manager(&c);
    // "a" and "b" are in different slots: refused before any call, naming the hash-tag rule.
    assert_ne!(hash_slot(b"a"), hash_slot(b"b"));
    let e = m
        .acquire_many(["a", "b"], MS(5000), Some(MS(0)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("hash tag"), "{e}");
    assert!(e.servers().is_empty());
    // With a common hash tag they are one script's keys, on one master.
    let names = ["{order-42}:payment", "{order-42}:stock"];
    let lock = m.acquire_many(names, MS(5000), Some(MS(0))).await.unwrap();
    let master = c.master_of(b"{order-42}");
    for n in names {
        assert_eq!(master.get(n.as_bytes()).as_deref(), Some(lock.token()));
    }
    assert_eq!(lock.fencing_tokens().len(), 2);
    // Another lock on one of them waits; the release wakes it through sharded pub/sub.
    let waiter = {
        let m = m.clone();
        tokio::spawn(async move {
            m.acquire("{order-42}:stock", MS(5000), Some(MS(10_000)))
                .await
        })
    };
    wait_until_async(MS(5000), "the waiter queued", || {
        queued(&c, b"{order-42}:stock") == 1
    })
    .await;
    lock.release().await.unwrap();
    let single = waiter.await.unwrap().unwrap();
    assert!(single.fencing_token() > 0);
    single.release().await.unwrap();
}

#[test]
fn every_key_of_any_name_is_in_the_slot_the_cluster_gives_the_lock_key() {
    use proptest::prelude::*;
    let c = cluster();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(200));
    let names = proptest::collection::vec(
        prop_oneof![Just(b'{'), Just(b'}'), Just(b'a'), Just(b':'), any::<u8>()],
        1..24,
    );
    let prefixes = prop_oneof![
        Just(Vec::new()),
        Just(b"app:".to_vec()),
        Just(b"{tag}:".to_vec())
    ];
    runner
        .run(&(prefixes, names), |(prefix, name)| {
            let keys = LockKeys::new(&prefix, &name);
            let slot = c.keyslot(&keys.lock);
            prop_assert_eq!(keys.slot, slot);
            for key in [
                &keys.fence,
                &keys.queue,
                &keys.deadlines,
                &keys.ttls,
                &keys.holders,
                &keys.guard,
                &keys.channel,
            ] {
                prop_assert_eq!(c.keyslot(key), slot, "{:?}", String::from_utf8_lossy(key));
                prop_assert_eq!(hash_slot(key), slot);
            }
            prop_assert_eq!(c.keyslot(&keys.wake_channel(b"0123456789abcdef-x")), slot);
            Ok(())
        })
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_braces_take_the_whole_protocol_on_a_cluster() {
    // Contended (queue, hand-off, wake-up): every script touches one slot, or the cluster
    // would answer CROSSSLOT.
    let c = cluster();
    for (prefix, name) in [
        ("", "{"),
        ("", "}{x"),
        ("app:", "a{b}c"),
        ("{app}:", "{}z"),
        ("", "{{x}}"),
    ] {
        let m = Arc::new(
            LockManager::builder([c.url()])
                .key_prefix(prefix)
                .retry_delay(Duration::from_secs(10))
                .build()
                .unwrap(),
        );
        let holder = m.acquire(name, MS(10_000), None).await.unwrap();
        let w = Arc::clone(&m);
        let n = name.to_owned();
        let waiter = tokio::spawn(async move {
            w.acquire(&n, MS(10_000), Some(Duration::from_secs(20)))
                .await
        });
        let keys = LockKeys::new(prefix.as_bytes(), name.as_bytes());
        wait_until_async(Duration::from_secs(10), "the waiter queued", || {
            matches!(
                c.master_of_slot(keys.slot).cmd(&[b"ZCARD", &keys.queue]),
                Reply::Int(1)
            )
        })
        .await;
        let token = holder.fencing_token();
        holder.release().await.unwrap();
        let lock = waiter.await.unwrap().unwrap();
        assert!(lock.fencing_token() > token, "{prefix}{name}");
        assert_eq!(c.get(&keys.lock).as_deref(), Some(lock.token()));
        lock.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_woken_through_pubsub_in_the_order_they_came() {
    let c = cluster();
    // A retry delay far longer than the test's bound: a waiter gets the lock only by being
    // woken, never by polling.
    let slow = || {
        Arc::new(
            LockManager::builder([c.url()])
                .retry_delay(Duration::from_secs(30))
                .build()
                .unwrap(),
        )
    };
    let holder_m = slow();
    let holder = holder_m.acquire("line", MS(30_000), None).await.unwrap();
    let mut waiters = Vec::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..3i64 {
        let m = slow();
        let tx = tx.clone();
        waiters.push(tokio::spawn(async move {
            let lock = m
                .acquire("line", MS(30_000), Some(Duration::from_secs(60)))
                .await
                .unwrap();
            tx.send((i, lock.fencing_token())).unwrap();
            lock.release().await.unwrap();
        }));
        wait_until_async(Duration::from_secs(10), "the waiter queued", || {
            queued(&c, b"line") == i + 1
        })
        .await;
    }
    let keys = LockKeys::new(b"", b"line");
    let master = c.master_of_slot(keys.slot);
    let pattern = format!(
        "{}|*",
        fencelock_testkit::glob_escape(std::str::from_utf8(&keys.channel).unwrap())
    );
    if fencelock_testkit::server_version() >= (7, 0) {
        // Each waiter listens on the slot's master with SSUBSCRIBE, not with SUBSCRIBE.
        wait_until_async(
            Duration::from_secs(10),
            "three sharded subscriptions",
            || {
                matches!(
                    master.cmd(&[b"PUBSUB", b"SHARDCHANNELS", pattern.as_bytes()]),
                    Reply::Array(Some(ch)) if ch.len() == 3
                )
            },
        )
        .await;
        for n in &c.nodes {
            assert_eq!(
                n.cmd(&[b"PUBSUB", b"CHANNELS", b"*"]),
                Reply::Array(Some(vec![])),
                "no classic channel on {}",
                n.port()
            );
        }
    } else {
        // Redis 6.2 has no sharded pub/sub: each waiter listens with SUBSCRIBE on some node,
        // and the release's PUBLISH reaches every node.
        wait_until_async(Duration::from_secs(10), "three subscriptions", || {
            let on = |n: &fencelock_testkit::RedisServer| match n.cmd(&[
                b"PUBSUB",
                b"CHANNELS",
                pattern.as_bytes(),
            ]) {
                Reply::Array(Some(ch)) => ch.len(),
                _ => 0,
            };
            c.nodes.iter().map(on).sum::<usize>() == 3
        })
        .await;
    }
    let started = Instant::now();
    holder.release().await.unwrap();
    let mut order = Vec::new();
    for _ in 0..3 {
        order.push(rx.recv().await.unwrap());
    }
    // Far less than one retry delay (30 s) for three hand-offs: woken, not polling.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(order.iter().map(|o| o.0).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1), "{order:?}");
    for w in waiters {
        w.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_survives_its_slot_moving_to_another_master() {
    // No failover belongs in this test: a node timeout longer than the tests' 1 s keeps a
    // node slowed by a busy machine from being failed over mid-test (as one once was).
    let c = RedisCluster::start_with_args(3, 1, &["--cluster-node-timeout".into(), "5000".into()]);
    let m = manager(&c);
    let other = manager(&c);
    let name = b"moving";
    let keys = LockKeys::new(b"", name);
    let lock = m.acquire("moving", MS(30_000), None).await.unwrap();
    let first = lock.fencing_token();
    let from = c.master_of_slot(keys.slot).port();
    let to = c.another_master(from);
    let rt = tokio::runtime::Handle::current();
    // While the slot is half moved (its keys on the target, the slot still the source's), a
    // script whose keys are not all in one place is refused by Redis itself (ASK, then
    // TRYAGAIN for a multi-key call while the slot is importing): calls on the slot's names
    // are sent again until their time runs out (here the move waits for them, so they fail
    // Unavailable), and never grant the lock to another.
    c.migrate_slot(keys.slot, to, || {
        tokio::task::block_in_place(|| {
            rt.block_on(async {
                match other.try_acquire("moving", MS(5000)).await {
                    Ok(None) => {}
                    Ok(Some(l)) => panic!("granted twice, token {}", l.fencing_token()),
                    Err(e) => assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}"),
                }
                if let Err(e) = lock.extend(MS(30_000)).await {
                    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
                }
            })
        })
    });
    assert_eq!(c.master_of_slot(keys.slot).port(), to);
    assert_eq!(c.node(to).get(name).as_deref(), Some(lock.token()));
    // After the move (MOVED, slot map refreshed): still held (extended), still excluded,
    // released by its holder, and
    // the fencing counter moved with the slot, so the next token is larger.
    lock.extend(MS(30_000)).await.unwrap();
    assert!(other
        .try_acquire("moving", MS(5000))
        .await
        .unwrap()
        .is_none());
    lock.release().await.unwrap();
    let next = other
        .acquire("moving", MS(5000), Some(MS(5000)))
        .await
        .unwrap();
    assert!(next.fencing_token() > first);
    next.release().await.unwrap();
}

/// A replica frozen after the manager connected to it (a paused VM: its kernel still holds
/// the connection, its server answers nothing) does not stall the calls of a manager that
/// never uses it. The cluster layer checks every node it knows, replicas included, when it
/// refreshes its slot map (here after a slot moved: a MOVED reply), and every call waits for
/// that; the check used to wait for ever, so every call after the move failed on its server
/// timeout. (The cluster's node timeout is long here, so that it does not drop the frozen
/// replica from its slot map during the test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_replica_does_not_stall_calls_when_the_slot_map_is_refreshed() {
    let mut c =
        RedisCluster::start_with_args(3, 1, &["--cluster-node-timeout".into(), "60000".into()]);
    let m = LockManager::builder([c.url()])
        .server_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let keys = LockKeys::new(b"", b"frozen");
    let from = c.master_of_slot(keys.slot).port();
    let to = c.another_master(from);
    let replica = c.replicas_of(from)[0];
    // The first call connects to every node of the slot map the seeds give, replicas
    // included, once they list the replica (gossip may still be settling).
    let seeds = [c.nodes[0].port(), c.nodes[1].port()];
    wait_until_async(
        Duration::from_secs(20),
        "the seeds list the replica in CLUSTER SLOTS",
        || {
            seeds.iter().all(|&p| {
                let slots = c.node(p).cmd(&[b"CLUSTER", b"SLOTS"]);
                format!("{slots:?}").contains(&format!("Int({replica})"))
            })
        },
    )
    .await;
    let lock = m.acquire("frozen", MS(10_000), None).await.unwrap();
    lock.release().await.unwrap();
    // The slot moved (the manager does not know yet), then the replica frozen: the move
    // happens first because Valkey 8 replicates CLUSTER SETSLOT to a master's replicas
    // before it answers.
    c.migrate_slot(keys.slot, to, || {});
    c.node_mut(replica).stop();
    let started = Instant::now();
    let lock = m
        .acquire("frozen", MS(10_000), Some(Duration::from_secs(30)))
        .await
        .unwrap();
    lock.extend(MS(10_000)).await.unwrap();
    let first = lock.fencing_token();
    lock.release().await.unwrap();
    let again = m.acquire("frozen", MS(10_000), None).await.unwrap();
    assert!(again.fencing_token() > first);
    again.release().await.unwrap();
    // A hang check, not a speed one: the first refresh gives up on the replica after the
    // response timeout (2 s here).
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    c.node_mut(replica).cont();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_counts_a_cluster_as_one_server_beside_standalone_ones() {
    let c = cluster();
    let mut solo = [RedisServer::start(), RedisServer::start()];
    let urls = [c.url(), solo[0].url(), solo[1].url()];
    let m = LockManager::new(urls.clone()).unwrap();
    let lock = m.acquire("mixed", MS(10_000), None).await.unwrap();
    assert_eq!(c.get(b"mixed").as_deref(), Some(lock.token()));
    for s in &solo {
        assert_eq!(s.get(b"mixed").as_deref(), Some(lock.token()));
    }
    lock.release().await.unwrap();
    // Two of three votes: one standalone server down still leaves a quorum.
    solo[0].kill();
    let lock = m
        .acquire("mixed", MS(10_000), Some(MS(5000)))
        .await
        .unwrap();
    assert_eq!(c.get(b"mixed").as_deref(), Some(lock.token()));
    lock.release().await.unwrap();
    // The same cluster named twice (by other seeds) is one vote: the second entry is refused
    // for good, so two entries can never make a quorum of two.
    let twice = LockManager::new([
        c.url(),
        format!("redis+cluster://127.0.0.1:{}", c.nodes[2].port()),
    ])
    .unwrap();
    let e = twice.acquire("twice", MS(5000), Some(MS(3000))).await;
    match e {
        Err(e) => assert!(e.message().contains("same Redis server"), "{e}"),
        Ok(lock) => panic!(
            "granted with a cluster counted twice: {:?}",
            lock.fencing_token()
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cluster_urls_fail_before_any_call_and_an_absent_cluster_is_unavailable() {
    for (url, says) in [
        ("redis+cluster://", "bad cluster node address"),
        ("redis+cluster://127.0.0.1:0", "bad cluster node address"),
        ("redis+cluster://127.0.0.1:70000", "bad cluster node port"),
        ("redis+cluster://127.0.0.1:7000/1", "no database"),
        (
            "redis+cluster://u:secret-pw@127.0.0.1:7000?x=1",
            "no database",
        ),
    ] {
        let e = LockManager::new([url]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}: {e}");
        assert!(e.message().contains(says), "{url}: {e}");
        assert!(!e.message().contains("secret-pw"), "{e}");
    }
    let port = fencelock_testkit::free_port();
    let m = LockManager::new([format!("redis+cluster://u:secret-pw@127.0.0.1:{port}")]).unwrap();
    let started = Instant::now();
    let e = m.acquire("x", MS(1000), Some(MS(1500))).await.unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::NotAcquired),
        "{e}"
    );
    assert!(!e.message().contains("secret-pw"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "a hang: {:?}",
        started.elapsed()
    );
}

/// A manager that asks one replica to acknowledge every write within 500 ms.
fn acked(c: &RedisCluster) -> LockManager {
    LockManager::builder([c.url()])
        .replica_ack(1, MS(500))
        .server_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_replica_ack_a_lock_and_its_counter_survive_the_failover_of_their_master() {
    let mut c = cluster();
    let m = acked(&c);
    let keys = LockKeys::new(b"", b"durable");
    let lock = m.acquire("durable", MS(60_000), None).await.unwrap();
    // Killed at once after the grant: only the acknowledgment says the replica has it.
    let old = c.master_of_slot(keys.slot).port();
    let promoted = c.kill_master_of_slot(keys.slot);
    let master = c.node(promoted);
    assert_eq!(master.get(b"durable").as_deref(), Some(lock.token()));
    let counter: u64 = String::from_utf8(master.get(&keys.fence).unwrap())
        .unwrap()
        .parse()
        .unwrap();
    assert!(counter >= lock.fencing_token());
    // Still excluded through the new master.
    let other = acked(&c);
    assert!(manager(&c)
        .try_acquire("durable", MS(5000))
        .await
        .unwrap()
        .is_none());
    // The new master has no replica left: an acknowledged extend says so, and the lock
    // stays held.
    let e = lock.extend(MS(60_000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(
        e.message().contains("acknowledged by 0 of 1 replicas"),
        "{e}"
    );
    assert_eq!(
        c.node(promoted).get(b"durable").as_deref(),
        Some(lock.token())
    );
    // The old master comes back (empty) as the new one's replica: extends are acknowledged
    // again, and the holder releases.
    c.node_mut(old).restart();
    c.wait_ready(Duration::from_secs(30));
    assert_eq!(c.replicas_of(promoted), vec![old]);
    c.wait_acknowledged(promoted, b"{durable}ack", 1, Duration::from_secs(30));
    lock.extend(MS(60_000)).await.unwrap();
    lock.release().await.unwrap();
    let next = other
        .acquire("durable", MS(5000), Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(next.fencing_token() > counter);
    next.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_that_do_not_acknowledge_fail_the_acquire_and_without_ack_a_failover_loses_the_lock(
) {
    // A master drops a replica that stops acknowledging after 1 s (repl-timeout): paused,
    // the replica is then cut off, and receives nothing more of its master.
    let mut c = RedisCluster::start_with_args(3, 1, &["--repl-timeout".into(), "1".into()]);
    let keys = LockKeys::new(b"", b"fragile");
    let master = c.master_of_slot(keys.slot).port();
    let replica = c.replicas_of(master)[0];
    // Connected (to every node, the replica too) while all answer: a new connection would
    // first wait out the cluster layer's connect timeout (1 s) on the paused replica, which
    // with this 2 s server timeout and the 500 ms WAIT left the first call no time on a busy
    // machine (docs/SAFETY.md "Servers").
    let acked = acked(&c);
    c.wait_acknowledged(master, b"{fragile}ack", 1, Duration::from_secs(30));
    acked
        .acquire("fragile", MS(60_000), Some(Duration::from_secs(5)))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    c.node_mut(replica).stop();
    wait_until_async(
        Duration::from_secs(20),
        "the master dropped its paused replica",
        || {
            matches!(
                c.node(master).cmd(&[b"INFO", b"replication"]),
                Reply::Bulk(Some(t)) if String::from_utf8_lossy(&t).contains("connected_slaves:0")
            )
        },
    )
    .await;
    // With acknowledgment: the write reaches no replica, so the server's vote does not count,
    // and the acquire says why; nothing is left behind.
    let e = acked
        .acquire("fragile", MS(60_000), Some(Duration::from_secs(2)))
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::NotAcquired),
        "{e}"
    );
    assert!(
        e.message().contains("acknowledged by 0 of 1 replicas"),
        "{e}"
    );
    assert_eq!(c.node(master).get(b"fragile"), None);
    // Without it (the default): granted at once, and lost when the master fails before its
    // replica copied it: the trade-off docs/SAFETY.md describes.
    let plain = manager(&c);
    let lock = plain.acquire("fragile", MS(60_000), None).await.unwrap();
    c.node_mut(master).kill();
    c.node_mut(replica).cont();
    wait_until_async(Duration::from_secs(30), "the replica took over", || {
        c.topology().iter().any(|n| {
            n.port == replica
                && n.master
                && n.slots
                    .iter()
                    .any(|&(a, b)| a <= keys.slot && keys.slot <= b)
        })
    })
    .await;
    c.wait_ready(Duration::from_secs(30));
    assert_eq!(c.node(replica).get(b"fragile"), None, "the grant was lost");
    let thief = plain
        .acquire("fragile", MS(5000), Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_ne!(thief.token(), lock.token());
    thief.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_ack_works_on_a_standalone_master_and_is_checked_when_built() {
    let master = RedisServer::start();
    let m = LockManager::builder([master.url()])
        .replica_ack(1, MS(300))
        .server_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    // No replica: the write is not acknowledged, the call says so and leaves nothing.
    let e = m
        .acquire("solo", MS(5000), Some(MS(500)))
        .await
        .unwrap_err();
    assert!(
        e.message().contains("acknowledged by 0 of 1 replicas"),
        "{e}"
    );
    assert_eq!(master.get(b"solo"), None);
    // With a replica in sync: granted, and the replica has it when acquire returns.
    let replica = RedisServer::start_with_args(&[
        "--replicaof".into(),
        "127.0.0.1".into(),
        master.port().to_string(),
    ]);
    wait_until_async(Duration::from_secs(20), "the replica is in sync", || {
        matches!(
            replica.cmd(&[b"INFO", b"replication"]),
            Reply::Bulk(Some(t)) if String::from_utf8_lossy(&t).contains("master_link_status:up")
        )
    })
    .await;
    let lock = m.acquire("solo", MS(5000), Some(MS(5000))).await.unwrap();
    assert_eq!(replica.get(b"solo").as_deref(), Some(lock.token()));
    lock.release().await.unwrap();
    for (replicas, timeout) in [(0, MS(100)), (1, Duration::ZERO)] {
        let e = LockManager::builder([master.url()])
            .replica_ack(replicas, timeout)
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains("replica_ack"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_is_reached_with_rediss_cluster_and_its_ca() {
    let certs = std::env::temp_dir().join(format!(
        "fencelock-cluster-tls-{}-{}",
        std::process::id(),
        fencelock_testkit::free_port()
    ));
    std::fs::create_dir_all(&certs).unwrap();
    fencelock_testkit::tls::make_certs(&certs);
    let c = RedisCluster::start_tls(3, 0, &certs);
    let m = LockManager::builder([c.tls_url()])
        .tls_ca_file(certs.join("ca.crt"))
        .build()
        .unwrap();
    for name in ["tls-a", "tls-b", "tls-c"] {
        let lock = m.acquire(name, MS(5000), Some(MS(5000))).await.unwrap();
        assert_eq!(c.get(name.as_bytes()).as_deref(), Some(lock.token()));
        lock.release().await.unwrap();
    }
    // Without the CA the nodes' certificates are not trusted: refused at once, saying why.
    let untrusted = LockManager::new([c.tls_url()]).unwrap();
    let e = untrusted
        .acquire("tls-a", MS(5000), Some(Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().to_lowercase().contains("certificate"), "{e}");
    drop(c);
    let _ = std::fs::remove_dir_all(&certs);
}

/// The wake-up channels of `name`'s waiters subscribed on the node on `port`, plain or sharded
/// (Redis 6.2 has only the plain kind: its SHARDCHANNELS is an error, counted as none).
fn wake_subscriptions(c: &RedisCluster, port: u16, name: &[u8]) -> usize {
    let keys = LockKeys::new(b"", name);
    let pattern = [&keys.channel[..], b"|*"].concat();
    [&b"CHANNELS"[..], b"SHARDCHANNELS"]
        .iter()
        .map(
            |kind| match c.node(port).cmd(&[b"PUBSUB", kind, &pattern]) {
                Reply::Array(Some(channels)) => channels.len(),
                _ => 0,
            },
        )
        .sum()
}

/// A waiter of `waiter` for "following" while `holder` holds it, handed the lock at the release.
async fn hand_over_once(c: &RedisCluster, holder: &LockManager, waiter: &LockManager) -> u64 {
    let held = holder.acquire("following", MS(30_000), None).await.unwrap();
    let w = waiter.clone();
    let wait =
        tokio::spawn(async move { w.acquire("following", MS(30_000), Some(MS(20_000))).await });
    wait_until_async(MS(10_000), "the waiter is in line", || {
        queued(c, b"following") == 1
    })
    .await;
    let before = held.fencing_token();
    held.release().await.unwrap();
    let got = wait.await.unwrap().unwrap();
    let token = got.fencing_token();
    assert!(token > before);
    got.release().await.unwrap();
    token
}

/// Issue 51: a waiter's wake-up subscription follows its slot to the new master. With sharded
/// pub/sub the cluster drops the channel when the slot moves; on Redis 6.2 a plain subscription
/// stays on the old master, where the scripts of the new one cannot see it listen (they wake
/// the waiter there, "? ARRIVAL TOKEN", instead of handing it the lock), and that wake-up
/// makes the manager subscribe again, at the slot's owner, before its next wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiters_wake_subscription_follows_its_slot_to_the_new_master() {
    let c = RedisCluster::start_with_args(3, 1, &["--cluster-node-timeout".into(), "5000".into()]);
    let (holder, waiter) = (manager(&c), manager(&c));
    let keys = LockKeys::new(b"", b"following");
    let from = c.master_of_slot(keys.slot).port();
    let mut last = hand_over_once(&c, &holder, &waiter).await;
    assert_eq!(wake_subscriptions(&c, from, b"following"), 1);
    let to = c.another_master(from);
    c.migrate_slot(keys.slot, to, || {});
    // The first hand-off after the move: the subscription may still be on the old master
    // (6.2), so the waiter is woken and takes the lock by an attempt of its own; then it
    // listens at the new master, and later hand-offs go straight to it.
    for _ in 0..3 {
        let token = hand_over_once(&c, &holder, &waiter).await;
        assert!(token > last);
        last = token;
    }
    let held = holder.acquire("following", MS(30_000), None).await.unwrap();
    let w = waiter.clone();
    let wait =
        tokio::spawn(async move { w.acquire("following", MS(30_000), Some(MS(20_000))).await });
    wait_until_async(
        MS(10_000),
        "the waiter listens at the slot's new master",
        || {
            queued(&c, b"following") == 1
                && wake_subscriptions(&c, to, b"following") == 1
                && wake_subscriptions(&c, from, b"following") == 0
        },
    )
    .await;
    held.release().await.unwrap();
    wait.await.unwrap().unwrap().release().await.unwrap();
}
