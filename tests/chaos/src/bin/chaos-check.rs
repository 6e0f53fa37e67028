//! The history checker as a process: reads worker output (files given as arguments, or
//! stdin), keeps the `HOLD ...` lines, prints the verdict and exits with 1 if the history has
//! any violation. Workers in any language print `HOLD` lines (see
//! `fencelock_chaos::history::Hold::to_line`), so their outputs can simply be concatenated.
//!
//! ```text
//! chaos-check [--timeline] [FILE...]
//! ```
//!
//! `--timeline` first prints every hold in start order: offset from the first start, name,
//! fencing token, holder, and how long it was held.

use std::io::{BufRead, BufReader};

use fencelock_chaos::history::{check, Hold};

fn main() {
    let mut timeline = false;
    let mut files = Vec::new();
    for a in std::env::args().skip(1) {
        if a == "--timeline" {
            timeline = true;
        } else {
            files.push(a);
        }
    }
    let mut holds = Vec::new();
    let mut read = |r: &mut dyn BufRead| {
        for line in r.lines().map_while(Result::ok) {
            if let Some(h) = Hold::parse_line(&line) {
                holds.push(h);
            }
        }
    };
    if files.is_empty() {
        read(&mut std::io::stdin().lock());
    }
    for f in &files {
        let file = std::fs::File::open(f).unwrap_or_else(|e| {
            eprintln!("chaos-check: {f}: {e}");
            std::process::exit(2)
        });
        read(&mut BufReader::new(file));
    }
    if timeline {
        holds.sort_by_key(|h| h.start_us);
        let t0 = holds.first().map_or(0, |h| h.start_us);
        for h in &holds {
            println!(
                "{:>10.3} ms  {:<12} token {:>6}  {:<20} held {:.3} ms",
                (h.start_us - t0) as f64 / 1000.0,
                h.name,
                h.fencing_token,
                h.holder,
                h.end_us.saturating_sub(h.start_us) as f64 / 1000.0
            );
        }
    }
    let verdict = check(&holds);
    println!("{verdict}");
    std::process::exit(if verdict.is_ok() { 0 } else { 1 });
}
