//! The four scenarios. Each returns the one JSON object that the runner prints last.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::cli::Args;
use crate::impls::{Held, Impl, OpError};

pub const LANG: &str = "rust";
const WARMUP_CYCLES: usize = 50;
/// After a failed cycle, pause this long so that a dead server does not turn the loop into a
/// hot spin on a shared machine (the failure still counts; the pause is not in its latency).
const ERROR_PAUSE: Duration = Duration::from_millis(1);
/// How long past the end of `contend` a worker keeps waiting for the lock before it gives up.
const WAIT_PAST_END: Duration = Duration::from_secs(5);

/// Logs each distinct kind of error once on stderr.
fn note(e: &str) {
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let kind: String = e.split(':').next().unwrap_or(e).to_string();
    let mut seen = SEEN.lock().unwrap();
    if seen.get_or_insert_with(HashSet::new).insert(kind) {
        eprintln!("fencelock-bench: error (first of its kind): {e}");
    }
}

/// The value of a finished task, or `None` after noting and counting its error (the call's
/// own, or the task's panic).
fn counted<T>(
    joined: Result<Result<T, OpError>, tokio::task::JoinError>,
    errors: &mut u64,
) -> Option<T> {
    let e = match joined {
        Ok(Ok(v)) => return Some(v),
        Ok(Err(e)) => e,
        Err(e) => format!("task failed: {e}"),
    };
    note(&e);
    *errors += 1;
    None
}

/// One try-once acquire and release; true when both succeeded.
async fn cycle_once(imp: &Impl, name: &str, ttl: Duration) -> bool {
    let held = match imp.try_acquire(name, ttl).await {
        Ok(Some(h)) => h,
        Ok(None) => {
            note("not acquired: held by another, or too few servers granted it");
            return false;
        }
        Err(e) => {
            note(&e);
            return false;
        }
    };
    match imp.release(held).await {
        Ok(()) => true,
        Err(e) => {
            note(&e);
            false
        }
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Nearest-rank percentiles, as the other runners compute them.
fn percentiles(lat: &mut [f64]) -> Value {
    percentiles_to(lat, 1)
}

/// [`percentiles`] rounded to `digits` decimals.
pub(crate) fn percentiles_to(lat: &mut [f64], digits: i32) -> Value {
    if lat.is_empty() {
        return json!({"p50": null, "p90": null, "p99": null, "max": null});
    }
    lat.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let i = ((p * lat.len() as f64).ceil() as usize).max(1) - 1;
        round(lat[i], digits)
    };
    json!({"p50": rank(0.50), "p90": rank(0.90), "p99": rank(0.99),
           "max": round(lat[lat.len() - 1], digits), "n": lat.len()})
}

fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Peak resident set size (VmHWM) in kB.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub async fn cycle(args: &Args, imp: &Impl) -> Value {
    for _ in 0..WARMUP_CYCLES {
        cycle_once(imp, &args.name, args.ttl).await;
    }
    let (mut ok, mut errors) = (0u64, 0u64);
    let mut lat: Vec<f64> = Vec::new(); // successful cycles only
    let mut samples: Vec<Value> = Vec::new();
    // Wall clock at the loop's start: places the samples on the orchestrator's timeline.
    let loop_start_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    eprintln!("LOOP-START"); // the orchestrator times a kill from here
    let t0 = Instant::now();
    let end = t0 + args.duration;
    let mut now = t0;
    while now < end {
        let good = cycle_once(imp, &args.name, args.ttl).await;
        let mut after = Instant::now();
        let lat_us = (after - now).as_nanos() as f64 / 1000.0;
        if good {
            ok += 1;
            lat.push(lat_us);
        } else {
            errors += 1;
        }
        if args.samples {
            let t_ms = (now - t0).as_nanos() as f64 / 1e6;
            samples.push(json!([round(t_ms, 3), round(lat_us, 1), u8::from(good)]));
        }
        if !good {
            tokio::time::sleep(ERROR_PAUSE).await;
            after = Instant::now();
        }
        now = after;
    }
    let elapsed = (now - t0).as_secs_f64();
    let mut out = json!({
        "scenario": "cycle", "impl": args.imp.as_str(), "lang": LANG,
        "servers": args.servers.len(), "ops": ok, "errors": errors,
        "elapsed_s": round(elapsed, 6),
        "ops_per_s": if elapsed > 0.0 { round(ok as f64 / elapsed, 3) } else { 0.0 },
        "lat_us": percentiles(&mut lat),
        "loop_start_ms": loop_start_ms,
    });
    if args.samples {
        out["samples"] = Value::Array(samples);
    }
    out
}

pub async fn contend(args: &Args, imp: &Impl) -> Value {
    let warm = format!("{}-warmup-{}", args.name, args.worker);
    for _ in 0..WARMUP_CYCLES {
        cycle_once(imp, &warm, args.ttl).await;
    }
    let start_us = args.start_at_ms * 1000;
    let now = wall_us();
    if start_us > now {
        tokio::time::sleep(Duration::from_micros(start_us - now)).await;
    } else {
        eprintln!(
            "fencelock-bench: warning: start time already passed {:.3} s ago",
            (now - start_us) as f64 / 1e6
        );
    }
    let deadline_us = (args.start_at_ms + args.duration.as_millis() as u64) * 1000;
    let mut errors = 0u64;
    let mut unfinished_wait = false;
    let mut holds: Vec<Value> = Vec::new();
    while wall_us() < deadline_us {
        let req = wall_us();
        // A wait still going on WAIT_PAST_END after the end is abandoned (a peer that
        // livelocks must not hang the run); it is reported, not counted as a hold.
        let late = Duration::from_micros(deadline_us.saturating_sub(req)) + WAIT_PAST_END;
        let Ok(acquired) = tokio::time::timeout(late, imp.acquire(&args.name, args.ttl)).await
        else {
            eprintln!(
                "fencelock-bench: worker {}: still waiting {} ms after the end; abandoned",
                args.worker,
                WAIT_PAST_END.as_millis()
            );
            unfinished_wait = true;
            break;
        };
        let held = match acquired {
            Ok(h) => h,
            Err(e) => {
                note(&e);
                errors += 1;
                tokio::time::sleep(ERROR_PAUSE).await;
                continue;
            }
        };
        let acq = wall_us();
        // The hold: tokio's timer rounds a sleep up to its next millisecond tick (a 1 ms
        // `tokio::time::sleep` held 2.2 ms here), so the thread sleeps instead, as the Python
        // runner's time.sleep does; block_in_place lets the runtime's other worker run this
        // worker's tasks meanwhile.
        tokio::task::block_in_place(|| std::thread::sleep(args.hold));
        let rel_start = wall_us();
        if let Err(e) = imp.release(held).await {
            note(&e);
            errors += 1;
        }
        holds.push(json!([req, acq, rel_start, wall_us()]));
    }
    let worker: Value = match args.worker.parse::<u64>() {
        Ok(n) if args.worker.bytes().all(|b| b.is_ascii_digit()) => json!(n),
        _ => json!(args.worker),
    };
    json!({
        "scenario": "contend", "impl": args.imp.as_str(), "lang": LANG, "worker": worker,
        "servers": args.servers.len(), "errors": errors, "holds": holds,
        "unfinished_wait": unfinished_wait,
    })
}

pub async fn scale(args: &Args, imp: Arc<Impl>) -> Value {
    // Connections open and scripts loaded before the clock starts, as in `cycle`.
    for _ in 0..WARMUP_CYCLES {
        cycle_once(&imp, "scale-0", args.ttl).await;
    }
    let t0 = Instant::now();
    let end = t0 + args.duration;
    let tasks: Vec<_> = (0..args.tasks)
        .map(|i| {
            let imp = Arc::clone(&imp);
            let ttl = args.ttl;
            tokio::spawn(async move {
                let name = format!("scale-{i}");
                let (mut ok, mut errors) = (0u64, 0u64);
                while Instant::now() < end {
                    if cycle_once(&imp, &name, ttl).await {
                        ok += 1;
                    } else {
                        errors += 1;
                        tokio::time::sleep(ERROR_PAUSE).await;
                    }
                }
                (ok, errors)
            })
        })
        .collect();
    let (mut ok, mut errors) = (0u64, 0u64);
    for t in tasks {
        match t.await {
            Ok((o, e)) => {
                ok += o;
                errors += e;
            }
            Err(e) => {
                note(&format!("task failed: {e}"));
                errors += 1;
            }
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    json!({
        "scenario": "scale", "impl": args.imp.as_str(), "lang": LANG,
        "servers": args.servers.len(), "tasks": args.tasks, "ops": ok, "errors": errors,
        "elapsed_s": round(elapsed, 6),
        "ops_per_s": if elapsed > 0.0 { round(ok as f64 / elapsed, 3) } else { 0.0 },
        "peak_rss_kb": peak_rss_kb(),
    })
}

pub async fn hold(args: &Args, imp: Arc<Impl>) -> Value {
    for _ in 0..WARMUP_CYCLES {
        cycle_once(&imp, "hold-warmup", args.ttl).await;
    }
    let mut errors = 0u64;
    // Every acquisition in flight at once: one task each, no limit.
    let t0 = Instant::now();
    let acquiring: Vec<_> = (0..args.count)
        .map(|i| {
            let imp = Arc::clone(&imp);
            let ttl = args.ttl;
            tokio::spawn(async move { imp.try_acquire(&format!("hold-{i}"), ttl).await })
        })
        .collect();
    let mut held: Vec<Held> = Vec::with_capacity(args.count);
    for t in acquiring {
        match counted(t.await, &mut errors) {
            Some(Some(h)) => held.push(h),
            Some(None) => {
                note("not acquired: held by another, or too few servers granted it");
                errors += 1;
            }
            None => {}
        }
    }
    let acquire_s = t0.elapsed().as_secs_f64();
    let n_held = held.len();
    let t1 = Instant::now();
    let releasing: Vec<_> = held
        .into_iter()
        .map(|h| {
            let imp = Arc::clone(&imp);
            tokio::spawn(async move { imp.release(h).await })
        })
        .collect();
    for t in releasing {
        counted(t.await, &mut errors);
    }
    let release_s = t1.elapsed().as_secs_f64();
    json!({
        "scenario": "hold", "impl": args.imp.as_str(), "lang": LANG,
        "servers": args.servers.len(), "count": args.count, "held": n_held, "errors": errors,
        "acquire_s": round(acquire_s, 6), "release_s": round(release_s, 6),
        "peak_rss_kb": peak_rss_kb(),
    })
}
