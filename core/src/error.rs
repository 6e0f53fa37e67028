//! The one error type of fencelock, mapped by every binding.

use std::fmt;

/// What went wrong, without the detail: the discriminant every binding maps, exhaustively,
/// to its own error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A bad name, TTL, URL, token or option. Raised before any network call.
    InvalidArgument,
    /// The wait limit passed: the lock is held by another owner, or no quorum agreed in time.
    NotAcquired,
    /// Release or extend of a lock that expired or was taken by another owner.
    NotHeld,
    /// Too few servers answered to reach a quorum.
    Unavailable,
    /// A server answered with an unexpected reply (for example `WRONGTYPE`).
    Redis,
    /// The operation was interrupted by the caller.
    Cancelled,
    /// The name is held as another kind than the call asks for (a lock, a semaphore, a
    /// read-write lock), or the token holds the other mode of a read-write lock (a reader
    /// asking to write would wait for itself). Raised at once, never retried.
    WrongKind,
}

impl ErrorKind {
    /// Every kind, for the table tests of the bindings.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::InvalidArgument,
        ErrorKind::NotAcquired,
        ErrorKind::NotHeld,
        ErrorKind::Unavailable,
        ErrorKind::Redis,
        ErrorKind::Cancelled,
        ErrorKind::WrongKind,
    ];

    /// A stable, human-readable name of the kind (`"not acquired"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::NotAcquired => "not acquired",
            ErrorKind::NotHeld => "not held",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Redis => "redis error",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::WrongKind => "wrong kind",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of every fencelock operation: its [`ErrorKind`], a message that names the lock
/// and the servers involved, and, for a failed acquisition, what each server said
/// ([`servers`](Error::servers)). Messages never contain a password or the token of another
/// holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    servers: Vec<ServerReport>,
}

/// What one server answered in the last attempt of a failed acquisition, for callers that
/// want more than the message (node-redlock's `ExecutionError.attempts` is built from it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// The server as configured, without its password (the URL, redacted).
    pub server: String,
    /// What it answered.
    pub outcome: ServerOutcome,
    /// The detail, for people: how long the holder keeps it, or why the server failed.
    pub detail: String,
}

/// One server's answer to an acquisition attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerOutcome {
    /// It granted the lock (the attempt still failed: too few others did, or too late).
    Granted,
    /// Another owner holds the lock there (or this token, and re-entry was not asked for).
    Held,
    /// It could not be reached, or it cannot serve yet (loading, failing over, a slot
    /// moving), or its write was not acknowledged by enough replicas.
    Unreachable,
    /// It did not answer within the per-server timeout.
    TimedOut,
    /// It answered with an error (a key of another type, a permission missing, a
    /// configuration that cannot work).
    Error,
}

impl ServerOutcome {
    /// Every outcome, for the bindings' table tests.
    pub const ALL: [ServerOutcome; 5] = [
        ServerOutcome::Granted,
        ServerOutcome::Held,
        ServerOutcome::Unreachable,
        ServerOutcome::TimedOut,
        ServerOutcome::Error,
    ];

    /// A stable name: `"granted"`, `"held"`, `"unreachable"`, `"timeout"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerOutcome::Granted => "granted",
            ServerOutcome::Held => "held",
            ServerOutcome::Unreachable => "unreachable",
            ServerOutcome::TimedOut => "timeout",
            ServerOutcome::Error => "error",
        }
    }
}

impl fmt::Display for ServerOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// Builds an error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            servers: Vec::new(),
        }
    }

    /// An [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// An [`ErrorKind::NotAcquired`] error.
    pub fn not_acquired(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::NotAcquired, message)
    }

    /// An [`ErrorKind::NotHeld`] error.
    pub fn not_held(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::NotHeld, message)
    }

    /// An [`ErrorKind::Unavailable`] error.
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unavailable, message)
    }

    /// An [`ErrorKind::Redis`] error.
    pub fn redis(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Redis, message)
    }

    /// An [`ErrorKind::Cancelled`] error.
    pub fn cancelled(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Cancelled, message)
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the kind in front.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What each server answered in the last attempt of a failed acquisition, one report per
    /// configured server in the manager's order; empty for every other error.
    pub fn servers(&self) -> &[ServerReport] {
        &self.servers
    }

    /// The same error with `servers` attached (what a failed acquisition reports; public for
    /// the bindings' tests).
    pub fn with_servers(mut self, servers: Vec<ServerReport>) -> Error {
        self.servers = servers;
        self
    }

    /// The same error (kind and servers) with another message.
    pub(crate) fn with_message(mut self, message: impl Into<String>) -> Error {
        self.message = message.into();
        self
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::invalid_argument(message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for Error {}

/// The result type of fencelock.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_have_distinct_stable_names() {
        let names: std::collections::HashSet<_> =
            ServerOutcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(names.len(), ServerOutcome::ALL.len());
        assert_eq!(ServerOutcome::TimedOut.to_string(), "timeout");
    }

    #[test]
    fn every_kind_round_trips_through_new_and_kind() {
        for kind in ErrorKind::ALL {
            let e = Error::new(kind, "detail");
            assert_eq!(e.kind(), kind);
            assert_eq!(e.message(), "detail");
            assert_eq!(e.to_string(), format!("{}: detail", kind.as_str()));
            assert!(e.servers().is_empty());
        }
    }
}
