//! Leader election's figures (issue 54 item 6), run by bench/election.py:
//!
//! - `election-handover`: a leader resigns while a candidate waits in line and K observers
//!   follow; the time until the candidate leads, and until each observer reports its term;
//!   then the new leader proclaims a value, and the time until each observer reports it.
//! - `election-failover`: a leader in a child process (`election-lead`) is killed (SIGKILL)
//!   while a candidate waits and an observer follows; the time until the candidate leads,
//!   against the key's own remaining time at the kill (its PTTL, read on the server).
//! - `election-idle`: K observers of one election, each on its own manager, follow it while
//!   nothing changes (nobody leads, then a leader holds); the server's commands per second.
//! - `election-lead`: the child of `election-failover`: campaigns, prints `leading TERM`, and
//!   resigns when its stdin has a line or ends.
//!
//! Every figure is printed as one JSON object, the last line of stdout.

use std::collections::HashMap;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fencelock::{Election, LockManager, Term};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::scenarios::percentiles_to;

fn percentiles(v: &mut [f64]) -> Value {
    percentiles_to(v, 3)
}

pub const USAGE: &str = "\
       fencelock-bench election-handover --servers URLS [--rounds 100] [--observers 10] [--ttl-ms 10000]
       fencelock-bench election-failover --servers URLS [--rounds 3] [--ttl-ms 2000]
       fencelock-bench election-idle     --servers URL [--observers 100] [--window-ms 5000] [--ttl-ms 30000]
       fencelock-bench election-lead     --servers URLS --name NAME [--ttl-ms 2000]";

/// How long any one step may take before the run gives up (a hang, not a figure).
const STEP_LIMIT: Duration = Duration::from_secs(30);

/// After the candidate shows in the line, the time its subscription is given to complete
/// before the change it waits for is made (a waiter subscribes at its first refusal, then
/// tries once more; the change would otherwise be measured through that retry).
const SUBSCRIBE_SETTLE: Duration = Duration::from_millis(20);

pub struct Opts {
    servers: Vec<String>,
    name: String,
    rounds: usize,
    observers: usize,
    ttl: Duration,
    window: Duration,
}

/// The flags of `election-CMD`, checked before anything runs.
pub fn parse(cmd: &str, argv: &[String]) -> Result<Opts, String> {
    let known: &[&str] = match cmd {
        "handover" => &["servers", "rounds", "observers", "ttl-ms"],
        "failover" => &["servers", "rounds", "ttl-ms"],
        "idle" => &["servers", "observers", "window-ms", "ttl-ms"],
        "lead" => &["servers", "name", "ttl-ms"],
        other => return Err(format!("unknown scenario election-{other}")),
    };
    let mut values: HashMap<&str, &str> = HashMap::new();
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let flag = arg
            .strip_prefix("--")
            .filter(|f| known.contains(f))
            .ok_or_else(|| format!("unexpected argument {arg:?} for election-{cmd}"))?;
        let value = it.next().ok_or(format!("--{flag} needs a value"))?;
        values.insert(flag, value);
    }
    let num = |flag: &str, default: u64| -> Result<u64, String> {
        values.get(flag).map_or(Ok(default), |v| {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(format!("--{flag}: not a positive integer: {v:?}"))
        })
    };
    let servers: Vec<String> = values
        .get("servers")
        .ok_or("--servers is required")?
        .split(',')
        .map(str::to_string)
        .collect();
    let default_ttl = match cmd {
        "handover" => 10_000,
        "idle" => 30_000,
        _ => 2_000,
    };
    Ok(Opts {
        servers,
        name: values
            .get("name")
            .map_or("bench-election", |v| v)
            .to_string(),
        rounds: num("rounds", if cmd == "failover" { 3 } else { 100 })? as usize,
        observers: num("observers", if cmd == "idle" { 100 } else { 10 })? as usize,
        ttl: Duration::from_millis(num("ttl-ms", default_ttl)?),
        window: Duration::from_millis(num("window-ms", 5_000)?),
    })
}

/// Runs `election-CMD` with its flags ([`parse`]); the figures as JSON.
pub async fn run(cmd: &str, opts: &Opts) -> Result<Value, String> {
    match cmd {
        "handover" => handover(opts).await,
        "failover" => failover(opts).await,
        "idle" => idle(opts).await,
        _ => lead(opts).await,
    }
}

fn manager(opts: &Opts) -> Result<LockManager, String> {
    LockManager::new(&opts.servers).map_err(|e| e.to_string())
}

fn election(m: &LockManager, name: &str) -> Result<Election, String> {
    m.election(name).map_err(|e| e.to_string())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `a - b` in milliseconds, negative when `a` came first.
fn signed_ms(a: Instant, b: Instant) -> f64 {
    match a.checked_duration_since(b) {
        Some(d) => ms(d),
        None => -ms(b - a),
    }
}

/// What one observer reported, and when.
type Report = (usize, Instant, Option<(u64, String)>);

/// K observers, each on its own manager, following `name`: every report goes to the channel.
struct Observers {
    reports: mpsc::UnboundedReceiver<Report>,
    /// What each observer reported last.
    last: Vec<Option<Option<(u64, String)>>>,
    _managers: Vec<LockManager>,
}

impl Observers {
    fn start(opts: &Opts, k: usize) -> Result<Observers, String> {
        let (tx, reports) = mpsc::unbounded_channel();
        let mut managers = Vec::with_capacity(k);
        for i in 0..k {
            let m = manager(opts)?;
            let mut observer = election(&m, &opts.name)?.observe();
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    match observer.next().await {
                        Ok(leader) => {
                            let seen = leader.map(|l| (l.fencing_token, l.value));
                            if tx.send((i, Instant::now(), seen)).is_err() {
                                return;
                            }
                        }
                        Err(e) => eprintln!("observer {i}: {e}"),
                    }
                }
            });
            managers.push(m);
        }
        Ok(Observers {
            reports,
            last: vec![None; k],
            _managers: managers,
        })
    }

    /// Waits until every observer reported `state`; when each first did (in the order of the
    /// observers).
    async fn until_all(&mut self, state: &Option<(u64, String)>) -> Result<Vec<Instant>, String> {
        let mut at: Vec<Option<Instant>> = self
            .last
            .iter()
            .map(|l| (l.as_ref() == Some(state)).then(Instant::now))
            .collect();
        let limit = tokio::time::Instant::now() + STEP_LIMIT;
        while at.iter().any(Option::is_none) {
            let (i, when, seen) = tokio::time::timeout_at(limit, self.reports.recv())
                .await
                .map_err(|_| format!("observers did not all report {state:?} in time"))?
                .ok_or("the observers stopped")?;
            if &seen == state && at[i].is_none() {
                at[i] = Some(when);
            }
            self.last[i] = Some(seen);
        }
        Ok(at.into_iter().flatten().collect())
    }
}

/// Waits until someone waits in line for `name`, then gives its subscription time to complete.
async fn until_queued(m: &LockManager, name: &str) -> Result<(), String> {
    let limit = Instant::now() + STEP_LIMIT;
    loop {
        let state = m.state(name).await.map_err(|e| e.to_string())?;
        if state.waiters.unwrap_or(0) >= 1 {
            tokio::time::sleep(SUBSCRIBE_SETTLE).await;
            return Ok(());
        }
        if Instant::now() > limit {
            return Err("the candidate never showed in the line".into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

type Campaign = tokio::task::JoinHandle<Result<(Term, Instant), String>>;

/// A candidate campaigning in the background: its term, and when it began to lead.
fn candidate(e: &Election, value: String, ttl: Duration) -> Campaign {
    let e = e.clone();
    tokio::spawn(async move {
        let term = e
            .campaign(&value, ttl, Some(STEP_LIMIT))
            .await
            .map_err(|err| err.to_string())?;
        Ok((term, Instant::now()))
    })
}

async fn joined(c: Campaign) -> Result<(Term, Instant), String> {
    c.await.map_err(|e| e.to_string())?
}

fn state_of(term: &Term) -> Option<(u64, String)> {
    Some((term.fencing_token(), term.value()))
}

async fn handover(opts: &Opts) -> Result<Value, String> {
    let managers = [manager(opts)?, manager(opts)?];
    let elections = [
        election(&managers[0], &opts.name)?,
        election(&managers[1], &opts.name)?,
    ];
    let mut observers = Observers::start(opts, opts.observers)?;
    let mut leader = elections[0]
        .campaign("0-lead", opts.ttl, Some(STEP_LIMIT))
        .await
        .map_err(|e| e.to_string())?;
    let (mut to_leader, mut to_observers, mut proclaimed) = (vec![], vec![], vec![]);
    let mut after_term = vec![];
    for round in 1..=opts.rounds {
        observers.until_all(&state_of(&leader)).await?;
        let next = candidate(&elections[round % 2], format!("{round}-lead"), opts.ttl);
        until_queued(&managers[0], &opts.name).await?;
        let start = Instant::now();
        leader.resign().await.map_err(|e| e.to_string())?;
        let (term, led_at) = joined(next).await?;
        to_leader.push(ms(led_at - start));
        let seen = observers.until_all(&state_of(&term)).await?;
        to_observers.extend(seen.iter().map(|t| ms(*t - start)));
        after_term.extend(seen.iter().map(|t| signed_ms(*t, led_at)));
        let value = format!("{round}-proclaimed");
        let start = Instant::now();
        term.proclaim(&value).await.map_err(|e| e.to_string())?;
        let seen = observers
            .until_all(&Some((term.fencing_token(), value)))
            .await?;
        proclaimed.extend(seen.iter().map(|t| ms(*t - start)));
        leader = term;
    }
    leader.resign().await.map_err(|e| e.to_string())?;
    Ok(json!({
        "scenario": "election-handover",
        "rounds": opts.rounds,
        "observers": opts.observers,
        "resign_to_new_leader_ms": percentiles(&mut to_leader),
        "resign_to_observers_ms": percentiles(&mut to_observers),
        "new_term_to_observers_ms": percentiles(&mut after_term),
        "proclaim_to_observers_ms": percentiles(&mut proclaimed),
    }))
}

/// A leader in a child process of this program, killed by the round.
struct Child {
    process: std::process::Child,
    term: u64,
}

fn spawn_leader(opts: &Opts) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut process = Command::new(exe)
        .args(["election-lead", "--servers", &opts.servers.join(",")])
        .args([
            "--name",
            &opts.name,
            "--ttl-ms",
            &opts.ttl.as_millis().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the leader: {e}"))?;
    let mut line = String::new();
    let stdout = process.stdout.as_mut().ok_or("no stdout")?;
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let term = line
        .strip_prefix("leading ")
        .and_then(|t| t.trim().parse().ok());
    match term {
        Some(term) => Ok(Child { process, term }),
        None => {
            let _ = process.kill();
            let _ = process.wait();
            Err(format!(
                "the leader's process said {line:?}, not `leading TERM`"
            ))
        }
    }
}

async fn pttl(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Result<i64, String> {
    redis::cmd("PTTL")
        .arg(key)
        .query_async(conn)
        .await
        .map_err(|e| e.to_string())
}

async fn failover(opts: &Opts) -> Result<Value, String> {
    let m = manager(opts)?;
    let e = election(&m, &opts.name)?;
    let mut observers = Observers::start(opts, 1)?;
    let client = redis::Client::open(opts.servers[0].as_str()).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let (mut after_kill, mut past_expiry, mut observed) = (vec![], vec![], vec![]);
    for round in 1..=opts.rounds {
        let mut child = tokio::task::block_in_place(|| spawn_leader(opts))?;
        observers
            .until_all(&Some((child.term, "child".to_string())))
            .await?;
        let next = candidate(&e, format!("{round}-candidate"), opts.ttl);
        until_queued(&m, &opts.name).await?;
        child.process.kill().map_err(|e| e.to_string())?;
        let killed = Instant::now();
        let left = pttl(&mut conn, &opts.name).await?;
        let _ = child.process.wait();
        let (term, led_at) = joined(next).await?;
        let seen = observers.until_all(&state_of(&term)).await?;
        after_kill.push(ms(led_at - killed));
        past_expiry.push(ms(led_at - killed) - left as f64);
        observed.extend(seen.iter().map(|t| ms(*t - killed)));
        term.resign().await.map_err(|e| e.to_string())?;
    }
    Ok(json!({
        "scenario": "election-failover",
        "rounds": opts.rounds,
        "ttl_ms": opts.ttl.as_millis() as u64,
        "kill_to_new_leader_ms": percentiles(&mut after_kill),
        "past_the_terms_end_ms": percentiles(&mut past_expiry),
        "kill_to_observer_ms": percentiles(&mut observed),
    }))
}

/// The server's commands so far, and its calls of ZCARD, which only the inspection script
/// makes here (an observer's read): `INFO commandstats`, scripts' commands included.
async fn commands(conn: &mut redis::aio::MultiplexedConnection) -> Result<(u64, u64), String> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .map_err(|e| e.to_string())?;
    let (mut total, mut reads) = (0, 0);
    for line in info.lines() {
        let Some((name, rest)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(":calls="))
        else {
            continue;
        };
        let calls: u64 = rest
            .split(',')
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        match name {
            "info" => {}
            "zcard" => (total, reads) = (total + calls, reads + calls),
            _ => total += calls,
        }
    }
    Ok((total, reads))
}

/// Commands and observers' reads per second over the window (the window's own INFO aside).
async fn rate(
    conn: &mut redis::aio::MultiplexedConnection,
    window: Duration,
) -> Result<Value, String> {
    let before = commands(conn).await?;
    let start = Instant::now();
    tokio::time::sleep(window).await;
    let after = commands(conn).await?;
    let elapsed = start.elapsed().as_secs_f64();
    Ok(json!({
        "commands_per_s": (after.0 - before.0) as f64 / elapsed,
        "reads_per_s": (after.1 - before.1) as f64 / elapsed,
    }))
}

async fn idle(opts: &Opts) -> Result<Value, String> {
    let client = redis::Client::open(opts.servers[0].as_str()).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let m = manager(opts)?;
    let e = election(&m, &opts.name)?;
    let term = e
        .campaign("idle-leader", opts.ttl, Some(STEP_LIMIT))
        .await
        .map_err(|e| e.to_string())?;
    let led_alone = rate(&mut conn, opts.window).await?;
    let mut observers = Observers::start(opts, opts.observers)?;
    observers.until_all(&state_of(&term)).await?;
    let led_observed = rate(&mut conn, opts.window).await?;
    term.resign().await.map_err(|e| e.to_string())?;
    observers.until_all(&None).await?;
    let nobody_observed = rate(&mut conn, opts.window).await?;
    Ok(json!({
        "scenario": "election-idle",
        "observers": opts.observers,
        "ttl_ms": opts.ttl.as_millis() as u64,
        "window_ms": opts.window.as_millis() as u64,
        "leader_alone": led_alone,
        "leader_observed": led_observed,
        "nobody_observed": nobody_observed,
    }))
}

async fn lead(opts: &Opts) -> Result<Value, String> {
    let m = manager(opts)?;
    let term = election(&m, &opts.name)?
        .campaign("child", opts.ttl, Some(STEP_LIMIT))
        .await
        .map_err(|e| e.to_string())?;
    println!("leading {}", term.fencing_token());
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    term.resign().await.map_err(|e| e.to_string())?;
    Ok(json!({"scenario": "election-lead", "resigned": true}))
}
