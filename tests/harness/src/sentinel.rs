//! Redis Sentinel for tests: `redis-server --sentinel` processes on free loopback ports, and a
//! whole monitored setup (a master, its replica, three sentinels) that can be failed over.
//! Every process is stopped by its own PID when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::{free_port, request, wait_until, RedisServer, Reply};

/// One sentinel watching `mymaster`.
pub struct Sentinel {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
}

impl Sentinel {
    /// A sentinel monitoring the master on `master_port` as `mymaster` (quorum 2).
    pub fn start(master_port: u16) -> Sentinel {
        Sentinel::start_with(master_port, "")
    }

    /// A sentinel with `extra` lines in its configuration (e.g. `requirepass "..."`).
    pub fn start_with(master_port: u16, extra: &str) -> Sentinel {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("fencelock-sentinel-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nlogfile {}\n\
                 sentinel monitor mymaster 127.0.0.1 {master_port} 2\n\
                 sentinel down-after-milliseconds mymaster 1000\n\
                 sentinel failover-timeout mymaster 3000\n\
                 sentinel parallel-syncs mymaster 1\n{extra}",
                dir.display(),
                dir.join("sentinel.log").display()
            ),
        )
        .unwrap();
        let bin = std::env::var_os("REDIS_SERVER_BIN").unwrap_or_else(|| "redis-server".into());
        let child = Command::new(bin)
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server --sentinel");
        let s = Sentinel { child, port, dir };
        wait_until(Duration::from_secs(5), "the sentinel answers", || {
            s.master_port().is_some() || (!extra.is_empty() && s.cmd(&[b"PING"]).is_some())
        });
        s
    }

    /// A command to the sentinel (its reply, `None` if it did not answer).
    pub fn cmd(&self, args: &[&[u8]]) -> Option<Reply> {
        request(self.port, args, Duration::from_secs(2)).ok()
    }

    /// The port of the master the sentinel names for `mymaster`.
    pub fn master_port(&self) -> Option<u16> {
        match self.cmd(&[b"SENTINEL", b"get-master-addr-by-name", b"mymaster"])? {
            Reply::Array(Some(items)) => match items.get(1) {
                Some(Reply::Bulk(Some(p))) => std::str::from_utf8(p).ok()?.parse().ok(),
                _ => None,
            },
            _ => None,
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `server`'s `INFO section` mentions `needle`.
///
/// A connection the server closes is "not yet", not a failure: while Sentinel reconfigures a
/// server (a failover's REPLICAOF) it kills the server's normal clients, so a poll may meet a
/// reset connection (this made `a_sentinel_entry_follows_a_forced_failover_from_c` fail once
/// with "INFO ... Connection reset by peer"). The callers' waits bound how long.
pub fn info_has(server: &RedisServer, section: &[u8], needle: &str) -> bool {
    let reply = server.cmd_with_timeout(&[b"INFO", section], crate::CMD_TIMEOUT);
    matches!(reply, Ok(Reply::Bulk(Some(b))) if String::from_utf8_lossy(&b).contains(needle))
}

/// A master, its replica (in sync) and three sentinels watching it as `mymaster`.
pub struct SentinelSetup {
    /// The master at the start (a replica after [`failover`](Self::failover)).
    pub master: RedisServer,
    /// Its replica (the master after a failover).
    pub replica: RedisServer,
    /// The sentinels.
    pub sentinels: Vec<Sentinel>,
}

impl SentinelSetup {
    /// Starts the servers and the sentinels; returns once the replica is in sync.
    pub fn start() -> SentinelSetup {
        let master = RedisServer::start();
        let replica = RedisServer::start_with_args(&[
            "--replicaof".into(),
            "127.0.0.1".into(),
            master.port().to_string(),
        ]);
        wait_until(Duration::from_secs(10), "the replica is in sync", || {
            info_has(&replica, b"replication", "master_link_status:up")
        });
        let sentinels = (0..3).map(|_| Sentinel::start(master.port())).collect();
        SentinelSetup {
            master,
            replica,
            sentinels,
        }
    }

    /// `redis+sentinel://` URL of the setup's master.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        format!("redis+sentinel://{}/mymaster", hosts.join(","))
    }

    /// Forces a failover and waits until every sentinel names the replica, the replica is a
    /// master and the old master a replica.
    pub fn failover(&self) {
        wait_until(
            Duration::from_secs(20),
            "the sentinel accepts FAILOVER",
            || {
                matches!(
                    self.sentinels[0].cmd(&[b"SENTINEL", b"FAILOVER", b"mymaster"]),
                    Some(Reply::Status(_))
                )
            },
        );
        wait_until(Duration::from_secs(20), "the replica is promoted", || {
            self.sentinels
                .iter()
                .all(|s| s.master_port() == Some(self.replica.port()))
                && info_has(&self.replica, b"replication", "role:master")
                && info_has(&self.master, b"replication", "role:slave")
        });
    }
}
