//! Redis Cluster for tests: `redis-server --cluster-enabled yes` processes on free loopback
//! ports, joined by `redis-cli --cluster create` (masters, each with its replicas), with the
//! operations tests need to make a cluster move: find the master of a key, fail a master
//! over, migrate a slot to another master. Every node is a [`RedisServer`], stopped by its own
//! PID when the cluster is dropped.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{fixed_port, free_port, requests, wait_until, wait_until_why, RedisServer, Reply};

// Moving slots between masters, as redis-cli --cluster reshard does.
mod migrate;

/// How long a node may be unreachable before the cluster fails it over, in ms (short, for
/// tests; failover then takes a few seconds).
pub const NODE_TIMEOUT_MS: u64 = 1000;

/// How [`RedisCluster::migrate_slot_by`] moves a slot's keys, as the two ways of
/// `redis-cli --cluster reshard`: one `MIGRATE` per key with `REPLACE`, or each batch of the
/// keys `CLUSTER GETKEYSINSLOT` returns in one `MIGRATE ... KEYS`, without `REPLACE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migrate {
    OneByOne,
    Batched,
}

/// A running cluster: `masters` masters with `replicas` replicas each, every slot assigned.
pub struct RedisCluster {
    /// Every node, the masters first (in `redis-cli --cluster create` order).
    pub nodes: Vec<RedisServer>,
    /// For a TLS cluster ([`start_tls`](Self::start_tls)): each node's TLS port, in the order
    /// of `nodes`.
    pub tls_ports: Vec<u16>,
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// The node's id.
    pub id: String,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Whether it is a master (and not failed).
    pub master: bool,
    /// Whether the cluster considers it failed.
    pub failed: bool,
    /// The slot ranges it serves (masters), inclusive.
    pub slots: Vec<(u16, u16)>,
    /// For a replica: the id of its master.
    pub replica_of: Option<String>,
    /// Its configEpoch, as the viewer knows it (the slots' claim that wins a conflict).
    pub config_epoch: u64,
}

impl RedisCluster {
    /// Starts `masters * (1 + replicas)` nodes and joins them; returns once every node says
    /// `cluster_state:ok` and knows every other node.
    pub fn start(masters: usize, replicas: usize) -> RedisCluster {
        Self::start_with_args(masters, replicas, &[])
    }

    /// As [`start`](Self::start), with extra `redis-server` arguments for every node (the
    /// fixture's own commands use the default user without a password).
    pub fn start_with_args(masters: usize, replicas: usize, extra: &[String]) -> RedisCluster {
        Self::start_nodes(masters, replicas, extra, None, &|_| Vec::new())
    }

    /// As [`start`](Self::start), with extra `redis-server` arguments for node `i` (in the
    /// order `redis-cli --cluster create` is given them: the masters first) from
    /// `node_args(i)`; arguments naming `--cluster-port` choose the node's bus port (e.g. to
    /// put a proxy before it, announced with `--cluster-announce-bus-port`).
    pub fn start_with_node_args(
        masters: usize,
        replicas: usize,
        node_args: &dyn Fn(usize) -> Vec<String>,
    ) -> RedisCluster {
        Self::start_nodes(masters, replicas, &[], None, node_args)
    }

    /// A cluster whose nodes also listen with TLS (certificates from
    /// [`make_certs`](crate::tls::make_certs) in `certs`, no client certificate required) and
    /// talk TLS on the cluster bus and to their replicas; clients that connect with TLS are
    /// told the nodes' TLS ports. The plain ports stay on for the fixture's own commands.
    pub fn start_tls(masters: usize, replicas: usize, certs: &std::path::Path) -> RedisCluster {
        Self::start_nodes(masters, replicas, &[], Some(certs), &|_| Vec::new())
    }

    fn start_nodes(
        masters: usize,
        replicas: usize,
        extra: &[String],
        certs: Option<&std::path::Path>,
        node_args: &dyn Fn(usize) -> Vec<String>,
    ) -> RedisCluster {
        let count = masters * (1 + replicas);
        let mut args: Vec<String> = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            &NODE_TIMEOUT_MS.to_string(),
            // A replica with stale data may still be promoted: the tests kill masters.
            "--cluster-replica-validity-factor",
            "0",
            // A replica (back) under a new master syncs at once. Redis 7 and Valkey 8 would
            // wait 5 s for more replicas first, and with replica acknowledgment the master
            // grants nothing until then (docs/SAFETY.md, "Replica acknowledgment").
            "--repl-diskless-sync-delay",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend_from_slice(extra);
        // The cluster bus of each node on a free port of its own (by default it is the node's
        // port + 10000, which may be taken, or past 65535); before Redis 7.0 it is always that,
        // and the node's port is chosen so that it is free.
        let own_bus_port = crate::server_version() >= (7, 0);
        let mut tls_ports = Vec::new();
        let nodes: Vec<RedisServer> = (0..count)
            .map(|i| {
                let mut args = args.clone();
                let own = node_args(i);
                let chosen = own.iter().any(|a| a == "--cluster-port");
                args.extend(own);
                if own_bus_port && !chosen {
                    args.extend(["--cluster-port".to_string(), fixed_port().to_string()]);
                }
                if let Some(certs) = certs {
                    let tls_port = fixed_port();
                    tls_ports.push(tls_port);
                    let p = |f: &str| certs.join(f).display().to_string();
                    args.extend(crate::tls::server_args(certs, tls_port, false));
                    args.extend([
                        // Nodes are each other's TLS clients on the bus and replication
                        // links: with the client certificate (the server one is for
                        // serverAuth only).
                        "--tls-client-cert-file".into(),
                        p("client.crt"),
                        "--tls-client-key-file".into(),
                        p("client.key"),
                        "--tls-cluster".into(),
                        "yes".into(),
                        "--tls-replication".into(),
                        "yes".into(),
                    ]);
                }
                let pick = if own_bus_port {
                    free_port
                } else {
                    crate::free_port_with_bus
                };
                RedisServer::start_on(pick, &args)
            })
            .collect();
        let mut create =
            Command::new(std::env::var_os("REDIS_CLI_BIN").unwrap_or_else(|| "redis-cli".into()));
        // A TLS cluster is made over TLS (its nodes then know each other's TLS ports, which
        // they tell TLS clients; plain clients still see the plain ports).
        let ports: Vec<u16> = match certs {
            Some(certs) => {
                create
                    .arg("--tls")
                    .arg("--cacert")
                    .arg(certs.join("ca.crt"));
                tls_ports.clone()
            }
            None => nodes.iter().map(RedisServer::port).collect(),
        };
        create.args(["--cluster", "create"]);
        for p in &ports {
            create.arg(format!("127.0.0.1:{p}"));
        }
        create.args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"]);
        // `redis-cli --cluster create` waits for the nodes to join without a limit (forever when
        // they cannot reach each other's bus): bounded here, killed by its PID.
        let log = std::env::temp_dir().join(format!(
            "fencelock-cluster-create-{}-{}.log",
            std::process::id(),
            nodes[0].port()
        ));
        let file = std::fs::File::create(&log).expect("the redis-cli log file");
        let mut child = create
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("the redis-cli log file"))
            .stderr(file)
            .spawn()
            .expect("redis-cli (from redis-tools) must be on PATH, or set REDIS_CLI_BIN");
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().expect("waiting for redis-cli") {
                break Some(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        assert!(
            status.is_some_and(|s| s.success()),
            "redis-cli --cluster create failed or hung ({status:?}):\n{output}"
        );
        let cluster = RedisCluster { nodes, tls_ports };
        cluster.wait_ready(Duration::from_secs(30));
        cluster
    }

    /// Waits until every running node says `cluster_state:ok` and sees every slot served,
    /// every running replica is in sync with its master (`master_link_status:up`), every
    /// master sees each of its replicas online, and the running nodes agree on who is whose
    /// replica (gossip spreads a role slowly with a long node timeout; before Redis 7.0 a node
    /// could still call a replica a master a while after the others knew better).
    pub fn wait_ready(&self, limit: Duration) {
        // Each check opens about 24 connections to the nodes: every 100 ms, not the 10 ms of
        // `wait_until`, not to load the machine while the cluster recovers.
        let what = "every node of the cluster is ok";
        wait_until_why(limit, Duration::from_millis(100), what, || self.not_ready());
    }

    /// Why the cluster is not yet ready in [`wait_ready`](Self::wait_ready)'s sense (the
    /// views of the nodes that disagree, or the node that is not ok, with its `CLUSTER INFO`
    /// and `INFO replication`), or `None` when it is.
    fn not_ready(&self) -> Option<String> {
        let text = |n: &RedisServer, args: &[&[u8]]| match n
            .cmd_with_timeout(args, Duration::from_millis(500))
        {
            Ok(Reply::Bulk(Some(t))) => String::from_utf8_lossy(&t).into_owned(),
            _ => String::new(),
        };
        // Each node's view of the roles: (address, master or not, master id), sorted.
        let roles = |nodes: &str| {
            let mut view: Vec<(String, bool, String)> = nodes
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split(' ').collect();
                    (f.len() > 3)
                        .then(|| (f[1].to_owned(), f[2].contains("master"), f[3].to_owned()))
                })
                .collect();
            view.sort();
            view
        };
        let running: Vec<&RedisServer> = self.running().collect();
        let views: Vec<(u16, String)> = running
            .iter()
            .map(|n| (n.port(), text(n, &[b"CLUSTER", b"NODES"])))
            .collect();
        if views.windows(2).any(|w| roles(&w[0].1) != roles(&w[1].1)) {
            let seen: Vec<String> = views
                .iter()
                .map(|(port, nodes)| format!("as the node on port {port} sees it:\n{nodes}"))
                .collect();
            return Some(format!("the nodes disagree on roles\n{}", seen.join("")));
        }
        running.iter().find_map(|n| {
            let info = text(n, &[b"CLUSTER", b"INFO"]);
            let replication = text(n, &[b"INFO", b"replication"]);
            // A master counts a replica for WAIT only once it is `state=online`
            // (its full sync done), which comes after the replica says its link is up.
            let replicas_online = replication
                .lines()
                .filter(|l| l.starts_with("slave") && l.contains("state="))
                .all(|l| l.contains("state=online"));
            let ok = info.contains("cluster_state:ok")
                && info.contains("cluster_slots_ok:16384")
                && ((replication.contains("role:master") && replicas_online)
                    || replication.contains("master_link_status:up"));
            (!ok).then(|| {
                let nodes = views.iter().find(|(p, _)| *p == n.port()).map(|v| &v.1);
                format!(
                    "the node on port {} is not ok:\n{info}{replication}{}",
                    n.port(),
                    nodes.map_or("", |v| v)
                )
            })
        })
    }

    /// Waits until the master on `port` gets a write acknowledged by `replicas` replicas
    /// (`SET key` then `WAIT replicas 200` on one connection; `key` must be in a slot that
    /// master serves; it is deleted afterwards). A replica that has just synced can still miss
    /// a `WAIT` for a while after both sides call the link up.
    pub fn wait_acknowledged(&self, port: u16, key: &[u8], replicas: usize, limit: Duration) {
        let n = replicas.to_string();
        let what =
            format!("a write to the master on port {port} acknowledged by {replicas} replicas");
        wait_until(limit, &what, || {
            let cmds: [&[&[u8]]; 2] = [&[b"SET", key, b"1"], &[b"WAIT", n.as_bytes(), b"200"]];
            matches!(
                requests(port, &cmds, Duration::from_secs(2)).as_deref(),
                Ok([Reply::Status(_), Reply::Int(got)]) if *got >= replicas as i64
            )
        });
        self.node(port).cmd(&[b"DEL", key]);
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2`: two seed nodes.
    pub fn url(&self) -> String {
        format!(
            "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.nodes[0].port(),
            self.nodes[1].port()
        )
    }

    /// `rediss+cluster://127.0.0.1:T1,127.0.0.1:T2`: two seed nodes' TLS ports.
    pub fn tls_url(&self) -> String {
        format!(
            "rediss+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.tls_ports[0], self.tls_ports[1]
        )
    }

    /// The hash slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT`).
    pub fn keyslot(&self, key: &[u8]) -> u16 {
        match self.any().cmd(&[b"CLUSTER", b"KEYSLOT", key]) {
            Reply::Int(n) => n as u16,
            other => panic!("fencelock-testkit: CLUSTER KEYSLOT replied {other:?}"),
        }
    }

    /// `CLUSTER NODES`, as one running node sees it.
    pub fn topology(&self) -> Vec<NodeInfo> {
        self.topology_seen_by(self.any().port())
    }

    /// `CLUSTER NODES`, as the node on `port` sees it (a node cut off from the others keeps
    /// its own view).
    pub fn topology_seen_by(&self, port: u16) -> Vec<NodeInfo> {
        let text = match self.node(port).cmd(&[b"CLUSTER", b"NODES"]) {
            Reply::Bulk(Some(t)) => String::from_utf8_lossy(&t).into_owned(),
            other => panic!("fencelock-testkit: CLUSTER NODES replied {other:?}"),
        };
        parse_nodes(&text)
    }

    /// The view of the node on `port`, or `None` when it does not answer within `limit` (it
    /// was killed, or is paused).
    pub(crate) fn view_within(&self, port: u16, limit: Duration) -> Option<Vec<NodeInfo>> {
        match self
            .node(port)
            .cmd_with_timeout(&[b"CLUSTER", b"NODES"], limit)
        {
            Ok(Reply::Bulk(Some(t))) => Some(parse_nodes(&String::from_utf8_lossy(&t))),
            _ => None,
        }
    }
}

/// `CLUSTER NODES`'s text, node by node.
fn parse_nodes(text: &str) -> Vec<NodeInfo> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let addr = f[1].split('@').next().unwrap();
            let port = addr.rsplit(':').next().unwrap().parse().unwrap();
            let flags = f[2];
            let slots = f[8..]
                .iter()
                .filter(|s| !s.starts_with('['))
                .map(|s| match s.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (s.parse().unwrap(), s.parse().unwrap()),
                })
                .collect();
            NodeInfo {
                id: f[0].to_owned(),
                port,
                master: flags.contains("master") && !flags.contains("fail"),
                failed: flags.contains("fail"),
                slots,
                replica_of: (f[3] != "-").then(|| f[3].to_owned()),
                config_epoch: f[6].parse().unwrap(),
            }
        })
        .collect()
}

impl RedisCluster {
    /// The node that serves `slot` now.
    pub fn master_of_slot(&self, slot: u16) -> &RedisServer {
        let port = self
            .topology()
            .into_iter()
            .find(|n| n.master && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
            .unwrap_or_else(|| panic!("fencelock-testkit: no master serves slot {slot}"))
            .port;
        self.node(port)
    }

    /// The master that holds `key` now.
    pub fn master_of(&self, key: &[u8]) -> &RedisServer {
        self.master_of_slot(self.keyslot(key))
    }

    /// `GET key` on the master that holds it.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.master_of(key).get(key)
    }

    /// The node on `port`.
    pub fn node(&self, port: u16) -> &RedisServer {
        self.nodes
            .iter()
            .find(|n| n.port() == port)
            .unwrap_or_else(|| panic!("fencelock-testkit: no node on port {port}"))
    }

    /// The node on `port`, to stop or kill it.
    pub fn node_mut(&mut self, port: u16) -> &mut RedisServer {
        self.nodes
            .iter_mut()
            .find(|n| n.port() == port)
            .unwrap_or_else(|| panic!("fencelock-testkit: no node on port {port}"))
    }

    /// The ports of the replicas of the master on `port`.
    pub fn replicas_of(&self, port: u16) -> Vec<u16> {
        let id = self.id_of(port);
        self.topology()
            .into_iter()
            .filter(|n| n.replica_of.as_deref() == Some(id.as_str()))
            .map(|n| n.port)
            .collect()
    }

    /// The id of the node on `port`.
    pub fn id_of(&self, port: u16) -> String {
        match self.node(port).cmd(&[b"CLUSTER", b"MYID"]) {
            Reply::Bulk(Some(id)) => String::from_utf8(id).unwrap(),
            other => panic!("fencelock-testkit: CLUSTER MYID replied {other:?}"),
        }
    }

    /// Kills the master that serves `slot` (SIGKILL) and waits until one of its replicas
    /// serves the slot and the cluster is ok again; returns the new master's port.
    pub fn kill_master_of_slot(&mut self, slot: u16) -> u16 {
        let old = self.master_of_slot(slot).port();
        self.node_mut(old).kill();
        let mut new = 0;
        wait_until(
            Duration::from_secs(30),
            "a replica took the slot over",
            || {
                let serving = self.running().find_map(|n| {
                    let t = match n
                        .cmd_with_timeout(&[b"CLUSTER", b"NODES"], Duration::from_millis(500))
                    {
                        Ok(Reply::Bulk(Some(t))) => String::from_utf8_lossy(&t).into_owned(),
                        _ => return None,
                    };
                    t.lines().find_map(|l| {
                        let f: Vec<&str> = l.split(' ').collect();
                        let serves = f.len() > 8
                            && f[2].contains("master")
                            && !f[2].contains("fail")
                            && f[8..].iter().any(|s| match s.split_once('-') {
                                Some((a, b)) => {
                                    a.parse::<u16>().is_ok_and(|a| a <= slot)
                                        && b.parse::<u16>().is_ok_and(|b| slot <= b)
                                }
                                None => s.parse::<u16>().is_ok_and(|s| s == slot),
                            });
                        let port: u16 = f[1].split('@').next()?.rsplit(':').next()?.parse().ok()?;
                        (serves && port != old).then_some(port)
                    })
                });
                if let Some(port) = serving {
                    new = port;
                    true
                } else {
                    false
                }
            },
        );
        wait_until(
            Duration::from_secs(30),
            "the cluster is ok after the failover",
            || {
                self.running().all(|n| {
                matches!(
                    n.cmd_with_timeout(&[b"CLUSTER", b"INFO"], Duration::from_millis(500)),
                    Ok(Reply::Bulk(Some(info))) if String::from_utf8_lossy(&info).contains("cluster_state:ok")
                )
            })
            },
        );
        new
    }

    /// A master other than the one on `port`.
    pub fn another_master(&self, port: u16) -> u16 {
        let other = self
            .topology()
            .into_iter()
            .find(|n| n.master && n.port != port);
        other
            .expect("fencelock-testkit: a cluster of several masters")
            .port
    }

    fn running(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(|n| {
            n.cmd_with_timeout(&[b"PING"], Duration::from_millis(300))
                .is_ok()
        })
    }

    fn any(&self) -> &RedisServer {
        self.running()
            .next()
            .expect("fencelock-testkit: no node of the cluster answers")
    }
}
