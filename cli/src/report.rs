//! fencelock's own lines on stderr (stdout is the command's): words for a person, or with
//! `run --json` one JSON object per line for a machine, each with an `"event"`:
//!
//! - `acquired`: `name`, `kind`, `fencing_token`, `waited_ms` (never the token);
//! - `lost`: `name`, `reason`, and what was done about the command;
//! - `warning`: `message`;
//! - `trace` (with `--verbose`): `line`, one of the core's events;
//! - `exit`, always the last: `exit_code`, `outcome` (`completed`: the command ran and exited;
//!   `lost`; `not_acquired`; `stopped`: a signal ended the wait; `error`), the command's
//!   `command_exit_code` or `command_signal` when it ran, and `message` when fencelock failed.
//!
//! No line holds a password (messages name servers by the core's redacted labels) or the
//! lock's token.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use crate::exit::Failure;

static JSON: AtomicBool = AtomicBool::new(false);
static QUIET: AtomicBool = AtomicBool::new(false);

/// Words (false) or JSON (true) for every later line; set once per command line, as a
/// process may run several (the Node package's tests do).
pub fn set_json(json: bool) {
    JSON.store(json, Ordering::Relaxed);
}

pub fn is_json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// `-q`: a refusal (another holds the name) is said by the exit code alone, as the cron recipe
/// of docs/cli.md needs (cron mails whatever a job prints); errors are still printed.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// How fencelock's work ended, when it did not fail: the exit code and, for `run`, what the
/// command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    pub code: u8,
    pub outcome: &'static str,
    /// The command's end: `Ok(exit code)` or `Err(signal)`.
    pub command: Option<Result<i32, i32>>,
}

impl Done {
    /// A subcommand's plain success or "no" (`status` of a free name, a token that does not
    /// hold it).
    pub fn plain(code: u8) -> Done {
        Done {
            code,
            outcome: "completed",
            command: None,
        }
    }
}

fn line(value: Value) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{value}");
}

/// A warning: `fencelock: warning: ...`.
pub fn warn(message: &str) {
    if is_json() {
        line(json!({ "event": "warning", "message": message }));
    } else {
        eprintln!("fencelock: warning: {message}");
    }
}

/// One of the core's events (`--verbose`).
pub fn trace(event_line: &str) {
    if is_json() {
        line(json!({ "event": "trace", "line": event_line }));
    } else {
        eprintln!("fencelock: {event_line}");
    }
}

/// The lock was granted (JSON only: a person sees the command start).
pub fn acquired(name: &str, kind: &str, fencing_token: u64, waited_ms: u64) {
    if is_json() {
        line(json!({
            "event": "acquired",
            "name": name,
            "kind": kind,
            "fencing_token": fencing_token,
            "waited_ms": waited_ms,
        }));
    }
}

/// The lock was lost: `text` for a person says why and what happens to the command.
pub fn lost(name: &str, reason: &str, text: &str) {
    if is_json() {
        line(json!({ "event": "lost", "name": name, "reason": reason, "message": text }));
    } else {
        eprintln!("fencelock: {text}");
    }
}

/// The last line: nothing for a person when all went as it should (the exit code says it).
pub fn done(done: &Done) {
    if !is_json() {
        return;
    }
    let mut value = json!({ "event": "exit", "exit_code": done.code, "outcome": done.outcome });
    match done.command {
        Some(Ok(code)) => value["command_exit_code"] = json!(code),
        Some(Err(signal)) => value["command_signal"] = json!(signal),
        None => {}
    }
    line(value);
}

/// The last line of a failure: `fencelock: <message>`; nothing for a refusal under `-q`.
pub fn failed(failure: &Failure) {
    if QUIET.load(Ordering::Relaxed) && failure.outcome == "not_acquired" && !is_json() {
        return;
    }
    if is_json() {
        line(json!({
            "event": "exit",
            "exit_code": failure.code,
            "outcome": failure.outcome,
            "message": failure.message,
        }));
    } else {
        eprintln!("fencelock: {}", failure.message);
    }
}
