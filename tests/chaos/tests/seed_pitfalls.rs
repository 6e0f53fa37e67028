//! The seeds' pitfalls that docs/PITFALLS.md covers after the classic six: a lost reply after a
//! successful SET, a lock value that is not unique, the load of spin-polling waiters, and a
//! server whose clock jumps. Each test runs the naive code with a plain Redis client first and
//! shows it failing, then fencelock in the same situation. Faults are forced (a proxy holding
//! replies back, TTLs shifted on the server), never left to timing luck.

use std::time::Duration;

use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::proxy::{Direction, Proxy};
use fencelock_chaos::store::FencedStore;
use fencelock_testkit::{servers, wait_until, RedisServer};
use redis::Connection;

const MS: fn(u64) -> Duration = Duration::from_millis;
const BOUND: Option<Duration> = Some(Duration::from_secs(10));

fn connect(url: &str) -> Connection {
    let c = redis::Client::open(url)
        .unwrap()
        .get_connection()
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    c.set_read_timeout(Some(MS(300))).unwrap();
    c
}

/// `SET key value NX PX ttl`: whether this call got an OK back.
fn naive_set(c: &mut Connection, key: &str, value: &str, ttl_ms: u64) -> bool {
    let r: redis::RedisResult<Option<String>> = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms)
        .query(c);
    matches!(r, Ok(Some(ref s)) if s == "OK")
}

/// The seeds' careful release: compare-and-delete in one script.
fn naive_release(c: &mut Connection, key: &str, value: &str) -> bool {
    let r: redis::RedisResult<i64> = redis::Script::new(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
    )
    .key(key)
    .arg(value)
    .invoke(c);
    r == Ok(1)
}

/// Calls per command name since the server started (`INFO commandstats`).
fn command_calls(server: &RedisServer) -> std::collections::BTreeMap<String, u64> {
    server
        .info_commandstats()
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

fn calls_since(
    server: &RedisServer,
    before: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    command_calls(server)
        .into_iter()
        .map(|(k, v)| (k.clone(), v - before.get(&k).copied().unwrap_or(0)))
        .filter(|(k, v)| *v > 0 && k != "info")
        .collect()
}

fn total_commands(server: &RedisServer) -> u64 {
    let info = match server.cmd(&[b"INFO", b"stats"]) {
        fencelock_testkit::Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("INFO: {other:?}"),
    };
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_commands_processed")
}

/// Pitfall 7. A Redlock client that undoes only the servers that said OK: a server whose
/// reply was lost did set the key, and keeps it for the whole TTL. fencelock undoes on every
/// server that may hold the attempt's token, lost replies included.
#[test]
fn a_lost_reply_after_a_successful_set_is_undone_only_by_releasing_everywhere() {
    let s = servers(3);
    let proxy = Proxy::to_port(s[1].port());
    let urls = [s[0].url(), proxy.url(), s[2].url()];
    // Another owner holds the lock on the third server: no attempt reaches a quorum.
    assert!(s[2].set_nx_px(b"naive", b"other", 60_000));
    assert!(s[2].set_nx_px(b"fenced", b"other", 60_000));
    // Both clients connected before the fault (connecting needs replies too).
    let mut conns: Vec<Connection> = urls.iter().map(|u| connect(u)).collect();
    let m = LockManager::builder(&urls)
        .server_timeout(MS(200))
        .build()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // (and its scripts loaded on every server: loading needs a reply)
    let warm = rt.block_on(m.acquire("warm-up", MS(1000), BOUND)).unwrap();
    rt.block_on(warm.release()).unwrap();
    proxy.stall(Direction::ServerToClient, true); // requests arrive, replies are held back

    // The naive client: SET on each server, counting OKs; on failure, undo where it got OK.
    let oks: Vec<bool> = conns
        .iter_mut()
        .map(|c| naive_set(c, "naive", "naive-token", 30_000))
        .collect();
    assert_eq!(oks, [true, false, false], "the second reply was lost");
    for (c, ok) in conns.iter_mut().zip(&oks) {
        if *ok {
            naive_release(c, "naive", "naive-token");
        }
    }
    assert_eq!(s[0].get(b"naive"), None);
    assert_eq!(
        s[1].get(b"naive").as_deref(),
        Some(&b"naive-token"[..]),
        "naive: the server whose reply was lost keeps the failed attempt's key"
    );
    assert!(s[1].pttl(b"naive") > 20_000, "for the rest of its TTL");

    // fencelock, same situation.
    let scripts_before = command_calls(&s[1]);
    let e = rt
        .block_on(m.acquire("fenced", MS(30_000), Some(MS(0))))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    wait_until(MS(5000), "the undo to reach both servers", || {
        s[0].get(b"fenced").is_none() && s[1].get(b"fenced").is_none()
    });
    // The attempt did run on the server whose reply was lost, and so did the undo.
    let ran = calls_since(&s[1], &scripts_before);
    assert!(
        ran.get("evalsha").copied().unwrap_or(0) >= 2 && ran.contains_key("set"),
        "{ran:?}"
    );
    proxy.heal();
    drop(conns);
}

/// Pitfall 8. A lock value that is not unique per acquisition (a host name, a constant): a
/// holder whose lock expired deletes its successor's lock with the careful compare-and-delete,
/// since the values are equal. fencelock's tokens are a UUID v4 per acquisition.
#[test]
fn a_non_unique_lock_value_lets_a_stale_holder_release_its_successor() {
    let server = RedisServer::start();
    let (mut a, mut b) = (connect(&server.url()), connect(&server.url()));
    assert!(naive_set(&mut a, "report", "host-1", 200));
    wait_until(MS(5000), "A's lock to expire", || {
        server.get(b"report").is_none()
    });
    assert!(naive_set(&mut b, "report", "host-1", 30_000)); // another worker on the same host
    assert!(
        naive_release(&mut a, "report", "host-1"),
        "naive: A's release deleted B's lock"
    );
    assert_eq!(server.get(b"report"), None);

    let m = LockManager::new([server.url()]).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let a = rt.block_on(m.acquire("fenced", MS(200), BOUND)).unwrap();
    wait_until(MS(5000), "A's lock to expire", || {
        server.get(b"fenced").is_none()
    });
    let b = rt.block_on(m.acquire("fenced", MS(30_000), BOUND)).unwrap();
    assert_ne!(a.token(), b.token(), "a token per acquisition");
    let e = rt.block_on(a.release()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert_eq!(server.get(b"fenced").as_deref(), Some(b.token()));
    rt.block_on(b.release()).unwrap();
}

/// Pitfall 9. Waiting by polling (`while !SET NX: sleep(1 ms)`): every waiter sends a command
/// per millisecond to the server for as long as it waits. fencelock's waiter is woken by the
/// release. The test counts the server's commands over the same one-second wait.
#[test]
fn spin_polling_waiters_load_the_server_and_fencelock_waiters_do_not() {
    let server = RedisServer::start();
    let hold = MS(1000);
    let mut holder = connect(&server.url());
    let mut waiter = connect(&server.url());

    assert!(naive_set(&mut holder, "polled", "holder", 30_000));
    let before = total_commands(&server);
    let release_at = std::time::Instant::now() + hold;
    let mut released = false;
    while !naive_set(&mut waiter, "polled", "waiter", 30_000) {
        if !released && std::time::Instant::now() >= release_at {
            naive_release(&mut holder, "polled", "holder");
            released = true;
        }
        std::thread::sleep(MS(1));
    }
    let naive = total_commands(&server) - before - 1;

    let m = LockManager::new([server.url()]).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let held = rt.block_on(m.acquire("woken", MS(30_000), BOUND)).unwrap();
    let before = total_commands(&server);
    let stats_before = command_calls(&server);
    let wait = {
        let m = m.clone();
        rt.spawn(async move { m.acquire("woken", MS(30_000), BOUND).await })
    };
    std::thread::sleep(hold);
    rt.block_on(held.release()).unwrap();
    let got = rt.block_on(wait).unwrap().unwrap();
    let fenced = total_commands(&server) - before - 2;
    let calls = calls_since(&server, &stats_before);
    rt.block_on(got.release()).unwrap();
    // What the clients sent: scripts, subscriptions, script loads. The rest ran inside the
    // scripts.
    let requests: u64 = calls
        .iter()
        .filter(|(k, _)| {
            [
                "evalsha",
                "eval",
                "script|load",
                "subscribe",
                "unsubscribe",
                "ssubscribe",
            ]
            .contains(&k.as_str())
        })
        .map(|(_, v)| v)
        .sum();
    println!(
        "during a {} ms wait (the release included): polling every 1 ms sent {naive} requests \
         ({naive} server commands); fencelock sent {requests} requests ({fenced} server \
         commands, script internals included: {calls:?})",
        hold.as_millis()
    );
    assert!(
        requests <= 20,
        "fencelock's wait sent {requests} requests: {calls:?}"
    );
    assert!(
        naive >= 10 * requests,
        "polling sent {naive} requests, fencelock {requests}"
    );
    assert!(
        naive > fenced,
        "polling ran {naive} server commands, fencelock {fenced}"
    );
}

/// Pitfall 10. A server whose clock jumps forward expires keys early (Redis measures TTLs on
/// its own clock). Shifting a key's TTL on a server stands for that jump. On one server of
/// three, Redlock holds: the other two still make the quorum. On two of three, another
/// client gets a quorum while the first still believes it holds the lock: Redlock assumes
/// bounded clock drift (docs/SAFETY.md), and only the fencing token keeps the storage safe.
#[test]
fn a_server_clock_jump_on_a_minority_is_survived_and_on_a_majority_is_fenced_off() {
    let s = servers(3);
    let urls: Vec<String> = s.iter().map(|x| x.url()).collect();
    let store_server = RedisServer::start();
    let store = FencedStore::new(&store_server.url());
    let m = LockManager::new(&urls).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let a = rt.block_on(m.acquire("clock", MS(30_000), BOUND)).unwrap();
    let jump = |server: &RedisServer| {
        server.cmd(&[b"PEXPIRE", b"clock", b"1"]);
        wait_until(MS(5000), "the key to expire", || {
            server.get(b"clock").is_none()
        });
    };

    jump(&s[0]);
    let e = rt
        .block_on(m.acquire("clock", MS(30_000), Some(MS(0))))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "one jump: still excluded");
    assert!(rt.block_on(m.is_locked("clock")).unwrap());

    jump(&s[1]);
    let b = rt
        .block_on(m.acquire("clock", MS(30_000), Some(MS(0))))
        .expect("two jumps: another client gets a quorum");
    assert!(
        !a.is_lost() && a.validity() > Duration::ZERO,
        "A still believes it holds it"
    );
    assert!(b.fencing_token() > a.fencing_token());
    assert!(store.write("account", b.fencing_token(), "from-B").unwrap());
    assert!(
        !store.write("account", a.fencing_token(), "from-A").unwrap(),
        "the fencing token refuses A's write"
    );
    rt.block_on(b.release()).unwrap();
    drop(a);
}
