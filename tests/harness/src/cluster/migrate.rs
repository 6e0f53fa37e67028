//! Moving a slot between masters, as `redis-cli --cluster reshard` does (the resharding tests
//! of the core and the chaos suite).

use std::time::Duration;

use super::{Migrate, NodeInfo, RedisCluster};
use crate::{wait_until, RedisServer, Reply};

impl RedisCluster {
    /// Opens the move of `slot` from the master that serves it to the master on `to`, moving
    /// no key: IMPORTING on the target, then MIGRATING on the source. Returns the source's port.
    pub fn open_migration(&self, slot: u16, to: u16) -> u16 {
        let from = self.claimant_of_slot(slot);
        assert_ne!(
            from, to,
            "fencelock-testkit: slot {slot} is already on {to}"
        );
        let s = slot.to_string();
        for (port, state, other) in [(to, &b"IMPORTING"[..], from), (from, b"MIGRATING", to)] {
            let id = self.id_of(other);
            let r =
                self.node(port)
                    .cmd(&[b"CLUSTER", b"SETSLOT", s.as_bytes(), state, id.as_bytes()]);
            assert!(
                matches!(r, Reply::Status(_)),
                "fencelock-testkit: SETSLOT {}: {r:?}",
                String::from_utf8_lossy(state)
            );
        }
        from
    }

    /// Closes a move [opened](Self::open_migration) from `from` to `to` without finishing it:
    /// the slot STABLE on both, still served by `from`, with whatever keys each holds.
    pub fn cancel_migration(&self, slot: u16, from: u16, to: u16) {
        let s = slot.to_string();
        for port in [from, to] {
            let r = self
                .node(port)
                .cmd(&[b"CLUSTER", b"SETSLOT", s.as_bytes(), b"STABLE"]);
            assert!(
                matches!(r, Reply::Status(_)),
                "fencelock-testkit: SETSLOT STABLE: {r:?}"
            );
        }
    }

    /// Moves `slot` (and its keys) from the master that serves it to the master on `to`, the
    /// way `redis-cli --cluster reshard` does: IMPORTING on the target, MIGRATING on the
    /// source, MIGRATE of every key (one at a time, with REPLACE), then the slot assigned to the
    /// target on every master. Between the steps a client sees ASK redirections; `between`
    /// runs after the keys moved and before the slot is reassigned (to act while the slot is
    /// half moved).
    pub fn migrate_slot(&self, slot: u16, to: u16, between: impl FnOnce()) {
        self.migrate_slot_by(slot, to, Migrate::OneByOne, between)
    }

    /// [`migrate_slot`](Self::migrate_slot), its keys moved `how`.
    pub fn migrate_slot_by(&self, slot: u16, to: u16, how: Migrate, between: impl FnOnce()) {
        let from = self.open_migration(slot, to);
        let source = self.node(from);
        let to_id = self.id_of(to);
        let s = slot.to_string();
        let ok = |r: Reply, what: &str| {
            assert!(
                matches!(r, Reply::Status(_)),
                "fencelock-testkit: {what}: {r:?}"
            );
        };
        let port = to.to_string();
        loop {
            let keys = match source.cmd(&[b"CLUSTER", b"GETKEYSINSLOT", s.as_bytes(), b"100"]) {
                Reply::Array(Some(k)) => k,
                other => panic!("fencelock-testkit: GETKEYSINSLOT replied {other:?}"),
            };
            let keys: Vec<Vec<u8>> = keys
                .into_iter()
                .filter_map(|k| match k {
                    Reply::Bulk(Some(key)) => Some(key),
                    _ => None,
                })
                .collect();
            if keys.is_empty() {
                break;
            }
            let head = [&b"MIGRATE"[..], b"127.0.0.1", port.as_bytes()];
            let calls: Vec<Vec<&[u8]>> = match how {
                Migrate::OneByOne => keys
                    .iter()
                    .map(|k| [&head[..], &[&k[..], b"0", b"5000", b"REPLACE"]].concat())
                    .collect(),
                Migrate::Batched => {
                    let mut call = [&head[..], &[&b""[..], b"0", b"5000", b"KEYS"]].concat();
                    call.extend(keys.iter().map(|k| &k[..]));
                    vec![call]
                }
            };
            for call in calls {
                let r = source.cmd(&call);
                // NOKEY (a status too): the keys expired since GETKEYSINSLOT listed them.
                assert!(
                    matches!(&r, Reply::Status(_)),
                    "fencelock-testkit: MIGRATE replied {r:?}"
                );
            }
        }
        between();
        // The target raises its configEpoch to one above the highest it knows, without asking
        // the others; a target that has not yet heard of the last move's epoch takes the same
        // one, and of two masters on one epoch the one with the smaller id moves up, its
        // replicas still naming it for the slot, which the target then gives back (seen on
        // Redis 6.2: two moves 5 ms apart, both targets at configEpoch 7, the slot served by
        // no node).
        self.wait_epochs_settled();
        for n in self.topology().iter().filter(|n| n.master) {
            let r = self.node(n.port).cmd(&[
                b"CLUSTER",
                b"SETSLOT",
                s.as_bytes(),
                b"NODE",
                to_id.as_bytes(),
            ]);
            ok(r, "SETSLOT NODE");
        }
        // Every node that answers, the replicas too, must name the target before the next
        // move: a replica of the source that still names it when the source's configEpoch
        // rises (the source importing another slot) answers the target's claim with an UPDATE
        // naming the source at that higher epoch, the target gives the slot back, and no node
        // claims it any more (seen on Redis 6.2 with two slots moved back and forth).
        wait_until(
            Duration::from_secs(10),
            "every node sees the slot moved",
            || {
                self.topology().iter().filter(|n| n.master).all(|n| {
                    matches!(
                        self.node(n.port)
                            .cmd(&[b"CLUSTER", b"COUNTKEYSINSLOT", s.as_bytes()]),
                        Reply::Int(_)
                    )
                }) && self.nodes.iter().all(|n| {
                    self.view_within(n.port(), Duration::from_secs(2))
                        .is_none_or(|v| owner_in(&v, slot) == Some(to))
                }) && self.master_of_slot(slot).port() == to
            },
        );
        self.wait_epochs_settled();
    }

    /// Waits until every node that answers knows the same current epoch and no view gives two
    /// masters one configEpoch.
    fn wait_epochs_settled(&self) {
        let limit = Duration::from_secs(2);
        wait_until(
            Duration::from_secs(10),
            "every node knows the newest epoch, no two masters on one",
            || {
                let current: Vec<u64> = self
                    .nodes
                    .iter()
                    .filter_map(
                        |n| match n.cmd_with_timeout(&[b"CLUSTER", b"INFO"], limit) {
                            Ok(Reply::Bulk(Some(info))) => current_epoch(&info),
                            _ => None,
                        },
                    )
                    .collect();
                current.windows(2).all(|w| w[0] == w[1])
                    && self.nodes.iter().all(|n| {
                        self.view_within(n.port(), limit).is_none_or(|v| {
                            let mut epochs: Vec<u64> = v
                                .iter()
                                .filter(|m| m.master)
                                .map(|m| m.config_epoch)
                                .collect();
                            let masters = epochs.len();
                            epochs.sort_unstable();
                            epochs.dedup();
                            epochs.len() == masters
                        })
                    })
            },
        );
    }

    /// The master that itself says it serves `slot` (its own `CLUSTER NODES`), waiting until
    /// exactly one does: the views of the nodes agree only once gossip has carried a move,
    /// and a SETSLOT sent to a node that another node's view still names is refused ("I'm
    /// not the owner of hash slot").
    fn claimant_of_slot(&self, slot: u16) -> u16 {
        let limit = Duration::from_secs(30);
        let start = std::time::Instant::now();
        loop {
            let views: Vec<(u16, Option<u16>)> = self
                .nodes
                .iter()
                .map(RedisServer::port)
                .map(|p| {
                    let view = self.view_within(p, Duration::from_secs(2));
                    (p, view.and_then(|v| owner_in(&v, slot)))
                })
                .collect();
            let claims: Vec<u16> = views
                .iter()
                .filter(|(p, owner)| *owner == Some(*p))
                .map(|(p, _)| *p)
                .collect();
            if let [one] = claims[..] {
                return one;
            }
            assert!(
                start.elapsed() < limit,
                "fencelock-testkit: after {limit:?}, still not: exactly one master claims slot \
                 {slot}; (node, the owner in its view): {views:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `cluster_current_epoch` in a `CLUSTER INFO` reply.
fn current_epoch(info: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(info)
        .lines()
        .find_map(|l| l.strip_prefix("cluster_current_epoch:"))
        .and_then(|e| e.trim().parse().ok())
}

/// The master that serves `slot` in a view.
fn owner_in(view: &[NodeInfo], slot: u16) -> Option<u16> {
    view.iter()
        .find(|n| n.master && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
        .map(|n| n.port)
}
