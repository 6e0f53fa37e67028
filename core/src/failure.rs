//! Why one server did not answer a call as hoped, and which of those failures retrying can
//! cure: configuration (credentials, permissions, TLS, an address that cannot be) fails a call
//! at once, whatever its wait limit; a server that is down, slow, loading or failing over is
//! retried.

use std::time::Duration;

use redis::RedisError;

use crate::error::ErrorKind;

/// The first words of the errors fencelock's scripts raise for a call whose name or lease
/// is of another kind (`permits.lua`, `holder.lua`), and for one that names another limit than
/// the servers hold: a usage error of the caller, not a server's.
const REFUSALS: [(&str, ErrorKind); 2] = [
    ("FENCELOCK_WRONGKIND", ErrorKind::WrongKind),
    ("FENCELOCK_INVALID", ErrorKind::InvalidArgument),
];

/// Reply codes of a server that is there but not ready: retried like a connection failure.
const UNREADY_CODES: [&str; 4] = ["LOADING", "MASTERDOWN", "BUSY", "CLUSTERDOWN"];

/// Reply codes of a cluster whose slot is moving between nodes (a redirection the cluster
/// connection could not settle within its retries, or a script whose keys are split between
/// the two nodes for the moment): retried shortly, within the call's time.
const SLOT_MOVING_CODES: [&str; 3] = ["TRYAGAIN", "ASK", "MOVED"];

/// What the resolver says of a host name that does not exist (glibc, musl, macOS).
const NO_SUCH_HOST: [&str; 3] = [
    "Name or service not known",
    "No address associated with hostname",
    "nodename nor servname provided",
];

/// Why one server did not answer a call as hoped.
#[derive(Debug, Clone)]
pub(crate) enum ServerFailure {
    /// No reply within the per-server timeout.
    Timeout(Duration),
    /// Could not connect, or the connection broke.
    Connection(String),
    /// The address refused the connection: nothing listens there (a server not started, a
    /// wrong port). Retried, but a wait that meets only these gives up after
    /// [`refused_attempts`](crate::Builder::refused_attempts). A master a Sentinel or a
    /// Cluster names is [`Connection`](Self::Connection) instead ([`in_failover`](Self::in_failover)).
    NotListening(String),
    /// The server answered that it cannot serve yet (loading its data, a failover, a busy
    /// script): nothing was done, and a retry may succeed.
    Unready(String),
    /// A configuration problem that retrying cannot cure: credentials, ACL permissions, TLS
    /// (certificates, CA, a TLS port reached without TLS or the other way round), an address
    /// that cannot resolve. The message names the cause, never a secret.
    Config(String),
    /// The server answered with an error (for example WRONGTYPE) or an unexpected reply.
    Reply(String),
    /// A script refused the call as the caller's mistake ([`REFUSALS`]): the name is of
    /// another kind, or the call names another limit. The kind says which.
    Refused(ErrorKind, String),
    /// The lock's cluster slot is moving between nodes (TRYAGAIN, or a redirection not
    /// settled yet): nothing was done, and the call is sent again shortly, within its time.
    SlotMoving(String),
    /// The server did the write, but fewer replicas than asked acknowledged it in time
    /// (replica acknowledgment, `WAIT`): its answer does not count, and a retry may succeed.
    NotReplicated(String),
}

impl ServerFailure {
    /// The failure's kind in one word (the `error` label of
    /// [`SERVER_ERRORS`](crate::measure::SERVER_ERRORS)), never its message.
    pub fn label(&self) -> &'static str {
        match self {
            ServerFailure::Timeout(_) => "timeout",
            ServerFailure::Connection(_) | ServerFailure::NotListening(_) => "connection",
            ServerFailure::Unready(_) => "unready",
            ServerFailure::Config(_) => "config",
            ServerFailure::Reply(_) => "reply",
            ServerFailure::Refused(..) => "refused",
            ServerFailure::SlotMoving(_) => "slot_moving",
            ServerFailure::NotReplicated(_) => "not_replicated",
        }
    }

    /// Failures that retrying will not cure.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ServerFailure::Config(_) | ServerFailure::Reply(_) | ServerFailure::Refused(..)
        )
    }

    /// Whether the connection was refused (see [`NotListening`](Self::NotListening)).
    pub fn not_listening(&self) -> bool {
        matches!(self, ServerFailure::NotListening(_))
    }

    /// This failure where the address came from a Sentinel or a Cluster's slot map: a
    /// refusal there is a master down while a failover moves it, waited through like any
    /// broken connection.
    pub fn in_failover(self) -> ServerFailure {
        match self {
            ServerFailure::NotListening(m) => ServerFailure::Connection(m),
            other => other,
        }
    }

    /// The error kind of a call that failed for good with these `failures`: a script's
    /// refusal's ([`REFUSALS`]), else `Redis` when a server answered with an error, else
    /// `Unavailable`.
    pub fn error_kind<'a>(failures: impl IntoIterator<Item = &'a ServerFailure>) -> ErrorKind {
        let mut kind = ErrorKind::Unavailable;
        for f in failures {
            match f {
                ServerFailure::Refused(k, _) => return *k,
                ServerFailure::Reply(_) => kind = ErrorKind::Redis,
                _ => {}
            }
        }
        kind
    }

    /// A failure of a call of the script whose code is `source`: a permission denial inside
    /// it names the command it stopped at, from the line the server reports
    /// (`@user_script:LINE`), since Redis 7.0's message names neither command nor key.
    pub fn from_script(e: &RedisError, source: &str) -> ServerFailure {
        let failure = ServerFailure::from_redis(e);
        let ServerFailure::Config(msg) = &failure else {
            return failure;
        };
        let text = e.to_string();
        let Some(line) = text
            .split("@user_script:")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return failure;
        };
        let command = source
            .lines()
            .nth(line.saturating_sub(1))
            .and_then(|l| l.split("redis.call(").nth(1))
            .and_then(|c| c.split(['\'', '"']).nth(1));
        match command {
            Some(c) => ServerFailure::Config(format!(
                "{msg} (the script's '{}' command)",
                c.to_ascii_lowercase()
            )),
            None => failure,
        }
    }

    pub fn from_redis(e: &RedisError) -> ServerFailure {
        // Messages of redis-rs name the command and the server's reply; they do not contain
        // URLs or passwords.
        let text = e.to_string();
        let code = e.code();
        if let Some(kind) = REFUSALS
            .iter()
            .find_map(|(word, kind)| (code == Some(*word)).then_some(*kind))
        {
            // The script's own words, without where the server says it stopped.
            let detail = e.detail().unwrap_or_default();
            let said = detail.split(" script:").next().unwrap_or(detail);
            ServerFailure::Refused(kind, said.trim().to_owned())
        } else if e.is_timeout() {
            ServerFailure::Timeout(Duration::ZERO)
        } else if code == Some("READONLY") || text.contains("READONLY") {
            // A replica, e.g. a master demoted by a failover: reconnect (and re-ask the
            // sentinels) rather than fail for good.
            ServerFailure::Connection("the server is a read-only replica".into())
        } else if let Some(c) = code.filter(|c| SLOT_MOVING_CODES.contains(c)) {
            ServerFailure::SlotMoving(format!("the lock's cluster slot is moving ({c})"))
        } else if let Some(c) = code.filter(|c| UNREADY_CODES.contains(c)) {
            ServerFailure::Unready(format!("the server is not ready ({c})"))
        } else if text.contains("Unknown Redis command") {
            // Inside a script: a command of a later server version (from_script names it),
            // e.g. SPUBLISH (7.0) on a node of a cluster half upgraded from 6.2.
            ServerFailure::Config(format!(
                "the server does not know a command fencelock uses, which this server's \
                 version does not have: fencelock needs Redis 6.2 or later, and a cluster whose \
                 nodes all have sharded pub/sub (Redis 7.0) or none of them ({})",
                e.detail().unwrap_or(&text).trim()
            ))
        } else if code == Some("NOPERM")
            || text.contains("NOPERM")
            || text.contains("The user executing the script can't")
        {
            // The ACL user lacks a command, key or channel, also inside a script (the detail
            // names which).
            ServerFailure::Config(format!(
                "permission denied by the server's ACL: {}",
                permission_detail(e, &text)
            ))
        } else if e.kind() == redis::ErrorKind::AuthenticationFailed
            || code == Some("WRONGPASS")
            || code == Some("NOAUTH")
        {
            ServerFailure::Config(format!(
                "authentication failed ({})",
                code.unwrap_or("bad credentials")
            ))
        } else if text.contains("received fatal alert") {
            // The server refused our side of the handshake: no client certificate where one
            // is required (CertificateRequired), one from another CA (UnknownCA), ...
            ServerFailure::Config(format!(
                "TLS handshake failed: the server refused this client ({text})"
            ))
        } else if text.to_ascii_lowercase().contains("certificate") {
            // A certificate we could not verify, or could not use: configuration, not a
            // transient network problem (the message names the reason, never key material).
            ServerFailure::Config(format!("TLS handshake failed: {text}"))
        } else if NO_SUCH_HOST.iter().any(|m| text.contains(m)) {
            ServerFailure::Config(format!("the host name does not resolve ({text})"))
        } else if e.kind() == redis::ErrorKind::Parse {
            // Something else listens on the port (a web server, a database of another kind):
            // its answer is not the Redis protocol. Retrying never cures that.
            ServerFailure::Config(
                "did not answer as a Redis server (its reply is not the Redis protocol: is this \
                 the Redis port?)"
                    .into(),
            )
        } else if e.is_connection_refusal() {
            ServerFailure::NotListening(text)
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
            ServerFailure::Connection(text)
        } else {
            ServerFailure::Reply(text)
        }
    }
}

/// What a NOPERM error says was denied: the command, key or channel, without the rest of a
/// script error's text.
fn permission_detail(e: &RedisError, text: &str) -> String {
    let from = text
        .find("NOPERM")
        .map_or(text, |i| &text[i + "NOPERM".len()..]);
    let detail = e
        .detail()
        .filter(|_| e.code() == Some("NOPERM"))
        .unwrap_or(from)
        .trim()
        .trim_start_matches(':')
        .trim();
    // A script error appends where it happened ("script: ..., on @user_script:..."): cut it.
    let detail = detail.split(" script:").next().unwrap_or(detail);
    if detail.is_empty() {
        "NOPERM".into()
    } else {
        detail.to_owned()
    }
}

impl std::fmt::Display for ServerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerFailure::Timeout(t) if t.is_zero() => f.write_str("timed out"),
            ServerFailure::Timeout(t) => write!(f, "no reply within {} ms", t.as_millis()),
            ServerFailure::Connection(m) | ServerFailure::NotListening(m) => {
                write!(f, "connection failed: {m}")
            }
            ServerFailure::Unready(m)
            | ServerFailure::SlotMoving(m)
            | ServerFailure::Config(m)
            | ServerFailure::NotReplicated(m) => f.write_str(m),
            ServerFailure::Reply(m) => write!(f, "unexpected reply: {m}"),
            ServerFailure::Refused(_, m) => f.write_str(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(reply: &str) -> RedisError {
        let value = redis::parse_redis_value(reply.as_bytes()).unwrap();
        value.extract_error().unwrap_err()
    }

    #[test]
    fn a_command_the_server_lacks_is_named_with_why() {
        let source = "redis.call('DEL', KEYS[1])\nreturn redis.call('SPUBLISH', ARGV[1], '')\n";
        let e = server_error(
            "-ERR Error running script (call to f_0123): @user_script:2: @user_script: 2: \
             Unknown Redis command called from Lua script\r\n",
        );
        let ServerFailure::Config(msg) = ServerFailure::from_script(&e, source) else {
            panic!("not a configuration failure: {e}");
        };
        assert!(msg.contains("the script's 'spublish' command"), "{msg}");
        assert!(msg.contains("this server's version does not have"), "{msg}");
    }
}
