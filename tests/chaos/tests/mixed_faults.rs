//! Faults inside the cross-language contention runs: worker processes in Rust, Python, Node
//! and C (two of each) contend for the same names on five real redis-server processes while
//! servers are killed, stalled behind the fault-injecting proxy, or slowed to near the TTL.
//! The history checker's verdict over every `HOLD` line is part of every test's verdict; the
//! workers' own `FAIL kind=K took_ms=N` lines show how acquisitions failed and how long that
//! took.
//!
//!
//! The paused-holder tests run the scenario of `faults.rs`'s
//! `a_holder_paused_past_its_ttl_is_fenced_off_when_it_resumes`
//! ([`a_paused_holder_is_fenced_off`]) with a Python, a Node and a C holder as the one that is
//! frozen, and a holder in another language taking over: each worker takes the lock through
//! its own binding and writes to the fenced and the unfenced store itself.
//!
//! Like `tests/mixed.rs`, the tests skip when a language's worker cannot run, unless
//! `FENCELOCK_MIXED_REQUIRED` is set (CI sets it), in which case they fail.

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock_chaos::history::{now_us, Hold};
use fencelock_chaos::judge::{
    assert_every_language_held, assert_run_ok, languages_that_failed, started_within, summary,
};
use fencelock_chaos::mixed::{
    collect, contended_names, start, start_every_language, Language, Spec, Toolchains,
};
use fencelock_chaos::paused::a_paused_holder_is_fenced_off;
use fencelock_chaos::proxy::{Direction, Proxy};
use fencelock_chaos::urls;
use fencelock_chaos::worker::field;
use fencelock_testkit::servers;

const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
/// Workers per language.
const PER_LANGUAGE: usize = 2;
/// How long the workers may run past their planned end before they count as hung.
const HANG_LIMIT: Duration = Duration::from_secs(15);
/// How long the workers contend before a fault: every language's turn comes in it (they all
/// begin at once, when every worker is ready: `mixed::open_gate`).
const WARM_UP: Duration = Duration::from_millis(2000);
/// Slack between a fault's change and the holds attributed to it: an acquisition that
/// completed just before the change may report its start a little after it.
const MARGIN_US: u64 = 300_000;

/// Turns a proxy fault on or off.
type Fault = fn(&Proxy, bool);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Every language's toolchain, or `None` (the test skips): see
/// [`Toolchains::required_or_skip`].
fn toolchains() -> Option<Toolchains> {
    Toolchains::required_or_skip(Path::new(WORKER))
}

/// Three of the five servers are killed during the mixed run and kept down longer than the
/// TTL: no lock is granted while no quorum is up, every language's acquisitions fail cleanly
/// (`FAIL kind=unavailable|not_acquired`) within their wait limit, no worker hangs; once the
/// servers are restarted every language holds the lock again, with no overlap.
#[test]
fn mixed_workers_with_a_majority_killed_fail_cleanly_and_recover() {
    let Some(t) = toolchains() else { return };
    let mut srv = servers(5);
    let ttl = ms(1000);
    let wait = ms(500);
    let outage = ttl + ms(800);
    let run = WARM_UP + outage + ms(3500);
    let spec = Spec {
        servers: urls(&srv),
        names: contended_names(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: wait.as_millis() as u64,
        server_timeout_ms: 100,
        duration_ms: Some(run.as_millis() as u64),
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    sleep(WARM_UP);
    for v in [0, 2, 4] {
        srv[v].kill();
    }
    let down_from = now_us();
    sleep(outage);
    let down_to = now_us();
    for v in [0, 2, 4] {
        srv[v].restart();
    }
    let recovered = now_us();
    let out = collect(workers, started + run + HANG_LIMIT);
    println!(
        "majority killed for {outage:?} (ttl {ttl:?}, wait {wait:?}), {:?} in all: {}",
        started.elapsed(),
        summary(&out)
    );
    // A failed acquisition gives up after its wait limit plus a retry and a server timeout.
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let during = started_within(&out, down_from + MARGIN_US, down_to);
    assert!(
        during.is_empty(),
        "locks granted with three of five servers dead: {during:#?}"
    );
    let failed = languages_that_failed(&out);
    assert_eq!(
        failed,
        Language::ALL.to_vec(),
        "every language saw its acquisitions fail during the outage: {}",
        summary(&out)
    );
    assert!(
        out.failures
            .iter()
            .any(|f| field(f, "kind") == Some("unavailable")),
        "the outage was reported as unavailable: {}",
        summary(&out)
    );
    let before = started_within(&out, 0, down_from);
    assert_every_language_held(&before, "before the outage", &out);
    let after = started_within(&out, recovered, u64::MAX);
    assert_every_language_held(&after, "after the servers were restarted", &out);
}

/// One of the five servers is reached by every worker only through the proxy, and stops
/// answering mid-run: first a blackhole (nothing forwarded), then stalled replies. Exclusion
/// holds, locks keep being granted to every language from the quorum of the other four, the
/// name is never left idle for long (progress), and no failed acquisition takes much longer
/// than its wait limit.
#[test]
fn mixed_workers_keep_exclusion_and_progress_through_a_stalled_server() {
    let Some(t) = toolchains() else { return };
    let srv = servers(5);
    let proxy = Proxy::to_port(srv[2].port());
    let mut server_urls = urls(&srv);
    server_urls[2] = proxy.url();
    let stall_names: Vec<String> = ["alpha", "beta", "gamma", "delta"]
        .map(String::from)
        .to_vec();
    let server_timeout = ms(100);
    let wait = ms(5000);
    let stall = ms(3000);
    let run = WARM_UP + 2 * stall + ms(2500);
    let spec = Spec {
        servers: server_urls,
        // Four names for eight workers: still contended, but with holds in parallel, so that
        // while every handoff pays the stalled server's timeout every language still gets
        // its turns (on two names, one language could go a whole stall without one).
        names: stall_names.clone(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: 1000,
        wait_ms: wait.as_millis() as u64,
        server_timeout_ms: server_timeout.as_millis() as u64,
        duration_ms: Some(run.as_millis() as u64),
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    sleep(WARM_UP);
    let mut windows = Vec::new();
    let faults: [(&str, Fault); 2] = [
        ("blackhole", |p, on| p.blackhole(on)),
        ("replies stalled", |p, on| {
            p.stall(Direction::ServerToClient, on)
        }),
    ];
    for (what, fault) in faults {
        fault(&proxy, true);
        let from = now_us();
        sleep(stall);
        let to = now_us();
        fault(&proxy, false);
        windows.push((what, from, to));
        sleep(ms(300));
    }
    let healed = now_us();
    let out = collect(workers, started + run + HANG_LIMIT);
    println!(
        "server 2 of 5 stalled behind the proxy ({} connections accepted), {:?} in all: {}",
        proxy.accepted(),
        started.elapsed(),
        summary(&out)
    );
    assert!(proxy.accepted() >= 8, "the workers went through the proxy");
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let mut stalled: Vec<&Hold> = Vec::new();
    for (what, from, to) in &windows {
        let during = started_within(&out, from + MARGIN_US, *to);
        println!(
            "{what}: {} holds granted, by language {:?}",
            during.len(),
            Language::ALL.map(|l| during
                .iter()
                .filter(|h| Language::of_holder(&h.holder) == Some(l))
                .count())
        );
        assert!(
            during.len() >= 5,
            "{what}: only {} locks granted in {stall:?} with four of five servers up: {}",
            during.len(),
            summary(&out)
        );
        // Progress: on each name, the gap from one hold's end to the next hold's start (the
        // release, then the next acquire, each paying at most the server timeout on the
        // stalled server) stays far below a second.
        for name in &stall_names {
            let mut list: Vec<&&Hold> = during.iter().filter(|h| &h.name == name).collect();
            list.sort_by_key(|h| h.start_us);
            let widest = list
                .windows(2)
                .map(|p| p[1].start_us.saturating_sub(p[0].end_us))
                .max()
                .unwrap_or(0);
            println!("{what}: {name:?} idle at most {} ms", widest / 1000);
            assert!(
                widest < 1_000_000,
                "{what}: {name:?} was idle {} ms between holds (server timeout {server_timeout:?})",
                widest / 1000
            );
        }
        stalled.extend(during);
    }
    assert_every_language_held(&stalled, "while the server was stalled", &out);
    let after = started_within(&out, healed, u64::MAX);
    assert_every_language_held(&after, "after the server recovered", &out);
}

/// Every server is behind a proxy that delays each chunk by a further random 0 to 40 ms, both
/// ways (`Proxy::set_jitter`): requests and replies of different connections are reordered (a
/// client's acquire reaching a server before another's release sent earlier, one server's
/// vote before another's, an undo racing the next attempt's hand-off), while the TTL's
/// validity still covers a round trip. What must hold: no overlap (the history checker's
/// verdict), every hold within its validity, failed acquisitions failing cleanly within their
/// wait limit, and every language holding the lock throughout.
#[test]
fn mixed_workers_keep_exclusion_when_requests_and_replies_are_reordered() {
    let Some(t) = toolchains() else { return };
    let srv = servers(5);
    let proxies: Vec<Proxy> = srv.iter().map(|s| Proxy::to_port(s.port())).collect();
    for p in &proxies {
        p.set_jitter(ms(40));
    }
    let wait = ms(3000);
    let run = WARM_UP + ms(5000);
    let spec = Spec {
        servers: proxies.iter().map(Proxy::url).collect(),
        names: contended_names(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: 1000,
        wait_ms: wait.as_millis() as u64,
        server_timeout_ms: 500,
        duration_ms: Some(run.as_millis() as u64),
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    let out = collect(workers, started + run + HANG_LIMIT);
    println!(
        "every server behind 0-40 ms of jitter each way, {:?} in all: {}",
        started.elapsed(),
        summary(&out)
    );
    assert!(
        proxies.iter().all(|p| p.accepted() >= 8),
        "the workers went through the proxies"
    );
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(1500));
    let holds = started_within(&out, 0, u64::MAX);
    assert_every_language_held(&holds, "under jitter", &out);
}

/// Every server is behind a proxy whose latency is raised near, then past, the TTL. With a
/// round trip of two thirds of the TTL, locks are still granted, but with the validity that
/// is left (never more than the TTL minus the round trip, with slack); with a round trip past
/// the TTL, every acquisition fails (`FAIL kind=not_acquired`) instead of handing out a lock
/// that is already expired; and the checker finds no hold past its validity (each worker, as
/// a careful holder does, uses a lock only if its validity covers the hold with 50 ms to
/// spare, and releases it unused otherwise: a 1 ms hold once ended 2.7 ms after a lock with
/// 0.6 ms of validity). With the latency removed, every language holds the lock again.
#[test]
fn mixed_workers_under_latency_near_the_ttl_get_refusals_not_expired_locks() {
    let Some(t) = toolchains() else { return };
    let srv = servers(5);
    let proxies: Vec<Proxy> = srv.iter().map(|s| Proxy::to_port(s.port())).collect();
    let ttl = ms(300);
    let wait = ms(1000);
    let phase = ms(2500);
    let run = WARM_UP + 2 * phase + ms(2500);
    let spec = Spec {
        servers: proxies.iter().map(Proxy::url).collect(),
        names: contended_names(),
        rounds: 1_000_000,
        hold_ms: 1,
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: wait.as_millis() as u64,
        // Far above the round trip: slowness shows as validity, not as timeouts.
        server_timeout_ms: 3000,
        duration_ms: Some(run.as_millis() as u64),
    };
    let set_latency = |one_way: Duration| {
        for p in &proxies {
            p.set_latency(one_way);
        }
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    sleep(WARM_UP);
    // Near: a 200 ms round trip for a 300 ms TTL.
    set_latency(ms(100));
    let near_from = now_us();
    sleep(phase);
    // Past: a 400 ms round trip.
    set_latency(ms(200));
    let past_from = now_us();
    sleep(phase);
    set_latency(Duration::ZERO);
    let cleared = now_us();
    let out = collect(workers, started + run + HANG_LIMIT);
    println!(
        "latency near/past a {ttl:?} ttl, {:?} in all: {}",
        started.elapsed(),
        summary(&out)
    );
    // Each attempt of a failed acquisition may take a round trip past the TTL.
    assert_run_ok(&out, PER_LANGUAGE, wait + ms(2500));
    let before = started_within(&out, 0, near_from);
    assert_every_language_held(&before, "before the latency", &out);
    let near = started_within(&out, near_from + 2 * MARGIN_US, past_from);
    println!(
        "near the ttl: {} holds, validities (ms) {:?}",
        near.len(),
        near.iter()
            .map(|h| h.validity_us / 1000)
            .collect::<Vec<_>>()
    );
    assert!(
        !near.is_empty(),
        "no lock granted with a 200 ms round trip for a 300 ms TTL: {}",
        summary(&out)
    );
    for h in &near {
        // TTL 300 ms minus a round trip of at least 200 ms: at most 100 ms (+ slack).
        assert!(
            h.validity_us <= 150_000,
            "validity not reduced by the round trip: {h}"
        );
    }
    let past = started_within(&out, past_from + 2 * MARGIN_US, cleared);
    assert!(
        past.is_empty(),
        "locks handed out with a round trip past the TTL: {past:#?}"
    );
    let refused = out
        .failures
        .iter()
        .filter(|f| field(f, "kind") == Some("not_acquired"))
        .count();
    assert!(
        refused > 0,
        "no acquisition refused as not_acquired: {}",
        summary(&out)
    );
    assert_eq!(
        languages_that_failed(&out),
        Language::ALL.to_vec(),
        "every language saw refusals: {}",
        summary(&out)
    );
    let after = started_within(&out, cleared + MARGIN_US, u64::MAX);
    assert_every_language_held(&after, "after the latency was removed", &out);
}

/// A Python worker holding the lock is killed with SIGKILL mid-hold: nobody releases its lock,
/// and it frees when its TTL runs out, not before and not much after; then workers in every
/// language (Python included) take the name in turn, with no overlap.
#[test]
fn a_python_holder_killed_with_sigkill_frees_its_lock_within_the_ttl_for_every_language() {
    let Some(t) = toolchains() else { return };
    let srv = servers(5);
    let ttl = ms(3000);
    let victim_spec = Spec {
        servers: urls(&srv),
        names: vec!["victim".into()],
        rounds: 1,
        // Well within the TTL, so that a hold that was not cut short would be released.
        hold_ms: 2500,
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: 10_000,
        server_timeout_ms: 100,
        duration_ms: None,
    };
    let mut victim = start(
        t.launcher(Language::Python).expect("found"),
        &victim_spec,
        0,
        1,
    )
    .pop()
    .expect("a worker");
    // The victim holds once its key is on a quorum of the servers (the key is the name).
    let limit = Instant::now() + ms(15_000);
    let seen_us = loop {
        let on = srv.iter().filter(|s| s.pttl(b"victim") > 0).count();
        if on >= 3 {
            break now_us();
        }
        assert!(
            Instant::now() < limit,
            "the python victim never took the lock"
        );
        sleep(ms(5));
    };
    sleep(ms(200));
    victim.worker.kill();
    let kill_us = now_us();
    let left: Vec<i64> = srv.iter().map(|s| s.pttl(b"victim")).collect();
    assert!(
        left.iter().filter(|&&ms| ms > 0).count() >= 3,
        "the victim's lock is still on a quorum after SIGKILL: {left:?}"
    );
    let run = ttl + ms(3000);
    let spec = Spec {
        names: vec!["victim".into()],
        rounds: 1_000_000,
        hold_ms: 1,
        duration_ms: Some(run.as_millis() as u64),
        ..victim_spec
    };
    let workers = start_every_language(&t, &spec, PER_LANGUAGE);
    let started = Instant::now();
    let out = collect(workers, started + run + HANG_LIMIT);
    let first = out
        .holds
        .iter()
        .min_by_key(|h| h.start_us)
        .expect("someone took the freed lock");
    let freed_after_kill_ms = first.start_us.saturating_sub(kill_us) / 1000;
    let freed_after_acquire_ms = first.start_us.saturating_sub(seen_us) / 1000;
    println!(
        "python victim (pid {}) killed; ttl {ttl:?}: next hold by {} {freed_after_kill_ms} ms \
         after the kill, {freed_after_acquire_ms} ms after the victim's key was seen on a \
         quorum; {}",
        victim.worker.pid(),
        first.holder,
        summary(&out)
    );
    assert_run_ok(&out, PER_LANGUAGE, ms(10_000 + 1500));
    // Not released by the kill: nobody got it for most of the TTL after it.
    assert!(
        freed_after_kill_ms >= (ttl.as_millis() as u64) / 2,
        "the lock freed {freed_after_kill_ms} ms after SIGKILL, for a TTL of {ttl:?}"
    );
    // Freed by expiry: the keys were set before they were seen, so they expired within the
    // TTL of `seen_us`; the next holder got it soon after.
    assert!(
        freed_after_acquire_ms <= ttl.as_millis() as u64 + 1500,
        "the lock freed {freed_after_acquire_ms} ms after it was taken, for a TTL of {ttl:?}"
    );
    let after: Vec<&Hold> = out.holds.iter().collect();
    assert_every_language_held(&after, "after the python holder was killed", &out);
}

/// The paused-holder scenario with holder A in `paused`'s language and B in `next`'s:
/// A, frozen with SIGSTOP past its TTL while B takes over, resumes and writes; its own binding
/// reports the lock lost, the fenced store rejects its write while the unfenced one takes
/// it, and the checker blames A only (see [`a_paused_holder_is_fenced_off`]).
fn paused_holder_is_fenced_off(paused: Language, next: Language) {
    let Some(t) = toolchains() else { return };
    let launcher = |l: Language| t.launcher(l).expect("found");
    let run = a_paused_holder_is_fenced_off(launcher(paused), launcher(next));
    println!(
        "paused {paused} holder A, {next} holder B: A's lock expired {:?} after the pause; \
         {:?} in all\n{}\n{}",
        run.expired_after,
        run.took,
        run.lines.join("\n"),
        run.verdict
    );
}

/// A Python holder paused past its TTL, a Node holder takes over: the Python holder's late
/// write is rejected by the fenced store and corrupts the unfenced one.
#[test]
fn a_paused_python_holder_is_fenced_off_when_it_resumes_after_a_node_holder_took_over() {
    paused_holder_is_fenced_off(Language::Python, Language::Node);
}

/// A Node holder paused past its TTL, a C holder takes over: the Node holder's late write is
/// rejected by the fenced store and corrupts the unfenced one.
#[test]
fn a_paused_node_holder_is_fenced_off_when_it_resumes_after_a_c_holder_took_over() {
    paused_holder_is_fenced_off(Language::Node, Language::C);
}

/// A C holder paused past its TTL, a Python holder takes over: the C holder's late write is
/// rejected by the fenced store and corrupts the unfenced one.
#[test]
fn a_paused_c_holder_is_fenced_off_when_it_resumes_after_a_python_holder_took_over() {
    paused_holder_is_fenced_off(Language::C, Language::Python);
}

/// A Java holder paused past its TTL, a Rust holder takes over: the Java holder's late write is
/// rejected by the fenced store and corrupts the unfenced one.
#[test]
fn a_paused_java_holder_is_fenced_off_when_it_resumes_after_a_rust_holder_took_over() {
    paused_holder_is_fenced_off(Language::Java, Language::Rust);
}

/// A Go holder paused past its TTL, a Java holder takes over: the Go holder's late write is
/// rejected by the fenced store and corrupts the unfenced one.
#[test]
fn a_paused_go_holder_is_fenced_off_when_it_resumes_after_a_java_holder_took_over() {
    paused_holder_is_fenced_off(Language::Go, Language::Java);
}
