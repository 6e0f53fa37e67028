//! `fencelock`: a command-line distributed lock on the fencelock core, for cron jobs, deploys
//! and shell scripts. `fencelock run NAME -- CMD` holds a lock while CMD runs; `acquire`,
//! `release`, `extend` and `status` work on locks by name and token. docs/cli.md.

mod args;
mod child;
mod connect;
mod exit;
mod kind;
mod progress;
mod run;
mod signals;
mod tools;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and succeed; a usage error is 64 (EX_USAGE).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE } else { 0 });
        }
    };
    // One thread: the child's parent-death signal is tied to the thread that spawned it.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fencelock: cannot start: {e}");
            return ExitCode::from(exit::SOFTWARE);
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(a) => run::run(a).await,
            Command::Acquire(a) => tools::acquire(a).await,
            Command::Release(a) => tools::release(a).await,
            Command::Extend(a) => tools::extend(a).await,
            Command::Status(a) => tools::status(a).await,
        }
    });
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("fencelock: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
