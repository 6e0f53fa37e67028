//! `fencelock leader NAME [--json] [--watch]`: an election's leader, once (exit 0 while
//! someone leads, 1 when nobody does) or each change until a signal stops it.

use std::time::UNIX_EPOCH;

use fencelock::Leader;
use serde_json::json;

use crate::args::LeaderArgs;
use crate::connect;
use crate::exit::{self, Failure};
use crate::signals::Signals;
use crate::state::millis;

pub async fn leader(args: LeaderArgs) -> Result<u8, Failure> {
    let manager = connect::manager(&args.servers, false)?;
    let core = |e: fencelock::Error| Failure::from_core(&e, exit::NO);
    let election = manager.election(&args.name).map_err(core)?;
    if !args.watch {
        let leader = election.leader().await.map_err(core)?;
        print(&args, leader.as_ref());
        return Ok(if leader.is_some() { 0 } else { exit::NO });
    }
    let mut signals = Signals::listen()?;
    let mut observer = election.observe();
    loop {
        tokio::select! {
            report = observer.next() => print(&args, report.map_err(core)?.as_ref()),
            _ = signals.recv() => return Ok(0),
        }
    }
}

/// One line: `VALUE (term N, leading for Xs, Ys left)`, or `nobody leads NAME`; with --json
/// an object.
fn print(args: &LeaderArgs, leader: Option<&Leader>) {
    let since_ms = |l: &Leader| l.since.duration_since(UNIX_EPOCH).map_or(0, millis);
    if args.json {
        let line = match leader {
            Some(l) => json!({
                "name": args.name,
                "leader": true,
                "value": l.value,
                "fencing_token": l.fencing_token,
                "since_ms": since_ms(l),
                "remaining_ms": millis(l.remaining),
            }),
            None => json!({ "name": args.name, "leader": false }),
        };
        println!("{line}");
        return;
    }
    match leader {
        Some(l) => {
            let leading = l.since.elapsed().unwrap_or_default().as_secs_f64();
            let left = l.remaining.as_secs_f64();
            println!(
                "{} (term {}, leading for {leading:.1}s, {left:.1}s left)",
                l.value, l.fencing_token
            );
        }
        None => println!("nobody leads {}", args.name),
    }
}
