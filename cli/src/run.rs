//! `fencelock run NAME -- CMD`: acquire, run the command as a child while the lock is kept
//! alive, release when it exits, exit with its code. A lost lock ends the command's process
//! group (SIGTERM, then SIGKILL after `--kill-after`) and exits with the lost code; signals
//! sent to fencelock go to the command's group.

use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LeaseKind, Lock, LockManager};

use crate::args::{LockArgs, OutputArgs, RunArgs};
use crate::child::{self, Running};
use crate::exit::{self, Failure};
use crate::progress::Progress;
use crate::signals::{self, Signals};
use crate::{connect, kind};

/// How often the waiting line is drawn again.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

pub async fn run(args: RunArgs) -> Result<u8, Failure> {
    let mut signals = Signals::listen()?;
    let opts = AcquireOptions::new(args.lock.ttl)
        .wait(args.lock.wait.limit())
        .auto_extend(args.max_hold);
    let (manager, lock) = acquire(&args.lock, &opts, &mut signals).await?;
    let name = args.lock.name.as_str();
    let env = [
        ("FENCELOCK_NAME", name.to_string()),
        (
            "FENCELOCK_TOKEN",
            String::from_utf8_lossy(lock.token()).into_owned(),
        ),
        ("FENCELOCK_FENCING_TOKEN", lock.fencing_token().to_string()),
    ];
    let running = match child::spawn(&args.command, &env) {
        Ok(running) => running,
        Err(failure) => {
            let _ = lock.release().await;
            return Err(failure);
        }
    };
    let code = supervise(running, &lock, &args, &mut signals).await?;
    let code = finish(lock, name, code, args.lost_exit_code).await;
    drop(manager);
    code
}

/// Connects and acquires (waiting as the options say), drawing the waiting line; a signal
/// stops the wait (exit 128 + its number).
pub async fn acquire(
    args: &LockArgs,
    opts: &AcquireOptions,
    signals: &mut Signals,
) -> Result<(LockManager, Lock), Failure> {
    let kind = kind::of(&args.kind)?;
    let manager = connect::manager(&args.servers, args.output.quiet)?;
    verbose(args.output);
    let mut progress = Progress::new(args.output.quiet);
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    let acquiring = manager.acquire_lease_with(&args.name, kind, opts);
    let outcome = {
        tokio::pin!(acquiring);
        loop {
            tokio::select! {
                got = &mut acquiring => break got.map_err(|e| not_acquired(&e, args, kind)),
                signal = signals.recv() => break Err(Failure::new(
                    exit::SIGNALLED + signal as u8,
                    format!("stopped by {} while waiting for {}", signals::name(signal), args.name),
                )),
                _ = tick.tick(), if progress.is_on() => {
                    progress.draw(&manager, &args.name, kind).await;
                }
            }
        }
    };
    progress.clear();
    Ok((manager, outcome?))
}

/// The failure of an acquisition: "not acquired" says so plainly, with the conflict code.
fn not_acquired(e: &fencelock::Error, args: &LockArgs, kind: LeaseKind) -> Failure {
    let mut failure = Failure::from_core(e, args.conflict_exit_code);
    if e.kind() == ErrorKind::NotAcquired {
        failure.message = format!("{}: not acquired", kind::taken(&args.name, kind));
    }
    failure
}

/// `--verbose`: fencelock's events on stderr.
fn verbose(output: OutputArgs) {
    if output.verbose {
        let listen = fencelock::observe::add_listener(fencelock::observe::EventLevel::Debug, |e| {
            eprintln!("fencelock: {}", e.to_line());
        });
        if let Err(e) = listen {
            eprintln!("fencelock: warning: {e}");
        }
    }
}

/// Waits for the command to exit, passing signals on to its group; a lost lock ends it.
/// Returns the command's exit code, or the lost code.
async fn supervise(
    mut running: Running,
    lock: &Lock,
    args: &RunArgs,
    signals: &mut Signals,
) -> Result<u8, Failure> {
    let lost = lock.lost();
    tokio::pin!(lost);
    let mut watching = true;
    loop {
        tokio::select! {
            status = running.child.wait() => {
                running.give_back_terminal();
                return Ok(child::exit_code(status?));
            }
            reason = &mut lost, if watching => {
                watching = false;
                let Some(reason) = reason else { continue };
                eprintln!(
                    "fencelock: lost the lock {}: {reason}; stopping the command (SIGTERM to \
                     its process group {}, SIGKILL {:?} later)",
                    args.lock.name, running.group, args.kill_after
                );
                running.terminate(args.kill_after).await?;
                running.give_back_terminal();
                return Ok(args.lost_exit_code);
            }
            signal = signals.recv() => running.signal_group(signal),
        }
    }
}

/// Releases after the command exited with `code`. A lock found not held any more means the
/// command's end ran unprotected: the lost code, and why on stderr.
async fn finish(lock: Lock, name: &str, code: u8, lost_code: u8) -> Result<u8, Failure> {
    if lock.is_lost() {
        let _ = lock.release().await;
        return Ok(lost_code);
    }
    match lock.release().await {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == ErrorKind::NotHeld => {
            eprintln!(
                "fencelock: the lock {name} was not held any more when the command exited \
                 (code {code}): {e}"
            );
            Ok(lost_code)
        }
        Err(e) => {
            eprintln!(
                "fencelock: warning: releasing {name} failed ({e}); it expires after its TTL"
            );
            Ok(code)
        }
    }
}
