//! `fencelock run NAME -- CMD`: acquire, run the command as a child while the lock is kept
//! alive, release when it exits, exit with its code. A lost lock ends the command's process
//! group (SIGTERM, then SIGKILL after `--kill-after`) and exits with the lost code; signals
//! sent to fencelock go to the command's group.

use std::time::{Duration, Instant};

use fencelock::{AcquireOptions, ErrorKind, LeaseKind, Lock, LockManager};

use crate::args::{LockArgs, OutputArgs, RunArgs};
use crate::child::{self, Running};
use crate::exit::{self, Failure};
use crate::progress::Progress;
use crate::report::{self, Done};
use crate::signals::{self, Signals};
use crate::{connect, kind};

/// How long a stopped wait's cleanup may take before fencelock exits anyway (each server's
/// part gives up after about a second).
const SETTLE_LIMIT: Duration = Duration::from_secs(3);

/// How often the waiting line is drawn again.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// `run`, or `elect` with the candidate's `value` (`campaign`): the same, the lock being the
/// election's term.
pub async fn run(args: RunArgs, campaign: Option<String>) -> Result<Done, Failure> {
    let mut signals = Signals::listen()?;
    let opts = AcquireOptions::new(args.lock.ttl)
        .wait(args.lock.wait.limit())
        .auto_extend(args.max_hold);
    let started = Instant::now();
    let (manager, lock) = acquire_as(&args.lock, &opts, &mut signals, campaign).await?;
    let name = args.lock.name.as_str();
    report::acquired(
        name,
        kind::label(lock.kind()),
        lock.fencing_token(),
        crate::state::millis(started.elapsed()),
    );
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
    let done = supervise(running, &lock, &args, &mut signals, Instant::now()).await?;
    let done = finish(lock, name, done, args.lost_exit_code).await;
    drop(manager);
    Ok(done)
}

/// Connects and acquires (waiting as the options say), drawing the waiting line; a signal
/// stops the wait (exit 128 + its number).
pub async fn acquire(
    args: &LockArgs,
    opts: &AcquireOptions,
    signals: &mut Signals,
) -> Result<(LockManager, Lock), Failure> {
    acquire_as(args, opts, signals, None).await
}

/// [`acquire`], or with `campaign` (a candidate's value) a term of the election `args.name`.
async fn acquire_as(
    args: &LockArgs,
    opts: &AcquireOptions,
    signals: &mut Signals,
    campaign: Option<String>,
) -> Result<(LockManager, Lock), Failure> {
    let kind = kind::of(&args.kind)?;
    if campaign.is_some() && kind != LeaseKind::Lock {
        let usage =
            "an election's term is a lock: --semaphore, --shared and --exclusive do not apply";
        return Err(Failure::new(exit::USAGE, usage));
    }
    let manager = connect::manager(&args.servers, args.output.quiet)?;
    listen(args.output);
    let mut progress = Progress::new(args.output.quiet || report::is_json());
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    let acquiring: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> = match campaign {
        Some(value) => {
            let core = |e: fencelock::Error| Failure::from_core(&e, args.conflict_exit_code);
            let election = manager.election(&args.name).map_err(core)?;
            Box::pin(election.prepare_campaign(&value, opts).map_err(core)?)
        }
        None => Box::pin(manager.acquire_lease_with(&args.name, kind, opts)),
    };
    let outcome = {
        tokio::pin!(acquiring);
        loop {
            tokio::select! {
                got = &mut acquiring => break Ok(got),
                signal = signals.recv() => break Err(Failure::new(
                    exit::SIGNALLED + signal as u8,
                    format!("stopped by {} while waiting for {}", signals::name(signal), args.name),
                ).outcome("stopped")),
                _ = tick.tick(), if progress.is_on() => {
                    progress.draw(&manager, &args.name, kind).await;
                }
            }
        }
    };
    progress.clear();
    // The acquisition's end (`Ok`: the core's outcome), or a signal that stopped the wait.
    let outcome = match outcome {
        Ok(Ok(lock)) => Ok(lock),
        Ok(Err(e)) => Err(not_acquired(&e, args, kind, &manager).await),
        Err(stopped) => Err(stopped),
    };
    if outcome.is_err() {
        // A wait stopped by a signal dropped its acquisition, whose votes and place in line
        // are given back in the background: let that finish before the process exits, so the
        // others' line does not wait for the place to expire.
        manager.settle(SETTLE_LIMIT).await;
    }
    Ok((manager, outcome?))
}

/// How long a refusal's message may wait to say who holds the name.
const WHO_HOLDS_LIMIT: Duration = Duration::from_secs(2);

/// The failure of an acquisition: "not acquired" says so plainly, with the conflict code, and
/// what holds the name (its holder's label, since when and its fencing token when the holder
/// left a note, `--holder`; the time left; who waits), read once more.
async fn not_acquired(
    e: &fencelock::Error,
    args: &LockArgs,
    kind: LeaseKind,
    manager: &LockManager,
) -> Failure {
    let mut failure = Failure::from_core(e, args.conflict_exit_code);
    if e.kind() == ErrorKind::NotAcquired {
        let taken = kind::taken(&args.name, kind);
        let seen = tokio::time::timeout(
            WHO_HOLDS_LIMIT,
            crate::state::read(manager, &args.name, kind),
        )
        .await;
        failure.message = match seen {
            Ok(Ok(seen)) if seen.held => format!("{taken} ({}): not acquired", seen.line),
            _ => format!("{taken}: not acquired"),
        };
    }
    failure
}

/// `--verbose`: fencelock's events on stderr. Otherwise, unless `-q`, the core's warning that
/// a wait makes no progress because servers do not answer (every few seconds, naming them and
/// why), on a terminal or not: a wait without a limit is never silent.
fn listen(output: OutputArgs) {
    use fencelock::ffi_support::observe::{add_listener, EventLevel};
    let listen = if output.verbose {
        add_listener(EventLevel::Debug, |e| report::trace(&e.to_line()))
    } else if !output.quiet {
        add_listener(EventLevel::Warn, |e| {
            if e.message.starts_with("acquire still waiting") {
                report::warn(&e.to_line());
            }
        })
    } else {
        return;
    };
    if let Err(e) = listen {
        report::warn(&e.to_string());
    }
}

/// Waits for the command to exit, passing signals on to its group; a lost lock ends it.
/// Returns the command's end, with its exit code or the lost code.
async fn supervise(
    mut running: Running,
    lock: &Lock,
    args: &RunArgs,
    signals: &mut Signals,
    held_since: Instant,
) -> Result<Done, Failure> {
    let lost = lock.lost();
    tokio::pin!(lost);
    let mut watching = true;
    loop {
        tokio::select! {
            status = running.child.wait() => {
                running.give_back_terminal();
                let status = status?;
                return Ok(Done {
                    code: child::exit_code(status),
                    outcome: "completed",
                    command: child::end(status),
                });
            }
            reason = &mut lost, if watching => {
                watching = false;
                let Some(reason) = reason else { continue };
                let name = &args.lock.name;
                let stopping = format!(
                    "stopping the command (SIGTERM to its process group {}, SIGKILL {:?} later)",
                    running.group, args.kill_after
                );
                match args.max_hold.filter(|m| ended_at_max_hold(*m, held_since.elapsed())) {
                    Some(m) => report::lost(name, "max_hold", &format!(
                        "held the lock {name} for --max-hold {m:?}: {stopping}"
                    )),
                    None => report::lost(name, reason.as_str(), &format!(
                        "lost the lock {name}: {reason}; {stopping}"
                    )),
                }
                let status = running.terminate(args.kill_after).await?;
                running.give_back_terminal();
                return Ok(Done {
                    code: args.lost_exit_code,
                    outcome: "lost",
                    command: child::end(status),
                });
            }
            signal = signals.recv() => running.signal_group(signal),
        }
    }
}

/// Whether a hold that ended after `held` did so because `--max-hold` (`max_hold`) passed: the
/// core's auto-extension makes the lock's validity end there (less its drift allowance).
fn ended_at_max_hold(max_hold: Duration, held: Duration) -> bool {
    held + max_hold / 10 + Duration::from_millis(50) >= max_hold
}

/// Releases after the command ended. A lock found not held any more means the command's end
/// ran unprotected: the lost code, and why on stderr.
async fn finish(lock: Lock, name: &str, done: Done, lost_code: u8) -> Done {
    let lost = Done {
        code: lost_code,
        outcome: "lost",
        ..done
    };
    if lock.is_lost() {
        let _ = lock.release().await;
        return lost;
    }
    match lock.release().await {
        Ok(()) => done,
        Err(e) if e.kind() == ErrorKind::NotHeld => {
            let code = done.code;
            report::lost(
                name,
                "not held at the end",
                &format!(
                "the lock {name} was not held any more when the command exited (code {code}): {e}"
            ),
            );
            lost
        }
        Err(e) => {
            report::warn(&format!(
                "releasing {name} failed ({e}); it expires after its TTL"
            ));
            done
        }
    }
}
