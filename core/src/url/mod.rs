//! Server URLs: `redis://`, `rediss://`, `redis+unix://`, `redis+sentinel://` and
//! `redis+cluster://` (each `+` scheme also as `rediss+...` for TLS), parsed into what to
//! connect to and a label for messages that never holds a password.
//!
//! Credentials are written as users write them, unencoded: base64 passwords hold `/`, `+` and
//! `=`, others `?`, `#`, `@` or `%`. So the credentials of `scheme://user:password@host...`
//! are everything between `://` and the **last** `@` (the user ends at the first `:`), and
//! the `pass=`/`user=` values of a `redis+unix://` query run to the next `&` that starts a
//! known parameter, or the end. They are percent-encoded here before the URL parser sees them;
//! a `%` followed by two hex digits stays an escape, as in any URL (an already encoded
//! password still works; a literal `%` is written `%25`). [`redact_url`] masks the same parts
//! in every message, whatever they hold.
//!
//! One file per concern: this one dispatches on the scheme and parses the plain entries;
//! [`sentinel`] and [`cluster`] parse theirs; [`credentials`] encodes and decodes what users
//! write; [`redact`] masks credentials for messages.

mod cluster;
mod credentials;
mod redact;
mod sentinel;

use redis::{ConnectionAddr, IntoConnectionInfo};

use crate::tls::LoadedTls;
pub(crate) use cluster::ClusterSpec;
use credentials::encode_credentials;
pub use redact::{check_url_redaction, redact_url, url_has_password};
pub(crate) use sentinel::SentinelSpec;

/// One checked server entry: what to connect to and how to name it in messages.
#[derive(Clone)]
pub(crate) struct ServerSpec {
    /// Client holding the parsed connection info (may hold a password: never printed). For a
    /// Sentinel entry, its address is a placeholder replaced by the master's address.
    pub client: redis::Client,
    /// For a `redis+sentinel://` entry: the sentinels to ask and the master's name.
    pub sentinel: Option<SentinelSpec>,
    /// For a `redis+cluster://` entry: the seed nodes of the cluster (then `client` is the
    /// first seed's, for messages and probes).
    pub cluster: Option<ClusterSpec>,
    /// `host:port[/db]` or the socket path; never contains a password.
    pub label: String,
    /// Whether the connection uses TLS.
    pub tls: bool,
}

/// Schemes of a server over TCP (credentials in the userinfo).
pub(super) const TCP_SCHEMES: [&str; 4] = ["redis", "rediss", "valkey", "valkeys"];
/// Schemes of a server on a Unix socket (credentials in the query).
pub(super) const UNIX_SCHEMES: [&str; 2] = ["redis+unix", "unix"];
/// The query parameters of a Unix socket URL (the `pass` and `user` values may hold `&`).
pub(super) const UNIX_PARAMS: [&str; 4] = ["db", "user", "pass", "protocol"];
/// The query parameters of a Sentinel URL (both may hold `&`).
pub(super) const SENTINEL_PARAMS: [&str; 2] = ["sentinel_user", "sentinel_password"];
/// The query parameters that hold credentials.
pub(super) const SECRET_PARAMS: [&str; 4] = ["user", "pass", "sentinel_user", "sentinel_password"];

/// Parses one server entry; `password` is for its servers (a Sentinel entry's master, a
/// cluster's nodes) when the URL gives none ([`Builder::password`](crate::Builder::password)).
pub(crate) fn parse_server(
    url: &str,
    tls: &LoadedTls,
    password: Option<&str>,
) -> std::result::Result<ServerSpec, String> {
    let scheme = url.split("://").next().unwrap_or("");
    if !url.contains("://") {
        return Err("expected redis://[user:password@]host[:port][/db]".into());
    }
    if scheme == "redis+sentinel" || scheme == "rediss+sentinel" {
        return sentinel::parse_sentinel(url, tls, password);
    }
    if scheme == "redis+cluster" || scheme == "rediss+cluster" {
        return cluster::parse_cluster(url, tls, password);
    }
    let url = encode_credentials(url);
    let url = url.as_str();
    let secure = match scheme {
        "redis" | "redis+unix" | "unix" | "valkey" => false,
        "rediss" | "valkeys" => true,
        other => {
            return Err(format!(
                "unsupported scheme {other:?}; expected redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster://, rediss+cluster:// or redis+unix://"
            ))
        }
    };
    // The parser's own message may echo parts of the URL: report only its kind.
    let info = url
        .into_connection_info()
        .map_err(|e| format!("does not parse ({:?})", e.kind()))?;
    let info = with_password(info, password);
    if let ConnectionAddr::Tcp(_, 0) | ConnectionAddr::TcpTls { port: 0, .. } = info.addr() {
        return Err("port 0 is not a server's port".into());
    }
    let db = info.redis_settings().db();
    let label = match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port}"),
        ConnectionAddr::Unix(path) => path.display().to_string(),
        other => format!("{other}"),
    };
    let label = if db != 0 {
        format!("{label}/{db}")
    } else {
        label
    };
    let client = if secure {
        tls_client(info, tls)?
    } else {
        redis::Client::open(info).map_err(|e| format!("cannot be used ({:?})", e.kind()))?
    };
    Ok(ServerSpec {
        client,
        sentinel: None,
        cluster: None,
        label,
        tls: secure,
    })
}

/// The connection info with `password` when it has none of its own (the URL's wins).
pub(super) fn with_password(
    info: redis::ConnectionInfo,
    password: Option<&str>,
) -> redis::ConnectionInfo {
    match password {
        Some(p) if info.redis_settings().password().is_none() => {
            let settings = info.redis_settings().clone().set_password(p);
            info.set_redis_settings(settings)
        }
        _ => info,
    }
}

/// The client of a `rediss://` server, with the TLS settings applied.
pub(super) fn tls_client(
    mut info: redis::ConnectionInfo,
    tls: &LoadedTls,
) -> std::result::Result<redis::Client, String> {
    if tls.insecure {
        if let ConnectionAddr::TcpTls { host, port, .. } = info.addr().clone() {
            info = info.set_addr(ConnectionAddr::TcpTls {
                host,
                port,
                insecure: true,
                tls_params: None,
            });
        }
    }
    match &tls.certificates {
        Some(certs) => redis::Client::build_with_tls(info, certs.clone()),
        None => redis::Client::open(info),
    }
    .map_err(|e| {
        format!(
            "TLS settings cannot be used: {}",
            e.detail().unwrap_or("invalid certificate or key")
        )
    })
}

#[cfg(test)]
mod tests;
