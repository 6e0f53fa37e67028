//! Checks the lock model at bounds given on the command line (larger than CI's):
//!
//! ```text
//! cargo run --release -- [--clients N] [--servers N] [--ttl T] [--max-time T] [--max-extends N]
//!                        [--max-grants N] [--faults none|assumed|all]
//! cargo run --release -- traces [--runs N] [--steps N]
//! ```
//!
//! `traces` writes the random runs the conformance test replays ([`fencelock_model::trace`]);
//! with the defaults, `core/src/scripts/conformance.trace`.

use stateright::{Checker, Model};

use fencelock_model::lock::{Faults, LockModel};
use fencelock_model::redlock::RedlockModel;

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
    if servers > 1 {
        let r = RedlockModel {
            clients: m.clients,
            servers,
            ttl: m.ttl,
            margin: m.margin,
            place_life: m.place_life,
            max_time: m.max_time,
            max_grants: m.max_grants,
            max_faults,
            faults: m.faults,
        };
        let names = fencelock_model::properties::redlock();
        let symmetry: fn(&_) -> _ = stateright::Representative::representative;
        return report(&r, names.iter().map(|p| p.name), Some(symmetry));
    }
    let names = fencelock_model::properties::lock();
    report(&m, names.iter().map(|p| p.name), None);
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
     (Redlock: --servers 3 [--max-faults N])\n       \
     fencelock-model traces [--runs N] [--steps N]   (defaults: 300 runs of 80 steps)";

/// `traces [--runs N] [--steps N]`: the conformance test's runs, on standard output.
fn traces(args: &[String]) {
    let (mut runs, mut steps) = (300u64, 80usize);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| usage(&format!("{flag} needs a number")));
        match flag.as_str() {
            "--runs" => runs = value,
            "--steps" => steps = value as usize,
            _ => usage(&format!("unknown option {flag}")),
        }
    }
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    if let Err(e) = fencelock_model::trace::write(&mut out, runs, steps)
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
