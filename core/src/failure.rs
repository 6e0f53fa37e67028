//! Why one server did not answer a call as hoped, and which of those failures retrying can
//! cure.

use std::time::Duration;

use redis::RedisError;

/// Why one server did not answer a call as hoped.
#[derive(Debug, Clone)]
pub(crate) enum ServerFailure {
    /// No reply within the per-server timeout.
    Timeout(Duration),
    /// Could not connect, or the connection broke.
    Connection(String),
    /// The server refused our credentials or permissions, or the TLS handshake failed on a
    /// certificate: retrying will not help.
    Auth(String),
    /// The server answered with an error (for example WRONGTYPE) or an unexpected reply.
    Reply(String),
}

impl ServerFailure {
    /// Failures that retrying will not cure.
    pub fn is_permanent(&self) -> bool {
        matches!(self, ServerFailure::Auth(_) | ServerFailure::Reply(_))
    }

    pub fn from_redis(e: &RedisError) -> ServerFailure {
        // Messages of redis-rs name the command and the server's reply; they do not contain
        // URLs or passwords.
        if e.is_timeout() {
            ServerFailure::Timeout(Duration::ZERO)
        } else if e.code() == Some("READONLY") || e.to_string().contains("READONLY") {
            // A replica, e.g. a master demoted by a failover: reconnect (and re-ask the
            // sentinels) rather than fail for good.
            ServerFailure::Connection("the server is a read-only replica".into())
        } else if e.code() == Some("NOPERM") {
            // The ACL user lacks a command, key or channel (the detail names which).
            ServerFailure::Auth(format!(
                "permission denied by the server's ACL: {}",
                e.detail().unwrap_or("NOPERM")
            ))
        } else if e.kind() == redis::ErrorKind::AuthenticationFailed
            || e.code() == Some("WRONGPASS")
            || e.code() == Some("NOAUTH")
        {
            ServerFailure::Auth(format!(
                "authentication failed ({})",
                e.code().unwrap_or("bad credentials")
            ))
        } else if e.to_string().contains("certificate") {
            // A TLS handshake that failed on a certificate: configuration, not a transient
            // network problem (the message names the reason, never key material).
            ServerFailure::Auth(format!("TLS handshake failed: {e}"))
        } else if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_unrecoverable_error()
        {
            ServerFailure::Connection(e.to_string())
        } else {
            ServerFailure::Reply(e.to_string())
        }
    }
}

impl std::fmt::Display for ServerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerFailure::Timeout(t) if t.is_zero() => f.write_str("timed out"),
            ServerFailure::Timeout(t) => write!(f, "no reply within {} ms", t.as_millis()),
            ServerFailure::Connection(m) => write!(f, "connection failed: {m}"),
            ServerFailure::Auth(m) => f.write_str(m),
            ServerFailure::Reply(m) => write!(f, "unexpected reply: {m}"),
        }
    }
}
