//! The demonstration behind `ci/demo.sh`: several worker processes contend for one lock
//! through Redlock on three local redis-server processes; one server is killed and restarted
//! in the middle. Prints who held the lock when, with fencing tokens, and checks that no two
//! hold periods overlapped and that fencing tokens increased in hold order.
//!
//! `cargo run -p fencelock --example demo -- [--workers N] [--rounds N] [--hold-ms N]`

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fencelock::LockManager;

const LOCK_NAME: &str = "demo:shared-resource";

fn wall_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

fn arg(args: &[String], flag: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone)]
struct Hold {
    worker: String,
    fencing: u64,
    start: u128,
    end: u128,
}

#[tokio::main(flavor = "current_thread")]
async fn worker(
    id: String,
    urls: Vec<String>,
    rounds: u64,
    hold: Duration,
    ttl: Duration,
) -> fencelock::Result<()> {
    let manager = LockManager::new(&urls)?;
    for _ in 0..rounds {
        let lock = manager
            .acquire(LOCK_NAME, ttl, Some(Duration::from_secs(30)))
            .await?;
        let start = wall_us();
        tokio::time::sleep(hold).await; // the critical section
        let end = wall_us();
        assert!(!lock.is_lost(), "the lock outlived its validity");
        let fencing = lock.fencing_token();
        match lock.release().await {
            Ok(()) => println!("HOLD {id} {fencing} {start} {end}"),
            // A server holding one of this lock's votes died during the hold: at release time
            // no quorum held the token any more (NotHeld), or too few servers answered
            // (Unavailable; the token then expires with its TTL). Reported, never ignored.
            Err(e)
                if matches!(
                    e.kind(),
                    fencelock::ErrorKind::NotHeld | fencelock::ErrorKind::Unavailable
                ) =>
            {
                println!("HOLD {id} {fencing} {start} {end}");
                println!("NOTE {id} {fencing} release: {e}");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        let id = args[1].clone();
        let urls = args[2].split(',').map(str::to_owned).collect();
        let rounds = arg(&args, "--rounds", 5);
        let hold = Duration::from_millis(arg(&args, "--hold-ms", 20));
        let ttl = Duration::from_millis(arg(&args, "--ttl-ms", 2000));
        if let Err(e) = worker(id.clone(), urls, rounds, hold, ttl) {
            eprintln!("worker {id}: {e}");
            std::process::exit(1);
        }
        return;
    }
    std::process::exit(coordinator(&args));
}

fn coordinator(args: &[String]) -> i32 {
    let workers = arg(args, "--workers", 4);
    let rounds = arg(args, "--rounds", 6);
    let hold_ms = arg(args, "--hold-ms", 50);
    let ttl_ms = arg(args, "--ttl-ms", 2000);

    println!("starting 3 redis-server processes on free loopback ports ...");
    let mut servers = fencelock_testkit::servers(3);
    let urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    for s in &servers {
        println!("  redis-server pid {:>7} on {}", s.pid(), s.url());
    }
    println!(
        "{workers} worker processes x {rounds} rounds on lock {LOCK_NAME:?} (Redlock, quorum 2 of 3), holding {hold_ms} ms each"
    );
    let mut children = spawn_workers(workers, rounds, hold_ms, &urls);

    // Mid-run fault: one server dies, the lock keeps working on the other two, and it comes
    // back empty only after the longest TTL has passed (a server that forgets its keys must
    // stay down that long: docs/SAFETY.md).
    let total = Duration::from_millis(workers * rounds * hold_ms);
    let mut events = Vec::new();
    std::thread::sleep(total / 4);
    let what = format!("killed redis-server {} (pid {})", urls[1], servers[1].pid());
    servers[1].kill();
    events.push((wall_us(), what));
    std::thread::sleep(Duration::from_millis(ttl_ms + 100));
    servers[1].restart();
    let what = format!(
        "restarted {} empty, one TTL later (pid {})",
        urls[1],
        servers[1].pid()
    );
    events.push((wall_us(), what));

    let Some((mut holds, notes)) = collect(&mut children) else {
        println!("FAIL: a worker exited with an error");
        return 1;
    };
    holds.sort_by_key(|h| h.start);
    print_timeline(&holds, events, &notes);
    verdict(&holds, (workers * rounds) as usize)
}

/// `workers` child processes of this program, each taking the lock `rounds` times.
fn spawn_workers(workers: u64, rounds: u64, hold_ms: u64, urls: &[String]) -> Vec<Child> {
    let exe = std::env::current_exe().expect("own path");
    (0..workers)
        .map(|i| {
            Command::new(&exe)
                .args(["worker", &format!("w{i}"), &urls.join(",")])
                .args([
                    "--rounds",
                    &rounds.to_string(),
                    "--hold-ms",
                    &hold_ms.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn worker")
        })
        .collect()
}

/// The workers' hold periods and notes, read from their output; `None` if one failed.
fn collect(children: &mut [Child]) -> Option<(Vec<Hold>, Vec<String>)> {
    let mut holds = Vec::new();
    let mut notes = Vec::new();
    let mut ok = true;
    for child in children {
        let out = child.stdout.take().expect("piped");
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.first() == Some(&"NOTE") {
                notes.push(line[5..].to_string());
                continue;
            }
            if let ["HOLD", w, fence, start, end] = f.as_slice() {
                holds.push(Hold {
                    worker: w.to_string(),
                    fencing: fence.parse().unwrap_or(0),
                    start: start.parse().unwrap_or(0),
                    end: end.parse().unwrap_or(0),
                });
            }
        }
        ok &= child.wait().map(|s| s.success()).unwrap_or(false);
    }
    ok.then_some((holds, notes))
}

/// The hold periods in start order, with the server events between them, then the notes.
fn print_timeline(holds: &[Hold], events: Vec<(u128, String)>, notes: &[String]) {
    let t0 = holds.first().map(|h| h.start).unwrap_or(0);
    println!(
        "\n  {:>9}  {:>9}  {:>6}  {:>7}",
        "from ms", "to ms", "worker", "fencing"
    );
    let mut events = events.into_iter().peekable();
    for h in holds {
        while let Some((_, what)) = events.next_if(|(t, _)| *t <= h.start) {
            println!("  ---------- {what}");
        }
        println!(
            "  {:>9.1}  {:>9.1}  {:>6}  {:>7}",
            (h.start - t0) as f64 / 1000.0,
            (h.end - t0) as f64 / 1000.0,
            h.worker,
            h.fencing
        );
    }
    for note in notes {
        println!("  note: {note}");
    }
}

/// 0 when every expected hold period was recorded and none overlapped, else 1 (said why).
fn verdict(holds: &[Hold], expected: usize) -> i32 {
    let violations = check(holds);
    if holds.len() != expected {
        println!(
            "\nFAIL: {} hold periods recorded, expected {expected}",
            holds.len()
        );
        return 1;
    }
    if violations.is_empty() {
        println!(
            "\nOK: {} hold periods, no two overlapped, fencing tokens strictly increased in hold order",
            holds.len()
        );
        0
    } else {
        for v in &violations {
            println!("VIOLATION: {v}");
        }
        println!("\nFAIL: {} violations", violations.len());
        1
    }
}

/// Hold periods sorted by start: each must begin after the previous one ended, with a larger
/// fencing token.
fn check(holds: &[Hold]) -> Vec<String> {
    holds
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (&w[0], &w[1]);
            if b.start < a.end {
                Some(format!(
                    "{} (token {}) started before {} (token {}) ended",
                    b.worker, b.fencing, a.worker, a.fencing
                ))
            } else if b.fencing <= a.fencing {
                Some(format!(
                    "token {} of {} follows token {} of {}",
                    b.fencing, b.worker, a.fencing, a.worker
                ))
            } else {
                None
            }
        })
        .collect()
}
