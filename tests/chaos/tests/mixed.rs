//! Cross-language exclusion: worker processes in Rust, Python, Node, C, Java and Go (two of each)
//! contend for the same names on five real redis-server processes, with and without a server
//! killed and restarted in the middle. Every hold is reported as a `HOLD` line and the history
//! checker's verdict over all of them is the test's verdict: no two holds on a name overlap
//! within their reported validity, and fencing tokens strictly increase in hold order.
//!
//! The workers need the Python wheel in a virtualenv, the Node addon and an installed
//! libfencelock (see `fencelock_chaos::mixed`); `ci/stages/60-mixed.sh` builds them. When one
//! is missing the tests skip with a message, unless `FENCELOCK_MIXED_REQUIRED` is set (CI sets
//! it), in which case they fail.

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::ffi_support::keys::LockKeys;
use fencelock_chaos::history::now_us;
use fencelock_chaos::mixed::{
    collect, contended_names, start, start_every_language, start_every_language_with, Language,
    Outcome, Spec, Toolchains,
};
use fencelock_chaos::{scaled, soak, urls};
use fencelock_testkit::cluster::{Migrate, RedisCluster};
use fencelock_testkit::servers;

const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
/// Workers per language.
const PER_LANGUAGE: usize = 2;
/// How long the workers may run past their planned end before they count as hung.
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// Every language's toolchain, or `None` (the test skips): see
/// [`Toolchains::required_or_skip`].
fn toolchains() -> Option<Toolchains> {
    Toolchains::required_or_skip(Path::new(WORKER))
}

/// The checks every mixed run must pass: clean workers, the checker's verdict, every
/// language and every worker held the lock, acquisitions failed only cleanly.
fn assert_mixed_run_ok(out: &Outcome) {
    assert!(out.problems.is_empty(), "workers: {:#?}", out.problems);
    let verdict = out.verdict();
    verdict.assert_ok();
    let by_language = out.holds_by_language();
    for l in Language::ALL {
        assert!(
            by_language.get(&l).copied().unwrap_or(0) > 0,
            "{l} never held the lock: {by_language:?}"
        );
    }
    let held = out.holders_that_held();
    for h in &out.holders {
        assert!(held.contains(h), "worker {h} never held the lock: {held:?}");
    }
    assert_eq!(out.holders.len(), Language::ALL.len() * PER_LANGUAGE);
    let unclean = out.unclean_failures();
    assert!(unclean.is_empty(), "unexpected failures: {unclean:?}");
    let (handoffs, cross) = out.handoffs();
    assert!(
        cross > 0,
        "no handoff between languages in {handoffs} handoffs"
    );
}

fn summary(out: &Outcome) -> String {
    let (handoffs, cross) = out.handoffs();
    format!(
        "holds by language {:?}; {handoffs} handoffs ({cross} between languages); {} failed \
         acquisitions, {} failed releases\n{}",
        out.holds_by_language(),
        out.failures.len(),
        out.release_failures.len(),
        out.verdict()
    )
}

/// Two workers per language, thousands of handoffs on two names and five servers: no overlap,
/// fencing tokens strictly increasing, every language (and every worker) held the lock.
#[test]
fn rust_python_node_and_c_workers_exclude_each_other_on_five_servers() {
    let Some(t) = toolchains() else { return };
    let srv = servers(5);
    let spec = Spec {
        servers: urls(&srv),
        names: contended_names(),
        rounds: if soak() { 3000 } else { 300 },
        hold_ms: 1,
        ttl_ms: 1000,
        wait_ms: 10_000,
        server_timeout_ms: 100,
        duration_ms: None,
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    let out = collect(workers, started + scaled(Duration::from_secs(60), 10));
    println!(
        "{} workers, {:?}: {}",
        out.holders.len(),
        started.elapsed(),
        summary(&out)
    );
    assert_mixed_run_ok(&out);
    let (handoffs, _) = out.handoffs();
    assert!(handoffs >= 1000, "too few handoffs: {}", summary(&out));
}

/// A semaphore and a read-write lock shared by two workers per language on three servers
/// (issue 34 item 6): never more than the limit at one instant, never a writer with anyone
/// else, fencing order, every language held a lease.
#[test]
fn rust_python_node_and_c_workers_share_a_semaphore_and_a_rwlock() {
    let Some(t) = toolchains() else { return };
    let srv = servers(3);
    for (name, lease) in [("pool", "semaphore:3:1"), ("doc", "rw:3")] {
        let spec = Spec {
            servers: urls(&srv),
            names: vec![name.into()],
            rounds: if soak() { 1000 } else { 60 },
            hold_ms: 2,
            ttl_ms: 1000,
            wait_ms: 10_000,
            server_timeout_ms: 100,
            duration_ms: None,
        };
        let workers = start_every_language_with(&t, &spec, PER_LANGUAGE, &["--lease", lease]);
        let started = Instant::now();
        let out = collect(workers, started + scaled(Duration::from_secs(60), 10));
        println!("{lease}, {:?}: {}", started.elapsed(), summary(&out));
        assert_mixed_run_ok(&out);
        let kinds: std::collections::BTreeSet<_> = out.holds.iter().map(|h| h.kind).collect();
        let want = match lease {
            "rw:3" => 2, // reads and writes
            _ => 1,
        };
        assert_eq!(kinds.len(), want, "{kinds:?}");
    }
}

/// Leader election with candidates in every language (issue 54 item 5): two workers per
/// language campaign for the same election on three servers, each term recorded as a hold;
/// terms never overlap within their validity, term numbers strictly increase, every language
/// led.
#[test]
fn every_languages_candidates_take_terms_in_turn() {
    let Some(t) = toolchains() else { return };
    let srv = servers(3);
    let spec = Spec {
        servers: urls(&srv),
        names: vec!["leader".into()],
        rounds: if soak() { 1000 } else { 40 },
        hold_ms: 2,
        ttl_ms: 1000,
        wait_ms: 10_000,
        server_timeout_ms: 100,
        duration_ms: None,
    };
    let workers = start_every_language_with(&t, &spec, PER_LANGUAGE, &["--lease", "election"]);
    let started = Instant::now();
    let out = collect(workers, started + scaled(Duration::from_secs(60), 10));
    println!("election, {:?}: {}", started.elapsed(), summary(&out));
    assert_mixed_run_ok(&out);
}

/// On a Redis Cluster (3 masters, 3 replicas; one cluster URL, the single-server lock): two
/// workers per language contend for the same names, through sharded wake-ups and per-slot
/// fencing counters. No overlap, tokens strictly increasing per name, every language held
/// the lock and handed it to another.
#[test]
fn rust_python_node_and_c_workers_exclude_each_other_on_a_cluster() {
    let Some(t) = toolchains() else { return };
    let cluster = fencelock_testkit::cluster::RedisCluster::start(3, 1);
    let spec = Spec {
        servers: vec![cluster.url()],
        names: contended_names(),
        rounds: if soak() { 1000 } else { 100 },
        hold_ms: 1,
        ttl_ms: 1000,
        wait_ms: 10_000,
        server_timeout_ms: 200,
        duration_ms: None,
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    let out = collect(workers, started + scaled(Duration::from_secs(60), 10));
    println!(
        "cluster, {} workers, {:?}: {}",
        out.holders.len(),
        started.elapsed(),
        summary(&out)
    );
    assert_mixed_run_ok(&out);
}

/// Issue 51: workers in every language on a cluster while the contended names' slots move to
/// other masters and back (the keys one at a time with REPLACE, then in batches without it).
/// Stage 60 runs it on Redis 7.0 and on Redis 6.2, whose cluster carries every wake-up to
/// every node while its count of listeners sees one.
#[test]
fn every_languages_workers_keep_exclusion_while_a_clusters_slots_move() {
    let Some(t) = toolchains() else { return };
    let cluster = RedisCluster::start(3, 1);
    let run = scaled(Duration::from_millis(8000), 4);
    let spec = Spec {
        servers: vec![cluster.url()],
        names: contended_names(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: 2000,
        wait_ms: 10_000,
        server_timeout_ms: 1000,
        duration_ms: Some(run.as_millis() as u64),
    };
    println!("a cluster of {}", cluster.nodes[0].version());
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    sleep(Duration::from_millis(1500));
    let mut moves = Vec::new();
    let mut round = 0;
    while started.elapsed() + Duration::from_millis(1500) < run {
        let how = [Migrate::OneByOne, Migrate::Batched][round % 2];
        for name in &spec.names {
            let slot = LockKeys::new(b"", name.as_bytes()).slot;
            let from = cluster.master_of_slot(slot).port();
            cluster.migrate_slot_by(slot, cluster.another_master(from), how, || {});
            moves.push(now_us());
        }
        round += 1;
        sleep(Duration::from_millis(500));
    }
    let out = collect(workers, started + run + HANG_LIMIT);
    println!(
        "cluster, {} workers, {:?}, {} slot moves: {}",
        out.holders.len(),
        started.elapsed(),
        moves.len(),
        summary(&out)
    );
    assert_mixed_run_ok(&out);
    assert!(!moves.is_empty(), "no slot moved");
    let last = *moves.last().expect("a move");
    assert!(
        out.holds.iter().any(|h| h.start_us > last),
        "no lock granted after the last move: {}",
        summary(&out)
    );
}

/// The same with a fault in the middle: one of the five servers is killed, kept down longer
/// than the TTL (the rule for servers without persistence, docs/SAFETY.md), and restarted
/// empty. Locks keep being granted while it is down, and never to two holders at once.
#[test]
fn rust_python_node_and_c_workers_keep_exclusion_through_a_server_killed_and_restarted() {
    let Some(t) = toolchains() else { return };
    let mut srv = servers(5);
    let ttl = Duration::from_millis(1000);
    let run = scaled(Duration::from_millis(5000), 6);
    let spec = Spec {
        servers: urls(&srv),
        names: contended_names(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: 5000,
        server_timeout_ms: 100,
        duration_ms: Some(run.as_millis() as u64),
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    let mut windows = Vec::new();
    let mut victim = 1;
    sleep(Duration::from_millis(1500));
    while started.elapsed() + ttl + Duration::from_millis(1300) < run {
        srv[victim].kill();
        let down_from = now_us();
        sleep(ttl + Duration::from_millis(300)); // down longer than the TTL
        let down_to = now_us();
        srv[victim].restart();
        windows.push((victim, down_from, down_to));
        victim = (victim + 2) % 5;
        sleep(Duration::from_millis(500));
    }
    let out = collect(workers, started + run + HANG_LIMIT);
    println!(
        "{} workers, {:?}, server down {windows:?}: {}",
        out.holders.len(),
        started.elapsed(),
        summary(&out)
    );
    assert_mixed_run_ok(&out);
    assert!(!windows.is_empty(), "the fault never happened");
    for (victim, from, to) in &windows {
        let granted = out
            .holds
            .iter()
            .filter(|h| h.start_us >= *from && h.end_us <= *to)
            .count();
        assert!(
            granted > 0,
            "no lock granted while server {victim} was down: {}",
            summary(&out)
        );
    }
    let last_restart = windows.last().expect("a window").2;
    assert!(
        out.holds.iter().any(|h| h.start_us > last_restart),
        "no lock granted after the restart: {}",
        summary(&out)
    );
    assert!(
        out.verdict().holds >= 100,
        "too few handoffs: {}",
        summary(&out)
    );
}

/// The run can fail: the C workers are pointed at servers of their own, so their lock does
/// not exclude the others' (a stand-in for a binding that does not share the lock), while the
/// Rust, Python and Node workers keep the name busy. The checker sees overlaps between C and
/// the rest, and nothing else.
#[test]
fn a_language_that_does_not_share_the_lock_is_caught_overlapping() {
    let Some(t) = toolchains() else { return };
    let (shared, apart) = (servers(3), servers(3));
    let spec = Spec {
        servers: urls(&shared),
        names: vec!["solo".into()],
        rounds: 1_000_000,
        hold_ms: 20,
        ttl_ms: 1000,
        wait_ms: 10_000,
        server_timeout_ms: 100,
        duration_ms: Some(3000),
    };
    let mut workers = Vec::new();
    for l in [Language::Rust, Language::Python, Language::Node] {
        workers.extend(start(t.launcher(l).expect("found"), &spec, 1, 1));
    }
    // The outsider starts once the others hold the name back to back, and stops well before.
    sleep(Duration::from_millis(1000));
    let outsider = Spec {
        servers: urls(&apart),
        rounds: 10,
        duration_ms: None,
        ..spec.clone()
    };
    workers.extend(start(
        t.launcher(Language::C).expect("found"),
        &outsider,
        1,
        1,
    ));
    let out = collect(
        workers,
        Instant::now() + Duration::from_secs(3) + HANG_LIMIT,
    );
    assert!(out.problems.is_empty(), "workers: {:#?}", out.problems);
    let verdict = out.verdict();
    println!(
        "outsider: holds by language {:?}; the checker found {} overlaps and {} fencing-order \
         violations",
        out.holds_by_language(),
        verdict.overlaps().len(),
        verdict.token_violations().len()
    );
    assert!(
        !verdict.overlaps().is_empty(),
        "the checker missed the outsider: {verdict}"
    );
    for v in verdict.overlaps() {
        let text = v.to_string();
        assert!(
            text.contains("c-1"),
            "every overlap involves the outsider: {text}"
        );
    }
}
