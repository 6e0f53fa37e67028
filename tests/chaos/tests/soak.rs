//! The soak run (issue 36, item 5; `ci/soak.sh --minutes N`): contention under rolling faults
//! on a single server, on a Redlock of five and on a Cluster of three masters, each for
//! [`soak::length`] (CI: 40 s each), ending with the history checker's verdict and a `SOAK`
//! report line (holds, hand-offs, faults by kind, overlaps, stale writes rejected).
//!
//! On the single server and the Redlock, workers in Rust, Python, Node, C and Java (two of
//! each) run in a network namespace of the test's own ([`fencelock_chaos::netns`]); the faults roll
//! every 2.5 s: a server frozen (SIGSTOP) for 700 ms, partitioned for 1 s, its replies lost for
//! 1 s, 5 % of packets dropped for 1.5 s, and on the Redlock a server killed and restarted
//! empty (down longer than the TTL, as the persistence rule of docs/SAFETY.md asks). Each run
//! ends with a frozen holder of one language whose late write the fenced store rejects
//! ([`a_paused_holder_is_fenced_off`]). On the Cluster, Rust holders with replica
//! acknowledgment contend while masters fail over (killed, a replica promoted, the old master
//! back as its replica) and are frozen for 500 ms. Needs what `partitions.rs` needs.

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::ffi_support::keys::LockKeys;
use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::contend::{contend, finish, runtime, Contention};
use fencelock_chaos::history::History;
use fencelock_chaos::judge::{assert_run_ok, summary};
use fencelock_chaos::mixed::{
    collect, contended_names, start_every_language, Language, Spec, Toolchains,
};
use fencelock_chaos::netns::{Netns, Way};
use fencelock_chaos::paused::a_paused_holder_is_fenced_off;
use fencelock_chaos::soak::{self, Report};
use fencelock_testkit::cluster::{Migrate, RedisCluster};
use fencelock_testkit::RedisServer;

const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
const PER_LANGUAGE: usize = 2;
const CYCLE: Duration = Duration::from_millis(2500);
const HANG_LIMIT: Duration = Duration::from_secs(20);
/// How long the workers contend before a fault (they all begin at once: `mixed::open_gate`).
const WARM_UP: Duration = Duration::from_millis(2000);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The faults of the single server and the Redlock, in turn.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Frozen,
    Partitioned,
    RepliesLost,
    PacketsDropped,
    RestartedEmpty,
}

impl Fault {
    fn kind(self) -> &'static str {
        match self {
            Fault::Frozen => "server frozen 700 ms",
            Fault::Partitioned => "server partitioned 1 s",
            Fault::RepliesLost => "replies lost 1 s",
            Fault::PacketsDropped => "5 % of packets dropped 1.5 s",
            Fault::RestartedEmpty => "server killed, restarted empty",
        }
    }

    /// Injects the fault on `srv[victim]` (the namespace's rules for the network ones) and
    /// takes it back.
    fn inject(self, ns: &Netns, srv: &mut [RedisServer], victim: usize, ttl: Duration) {
        let port = srv[victim].port();
        match self {
            Fault::Frozen => {
                srv[victim].stop();
                sleep(ms(700));
                srv[victim].cont();
            }
            Fault::Partitioned | Fault::RepliesLost => {
                let way = if matches!(self, Fault::Partitioned) {
                    Way::Both
                } else {
                    Way::RepliesLost
                };
                ns.cut(&[port], way);
                sleep(ms(1000));
                ns.heal();
            }
            Fault::PacketsDropped => {
                ns.drop_random(5);
                sleep(ms(1500));
                ns.heal();
            }
            Fault::RestartedEmpty => {
                srv[victim].kill();
                sleep(ttl + ms(300));
                srv[victim].restart();
            }
        }
    }
}

/// Workers of every language in a namespace contend on `servers` servers for
/// [`soak::length`] while `faults` roll; then a frozen `frozen` holder is fenced off.
fn soak_with_workers(topology: &str, servers: usize, faults: &[Fault], frozen: Language) {
    let Some(t) = Toolchains::required_or_skip(Path::new(WORKER)) else {
        return;
    };
    let ns = Netns::create();
    let mut srv: Vec<RedisServer> = (0..servers)
        .map(|_| RedisServer::start_with_args(&ns.server_args()))
        .collect();
    let inside = Toolchains {
        launchers: t.launchers.iter().map(|l| ns.launcher(l)).collect(),
        missing: Vec::new(),
    };
    let ttl = ms(1000);
    let (wait, length) = (ms(3000), soak::length());
    let ports: Vec<u16> = srv.iter().map(RedisServer::port).collect();
    let spec = Spec {
        servers: ns.urls(&ports),
        names: contended_names(),
        rounds: u64::MAX / 2,
        hold_ms: 1,
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: wait.as_millis() as u64,
        server_timeout_ms: 100,
        duration_ms: Some((WARM_UP + length).as_millis() as u64),
    };
    let mut report = Report {
        topology: topology.into(),
        ..Report::default()
    };
    let workers = start_every_language(&inside, &spec, PER_LANGUAGE);
    let started = Instant::now();
    sleep(WARM_UP);
    let until = Instant::now() + length;
    let mut n = 0;
    while Instant::now() + CYCLE < until {
        let cycle = Instant::now();
        let fault = faults[n % faults.len()];
        fault.inject(&ns, &mut srv, n % servers, ttl);
        report.fault(fault.kind());
        n += 1;
        sleep(CYCLE.saturating_sub(cycle.elapsed()));
    }
    let out = collect(workers, started + WARM_UP + length + HANG_LIMIT);
    report.ran = started.elapsed().saturating_sub(WARM_UP);
    let verdict = out.verdict();
    report.judged(&verdict);
    report.handoffs = out.handoffs().0;
    report.failed_acquisitions = out.failures.len();
    println!("{}", summary(&out));
    let other = if frozen == Language::Rust {
        Language::Python
    } else {
        Language::Rust
    };
    let paused = a_paused_holder_is_fenced_off(
        t.launcher(frozen).expect("found"),
        t.launcher(other).expect("found"),
    );
    report.stale_writes_rejected += 1;
    report.fault("holder frozen past its TTL");
    println!(
        "{report}\n  then a frozen {frozen} holder: its late write rejected by the fenced store, \
         the checker blaming it alone ({} violation, {} holds)",
        paused.verdict.violations.len(),
        paused.verdict.holds
    );
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    assert!(report.handoffs > 0, "no hand-off: {report}");
}

#[test]
fn soak_a_single_server() {
    let faults = [
        Fault::Frozen,
        Fault::Partitioned,
        Fault::RepliesLost,
        Fault::PacketsDropped,
    ];
    soak_with_workers("single server", 1, &faults, Language::Python);
}

#[test]
fn soak_a_redlock_of_five() {
    let faults = [
        Fault::RestartedEmpty,
        Fault::Frozen,
        Fault::Partitioned,
        Fault::RepliesLost,
        Fault::PacketsDropped,
    ];
    soak_with_workers("Redlock of five", 5, &faults, Language::Node);
}

/// Rust holders with replica acknowledgment on a cluster of three masters (one replica each):
/// every cycle a contended name's slot moves to another master (issue 51; the keys one at a
/// time with REPLACE, or in batches without it, in turn), then the master of another's fails
/// over (killed, its replica promoted, the old master back as the new one's replica) or is
/// frozen for 500 ms, in turn.
#[test]
fn soak_a_cluster_of_three_masters() {
    let mut c = RedisCluster::start(3, 1);
    let m = LockManager::builder([c.url()])
        .server_timeout(ms(1000))
        .replica_ack(1, ms(500))
        .retry_delay(ms(50))
        .build()
        .unwrap();
    let history = History::new();
    let length = soak::length();
    let started = Instant::now();
    let until = started + length;
    let rt = runtime();
    let names = contended_names();
    let spec = Contention {
        holders: 8,
        names: names.clone(),
        ttl: ms(2000),
        wait: ms(5000),
        max_hold: ms(2),
        until,
    };
    let job = rt.spawn(contend(m, spec, history.clone()));
    let mut report = Report {
        topology: "cluster of three masters".into(),
        ..Report::default()
    };
    let mut n = 0;
    // A failover takes a few seconds: one every other cycle of 5 s.
    while Instant::now() + ms(5000) < until {
        let cycle = Instant::now();
        let moved = LockKeys::new(b"", names[(n + 1) % names.len()].as_bytes()).slot;
        let how = [Migrate::OneByOne, Migrate::Batched][n % 2];
        let to = c.another_master(c.master_of_slot(moved).port());
        c.migrate_slot_by(moved, to, how, || {});
        report.fault("slot moved to another master");
        let slot = LockKeys::new(b"", names[n % names.len()].as_bytes()).slot;
        if n % 2 == 0 {
            let old = c.master_of_slot(slot).port();
            c.kill_master_of_slot(slot);
            c.node_mut(old).restart();
            c.wait_ready(Duration::from_secs(30));
            report.fault("master failed over");
        } else {
            let port = c.master_of_slot(slot).port();
            c.node_mut(port).stop();
            sleep(ms(500));
            c.node_mut(port).cont();
            report.fault("master frozen 500 ms");
        }
        n += 1;
        sleep(ms(5000).saturating_sub(cycle.elapsed()));
    }
    let result = finish(&rt, job, until, HANG_LIMIT);
    report.ran = started.elapsed();
    let verdict = history.check();
    report.judged(&verdict);
    report.handoffs = soak::handoffs(&history.holds()).len();
    report.failed_acquisitions = result.attempts.len() - result.acquired();
    println!("{report}\n{verdict}");
    verdict.assert_ok();
    let unexpected = result.unexpected_errors(&[ErrorKind::NotAcquired, ErrorKind::Unavailable]);
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    assert!(report.handoffs > 0, "no hand-off: {report}");
}
