//! A lock holder in its own process, driven by the fault tests over stdin/stdout.
//!
//! ```text
//! chaos-worker hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
//!                   [--server-timeout-ms N] [--auto-extend] [--report-ms N]
//!                   [--store URL --resource R --value V]
//!                   [--lease semaphore:LIMIT:COUNT | --lease read | --lease write | --lease election]
//! chaos-worker contend --servers URL[,URL...] --names A[,B...] --ttl-ms N [--wait-ms N]
//!                   [--server-timeout-ms N] --duration-ms N [--max-hold-ms N] [--holders N]
//!                   [--rounds N] [--holder LABEL]
//! ```
//!
//! `hold` acquires one lock, then prints `ACQUIRED token=T start_us=S validity_us=V pid=P`
//! (`start_us` on the shared wall clock of `fencelock_chaos::history::now_us`). With
//! `--report-ms` it prints `VALID until_us=U` that often (the end of the current validity, which
//! moves with auto-extension). Then it obeys stdin, one command per line:
//!
//! - `WRITE`: writes `--value` to `--resource` in the fenced store (with its fencing token)
//!   and in the unfenced store, then prints
//!   `WROTE fenced=accepted|rejected unfenced=written lost=BOOL end_us=E`;
//! - `RELEASE`: prints `RELEASED result=ok|<error kind> end_us=E` and exits.
//!
//! With `--lease` it holds a semaphore's permits or a read-write lock's share or hold instead
//! of a lock.
//!
//! End of stdin exits. A failed acquire prints `ERROR kind=K message=...` and exits with 2.
//!
//! `contend` runs `--holders` threads (default 2) that acquire the names in turn until the
//! duration is over, hold each lock for up to `--max-hold-ms`, and print one
//! `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=.. holder=..` line per hold (the
//! format of `fencelock_chaos::history::Hold::to_line`, which workers in every language
//! share), `FAIL kind=K took_ms=N` per failed acquisition, then `DONE acquired=N failed=M`.
//! A lock whose validity does not cover the hold plus [`SLACK`] is released unused, with a
//! `SHORT name=.. validity_us=.. holder=..` line, as the other languages' workers do.
//! `--rounds N` stops each thread after N acquisition attempts even if the duration is not
//! over; `--holder LABEL` names the holder in the `HOLD` lines (`LABEL` with one thread,
//! `LABEL/T` with several; default `rust-PID/T`), as the other languages' workers in
//! `tests/chaos/workers/` do.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fencelock::blocking::LockManager;
use fencelock_chaos::history::{now_us, Hold, HoldKind};

/// Room, past the hold, that the validity must leave before `contend` uses a lock: a late
/// wake-up on a busy machine (a 1 ms sleep has ended 2.7 ms after it began).
const SLACK: Duration = Duration::from_millis(50);
use fencelock_chaos::store::{FencedStore, UnfencedStore};

struct Args {
    mode: String,
    servers: Vec<String>,
    names: Vec<String>,
    ttl: Duration,
    wait: Option<Duration>,
    server_timeout: Option<Duration>,
    auto_extend: bool,
    report: Option<Duration>,
    store: Option<String>,
    resource: String,
    value: String,
    duration: Duration,
    max_hold: Duration,
    holders: usize,
    rounds: Option<u64>,
    holder: Option<String>,
    lease: fencelock::LeaseKind,
    /// `--lease rw:N` (contend): read shares, one write every N rounds.
    write_every: Option<u64>,
    /// `--lease election` (contend): each hold is a term of the election of the name.
    election: bool,
}

/// `--lease`: `semaphore:LIMIT:COUNT`, `read`, `write`, or (contend) `rw:N`.
fn lease(v: Option<String>, a: &mut Args) {
    let v = v.unwrap_or_else(|| usage("missing lease"));
    let parts: Vec<&str> = v.split(':').collect();
    let num = |s: &str| s.parse().unwrap_or_else(|_| usage("bad lease number"));
    a.lease = match parts.as_slice() {
        ["semaphore", limit, count] => fencelock::LeaseKind::Permits {
            count: num(count),
            limit: num(limit),
        },
        ["read"] => fencelock::LeaseKind::Read,
        ["write"] => fencelock::LeaseKind::Write,
        ["rw", n] => {
            a.write_every = Some(num(n).into());
            fencelock::LeaseKind::Read
        }
        ["election"] => {
            a.election = true;
            fencelock::LeaseKind::Lock
        }
        _ => usage("--lease is semaphore:LIMIT:COUNT, read, write, rw:N or election"),
    }
}

/// The lease of an acquisition in round `round` (a write every `write_every` rounds), and its
/// kind as the history checker reads it.
fn lease_of(a: &Args, round: usize) -> (fencelock::LeaseKind, HoldKind) {
    use fencelock::LeaseKind as K;
    let kind = match a.write_every {
        Some(n) if round as u64 % n == 0 => K::Write,
        _ => a.lease,
    };
    let hold = match kind {
        K::Permits { count, limit } => HoldKind::Permits {
            count: count.into(),
            limit: limit.into(),
        },
        K::Read => HoldKind::Read,
        K::Write => HoldKind::Write,
        _ => HoldKind::Lock,
    };
    (kind, hold)
}

fn usage(why: &str) -> ! {
    eprintln!(
        "chaos-worker: {why}\nusage: chaos-worker hold|contend --servers URL[,URL] (--name N | --names A,B) --ttl-ms N [--wait-ms N] [--server-timeout-ms N] [--auto-extend] [--report-ms N] [--store URL --resource R --value V] [--duration-ms N --max-hold-ms N --holders N]"
    );
    std::process::exit(64);
}

fn list(v: Option<String>) -> Vec<String> {
    v.unwrap_or_else(|| usage("missing list"))
        .split(',')
        .map(str::to_owned)
        .collect()
}

/// A comma separates URLs; a part that does not start a URL (`host:port`) continues the
/// previous one (a cluster URL names several nodes).
fn server_list(v: Option<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in list(v) {
        match out.last_mut() {
            Some(last) if !part.contains("://") => {
                last.push(',');
                last.push_str(&part);
            }
            _ => out.push(part),
        }
    }
    out
}

fn parse() -> Args {
    let mut it = std::env::args().skip(1);
    let mode = it.next().unwrap_or_default();
    if mode != "hold" && mode != "contend" {
        usage("the modes are `hold` and `contend`");
    }
    let mut a = Args {
        mode,
        servers: Vec::new(),
        names: Vec::new(),
        ttl: Duration::from_secs(1),
        wait: Some(Duration::from_secs(10)),
        server_timeout: None,
        auto_extend: false,
        report: None,
        store: None,
        resource: "resource".into(),
        value: String::new(),
        duration: Duration::from_secs(1),
        max_hold: Duration::from_millis(5),
        holders: 2,
        rounds: None,
        holder: None,
        lease: fencelock::LeaseKind::Lock,
        write_every: None,
        election: false,
    };
    let ms = |v: Option<String>| -> Duration {
        let v = v.unwrap_or_else(|| usage("missing value"));
        Duration::from_millis(v.parse().unwrap_or_else(|_| usage("bad number")))
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--servers" => a.servers = server_list(it.next()),
            "--name" => a.names = vec![it.next().unwrap_or_else(|| usage("missing name"))],
            "--names" => a.names = list(it.next()),
            "--ttl-ms" => a.ttl = ms(it.next()),
            "--wait-ms" => a.wait = Some(ms(it.next())),
            "--server-timeout-ms" => a.server_timeout = Some(ms(it.next())),
            "--auto-extend" => a.auto_extend = true,
            "--report-ms" => a.report = Some(ms(it.next())),
            "--store" => a.store = it.next(),
            "--resource" => a.resource = it.next().unwrap_or_else(|| usage("missing resource")),
            "--value" => a.value = it.next().unwrap_or_else(|| usage("missing value")),
            "--duration-ms" => a.duration = ms(it.next()),
            "--max-hold-ms" => a.max_hold = ms(it.next()),
            "--holders" => {
                a.holders = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage("bad --holders"))
            }
            "--rounds" => {
                a.rounds = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| usage("bad --rounds")),
                )
            }
            "--holder" => a.holder = Some(it.next().unwrap_or_else(|| usage("missing holder"))),
            "--lease" => lease(it.next(), &mut a),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if a.names.is_empty() {
        usage("no lock name");
    }
    a
}

fn main() {
    let a = parse();
    let mut builder =
        fencelock::LockManager::builder(&a.servers).retry_delay(Duration::from_millis(50));
    if let Some(t) = a.server_timeout {
        builder = builder.server_timeout(t);
    }
    let manager = builder
        .config()
        .and_then(LockManager::from_config)
        .unwrap_or_else(|e| usage(&e.to_string()));
    if a.mode == "contend" {
        contend(&a, &manager);
    } else {
        hold(&a, &manager);
    }
}

fn kind_word(e: &fencelock::Error) -> String {
    e.kind().as_str().replace(' ', "_")
}

fn hold(a: &Args, manager: &LockManager) {
    let name = &a.names[0];
    let opts = fencelock::AcquireOptions::new(a.ttl).wait(a.wait);
    let lock = match manager.acquire_lease_with(name, a.lease, &opts) {
        Ok(lock) => Arc::new(lock),
        Err(e) => {
            println!("ERROR kind={} message={}", kind_word(&e), e.message());
            std::process::exit(2);
        }
    };
    let start_us = now_us();
    let validity = lock.validity();
    if a.auto_extend {
        lock.auto_extend(None);
    }
    println!(
        "ACQUIRED token={} start_us={start_us} validity_us={} pid={}",
        lock.fencing_token(),
        validity.as_micros(),
        std::process::id()
    );
    if let Some(every) = a.report {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || loop {
            let now = now_us();
            println!(
                "VALID until_us={}",
                now + lock.validity().as_micros() as u64
            );
            std::thread::sleep(every);
        });
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "WRITE" => {
                let url = a
                    .store
                    .as_deref()
                    .unwrap_or_else(|| usage("WRITE needs --store"));
                let lost = lock.is_lost();
                let fenced = match FencedStore::new(url).write(
                    &a.resource,
                    lock.fencing_token(),
                    &a.value,
                ) {
                    Ok(true) => "accepted".to_string(),
                    Ok(false) => "rejected".to_string(),
                    Err(e) => format!("error:{}", e.to_string().replace(' ', "_")),
                };
                let unfenced = match UnfencedStore::new(url).write(&a.resource, &a.value) {
                    Ok(()) => "written".to_string(),
                    Err(e) => format!("error:{}", e.to_string().replace(' ', "_")),
                };
                println!(
                    "WROTE fenced={fenced} unfenced={unfenced} lost={lost} end_us={}",
                    now_us()
                );
            }
            "RELEASE" => {
                let end_us = now_us();
                // By token: the validity reporter may still share the handle.
                let result = match manager.release_by_token(name, lock.token()) {
                    Ok(()) => "ok".to_string(),
                    Err(e) => kind_word(&e),
                };
                println!("RELEASED result={result} end_us={end_us}");
                return;
            }
            other => eprintln!("chaos-worker: unknown command {other:?}"),
        }
    }
}

/// With FENCELOCK_WORKER_GATE=1: says READY once the manager is built and waits for a line on
/// stdin, so that the test starts every worker's run at the same moment.
fn gate() {
    if std::env::var("FENCELOCK_WORKER_GATE").as_deref() == Ok("1") {
        println!("READY");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
}

fn contend(a: &Args, manager: &LockManager) {
    gate();
    let until = Instant::now() + a.duration;
    let (acquired, failed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let pid = std::process::id();
    std::thread::scope(|s| {
        for t in 0..a.holders {
            let (acquired, failed) = (&acquired, &failed);
            s.spawn(move || {
                let mut seed = u64::from(pid) * 7919 + t as u64 * 104_729 + 1;
                let mut round = t;
                let label = match &a.holder {
                    Some(l) if a.holders == 1 => l.clone(),
                    Some(l) => format!("{l}/{t}"),
                    None => format!("rust-{pid}/{t}"),
                };
                let mut attempts = 0u64;
                while Instant::now() < until && !matches!(a.rounds, Some(n) if attempts >= n) {
                    attempts += 1;
                    let name = &a.names[round % a.names.len()];
                    round += 1;
                    let started = Instant::now();
                    let (lease, hold_kind) = lease_of(a, round);
                    let opts = fencelock::AcquireOptions::new(a.ttl).wait(a.wait);
                    let outcome = match a.election {
                        // A term of the election of `name`, its value the holder's label.
                        true => manager
                            .election(name)
                            .and_then(|e| e.campaign_with(&label, &opts))
                            .map(|term| term.into_lock()),
                        false => manager.acquire_lease_with(name, lease, &opts),
                    };
                    let lock = match outcome {
                        Ok(lock) => lock,
                        Err(e) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            println!(
                                "FAIL kind={} took_ms={}",
                                kind_word(&e),
                                started.elapsed().as_millis()
                            );
                            std::thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                    };
                    let start_us = now_us();
                    let validity = lock.validity();
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let hold = Duration::from_micros(seed % (a.max_hold.as_micros() as u64 + 1));
                    if validity < hold + SLACK {
                        // Too little validity left for the work: give the lock back unused.
                        println!(
                            "SHORT name={name} validity_us={} holder={label}",
                            validity.as_micros()
                        );
                        let _ = lock.release();
                        continue;
                    }
                    std::thread::sleep(hold);
                    let hold = Hold::new(
                        name.clone(),
                        lock.fencing_token(),
                        start_us,
                        now_us(),
                        validity,
                        label.clone(),
                    )
                    .of_kind(hold_kind);
                    println!("{}", hold.to_line());
                    acquired.fetch_add(1, Ordering::Relaxed);
                    let _ = lock.release();
                }
            });
        }
    });
    println!(
        "DONE acquired={} failed={}",
        acquired.into_inner(),
        failed.into_inner()
    );
}
