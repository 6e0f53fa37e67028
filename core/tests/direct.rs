//! The calling thread's own connection (`core/src/direct`): a blocking call of a manager with
//! one plain server writes its commands and reads their replies on a connection of the
//! calling thread's, opened at its first call once the runtime's connection is up and closed
//! when the thread ends or the manager goes. `CLIENT LIST` shows the connections the server
//! has; a manager of several servers keeps to the runtime's.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use fencelock::blocking::LockManager;
use fencelock::ErrorKind;
use fencelock_testkit::{requests, wait_until, RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;
/// Far above anything here takes: a hang, not a speed check.
const HANG: Duration = Duration::from_secs(30);

/// The server's command connections (not subscribers, not the test's own), as `CLIENT LIST`
/// lines.
fn command_clients(server: &RedisServer) -> Vec<String> {
    let Reply::Bulk(Some(list)) = server.cmd(&[b"CLIENT", b"LIST"]) else {
        panic!("CLIENT LIST failed");
    };
    String::from_utf8(list)
        .unwrap()
        .lines()
        .filter(|l| {
            !l.contains(" cmd=client|list ") && l.contains(" sub=0 ") && l.contains(" psub=0 ")
        })
        .map(str::to_owned)
        .collect()
}

fn cycle(m: &LockManager, name: &str) {
    let lock = m.acquire(name, MS(5000), Some(MS(5000))).unwrap();
    lock.release().unwrap();
}

#[test]
fn each_calling_thread_has_its_own_connection_closed_when_the_thread_ends() {
    let server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    // The first call opens the runtime's connection; the thread's own comes at the next.
    assert!(!m.is_locked("own").unwrap());
    assert_eq!(command_clients(&server).len(), 1, "the runtime's only");
    cycle(&m, "own");
    assert_eq!(command_clients(&server).len(), 2, "and this thread's");
    let threads = 3;
    let called = Arc::new(Barrier::new(threads + 1));
    let counted = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (m, called, counted) = (m.clone(), called.clone(), counted.clone());
            std::thread::spawn(move || {
                cycle(&m, &format!("own-{i}"));
                called.wait();
                counted.wait();
            })
        })
        .collect();
    called.wait();
    assert_eq!(
        command_clients(&server).len(),
        2 + threads,
        "one more per thread"
    );
    counted.wait();
    for h in handles {
        h.join().unwrap();
    }
    wait_until(HANG, "the ended threads' connections closed", || {
        command_clients(&server).len() == 2
    });
    drop(m);
    assert!(fencelock::settle_all(HANG));
    wait_until(HANG, "the manager's connections closed", || {
        command_clients(&server).is_empty()
    });
}

#[test]
fn it_authenticates_and_selects_the_database_as_the_url_says() {
    let server = RedisServer::start();
    server.cmd(&[
        b"ACL", b"SETUSER", b"app", b"on", b">s3cret", b"~*", b"&*", b"+@all",
    ]);
    let url = format!("redis://app:s3cret@127.0.0.1:{}/3", server.port());
    let m = LockManager::new([url]).unwrap();
    cycle(&m, "warm");
    let lock = m.acquire("in-db-3", MS(5000), None).unwrap();
    let clients = command_clients(&server);
    assert_eq!(clients.len(), 2, "{clients:?}");
    for c in &clients {
        assert!(c.contains(" user=app ") && c.contains(" db=3 "), "{c}");
    }
    let port = server.port();
    let replies = requests(port, &[&[b"SELECT", b"3"], &[b"GET", b"in-db-3"]], HANG).unwrap();
    assert_eq!(replies[1], Reply::Bulk(Some(lock.token().to_vec())));
    assert_eq!(server.get(b"in-db-3"), None, "not in database 0");
    lock.release().unwrap();
}

#[test]
fn a_reply_that_does_not_come_in_time_is_a_timeout_and_the_connection_is_not_reused() {
    let mut server = RedisServer::start();
    let config = fencelock::Builder::new([server.url()])
        .server_timeout(MS(300))
        .config()
        .unwrap();
    let m = LockManager::from_config(config).unwrap();
    cycle(&m, "warm");
    cycle(&m, "warm");
    server.stop();
    let started = Instant::now();
    let e = m.is_locked("late").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("no reply within 300 ms"), "{e}");
    assert!(started.elapsed() < HANG, "the call hung");
    server.cont();
    // The late reply (no lock) must not be taken for the next call's: a reused connection
    // would answer this acquire with it.
    let lock = m.acquire("late", MS(5000), None).unwrap();
    assert_eq!(server.get(b"late").as_deref(), Some(lock.token()));
    assert!(m.is_locked("late").unwrap());
    lock.release().unwrap();
    assert!(!m.is_locked("late").unwrap());
}

#[test]
fn a_restarted_server_is_reconnected_within_the_call() {
    let mut server = RedisServer::start();
    let m = LockManager::new([server.url()]).unwrap();
    cycle(&m, "warm");
    cycle(&m, "warm");
    server.restart();
    let lock = m.acquire("after", MS(5000), None).unwrap();
    assert_eq!(server.get(b"after").as_deref(), Some(lock.token()));
    lock.release().unwrap();
}

#[test]
fn a_manager_of_several_servers_keeps_to_the_runtimes_connections() {
    let servers = fencelock_testkit::servers(3);
    let m = LockManager::new(servers.iter().map(RedisServer::url)).unwrap();
    for _ in 0..3 {
        cycle(&m, "quorum");
    }
    let m2 = m.clone();
    std::thread::spawn(move || cycle(&m2, "quorum"))
        .join()
        .unwrap();
    for s in &servers {
        assert_eq!(command_clients(s).len(), 1, "the runtime's only");
    }
}

#[test]
fn a_unix_socket_server_is_reached_the_same_way() {
    let dir = tempfile_dir();
    let sock = dir.join("redis.sock");
    let server = RedisServer::start_with_args(&[
        "--unixsocket".into(),
        sock.display().to_string(),
        "--unixsocketperm".into(),
        "700".into(),
    ]);
    wait_until(HANG, "the socket file", || sock.exists());
    let m = LockManager::new([format!("redis+unix://{}", sock.display())]).unwrap();
    cycle(&m, "warm");
    let lock = m.acquire("over-unix", MS(5000), None).unwrap();
    assert_eq!(server.get(b"over-unix").as_deref(), Some(lock.token()));
    lock.release().unwrap();
    let clients = command_clients(&server);
    assert_eq!(
        clients.len(),
        2,
        "the runtime's and this thread's: {clients:?}"
    );
    assert!(
        clients.iter().all(|c| c.contains("redis.sock")),
        "{clients:?}"
    );
    drop((m, server));
    let _ = std::fs::remove_dir_all(dir);
}

/// A fresh directory for the socket (short: a Unix socket's path has a small limit).
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fl-direct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
