//! Tests of the fixture itself, against a real `redis-server`.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use fencelock_testkit::{free_port, servers, RedisServer, Reply};

fn pid_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn refuses(port: u16) -> bool {
    matches!(
        TcpStream::connect(("127.0.0.1", port)),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused
    )
}

fn ping(server: &RedisServer, timeout: Duration) -> std::io::Result<Reply> {
    server.cmd_with_timeout(&[b"PING"], timeout)
}

#[test]
fn start_ping_and_round_trip() {
    let s = RedisServer::start();
    assert_ne!(s.port(), 6379);
    assert_eq!(s.url(), format!("redis://127.0.0.1:{}", s.port()));
    assert!(pid_exists(s.pid()));
    assert_eq!(s.cmd(&[b"PING"]), Reply::Status("PONG".into()));

    assert_eq!(s.get(b"k"), None);
    s.set(b"k", b"v\r\n\0bin");
    assert_eq!(s.get(b"k"), Some(b"v\r\n\0bin".to_vec()));
    assert_eq!(s.pttl(b"k"), -1);
    assert_eq!(s.del(b"k"), 1);
    assert_eq!(s.del(b"k"), 0);
    assert_eq!(s.pttl(b"k"), -2);

    assert!(s.set_nx_px(b"lock", b"a", 10_000));
    assert!(!s.set_nx_px(b"lock", b"b", 10_000));
    assert_eq!(s.get(b"lock"), Some(b"a".to_vec()));
    let ttl = s.pttl(b"lock");
    assert!(ttl > 0 && ttl <= 10_000, "pttl {ttl}");
    assert!(s.info_commandstats().contains("cmdstat_set:calls=3"));

    s.flushall();
    assert_eq!(s.dbsize(), 0);
}

#[test]
fn reply_parsing_covers_all_types() {
    let s = RedisServer::start();
    s.set(b"a", b"1");
    assert_eq!(
        s.cmd(&[b"MGET", b"a", b"missing"]),
        Reply::Array(Some(vec![
            Reply::Bulk(Some(b"1".to_vec())),
            Reply::Bulk(None)
        ]))
    );
    assert_eq!(s.cmd(&[b"INCR", b"a"]), Reply::Int(2));
    assert_eq!(s.cmd(&[b"BLPOP", b"nolist", b"0.01"]), Reply::Array(None));
    assert_eq!(
        s.cmd(&[b"LRANGE", b"nolist", b"0", b"-1"]),
        Reply::Array(Some(vec![]))
    );
    match s.cmd(&[b"NOSUCHCOMMAND"]) {
        Reply::Error(e) => assert!(e.starts_with("ERR"), "{e}"),
        other => panic!("expected error, got {other:?}"),
    }
}

#[test]
fn kill_refuses_connections_and_is_idempotent() {
    let mut s = RedisServer::start();
    let pid = s.pid();
    assert!(s.is_running());
    s.kill();
    assert!(!s.is_running());
    assert!(!pid_exists(pid), "pid {pid} still exists after kill");
    assert!(refuses(s.port()));
    assert!(ping(&s, Duration::from_millis(200)).is_err());
    s.kill();
}

#[test]
fn stop_freezes_and_cont_resumes() {
    let mut s = RedisServer::start();
    s.stop();
    assert!(s.is_running(), "a stopped server is still a live process");
    let t0 = Instant::now();
    let err = ping(&s, Duration::from_millis(300)).expect_err("stopped server answered");
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    assert!(t0.elapsed() >= Duration::from_millis(250));
    s.cont();
    assert_eq!(
        ping(&s, Duration::from_secs(2)).unwrap(),
        Reply::Status("PONG".into())
    );
}

#[test]
fn restart_comes_back_empty_on_same_port() {
    let mut s = RedisServer::start();
    let (port, pid) = (s.port(), s.pid());
    s.set(b"k", b"v");
    s.restart();
    assert_eq!(s.port(), port);
    assert_ne!(s.pid(), pid);
    assert!(!pid_exists(pid));
    assert_eq!(s.get(b"k"), None);
    assert_eq!(s.dbsize(), 0);

    // Restart after an explicit kill works too.
    s.kill();
    s.restart();
    assert!(s.is_running());
    assert_eq!(s.cmd(&[b"PING"]), Reply::Status("PONG".into()));
}

#[test]
fn restart_retries_while_port_is_busy() {
    let mut s = RedisServer::start();
    s.kill();
    let squatter = TcpListener::bind(("127.0.0.1", s.port())).expect("grab freed port");
    let release = thread::spawn(move || {
        thread::sleep(Duration::from_millis(500));
        drop(squatter);
    });
    let t0 = Instant::now();
    s.restart();
    assert!(
        t0.elapsed() >= Duration::from_millis(400),
        "restart did not wait for the port"
    );
    release.join().unwrap();
    assert_eq!(s.cmd(&[b"PING"]), Reply::Status("PONG".into()));
}

#[test]
fn drop_kills_process_and_removes_temp_dir() {
    let mut s = RedisServer::start();
    let (pid, port) = (s.pid(), s.port());
    let dir = s.log_path().parent().unwrap().to_path_buf();
    assert!(dir.is_dir());
    s.stop(); // Drop must also handle a frozen server.
    drop(s);
    assert!(!pid_exists(pid), "pid {pid} still exists after drop");
    // SAFETY: signal 0 only checks for existence.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, 0) }, -1);
    assert!(refuses(port));
    assert!(!dir.exists(), "{} not removed", dir.display());
}

#[test]
fn servers_starts_distinct_instances() {
    let list = servers(3);
    assert_eq!(list.len(), 3);
    let mut ports: Vec<u16> = list.iter().map(RedisServer::port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 3);
    for (i, s) in list.iter().enumerate() {
        s.set(b"id", i.to_string().as_bytes());
    }
    for (i, s) in list.iter().enumerate() {
        assert_eq!(s.get(b"id"), Some(i.to_string().into_bytes()));
    }
}

#[test]
fn free_port_is_bindable() {
    // Racy by nature (a concurrent test may grab the port), so allow a few tries.
    let bound = (0..5).any(|_| {
        let port = free_port();
        assert_ne!(port, 6379);
        TcpListener::bind(("127.0.0.1", port)).is_ok()
    });
    assert!(bound, "no port from free_port() was bindable in 5 tries");
}

/// A port fixed before its server starts is outside the kernel's ephemeral range (where an
/// outgoing connection's local end may take it meanwhile: a cluster test's bus port once was),
/// free when returned, and never handed out twice.
#[test]
fn fixed_ports_are_free_distinct_and_outside_the_ephemeral_range() {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let bounds: Vec<u16> = range
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let ports: Vec<u16> = (0..50).map(|_| fencelock_testkit::fixed_port()).collect();
    let mut distinct = ports.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), ports.len(), "{ports:?}");
    for p in ports {
        assert!(p < bounds[0] || p > bounds[1], "{p} is in {bounds:?}");
        assert_ne!(p, 6379);
        std::net::TcpListener::bind(("127.0.0.1", p)).expect("free");
    }
}
