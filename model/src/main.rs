//! Checks the lock model at bounds given on the command line (larger than CI's):
//!
//! ```text
//! cargo run --release -- [--clients N] [--servers N] [--ttl T] [--max-time T] [--max-extends N]
//!                        [--max-grants N] [--faults none|assumed|all]
//!                        [--pubsub exact|broadcast|before51]
//!                        [--semaphore LIMIT:COUNTS | --rwlock ROLES | --wants MASKS]
//! cargo run --release -- traces [--permits | --many | --broadcast] [--runs N] [--steps N]
//! ```
//!
//! `traces` writes the random runs the conformance test replays ([`fencelock_model::trace`]);
//! with the defaults, `core/src/scripts/conformance.trace`. `--pubsub broadcast` checks a
//! Redis 6.2 cluster's node whose slot may move under the waiters (`before51`: with the
//! hand-over before issue 51, which the checker finds granting twice).

use stateright::{Checker, Model};

use fencelock_model::lock::{Faults, LockModel};
use fencelock_model::permits::Family;
use fencelock_model::redlock::RedlockModel;
use fencelock_model::scripts::Pubsub;

fn main() {
    let mut m = LockModel::small(3, Faults::ASSUMED);
    let mut servers = 1;
    let mut max_faults = 2;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("traces") {
        return traces(&args[1..]);
    }
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            println!("{USAGE}");
            return;
        }
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let number = || {
            value
                .parse::<u8>()
                .unwrap_or_else(|_| usage(&format!("{flag}: {value}")))
        };
        match flag.as_str() {
            "--clients" => m.clients = usize::from(number()),
            "--servers" => servers = usize::from(number()),
            "--max-faults" => max_faults = number(),
            "--ttl" => m.ttl = number(),
            "--max-time" => m.max_time = number(),
            "--max-extends" => m.max_extends = number(),
            "--max-grants" => m.max_grants = u32::from(number()),
            "--pubsub" => {
                m.pubsub = match value.as_str() {
                    "exact" => Pubsub::Exact,
                    "broadcast" => Pubsub::Broadcast,
                    "before51" => Pubsub::BroadcastBefore51,
                    _ => usage(&format!("--pubsub: {value}")),
                };
            }
            "--semaphore" => m.family = semaphore(value),
            "--rwlock" => m.family = rwlock(value),
            "--wants" => m.wants = wants(value),
            "--faults" => {
                m.faults = match value.as_str() {
                    "none" => Faults::NONE,
                    "assumed" => Faults::ASSUMED,
                    "all" => Faults {
                        pauses: true,
                        restarts: true,
                        ..Faults::ASSUMED
                    },
                    _ => usage(&format!("--faults: {value}")),
                }
            }
            _ => usage(&format!("unknown option {flag}")),
        }
    }
    // A Redis 6.2 cluster's node: the name's slot may move under the waiters.
    m.faults.moves = m.pubsub != Pubsub::Exact;
    if !m.wants.is_empty() && (m.wants.len() != m.clients || m.family != Family::Lock) {
        usage("--wants names one mask per client (--clients), of a lock");
    }
    if let Family::Permits { weights, .. } = &m.family {
        if weights.len() != m.clients {
            usage("--semaphore and --rwlock name one lease per client (--clients)");
        }
    }
    if servers > 1 {
        if !m.wants.is_empty() {
            usage("a lock on several names is modelled on one server");
        }
        let mut r = RedlockModel::family(m.clients, m.faults, m.family.clone());
        r.servers = servers;
        r.quorum = r.kind_quorum();
        (r.ttl, r.margin, r.place_life) = (m.ttl, m.margin, m.place_life);
        (r.max_time, r.max_grants, r.max_faults) = (m.max_time, m.max_grants, max_faults);
        let names = fencelock_model::properties::redlock();
        let symmetry: fn(&_) -> _ = stateright::Representative::representative;
        return report(&r, names.iter().map(|p| p.name), Some(symmetry));
    }
    let names = match m.family {
        Family::Lock if !m.wants.is_empty() => fencelock_model::properties::many(),
        Family::Lock => fencelock_model::properties::lock(),
        Family::Permits { .. } => fencelock_model::properties::permits(),
    };
    report(&m, names.iter().map(|p| p.name), None);
}

/// `LIMIT:COUNTS`, as `2:1,1,2`: a semaphore of 2 whose third client takes both permits.
fn semaphore(value: &str) -> Family {
    let parsed = value.split_once(':').and_then(|(limit, counts)| {
        let limit = limit.parse::<u8>().ok()?;
        let counts: Option<Vec<u8>> = counts.split(',').map(|n| n.parse().ok()).collect();
        let counts = counts?;
        counts
            .iter()
            .all(|&n| (1..=limit).contains(&n))
            .then(|| Family::semaphore(limit, &counts))
    });
    parsed.unwrap_or_else(|| usage(&format!("--semaphore LIMIT:COUNTS (as 2:1,1,2): {value}")))
}

/// `MASKS`, as `1,3,2`: client 0 takes name 0, client 1 both names, client 2 name 1.
fn wants(value: &str) -> Vec<u8> {
    let masks: Option<Vec<u8>> = value
        .split(',')
        .map(|w| w.parse::<u8>().ok().filter(|w| (1..=3).contains(w)))
        .collect();
    masks.unwrap_or_else(|| usage(&format!("--wants MASKS (1 to 3 each, as 1,3,2): {value}")))
}

/// `ROLES`, as `r,r,w`: two readers and a writer.
fn rwlock(value: &str) -> Family {
    let writers: Option<Vec<bool>> = value
        .split(',')
        .map(|r| match r {
            "r" => Some(false),
            "w" => Some(true),
            _ => None,
        })
        .collect();
    let writers = writers.unwrap_or_else(|| usage(&format!("--rwlock ROLES (as r,r,w): {value}")));
    Family::rwlock(&writers)
}

/// A function naming one state of each class of states alike.
type Representative<M> = fn(&<M as Model>::State) -> <M as Model>::State;

/// Checks `m` on every core and prints what was found; with `symmetry`, depth first, one
/// state of each class it names.
fn report<M>(
    m: &M,
    properties: impl Iterator<Item = &'static str>,
    symmetry: Option<Representative<M>>,
) where
    M: Model + std::fmt::Debug + Clone + Send + Sync + 'static,
    M::State: std::fmt::Debug + std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    M::Action: std::fmt::Debug + Eq + Clone + Send + Sync + 'static,
{
    println!("checking {m:?}");
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let builder = m.clone().checker().threads(threads);
    match symmetry {
        Some(f) => results(&builder.symmetry_fn(f).spawn_dfs().join(), properties),
        None => results(&builder.spawn_bfs().join(), properties),
    }
}

fn results<M>(checker: &impl Checker<M>, properties: impl Iterator<Item = &'static str>)
where
    M: Model,
    M::State: Clone + Eq,
    M::Action: Clone + Eq,
{
    for p in properties {
        let found = checker.discovery(p).is_some();
        println!("{:<75} {}", p, if found { "found" } else { "not found" });
    }
    println!(
        "{} states, {} unique, depth {}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth()
    );
}

const USAGE: &str = "usage: fencelock-model [--clients N] [--servers N] [--ttl T] [--max-time T] \
     [--max-extends N] [--max-grants N] [--faults none|assumed|all]\n       \
     [--pubsub exact|broadcast|before51]\n       \
     [--semaphore LIMIT:COUNTS (as 2:1,1,2) | --rwlock ROLES (as r,r,w) | --wants MASKS (as 1,3,2)]\n       \
     (Redlock: --servers 3 [--max-faults N])\n       \
     fencelock-model traces [--permits | --many | --broadcast] [--runs N] [--steps N]\n       \
     (defaults: 300 runs of 80 steps; with --permits, 150 of a semaphore and 150 of a read-write lock)";

/// `traces [--permits | --many | --broadcast] [--runs N] [--steps N]`: the conformance test's
/// runs (of the lock, of a semaphore and a read-write lock, of a lock on two names, or of the
/// lock on a Redis 6.2 cluster's node whose slot moves), on standard output.
fn traces(args: &[String]) {
    use fencelock_model::trace::Traces;
    let (mut runs, mut steps, mut traces) = (None, 80usize, Traces::Lock);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let kind = match flag.as_str() {
            "--permits" => Some(Traces::Permits),
            "--many" => Some(Traces::Many),
            "--broadcast" => Some(Traces::Broadcast),
            _ => None,
        };
        if let Some(kind) = kind {
            traces = kind;
            continue;
        }
        let value = it
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| usage(&format!("{flag} needs a number")));
        match flag.as_str() {
            "--runs" => runs = Some(value),
            "--steps" => steps = value as usize,
            _ => usage(&format!("unknown option {flag}")),
        }
    }
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    if let Err(e) = fencelock_model::trace::write(
        &mut out,
        runs.unwrap_or(if traces == Traces::Permits { 150 } else { 300 }),
        steps,
        traces,
    )
    .and_then(|()| std::io::Write::flush(&mut out))
    {
        eprintln!("fencelock-model: writing the traces: {e}");
        std::process::exit(74);
    }
}

fn usage(why: &str) -> ! {
    eprintln!("fencelock-model: {why}");
    eprintln!("{USAGE}");
    std::process::exit(64);
}
