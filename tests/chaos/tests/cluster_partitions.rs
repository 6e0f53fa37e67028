//! Partitions between a Redis Cluster's nodes (issue 36 item 4) while holders contend, judged
//! by the history checker. Every node's cluster bus is behind a fault-injecting proxy of the
//! test's own (`--cluster-port` on a free port, the proxy's port announced with
//! `--cluster-announce-bus-port`), and the master of the contended names' slot sends its bus
//! connections from an address of its own (`--bind-source-addr 127.0.0.2`, loopback), so that
//! the others' proxies can drop just them: the master is cut off from the rest of the cluster
//! one way or both, while clients still reach it on its client port, as in a partition
//! between the cluster's nodes that leaves the clients on the old master's side.
//!
//! A cluster's bus links are TCP connections each node opens to every other, and a node
//! counts another alive while anything arrives from it on any link: cut one way (the links
//! the others open to the master dropped, its own to them passing both ways), nobody misses
//! anything, and the cluster rightly does not fail the master over.

use std::net::{IpAddr, Ipv4Addr};
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::ffi_support::keys::LockKeys;
use fencelock::ErrorKind;
use fencelock_chaos::contend::{
    acknowledged_cluster_manager, contend, finish, runtime, Contention,
};
use fencelock_chaos::history::History;
use fencelock_chaos::proxy::Proxy;
use fencelock_testkit::cluster::RedisCluster;
use fencelock_testkit::{fixed_port, wait_until};

const MS: fn(u64) -> Duration = Duration::from_millis;
/// Longest a whole contention run may take beyond its planned end before it counts as hung.
const HANG_LIMIT: Duration = Duration::from_secs(30);
/// The address the cut-off master's bus connections leave from.
const SOURCE: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// A cluster of 3 masters and 3 replicas whose buses are behind proxies; node `cut` (a
/// master: `redis-cli --cluster create` makes the first three masters) sends its bus
/// connections from [`SOURCE`].
struct Cluster {
    cluster: RedisCluster,
    bus: Vec<Proxy>,
    cut: usize,
}

impl Cluster {
    fn start(cut: usize) -> Cluster {
        // Fixed before the nodes start, and not retried: outside the ephemeral range.
        let real: Vec<u16> = (0..6).map(|_| fixed_port()).collect();
        let bus: Vec<Proxy> = real.iter().map(|&p| Proxy::to_port(p)).collect();
        let args = |i: usize| {
            let mut args: Vec<String> = vec![
                "--cluster-port".into(),
                real[i].to_string(),
                "--cluster-announce-bus-port".into(),
                bus[i].port().to_string(),
            ];
            if i == cut {
                args.extend([
                    "--bind".into(),
                    SOURCE.to_string(),
                    "127.0.0.1".into(),
                    "--bind-source-addr".into(),
                    SOURCE.to_string(),
                ]);
            }
            args
        };
        let cluster = RedisCluster::start_with_node_args(3, 1, &args);
        Cluster { cluster, bus, cut }
    }

    fn port(&self, i: usize) -> u16 {
        self.cluster.nodes[i].port()
    }

    /// Cuts node `cut` off: nothing reaches it on the bus, and (`both`) nothing it sends.
    fn partition(&self, both: bool) {
        self.bus[self.cut].blackhole(true);
        if both {
            for (i, p) in self.bus.iter().enumerate() {
                if i != self.cut {
                    p.cut_from(Some(SOURCE));
                }
            }
        }
    }

    fn heal(&self) {
        for p in &self.bus {
            p.heal();
        }
    }
}

/// The master of `{alpha}`'s slot cut off from the other nodes, both ways (`both`) or only
/// on the links they open to it, while six holders with replica acknowledgment contend for
/// names in its slot. Both ways, the others fail it over (its replica promoted) while the old
/// master still answers clients; one way, it stays their master and keeps granting. What must
/// hold: no overlap and tokens increasing per name (the history checker), no error but
/// refusals and unavailability, and locks granted after the partition heals (the old master
/// back as a replica when it was failed over).
fn master_cut_off(both: bool) {
    // The names' hash tag puts them in one slot, whatever the key prefix.
    let slot = LockKeys::new(b"", b"{alpha}").slot;
    let cut = (0..3)
        .find(|&i| u32::from(slot) < (i + 1) * 16384 / 3)
        .unwrap() as usize;
    let c = Cluster::start(cut);
    let old = c.port(cut);
    assert_eq!(
        c.cluster.master_of_slot(slot).port(),
        old,
        "node {cut} serves slot {slot}"
    );
    let other = c.port((cut + 1) % 3);
    let m = acknowledged_cluster_manager(c.cluster.url());
    let history = History::new();
    let until = Instant::now() + Duration::from_secs(14);
    let rt = runtime();
    let spec = Contention {
        holders: 6,
        // Names in one slot: every holder contends on the master cut off.
        names: ["{alpha}", "{alpha}:b"].map(String::from).to_vec(),
        ttl: MS(2000),
        wait: MS(5000),
        max_hold: MS(5),
        until,
    };
    let job = rt.spawn(contend(m, spec, history.clone()));
    sleep(MS(1500));
    c.partition(both);
    let cut_at = Instant::now();
    let serves_elsewhere = || {
        c.cluster.topology_seen_by(other).iter().any(|n| {
            n.master && n.port != old && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b)
        })
    };
    if both {
        // The others fail the master over: another node serves the slot in their view.
        wait_until(
            MS(20_000),
            "the others failing the master over",
            serves_elsewhere,
        );
        sleep(MS(2000));
    } else {
        // Four node timeouts: time enough for a failover that must not come.
        sleep(MS(4000));
        assert!(
            !serves_elsewhere(),
            "a master heard on its own links was failed over"
        );
    }
    let cut_for = cut_at.elapsed();
    c.heal();
    let healed = Instant::now();
    c.cluster.wait_ready(Duration::from_secs(30));
    let master = c.cluster.master_of_slot(slot).port();
    if both {
        assert_ne!(master, old, "the slot stayed with the master cut off");
        assert_eq!(c.cluster.replicas_of(master), vec![old]);
    } else {
        assert_eq!(master, old, "the master cut one way lost its slot");
    }
    let recovered = Instant::now();
    let report = finish(&rt, job, until, HANG_LIMIT);
    let verdict = history.check();
    let meanwhile = report.acquired_within(cut_at, healed);
    let how = match both {
        true => "both ways, failed over",
        false => "one way, not failed over",
    };
    println!("master cut off ({how}) for {cut_for:?}, {meanwhile} acquired meanwhile: {report}\n{verdict}");
    verdict.assert_ok();
    let unexpected = report.unexpected_errors(&[ErrorKind::NotAcquired, ErrorKind::Unavailable]);
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    assert!(
        both || meanwhile > 0,
        "nothing granted while cut one way: {report}"
    );
    assert!(
        report.acquired_after(recovered) > 0,
        "no lock granted after the partition healed: {report}"
    );
}

#[test]
fn a_master_cut_off_from_the_cluster_both_ways_is_failed_over_without_an_overlap() {
    master_cut_off(true);
}

#[test]
fn a_master_cut_off_one_way_on_the_cluster_bus_stays_master_and_keeps_granting() {
    master_cut_off(false);
}
