//! Network faults between the workers and the servers (issue 36, item 4): worker processes in
//! Rust, Python, Node, C, Java and Go (two of each) run in a network namespace this test makes
//! ([`fencelock_chaos::netns`]) and reach five redis-servers on the host only through its veth
//! pair; nftables rules in the namespace partition them from some servers, both ways or one
//! way, or drop packets at random. Each scenario states what must hold, and the history
//! checker's verdict over every `HOLD` line is part of it.
//!
//! Needs root, `ip` and `nft` (ci/install-redis.sh installs nftables); like the other
//! cross-language tests it skips when a language's worker cannot run, unless
//! `FENCELOCK_MIXED_REQUIRED` is set (CI sets it).

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock_chaos::history::now_us;
use fencelock_chaos::judge::{
    assert_every_language_held, assert_run_ok, languages_that_failed, started_within, summary,
};
use fencelock_chaos::mixed::{
    collect, contended_names, start_every_language, start_every_language_with, Language, Outcome,
    Spec, Toolchains,
};
use fencelock_chaos::netns::{Netns, Way};
use fencelock_testkit::RedisServer;

const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
const PER_LANGUAGE: usize = 2;
const HANG_LIMIT: Duration = Duration::from_secs(15);
/// How long the workers contend before a fault (they all begin at once: `mixed::open_gate`).
const WARM_UP: Duration = Duration::from_millis(2000);
/// Slack between a fault's change and the holds attributed to it.
const MARGIN_US: u64 = 300_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A namespace, five servers the workers reach through it, and every language's launcher
/// inside it; `None` (the test skips) as [`Toolchains::required_or_skip`] says.
fn setup() -> Option<(Netns, Vec<RedisServer>, Toolchains)> {
    let t = Toolchains::required_or_skip(Path::new(WORKER))?;
    let ns = Netns::create();
    let srv: Vec<RedisServer> = (0..5)
        .map(|_| RedisServer::start_with_args(&ns.server_args()))
        .collect();
    let inside = Toolchains {
        launchers: t.launchers.iter().map(|l| ns.launcher(l)).collect(),
        missing: Vec::new(),
    };
    Some((ns, srv, inside))
}

fn spec(ns: &Netns, srv: &[RedisServer], run: Duration, wait: Duration) -> Spec {
    let ports: Vec<u16> = srv.iter().map(RedisServer::port).collect();
    Spec {
        servers: ns.urls(&ports),
        names: contended_names(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: 1000,
        wait_ms: wait.as_millis() as u64,
        server_timeout_ms: 100,
        duration_ms: Some(run.as_millis() as u64),
    }
}

/// When a cut was made and removed, in the checker's microseconds.
struct Window {
    from: u64,
    to: u64,
    healed: u64,
}

/// Every language's workers run for `cut` plus `WARM_UP` before and `after` after it, while
/// `ports` are cut off `way` for `cut`; what they reported, and when the cut was.
fn run_with_cut(
    (ns, srv, t): (&Netns, &[RedisServer], &Toolchains),
    (wait, cut, after): (Duration, Duration, Duration),
    (ports, way): (&[u16], Way),
) -> (Outcome, Window) {
    run_leases_with_cut((ns, srv, t), (wait, cut, after), (ports, way), &[])
}

/// [`run_with_cut`] with `extra` arguments for every worker (`--lease election`: terms of an
/// election instead of locks).
fn run_leases_with_cut(
    (ns, srv, t): (&Netns, &[RedisServer], &Toolchains),
    (wait, cut, after): (Duration, Duration, Duration),
    (ports, way): (&[u16], Way),
    extra: &[&str],
) -> (Outcome, Window) {
    let run = WARM_UP + cut + after;
    let spec = spec(ns, srv, run, wait);
    let workers = start_every_language_with(t, &spec, PER_LANGUAGE, extra);
    let started = Instant::now();
    sleep(WARM_UP);
    ns.cut(ports, way);
    let from = now_us();
    sleep(cut);
    let to = now_us();
    ns.heal();
    let healed = now_us();
    let out = collect(workers, started + run + HANG_LIMIT);
    (out, Window { from, to, healed })
}

/// Two of five servers partitioned from every worker (both ways) for 3 s: the other three are
/// a quorum, so every language keeps holding the lock during the partition, exclusion holds,
/// and failed acquisitions fail cleanly within their wait limit.
#[test]
fn a_partition_from_a_minority_keeps_exclusion_and_every_language_holding() {
    let Some((ns, srv, t)) = setup() else { return };
    let (wait, cut) = (ms(2000), ms(3000));
    let minority = [srv[0].port(), srv[1].port()];
    let (out, w) = run_with_cut(
        (&ns, &srv, &t),
        (wait, cut, ms(2500)),
        (&minority, Way::Both),
    );
    println!("minority partitioned for {cut:?}: {}", summary(&out));
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let during = started_within(&out, w.from + MARGIN_US, w.to);
    assert_every_language_held(&during, "while a minority was partitioned", &out);
    let after = started_within(&out, w.healed + MARGIN_US, u64::MAX);
    assert_every_language_held(&after, "after the partition healed", &out);
}

/// Leader election across a partition (issue 54 item 5): candidates in every language
/// campaign while two of five servers are cut off both ways; the other three are a quorum, so
/// terms keep being granted during and after the cut, never two leaders at once.
#[test]
fn candidates_in_every_language_keep_one_leader_while_a_minority_is_partitioned() {
    let Some((ns, srv, t)) = setup() else { return };
    let (wait, cut) = (ms(2000), ms(3000));
    let minority = [srv[0].port(), srv[1].port()];
    let (out, w) = run_leases_with_cut(
        (&ns, &srv, &t),
        (wait, cut, ms(2500)),
        (&minority, Way::Both),
        &["--lease", "election"],
    );
    println!(
        "election, minority partitioned for {cut:?}: {}",
        summary(&out)
    );
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let during = started_within(&out, w.from + MARGIN_US, w.to);
    assert_every_language_held(&during, "while a minority was partitioned", &out);
    let after = started_within(&out, w.healed + MARGIN_US, u64::MAX);
    assert_every_language_held(&after, "after the partition healed", &out);
}

/// Three of five servers run every request but their replies never reach the workers (a
/// one-way partition) for longer than the TTL: the writes happen, yet no worker learns of a
/// quorum, so no lock is granted; every language fails cleanly; the keys written blind
/// expire, and once replies pass again every language holds the lock, with no overlap.
#[test]
fn replies_lost_from_a_majority_grant_nothing_and_the_lock_recovers() {
    let Some((ns, srv, t)) = setup() else { return };
    let (wait, cut) = (ms(500), ms(1800));
    let majority = [srv[0].port(), srv[2].port(), srv[4].port()];
    let (out, w) = run_with_cut(
        (&ns, &srv, &t),
        (wait, cut, ms(4000)),
        (&majority, Way::RepliesLost),
    );
    println!(
        "replies lost from a majority for {cut:?}: {}",
        summary(&out)
    );
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let during = started_within(&out, w.from + MARGIN_US, w.to);
    assert!(
        during.is_empty(),
        "locks granted while a majority's replies were lost: {during:#?}"
    );
    assert_eq!(
        languages_that_failed(&out),
        Language::ALL.to_vec(),
        "every language saw its acquisitions fail: {}",
        summary(&out)
    );
    let after = started_within(&out, w.healed + MARGIN_US, u64::MAX);
    assert_every_language_held(&after, "after replies passed again", &out);
}

/// 10 % of the packets each way dropped at random for the whole run (TCP retransmits them,
/// late): calls time out, acquisitions fail and are retried, and the lock keeps moving between
/// every language with no overlap.
#[test]
fn packets_dropped_at_random_keep_exclusion_and_progress() {
    let Some((ns, srv, t)) = setup() else { return };
    let wait = ms(3000);
    let run = WARM_UP + ms(5000);
    ns.drop_random(10);
    let workers = start_every_language(&t, &spec(&ns, &srv, run, wait), PER_LANGUAGE);
    let started = Instant::now();
    let out = collect(workers, started + run + HANG_LIMIT);
    println!("10 % of packets dropped: {}", summary(&out));
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let all: Vec<_> = out.holds.iter().collect();
    assert_every_language_held(&all, "with packets dropped", &out);
}
