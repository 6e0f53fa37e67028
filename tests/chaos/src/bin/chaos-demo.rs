//! The cross-language demonstration behind `ci/demo.sh`: worker processes in Rust, Python,
//! Node and C contend for one lock through Redlock on three local redis-server processes; one
//! server is killed in the middle, kept down longer than the TTL, and restarted. Prints the
//! timeline of holders (with their language) and fencing tokens, with the fault in it, and the
//! history checker's verdict; exits with 1 if the checker found a violation.
//!
//! ```text
//! chaos-demo [--seconds N] [--per-language N] [--hold-ms N] [--ttl-ms N] [--quiet]
//! ```
//!
//! The workers must be built first (`tests/chaos/workers/build.sh`, which `ci/demo.sh` runs);
//! see `fencelock_chaos::mixed` for where each language's worker is looked for.

use std::path::PathBuf;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock_chaos::history::now_us;
use fencelock_chaos::mixed::{collect, start_every_language, Language, Spec, Toolchains};
use fencelock_testkit::RedisServer;

const LOCK: &str = "demo:shared-resource";

struct Args {
    seconds: u64,
    per_language: usize,
    hold_ms: u64,
    ttl_ms: u64,
    quiet: bool,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "chaos-demo: {why}\nusage: ci/demo.sh [--seconds N] [--per-language N] [--hold-ms N] [--ttl-ms N] [--quiet]\n       ci/demo.sh --rust-only [--workers N] [--rounds N] [--hold-ms N]   (the Rust-only demo)"
    );
    std::process::exit(64);
}

fn parse() -> Args {
    let mut a = Args {
        seconds: 6,
        per_language: 2,
        hold_ms: 40,
        ttl_ms: 1000,
        quiet: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--quiet" {
            a.quiet = true;
            continue;
        }
        let v: u64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| usage(&format!("{flag} needs a number")));
        match flag.as_str() {
            "--seconds" => a.seconds = v.max(3),
            "--per-language" => a.per_language = v.clamp(1, 8) as usize,
            "--hold-ms" => a.hold_ms = v,
            "--ttl-ms" => a.ttl_ms = v.max(100),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    a
}

enum Event {
    Hold(fencelock_chaos::history::Hold),
    Note(u64, String),
}

fn main() {
    let a = parse();
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_default();
    let tools = Toolchains::find(&exe_dir.join("chaos-worker"));
    if !tools.missing.is_empty() {
        eprintln!(
            "chaos-demo: some workers cannot run (ci/demo.sh builds them):\n  {}",
            tools.missing.join("\n  ")
        );
        std::process::exit(2);
    }

    let mut servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    let run = Duration::from_secs(a.seconds);
    let ttl = Duration::from_millis(a.ttl_ms);
    println!("fencelock cross-language demo");
    println!("  3 redis-servers (Redlock, quorum 2): {}", urls.join(" "));
    println!(
        "  {} workers per language (Rust, Python, Node, C, Java, Go) contend for the lock {LOCK:?} for {} s,",
        a.per_language, a.seconds
    );
    println!(
        "  each holding it {} ms (Rust: up to {} ms) with a TTL of {} ms; server 2 is killed in the middle,",
        a.hold_ms, a.hold_ms, a.ttl_ms
    );
    println!("  kept down longer than the TTL, and restarted empty (docs/SAFETY.md explains why).");

    let spec = Spec {
        servers: urls.clone(),
        names: vec![LOCK.into()],
        rounds: 1_000_000,
        hold_ms: a.hold_ms,
        ttl_ms: a.ttl_ms,
        wait_ms: 5000,
        server_timeout_ms: 100,
        duration_ms: Some(run.as_millis() as u64),
    };
    let t0_us = now_us();
    // Every worker's run begins at once, when all of them are ready.
    let workers = start_every_language(&tools, &spec, a.per_language);
    let started = Instant::now();
    let mut notes: Vec<Event> = workers
        .iter()
        .map(|r| {
            let pid = r.worker.pid();
            Event::Note(now_us(), format!("started {} (pid {pid})", r.holder))
        })
        .collect();

    // The fault: server 2 down from a third of the run, for longer than the TTL.
    let down = ttl + Duration::from_millis(500);
    let kill_at = (run.saturating_sub(down) / 2).max(Duration::from_millis(800));
    sleep(kill_at.saturating_sub(started.elapsed()));
    servers[1].kill();
    notes.push(Event::Note(
        now_us(),
        format!(
            "server 2 ({}) KILLED: 2 of 3 servers up, still a quorum",
            urls[1]
        ),
    ));
    sleep(down);
    servers[1].restart();
    notes.push(Event::Note(
        now_us(),
        format!(
            "server 2 RESTARTED empty after {} ms down (longer than the TTL)",
            down.as_millis()
        ),
    ));

    let out = collect(workers, started + run + Duration::from_secs(30));
    drop(servers);

    let mut events = notes;
    events.extend(out.holds.iter().cloned().map(Event::Hold));
    let at = |e: &Event| match e {
        Event::Hold(h) => h.start_us,
        Event::Note(t, _) => *t,
    };
    events.sort_by_key(at);
    println!();
    println!(
        "{:>9}  {:>6}  {:<10} {:<8} {:>9}",
        "time", "token", "holder", "language", "held"
    );
    let mut last_holder = String::new();
    for e in &events {
        let t = at(e).saturating_sub(t0_us) as f64 / 1e6;
        match e {
            Event::Note(_, text) => println!("{t:>8.3}s  ---- {text} ----"),
            Event::Hold(h) if !a.quiet => {
                let lang = Language::of_holder(&h.holder).map_or("?", Language::label);
                let change = if last_holder.is_empty() || last_holder == h.holder {
                    ""
                } else {
                    "  <- handoff"
                };
                println!(
                    "{t:>8.3}s  {:>6}  {:<10} {:<8} {:>7.1}ms{change}",
                    h.fencing_token,
                    h.holder,
                    lang,
                    h.end_us.saturating_sub(h.start_us) as f64 / 1000.0
                );
                last_holder = h.holder.clone();
            }
            Event::Hold(_) => {}
        }
    }

    let (handoffs, cross) = out.handoffs();
    println!();
    let by_language: Vec<String> = out
        .holds_by_language()
        .iter()
        .map(|(l, n)| format!("{l} {n}"))
        .collect();
    println!(
        "holds by language: {}; {handoffs} handoffs, {cross} of them between languages",
        by_language.join(", ")
    );
    if !out.failures.is_empty() {
        println!(
            "{} acquisitions gave up (their wait limit passed): {:?}",
            out.failures.len(),
            out.failures.iter().take(5).collect::<Vec<_>>()
        );
    }
    for p in &out.problems {
        println!("worker problem: {p}");
    }
    println!("fencing tokens increase with every acquisition; gaps are attempts that won a vote on some server but not a quorum.");
    let verdict = out.verdict();
    println!("history checker: {verdict}");
    let every_language = Language::ALL
        .iter()
        .all(|l| out.holds_by_language().get(l).copied().unwrap_or(0) > 0);
    if !every_language {
        println!("not every language got the lock");
    }
    let ok = verdict.is_ok() && out.problems.is_empty() && every_language;
    std::process::exit(if ok { 0 } else { 1 });
}
