//! Server URLs: `redis://`, `rediss://`, `redis+unix://` and `redis+sentinel://`, parsed into
//! what to connect to and a label for messages that never holds a password.

use redis::{ConnectionAddr, IntoConnectionInfo};

use crate::tls::LoadedTls;

/// One checked server entry: what to connect to and how to name it in messages.
#[derive(Clone)]
pub(crate) struct ServerSpec {
    /// Client holding the parsed connection info (may hold a password: never printed). For a
    /// Sentinel entry, its address is a placeholder replaced by the master's address.
    pub client: redis::Client,
    /// For a `redis+sentinel://` entry: the sentinels to ask and the master's name.
    pub sentinel: Option<SentinelSpec>,
    /// `host:port[/db]` or the socket path; never contains a password.
    pub label: String,
    /// Whether the connection uses TLS.
    pub tls: bool,
}

/// A Sentinel-monitored master: asked of the sentinels whenever a connection is opened.
#[derive(Clone)]
pub(crate) struct SentinelSpec {
    pub sentinels: Vec<redis::Client>,
    pub master: String,
}

pub(crate) fn parse_server(url: &str, tls: &LoadedTls) -> std::result::Result<ServerSpec, String> {
    let scheme = url.split("://").next().unwrap_or("");
    if !url.contains("://") {
        return Err("expected redis://[user:password@]host[:port][/db]".into());
    }
    if scheme == "redis+sentinel" {
        return parse_sentinel(url);
    }
    let secure = match scheme {
        "redis" | "redis+unix" | "unix" | "valkey" => false,
        "rediss" | "valkeys" => true,
        other => {
            return Err(format!(
                "unsupported scheme {other:?}; expected redis://, rediss://, redis+sentinel:// or redis+unix://"
            ))
        }
    };
    // The parser's own message may echo parts of the URL: report only its kind.
    let info = url
        .into_connection_info()
        .map_err(|e| format!("does not parse ({:?})", e.kind()))?;
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
        label,
        tls: secure,
    })
}

/// The client of a `rediss://` server, with the TLS settings applied.
fn tls_client(
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

/// `redis+sentinel://[user:password@]host[:port],host[:port]/master[/db]`: the credentials
/// and db are the master's; sentinels (default port 26379) are asked without credentials.
fn parse_sentinel(url: &str) -> std::result::Result<ServerSpec, String> {
    const FORM: &str =
        "expected redis+sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db]";
    let rest = &url["redis+sentinel://".len()..];
    let (authority, path) = rest.split_once('/').ok_or(FORM)?;
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let mut sentinels = Vec::new();
    for entry in hosts.split(',') {
        let (host, port) = match entry.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| format!("bad sentinel port in {entry:?}; {FORM}"))?,
            ),
            None => (entry, 26379),
        };
        if host.is_empty() || port == 0 {
            return Err(format!("bad sentinel address {entry:?}; {FORM}"));
        }
        let client = redis::Client::open(format!("redis://{host}:{port}"))
            .map_err(|e| format!("bad sentinel address {entry:?} ({:?})", e.kind()))?;
        sentinels.push(client);
    }
    let (master, db) = match path.trim_end_matches('/').split_once('/') {
        Some((m, db)) => (
            m,
            db.parse::<i64>()
                .map_err(|_| format!("bad db {db:?}; {FORM}"))?,
        ),
        None => (path.trim_end_matches('/'), 0),
    };
    if master.is_empty() {
        return Err(format!("the master name is missing; {FORM}"));
    }
    let template = match userinfo {
        Some(u) => format!("redis://{u}@127.0.0.1:1/{db}"),
        None => format!("redis://127.0.0.1:1/{db}"),
    };
    let client = redis::Client::open(template.as_str())
        .map_err(|e| format!("does not parse ({:?})", e.kind()))?;
    let label = if db != 0 {
        format!("sentinel:{master}/{db}")
    } else {
        format!("sentinel:{master}")
    };
    Ok(ServerSpec {
        client,
        sentinel: Some(SentinelSpec {
            sentinels,
            master: master.to_owned(),
        }),
        label,
        tls: false,
    })
}

/// A URL for messages: any `user:password@` part replaced by `***@`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.to_owned()
        };
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}***@{}", &url[..scheme_end + 3], &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_masks_userinfo_only() {
        assert_eq!(redact_url("redis://u:p@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
        assert_eq!(redact_url("redis://h:1/a@b"), "redis://h:1/a@b");
        assert_eq!(redact_url("u:p@h"), "***");
    }
}
