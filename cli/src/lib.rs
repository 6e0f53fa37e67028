//! `fencelock`: a command-line distributed lock on the fencelock core, for cron jobs, deploys
//! and shell scripts. `fencelock run NAME -- CMD` holds a lock while CMD runs; `acquire`,
//! `release`, `extend` and `status` work on locks by name and token; `elect NAME -- CMD` runs
//! CMD while leading an election, `leader` shows its leader. docs/cli.md.
//!
//! A library as well as a binary: the Python and Node packages run the same command through
//! [`main`] in their own process (their `fencelock` entry points), so that `pip install` and
//! `npm install` put it on PATH without a second copy of the core.

mod args;
mod child;
mod connect;
mod exit;
mod kind;
mod leader;
mod man;
mod progress;
mod report;
mod run;
mod signals;
mod state;
mod tools;

use std::ffi::OsString;

use clap::Parser as _;

use crate::args::{Cli, Command};
use crate::report::Done;

/// Runs the command line `args` (the first is the program's name) to its end; returns the
/// exit code. Must be called on the process's main thread, outside any async runtime: the
/// command's parent-death signal is tied to the thread that spawned it, and `run` listens to
/// the process's signals (INT, TERM, HUP, QUIT, USR1, USR2) until it returns.
pub fn main(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and succeed; a usage error is 64 (EX_USAGE).
            let _ = e.print();
            return if e.use_stderr() { exit::USAGE } else { 0 };
        }
    };
    report::set_json(match &cli.command {
        Command::Run(a) => a.json,
        Command::Elect(a) => a.run.json,
        _ => false,
    });
    report::set_quiet(match &cli.command {
        Command::Run(a) => a.lock.output.quiet,
        Command::Elect(a) => a.run.lock.output.quiet,
        Command::Acquire(a) => a.lock.output.quiet,
        _ => false,
    });
    // One thread: the child's parent-death signal is tied to the thread that spawned it.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fencelock: cannot start: {e}");
            return exit::SOFTWARE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(a) => run::run(a, None).await,
            Command::Elect(a) => run::run(a.run, Some(a.value)).await,
            Command::Leader(a) => leader::leader(a).await.map(Done::plain),
            Command::Acquire(a) => tools::acquire(a).await.map(Done::plain),
            Command::Release(a) => tools::release(a).await.map(Done::plain),
            Command::Extend(a) => tools::extend(a).await.map(Done::plain),
            Command::Status(a) => tools::status(a).await.map(Done::plain),
            Command::Man(a) => man::print(a.subcommand.as_deref()).map(Done::plain),
        }
    });
    match outcome {
        Ok(done) => {
            report::done(&done);
            done.code
        }
        Err(failure) => {
            report::failed(&failure);
            failure.code
        }
    }
}
