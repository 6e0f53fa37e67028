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
}

impl ErrorKind {
    /// Every kind, for the table tests of the bindings.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::InvalidArgument,
        ErrorKind::NotAcquired,
        ErrorKind::NotHeld,
        ErrorKind::Unavailable,
        ErrorKind::Redis,
        ErrorKind::Cancelled,
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
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of every fencelock operation: one variant per [`ErrorKind`], each with a message
/// that names the lock and the servers involved. Messages never contain a password or the
/// token of another holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// See [`ErrorKind::InvalidArgument`].
    InvalidArgument(String),
    /// See [`ErrorKind::NotAcquired`].
    NotAcquired(String),
    /// See [`ErrorKind::NotHeld`].
    NotHeld(String),
    /// See [`ErrorKind::Unavailable`].
    Unavailable(String),
    /// See [`ErrorKind::Redis`].
    Redis(String),
    /// See [`ErrorKind::Cancelled`].
    Cancelled(String),
}

impl Error {
    /// Builds an error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let m = message.into();
        match kind {
            ErrorKind::InvalidArgument => Error::InvalidArgument(m),
            ErrorKind::NotAcquired => Error::NotAcquired(m),
            ErrorKind::NotHeld => Error::NotHeld(m),
            ErrorKind::Unavailable => Error::Unavailable(m),
            ErrorKind::Redis => Error::Redis(m),
            ErrorKind::Cancelled => Error::Cancelled(m),
        }
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::NotAcquired(_) => ErrorKind::NotAcquired,
            Error::NotHeld(_) => ErrorKind::NotHeld,
            Error::Unavailable(_) => ErrorKind::Unavailable,
            Error::Redis(_) => ErrorKind::Redis,
            Error::Cancelled(_) => ErrorKind::Cancelled,
        }
    }

    /// The message, without the kind in front.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument(m)
            | Error::NotAcquired(m)
            | Error::NotHeld(m)
            | Error::Unavailable(m)
            | Error::Redis(m)
            | Error::Cancelled(m) => m,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::InvalidArgument(message.into())
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
    fn every_kind_round_trips_through_new_and_kind() {
        for kind in ErrorKind::ALL {
            let e = Error::new(kind, "detail");
            assert_eq!(e.kind(), kind);
            assert_eq!(e.message(), "detail");
            assert_eq!(e.to_string(), format!("{}: detail", kind.as_str()));
        }
    }
}
