//! The exit codes of `fencelock` (docs/cli.md has the table): the child's own code when it
//! ran, else one that says which of fencelock's outcomes happened. Codes from `sysexits.h`
//! where one fits, as `flock -E` and `timeout` do.

use fencelock::{Error, ErrorKind};

/// Bad usage: an unknown option, a missing argument, a duration that does not parse.
pub const USAGE: u8 = 64;
/// The name is held as another kind (a lock, a semaphore, a read-write lock).
pub const WRONG_KIND: u8 = 65;
/// The servers cannot be reached, too few of them answer, or they answer with an error.
pub const UNAVAILABLE: u8 = 69;
/// fencelock failed in a way that is its own fault (it could not set up signal handling, ...).
pub const SOFTWARE: u8 = 70;
/// The lock was not acquired within the wait limit (`--conflict-exit-code` changes it).
pub const CONFLICT: u8 = 75;
/// The lock was lost while the command ran (`--lost-exit-code` changes it).
pub const LOST: u8 = 76;
/// Configuration: a server URL, TLS file or password file that does not work.
pub const CONFIG: u8 = 78;
/// The command was found but could not be run (as `env` and `timeout` exit).
pub const CANNOT_RUN: u8 = 126;
/// The command was not found.
pub const NOT_FOUND: u8 = 127;
/// 128 + the signal's number: a command killed by a signal, or fencelock stopped by one while
/// it waited.
pub const SIGNALLED: u8 = 128;
/// `status`: the name is free. `release`, `extend`: the token does not hold it.
pub const NO: u8 = 1;

/// A failure and the code it exits with; the message goes to stderr. `outcome` is its word in
/// `run --json`'s last line: `not_acquired`, `stopped` (a signal ended the wait) or `error`.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub outcome: &'static str,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            outcome: "error",
        }
    }

    /// The same failure with another outcome word.
    pub fn outcome(self, outcome: &'static str) -> Failure {
        Failure { outcome, ..self }
    }

    /// A core error, with the code of its kind (`conflict` for "not acquired").
    pub fn from_core(e: &Error, conflict: u8) -> Failure {
        let code = match e.kind() {
            ErrorKind::InvalidArgument => USAGE,
            ErrorKind::NotAcquired => conflict,
            ErrorKind::NotHeld => NO,
            ErrorKind::Unavailable | ErrorKind::Redis => UNAVAILABLE,
            ErrorKind::Cancelled => SIGNALLED + libc::SIGINT as u8,
            ErrorKind::WrongKind => WRONG_KIND,
        };
        let outcome = match e.kind() {
            ErrorKind::NotAcquired => "not_acquired",
            ErrorKind::Cancelled => "stopped",
            _ => "error",
        };
        Failure::new(code, e.to_string()).outcome(outcome)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::new(SOFTWARE, e.to_string())
    }
}
