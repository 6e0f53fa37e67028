//! fencelock-bench: the Rust benchmark runner of issue #8. Runs one scenario for one
//! implementation (`ours`, `rslock`, `floor`) against servers started by the orchestrator and
//! prints one JSON object as the last line of stdout; everything else goes to stderr.
//! Exit code 2 for bad flags or an unknown implementation.

mod cli;
mod election;
mod impls;
mod roundtrip;
mod scenarios;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use cli::Scenario;
use impls::Impl;

/// One multi-threaded runtime (one worker per core) for every implementation and scenario
/// alike; `None` (said on stderr) when it cannot start.
fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("fencelock-bench: cannot start the runtime: {e}");
            None
        }
    }
}

/// The election's scenarios (`election-*`), on the same runtime as the others.
fn run_election(cmd: &str, argv: &[String]) -> ExitCode {
    let opts = match election::parse(cmd, argv) {
        Ok(opts) => opts,
        Err(msg) => {
            eprintln!("fencelock-bench: {msg}\n{}", election::USAGE);
            return ExitCode::from(2);
        }
    };
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    let out = rt.block_on(election::run(cmd, &opts));
    rt.shutdown_background();
    match out {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fencelock-bench: election-{cmd}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The hand-off's floor (`rtt`, `rtt-echo`): a bare PUBLISH round trip between two processes,
/// on a runtime of one thread as a plain client would have.
fn run_roundtrip(cmd: &str, argv: &[String]) -> ExitCode {
    let opts = match roundtrip::parse(argv) {
        Ok(opts) => opts,
        Err(msg) => {
            eprintln!("fencelock-bench: {msg}\n{}", roundtrip::USAGE);
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fencelock-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(roundtrip::run(cmd, &opts)) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fencelock-bench: {cmd}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("{}\n{}\n{}", cli::USAGE, election::USAGE, roundtrip::USAGE);
        return ExitCode::SUCCESS;
    }
    if let Some(cmd) = argv.first().and_then(|a| a.strip_prefix("election-")) {
        return run_election(cmd, &argv[1..]);
    }
    match argv.first().map(String::as_str) {
        Some("rtt") => return run_roundtrip("rtt", &argv[1..]),
        Some("rtt-echo") => return run_roundtrip("echo", &argv[1..]),
        _ => {}
    }
    let args = match cli::parse(&argv) {
        Ok(a) => a,
        Err(cli::Usage(msg)) => {
            eprintln!("fencelock-bench: {msg}\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    let out = rt.block_on(async {
        let imp = match Impl::new(args.imp, &args.servers) {
            Ok(i) => Arc::new(i),
            Err(e) => return Err(e),
        };
        Ok(match args.scenario {
            Scenario::Cycle => scenarios::cycle(&args, &imp).await,
            Scenario::Contend => scenarios::contend(&args, &imp).await,
            Scenario::Scale => scenarios::scale(&args, Arc::clone(&imp)).await,
            Scenario::Hold => scenarios::hold(&args, Arc::clone(&imp)).await,
        })
    });
    let out = match out {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fencelock-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{out}");
    let _ = stdout.flush();
    // Background tasks (e.g. releases still in flight in a library) must not delay the exit.
    rt.shutdown_background();
    ExitCode::SUCCESS
}
