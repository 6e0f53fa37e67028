//! The classic mistakes of Redis locks, proven: each test first runs the naive code, written
//! here with a plain Redis client, and shows it failing; then shows fencelock holding in the
//! same situation. Interleavings are forced deterministically (waiting for a key to expire,
//! a replication link stalled in the proxy), never left to luck. docs/PITFALLS.md lists them.

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::history::{check, now_us, Hold, Violation};
use fencelock_chaos::proxy::{Direction, Proxy};
use fencelock_chaos::store::{FencedStore, UnfencedStore};
use fencelock_chaos::worker::{num, Worker};
use fencelock_chaos::{soak, urls};
use fencelock_testkit::{servers, wait_until, RedisServer, Reply};
use redis::Connection;

const MS: fn(u64) -> Duration = Duration::from_millis;
const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
/// Wait limit of acquisitions that are expected to succeed at once: every test stays bounded.
const BOUND: Option<Duration> = Some(Duration::from_secs(10));

fn connect(url: &str) -> Connection {
    redis::Client::open(url)
        .unwrap()
        .get_connection()
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

fn manager(urls: &[String]) -> LockManager {
    LockManager::builder(urls)
        .retry_delay(MS(20))
        .build()
        .unwrap()
}

fn status(r: Reply) -> String {
    match r {
        Reply::Status(s) => s,
        other => panic!("expected a status reply, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The naive lock code, as found in tutorials.

/// The naive "set if absent, then give it a lifetime": two commands.
/// `crash_between` models the client dying between them (its connection goes away, the
/// second command is never sent).
fn naive_setnx_then_expire(
    url: &str,
    key: &str,
    token: &str,
    ttl_ms: u64,
    crash_between: bool,
) -> bool {
    let mut c = connect(url);
    let got: bool = redis::cmd("SETNX")
        .arg(key)
        .arg(token)
        .query(&mut c)
        .unwrap();
    if !got {
        return false;
    }
    if crash_between {
        drop(c); // the process dies here: nothing more is ever sent
        return true;
    }
    let _: bool = redis::cmd("PEXPIRE")
        .arg(key)
        .arg(ttl_ms)
        .query(&mut c)
        .unwrap();
    true
}

/// The naive lock with an atomic `SET NX PX` (that part is right).
fn naive_lock(c: &mut Connection, key: &str, token: &str, ttl_ms: u64) -> bool {
    let r: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms)
        .query(c)
        .unwrap();
    r.is_some()
}

/// The naive unlock: `DEL` whatever is there.
fn naive_unlock(c: &mut Connection, key: &str) {
    let _: i64 = redis::cmd("DEL").arg(key).query(c).unwrap();
}

/// The naive "careful" unlock: `GET`, compare, then `DEL`, as two round trips. `between` runs
/// where the client is preempted (GC pause, scheduling, network).
fn naive_get_then_del(c: &mut Connection, key: &str, token: &str, between: impl FnOnce()) -> bool {
    let v: Option<String> = redis::cmd("GET").arg(key).query(c).unwrap();
    if v.as_deref() != Some(token) {
        return false;
    }
    between();
    naive_unlock(c, key);
    true
}

/// The history checker's verdict on two naive holders that both believe they hold "job" until
/// now (naive locks have no fencing token: numbered in acquisition order).
fn naive_overlap(first: (&str, u64), second: (&str, u64), claimed: Duration) -> usize {
    sleep(MS(2)); // both work on for a moment
    let end = now_us();
    let verdict = check(&[
        Hold::new("job", 1, first.1, end, claimed, first.0),
        Hold::new("job", 2, second.1, end, claimed, second.0),
    ]);
    println!("naive holders: {verdict}");
    verdict.overlaps().len()
}

fn get(c: &mut Connection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(c).unwrap()
}

// ---------------------------------------------------------------------------------------------

/// Mistake 1: `SETNX` then a separate `EXPIRE`, and the client dies in between: the key has no
/// expiry, so the lock is never freed and everyone is locked out for good. fencelock writes the
/// key and its expiry in one `SET NX PX`: a holder process killed right after acquiring leaves
/// a lock that frees within its TTL.
#[test]
fn setnx_then_expire_with_a_crash_in_between_never_expires() {
    let server = RedisServer::start();
    assert!(naive_setnx_then_expire(
        &server.url(),
        "job",
        "client-1",
        200,
        true
    ));
    assert_eq!(server.pttl(b"job"), -1, "naive: the key has no expiry");
    sleep(MS(600)); // three times the intended TTL
    assert_eq!(
        server.pttl(b"job"),
        -1,
        "naive: still there, with no expiry"
    );
    assert!(
        !naive_setnx_then_expire(&server.url(), "job", "client-2", 200, false),
        "naive: the next client is locked out, forever"
    );
    server.del(b"job");

    // fencelock: a real holder process, SIGKILLed right after its acquire.
    let mut w = Worker::spawn(
        Path::new(WORKER),
        &[
            "hold",
            "--servers",
            &server.url(),
            "--name",
            "job",
            "--ttl-ms",
            "300",
        ]
        .map(String::from),
    );
    let got = w.expect("ACQUIRED", MS(10_000));
    w.kill();
    let pttl = server.pttl(b"job");
    assert!(
        pttl > 0 && pttl <= 300,
        "fencelock: the key carries its expiry from the start (pttl {pttl})"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = manager(&[server.url()]);
    let killed = Instant::now();
    let lock = rt
        .block_on(m.acquire("job", MS(300), Some(MS(5000))))
        .expect("fencelock: the crashed holder's lock frees");
    assert!(
        killed.elapsed() < MS(300) + MS(1000),
        "freed after {:?}",
        killed.elapsed()
    );
    assert!(lock.fencing_token() > num(&got, "token"));
    rt.block_on(lock.release()).unwrap();
}

/// Mistake 2: unlocking with a plain `DEL`, without checking who owns the key. A client whose
/// lock expired deletes the next holder's lock, and a third client gets in beside it.
/// fencelock releases by compare-and-delete on its token and says the lock was not held.
#[test]
fn del_without_checking_the_owner_releases_another_clients_lock() {
    let server = RedisServer::start();
    let (mut a, mut b, mut c) = (
        connect(&server.url()),
        connect(&server.url()),
        connect(&server.url()),
    );
    assert!(naive_lock(&mut a, "job", "A", 200));
    wait_until(MS(5000), "A's lock expired", || {
        server.get(b"job").is_none()
    }); // A is slow
    assert!(
        naive_lock(&mut b, "job", "B", 10_000),
        "B takes the expired lock"
    );
    let b_start = now_us();
    naive_unlock(&mut a, "job"); // A finishes and "releases"
    assert!(
        naive_lock(&mut c, "job", "C", 10_000),
        "naive: C gets in while B still holds it"
    );
    let c_start = now_us();
    assert_eq!(
        get(&mut b, "job").as_deref(),
        Some("C"),
        "naive: B's lock is gone"
    );
    assert_eq!(
        naive_overlap(("naive B", b_start), ("naive C", c_start), MS(10_000)),
        1,
        "the history checker catches the overlap"
    );
    server.del(b"job");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = manager(&[server.url()]);
    rt.block_on(async {
        let a = m.acquire("job", MS(200), BOUND).await.unwrap();
        wait_until(MS(5000), "A's lock expired", || {
            server.get(b"job").is_none()
        });
        let b = m.acquire("job", MS(10_000), Some(MS(0))).await.unwrap();
        let e = a.release().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
        assert!(e.message().contains("another owner holds it"), "{e}");
        assert_eq!(
            server.get(b"job").as_deref(),
            Some(b.token()),
            "fencelock: B's lock untouched"
        );
        assert!(
            m.try_acquire("job", MS(10_000)).await.unwrap().is_none(),
            "fencelock: C stays out"
        );
        b.release().await.unwrap();
    });
}

/// Mistake 3: `GET`, compare, then `DEL` as two round trips. Between them the lock expires and
/// the next client takes it, and the `DEL` deletes the next holder's lock. The interleaving is
/// forced: the naive client is preempted right after its `GET`. fencelock's release is one
/// Lua script, which Redis runs atomically: nothing can happen between its check and its
/// delete, so the only outcomes are "released my own lock" or `NotHeld`; shown in both orders,
/// and under a race of many rounds where release and expiry collide.
#[test]
fn get_then_del_as_two_steps_deletes_the_next_holders_lock() {
    let server = RedisServer::start();
    let (mut a, mut b, mut c) = (
        connect(&server.url()),
        connect(&server.url()),
        connect(&server.url()),
    );
    assert!(naive_lock(&mut a, "job", "A", 200));
    let deleted = naive_get_then_del(&mut a, "job", "A", || {
        // A is preempted after seeing its own token: its lock expires, B takes it.
        wait_until(MS(5000), "A's lock expired", || {
            server.get(b"job").is_none()
        });
        assert!(naive_lock(&mut b, "job", "B", 10_000));
    });
    let b_start = now_us(); // (B got it just before A's DEL)
    assert!(deleted, "naive: A's check passed, so A deleted the key");
    assert_eq!(server.get(b"job"), None, "naive: B's lock was deleted by A");
    assert!(
        naive_lock(&mut c, "job", "C", 10_000),
        "naive: C gets in while B still holds it"
    );
    assert_eq!(
        naive_overlap(("naive B", b_start), ("naive C", now_us()), MS(10_000)),
        1,
        "the history checker catches the overlap"
    );
    server.del(b"job");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = manager(&[server.url()]);
    rt.block_on(async {
        // Released in time: it deletes its own key.
        let a = m.acquire("job", MS(200), BOUND).await.unwrap();
        a.release().await.unwrap();
        assert_eq!(server.get(b"job"), None);
        // Released late: the check and the delete are one step, B's lock survives.
        let a = m.acquire("job", MS(200), BOUND).await.unwrap();
        wait_until(MS(5000), "A's lock expired", || server.get(b"job").is_none());
        let b = m.acquire("job", MS(10_000), Some(MS(0))).await.unwrap();
        assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::NotHeld);
        assert_eq!(server.get(b"job").as_deref(), Some(b.token()));
        b.release().await.unwrap();

        // The race itself: A releases right around its expiry while B is waiting to take over.
        let (mut late, mut in_time) = (0, 0);
        let rounds: u64 = if soak() { 500 } else { 20 };
        for round in 0..rounds {
            let a = m.acquire("race", MS(40), BOUND).await.unwrap();
            let m2 = m.clone();
            let b = tokio::spawn(async move { m2.acquire("race", MS(5000), Some(MS(5000))).await });
            tokio::time::sleep(MS(36 + round % 8)).await;
            match a.release().await {
                Ok(()) => in_time += 1,
                Err(e) if e.kind() == ErrorKind::NotHeld => late += 1,
                Err(e) => panic!("round {round}: {e}"),
            }
            let b = b.await.unwrap().unwrap();
            assert_eq!(
                server.get(b"race").as_deref(),
                Some(b.token()),
                "round {round}: A's release never deletes B's lock"
            );
            b.release().await.unwrap();
        }
        println!("race: {in_time} releases in time, {late} too late (NotHeld), B's lock intact in all {rounds}");
    });
}

/// Mistake 4: one master with a replica. The lock is written to the master, the master dies
/// before the write reached the replica, the replica is promoted, and a second client takes
/// the "same" lock: two holders. (The replication link runs through the proxy and is stalled
/// while the lock is written, so the loss is certain, not a race.) Redlock across independent
/// masters instead: after one of three masters is killed, and even after it comes back empty,
/// the second client still cannot get the lock.
#[test]
fn failover_to_a_replica_loses_a_lock_that_redlock_across_masters_keeps() {
    let mut master = RedisServer::start();
    let replica = RedisServer::start();
    let link = Proxy::to_port(master.port());
    let r = replica.cmd(&[
        b"REPLICAOF",
        b"127.0.0.1",
        link.port().to_string().as_bytes(),
    ]);
    assert_eq!(status(r), "OK");
    wait_until(
        MS(10_000),
        "replica in sync",
        || matches!(replica.cmd(&[b"INFO", b"replication"]), Reply::Bulk(Some(ref i)) if String::from_utf8_lossy(i).contains("master_link_status:up")),
    );
    master.set(b"canary", b"1");
    wait_until(MS(10_000), "replication works", || {
        replica.get(b"canary").is_some()
    });

    link.stall(Direction::ServerToClient, true); // the replication stream lags
    let mut a = connect(&master.url());
    assert!(
        naive_lock(&mut a, "job", "A", 30_000),
        "A locks on the master"
    );
    let a_start = now_us();
    master.kill(); // the master dies before the write replicated
    link.drop_connections(); // and what was in flight on the link dies with it
    assert_eq!(status(replica.cmd(&[b"REPLICAOF", b"NO", b"ONE"])), "OK"); // failover
    let mut b = connect(&replica.url());
    assert!(
        naive_lock(&mut b, "job", "B", 30_000),
        "naive: after failover B takes the lock A still holds"
    );
    assert_eq!(
        naive_overlap(("naive A", a_start), ("naive B", now_us()), MS(30_000)),
        1,
        "the history checker catches the overlap"
    );
    assert_eq!(
        replica.get(b"canary").as_deref(),
        Some(&b"1"[..]),
        "earlier writes survived"
    );

    // Redlock across three independent masters.
    let mut masters = servers(3);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client_a = manager(&urls(&masters));
    let client_b = manager(&urls(&masters));
    let lock = rt
        .block_on(client_a.acquire("job", MS(30_000), BOUND))
        .unwrap();
    masters[0].kill();
    let e = rt
        .block_on(client_b.acquire("job", MS(30_000), Some(MS(300))))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "one master down: {e}");
    masters[0].restart(); // back, and empty: it forgot the lock
    let e = rt
        .block_on(client_b.acquire("job", MS(30_000), Some(MS(300))))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "restarted empty: {e}");
    assert!(!lock.is_lost());
    rt.block_on(lock.release()).unwrap();
}

/// Mistake 5: a holder that keeps working after its lock expired (a long GC pause, a slow
/// job). Two holders then act at once, and the stale one overwrites the new one's data.
/// fencelock's fencing token lets the storage reject the stale holder's write.
#[test]
fn a_holder_still_working_after_its_lock_expired_is_rejected_by_the_fencing_token() {
    let server = RedisServer::start();
    let store_server = RedisServer::start();
    let unfenced = UnfencedStore::new(&store_server.url());
    let (mut a, mut b) = (connect(&server.url()), connect(&server.url()));
    assert!(naive_lock(&mut a, "job", "A", 200));
    wait_until(MS(5000), "A's lock expired", || {
        server.get(b"job").is_none()
    }); // A is slow
    assert!(naive_lock(&mut b, "job", "B", 10_000));
    unfenced.write("report", "from-B").unwrap();
    unfenced.write("report", "from-A").unwrap(); // A, still working, writes its result
    assert_eq!(
        unfenced.read("report").unwrap().as_deref(),
        Some("from-A"),
        "naive: the stale holder overwrote the current holder's data"
    );
    server.del(b"job");

    let fenced = FencedStore::new(&store_server.url());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = manager(&[server.url()]);
    let a = rt.block_on(m.acquire("job", MS(200), BOUND)).unwrap();
    let (a_start, a_validity) = (now_us(), a.validity());
    wait_until(MS(5000), "A's lock expired", || {
        server.get(b"job").is_none()
    });
    let b = rt
        .block_on(m.acquire("job", MS(10_000), Some(MS(0))))
        .unwrap();
    let b_start = now_us();
    let b_validity = b.validity();
    assert!(b.fencing_token() > a.fencing_token());
    assert!(
        fenced.write("report", b.fencing_token(), "from-B").unwrap(),
        "B's write is accepted"
    );
    assert!(a.is_lost(), "A's lock knows it expired");
    let a_end = now_us();
    assert!(
        !fenced.write("report", a.fencing_token(), "from-A").unwrap(),
        "fencelock: A's stale token is rejected"
    );
    assert_eq!(fenced.read("report").unwrap().as_deref(), Some("from-B"));
    let b_end = now_us();
    let b_token = b.fencing_token();
    rt.block_on(b.release()).unwrap();
    let verdict = check(&[
        Hold::new("job", a.fencing_token(), a_start, a_end, a_validity, "A"),
        Hold::new("job", b_token, b_start, b_end, b_validity, "B"),
    ]);
    assert!(
        matches!(&verdict.violations[..], [Violation::HeldPastValidity { hold, .. }] if hold.holder == "A"),
        "the checker blames A only: {verdict}"
    );
}

/// Mistake 6: a Redlock implementation that does not subtract the time the attempt took. With
/// slow servers (100 ms each way, behind proxies) the naive client contacts three servers one
/// after another and hands out a lock whose keys have already expired on a majority: another
/// client takes it at once. fencelock measures the attempt and refuses it (`NotAcquired`,
/// "too long for a ttl") instead of handing it out.
#[test]
fn a_redlock_attempt_that_takes_longer_than_the_ttl_is_refused_not_handed_out() {
    let srv = servers(3);
    let proxies: Vec<Proxy> = srv.iter().map(|s| Proxy::to_port(s.port())).collect();
    let mut slow: Vec<Connection> = proxies.iter().map(|p| connect(&p.url())).collect();
    for p in &proxies {
        p.set_latency(MS(100));
    }
    let ttl_ms = 200;
    // The naive Redlock: SET NX PX on each server, count the votes, no clock.
    let mut votes = 0;
    for c in &mut slow {
        votes += usize::from(naive_lock(c, "job", "A", ttl_ms));
    }
    assert!(
        votes >= 2,
        "naive: A counts {votes} of 3 votes and believes it holds the lock"
    );
    let still = srv
        .iter()
        .filter(|s| s.get(b"job").as_deref() == Some(&b"A"[..]))
        .count();
    assert!(
        still < 2,
        "naive: the lock was already expired on a majority when handed out ({still} of 3 hold it)"
    );
    let mut fast: Vec<Connection> = srv.iter().map(|s| connect(&s.url())).collect();
    let mut b_votes = 0;
    for c in &mut fast {
        b_votes += usize::from(naive_lock(c, "job", "B", 10_000));
    }
    assert!(
        b_votes >= 2,
        "naive: B gets {b_votes} of 3 while A thinks it holds the lock"
    );
    for s in &srv {
        s.del(b"job");
    }

    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = LockManager::builder(proxies.iter().map(Proxy::url))
        .server_timeout(MS(3000))
        .build()
        .unwrap();
    let e = rt
        .block_on(m.acquire("job", MS(ttl_ms), Some(MS(0))))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    assert!(e.message().contains("too long for a ttl"), "{e}");
    let e = rt
        .block_on(m.acquire("job", MS(ttl_ms), Some(MS(1000))))
        .unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::NotAcquired,
        "waiting does not help: {e}"
    );
    println!("fencelock refused: {e}");
}
