//! Checks the lock model at bounds given on the command line (larger than CI's):
//!
//! ```text
//! cargo run --release -- [--clients N] [--ttl T] [--max-time T] [--max-extends N]
//!                        [--faults none|assumed|all]
//! ```

use stateright::{Checker, Model};

use fencelock_model::lock::{Faults, LockModel};

fn main() {
    let mut m = LockModel::small(3, Faults::ASSUMED);
    let args: Vec<String> = std::env::args().skip(1).collect();
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
            "--ttl" => m.ttl = number(),
            "--max-time" => m.max_time = number(),
            "--max-extends" => m.max_extends = number(),
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
    println!("checking {m:?}");
    let checker = m
        .checker()
        .threads(std::thread::available_parallelism().map_or(1, usize::from))
        .spawn_bfs()
        .join();
    for p in m_properties() {
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

fn m_properties() -> Vec<&'static str> {
    fencelock_model::properties::lock()
        .iter()
        .map(|p| p.name)
        .collect()
}

const USAGE: &str = "usage: fencelock-model [--clients N] [--ttl T] [--max-time T] \
     [--max-extends N] [--faults none|assumed|all]";

fn usage(why: &str) -> ! {
    eprintln!("fencelock-model: {why}");
    eprintln!("{USAGE}");
    std::process::exit(64);
}
