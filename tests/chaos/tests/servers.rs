//! A Redlock of servers of different kinds and versions (docs/SAFETY.md, "Servers"): one
//! server of each binary in `FENCELOCK_MIXED_SERVERS` (paths, separated by `:`; stage
//! 57-servers names Redis 7.0, Valkey 8.1 and Redis 6.2), or three of the default binary
//! when it is unset. Holders contend while each server in turn is killed and restarted empty;
//! the history checker's verdict is the test's verdict.

use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::contend::{contend, finish, runtime, Contention};
use fencelock_chaos::history::History;
use fencelock_chaos::urls;
use fencelock_testkit::{default_binary, RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn binaries() -> Vec<std::ffi::OsString> {
    match std::env::var_os("FENCELOCK_MIXED_SERVERS") {
        Some(list) => std::env::split_paths(&list)
            .map(std::path::PathBuf::into_os_string)
            .collect(),
        None => vec![default_binary(); 3],
    }
}

#[test]
fn a_redlock_of_servers_of_every_kind_keeps_exclusion_while_each_restarts() {
    let bins = binaries();
    assert!(bins.len() >= 3, "a Redlock of at least 3 servers: {bins:?}");
    let mut srv: Vec<RedisServer> = bins.iter().map(RedisServer::start_binary).collect();
    for s in &srv {
        let info = match s.cmd(&[b"INFO", b"server"]) {
            Reply::Bulk(Some(text)) => String::from_utf8_lossy(&text).into_owned(),
            other => panic!("INFO server on {}: {other:?}", s.port()),
        };
        let kind: Vec<&str> = info
            .lines()
            .filter(|l| l.starts_with("redis_version:") || l.starts_with("valkey_version:"))
            .collect();
        println!("port {}: {}", s.port(), kind.join(" "));
    }
    let ttl = MS(1000);
    let m = LockManager::builder(urls(&srv))
        .server_timeout(MS(100))
        .retry_delay(MS(50))
        .build()
        .unwrap();
    let history = History::new();
    let (down, up) = (ttl + MS(300), MS(500));
    let until = Instant::now() + MS(300) + (down + up) * srv.len() as u32;
    let rt = runtime();
    let spec = Contention {
        holders: 6,
        names: ["alpha", "beta"].map(String::from).to_vec(),
        ttl,
        wait: MS(3000),
        max_hold: MS(5),
        until,
    };
    let job = rt.spawn(contend(m, spec, history.clone()));
    sleep(MS(300));
    let mut windows = Vec::new();
    for (victim, server) in srv.iter_mut().enumerate() {
        server.kill();
        let from = Instant::now();
        sleep(down); // longer than the TTL: what it forgets has expired anyway
        windows.push((victim, from, Instant::now()));
        server.restart();
        sleep(up);
    }
    let report = finish(&rt, job, until, Duration::from_secs(20));
    let verdict = history.check();
    println!("mixed Redlock: {report}\n{verdict}");
    verdict.assert_ok();
    let unexpected = report.unexpected_errors(&[ErrorKind::NotAcquired, ErrorKind::Unavailable]);
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    for (victim, from, to) in windows {
        assert!(
            report.acquired_within(from, to) > 0,
            "no lock granted while server {victim} ({:?}) was down: {report}",
            bins[victim]
        );
    }
}
