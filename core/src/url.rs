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
    /// For a `redis+cluster://` entry: the seed nodes of the cluster (then `client` is the
    /// first seed's, for messages and probes).
    pub cluster: Option<ClusterSpec>,
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

/// A Redis Cluster, named by some of its nodes: one member of the quorum.
#[derive(Clone)]
pub(crate) struct ClusterSpec {
    /// The seed nodes, each with the credentials and the TLS mode.
    pub nodes: Vec<redis::ConnectionInfo>,
    /// The TLS certificates (CA, client identity) of a `rediss+cluster://` entry.
    pub certificates: Option<redis::TlsCertificates>,
}

impl ClusterSpec {
    /// A client of the cluster over RESP3 (sharded pub/sub needs it).
    pub fn client(&self) -> redis::RedisResult<redis::cluster::ClusterClient> {
        self.builder().build()
    }

    /// A client of the cluster whose nodes' pushes (the subscriber's messages) go to `push`.
    pub fn client_with_push(
        &self,
        push: impl redis::aio::AsyncPushSender,
    ) -> redis::RedisResult<redis::cluster::ClusterClient> {
        self.builder().push_sender(push).build()
    }

    fn builder(&self) -> redis::cluster::ClusterClientBuilder {
        let mut builder = redis::cluster::ClusterClientBuilder::new(self.nodes.clone())
            .use_protocol(redis::ProtocolVersion::RESP3)
            // fencelock keeps its own time limits and retries (one retry after a broken
            // connection, a slot in migration retried within the call's time); the cluster
            // layer follows MOVED/ASK and refreshes its slot map, with short waits between
            // its own retries (its default waits at least 1.28 s, longer than most calls).
            .retries(3)
            .min_retry_wait(2)
            .max_retry_wait(100)
            .retry_wait_formula(10, 2);
        if let Some(certs) = &self.certificates {
            builder = builder.certs(certs.clone());
        }
        builder
    }
}

/// Schemes of a server over TCP (credentials in the userinfo).
const TCP_SCHEMES: [&str; 4] = ["redis", "rediss", "valkey", "valkeys"];
/// Schemes of a server on a Unix socket (credentials in the query).
const UNIX_SCHEMES: [&str; 2] = ["redis+unix", "unix"];
/// The query parameters of a Unix socket URL (the `pass` and `user` values may hold `&`).
const UNIX_PARAMS: [&str; 4] = ["db", "user", "pass", "protocol"];
/// The query parameters of a Sentinel URL (both may hold `&`).
const SENTINEL_PARAMS: [&str; 2] = ["sentinel_user", "sentinel_password"];
/// The query parameters that hold credentials.
const SECRET_PARAMS: [&str; 4] = ["user", "pass", "sentinel_user", "sentinel_password"];

pub(crate) fn parse_server(url: &str, tls: &LoadedTls) -> std::result::Result<ServerSpec, String> {
    let scheme = url.split("://").next().unwrap_or("");
    if !url.contains("://") {
        return Err("expected redis://[user:password@]host[:port][/db]".into());
    }
    if scheme == "redis+sentinel" || scheme == "rediss+sentinel" {
        return parse_sentinel(url, tls);
    }
    if scheme == "redis+cluster" || scheme == "rediss+cluster" {
        return parse_cluster(url, tls);
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

/// `redis+sentinel://[user:password@]host[:port],host[:port]/master[/db][?sentinel_user=U&sentinel_password=P]`:
/// the credentials and db before the query are the master's; `sentinel_user` and
/// `sentinel_password` are the sentinels' own (default port 26379; asked without credentials
/// when not given). `rediss+sentinel://` speaks TLS to the sentinels and to the master, with
/// the manager's TLS options.
fn parse_sentinel(url: &str, tls: &LoadedTls) -> std::result::Result<ServerSpec, String> {
    const FORM: &str =
        "expected redis+sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db][?sentinel_user=U&sentinel_password=P]";
    let (scheme, rest) = url.split_once("://").ok_or(FORM)?;
    let secure = scheme == "rediss+sentinel";
    let (rest, query) = match rest.find("?sentinel_") {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut auth = redis::RedisConnectionInfo::default();
    for (key, value) in query.map(query_params).unwrap_or_default() {
        let value = percent_decode(value.unwrap_or(""))?;
        auth = match key {
            "sentinel_user" => auth.set_username(value),
            "sentinel_password" => auth.set_password(value),
            other => return Err(format!("unknown parameter {other:?}; {FORM}")),
        };
    }
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((u, a)) => (Some(encode_userinfo(u)), a),
        None => (None, rest),
    };
    let (hosts, path) = after.split_once('/').ok_or(FORM)?;
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
        let addr = if secure {
            ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(host.to_owned(), port)
        };
        let info = addr
            .into_connection_info()
            .map_err(|e| format!("bad sentinel address {entry:?} ({:?})", e.kind()))?
            .set_redis_settings(auth.clone());
        let client = if secure {
            tls_client(info, tls)?
        } else {
            redis::Client::open(info)
                .map_err(|e| format!("bad sentinel address {entry:?} ({:?})", e.kind()))?
        };
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
    let master_scheme = if secure { "rediss" } else { "redis" };
    let template = match userinfo {
        Some(u) => format!("{master_scheme}://{u}@127.0.0.1:1/{db}"),
        None => format!("{master_scheme}://127.0.0.1:1/{db}"),
    };
    let info = template
        .as_str()
        .into_connection_info()
        .map_err(|e| format!("does not parse ({:?})", e.kind()))?;
    let client = if secure {
        tls_client(info, tls)?
    } else {
        redis::Client::open(info).map_err(|e| format!("does not parse ({:?})", e.kind()))?
    };
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
        cluster: None,
        label,
        tls: secure,
    })
}

/// `redis+cluster://[user:password@]host[:port][,host[:port]...]`: a Redis Cluster named by
/// some of its nodes (the seeds; the others are found from them; default port 6379); the
/// credentials are every node's. `rediss+cluster://` speaks TLS to every node, with the
/// manager's TLS options.
fn parse_cluster(url: &str, tls: &LoadedTls) -> std::result::Result<ServerSpec, String> {
    const FORM: &str = "expected redis+cluster://[user:password@]host[:port][,host[:port]...]";
    let (scheme, rest) = url.split_once("://").ok_or(FORM)?;
    let secure = scheme == "rediss+cluster";
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(encode_userinfo(u)), h),
        None => (None, rest),
    };
    let hosts = hosts.strip_suffix('/').unwrap_or(hosts);
    if hosts.contains(['/', '?']) {
        return Err(format!(
            "a cluster URL takes no database or parameters (a cluster has only database 0); {FORM}"
        ));
    }
    let node_scheme = if secure { "rediss" } else { "redis" };
    let mut nodes = Vec::new();
    let mut seeds = Vec::new();
    for entry in hosts.split(',') {
        let (host, port) = match entry.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(':') => (
                h,
                p.parse::<u16>()
                    .map_err(|_| format!("bad cluster node port in {entry:?}; {FORM}"))?,
            ),
            _ => (entry, 6379),
        };
        if host.is_empty() || port == 0 {
            return Err(format!("bad cluster node address {entry:?}; {FORM}"));
        }
        let node = match &userinfo {
            Some(u) => format!("{node_scheme}://{u}@{host}:{port}"),
            None => format!("{node_scheme}://{host}:{port}"),
        };
        let mut info = node
            .as_str()
            .into_connection_info()
            .map_err(|e| format!("bad cluster node address {entry:?} ({:?})", e.kind()))?;
        if let (true, ConnectionAddr::TcpTls { host, port, .. }) = (tls.insecure, info.addr()) {
            let addr = ConnectionAddr::TcpTls {
                host: host.clone(),
                port: *port,
                insecure: true,
                tls_params: None,
            };
            info = info.set_addr(addr);
        }
        seeds.push(format!("{host}:{port}"));
        nodes.push(info);
    }
    let client = if secure {
        tls_client(nodes[0].clone(), tls)?
    } else {
        redis::Client::open(nodes[0].clone())
            .map_err(|e| format!("cannot be used ({:?})", e.kind()))?
    };
    let cluster = ClusterSpec {
        nodes,
        certificates: tls.certificates.clone(),
    };
    // The cluster layer checks the seeds' settings against each other: fail here, not at the
    // first call.
    cluster
        .client()
        .map_err(|e| format!("cannot be used ({:?})", e.kind()))?;
    Ok(ServerSpec {
        client,
        sentinel: None,
        cluster: Some(cluster),
        label: format!("cluster:{}", seeds.join(",")),
        tls: secure,
    })
}

/// A URL for messages: every byte that may be a credential replaced by `***`, however the
/// URL is written. Two rules, whose union is masked (so that a credential holding the other
/// rule's delimiter is still hidden whole): everything between `://` and the last `@`, and
/// the `user`, `pass`, `sentinel_user` and `sentinel_password` values of the query (from the
/// first `?` that starts a known parameter). Without `://`, a URL holding `@` is shown as
/// `***` whole.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.to_owned()
        };
    };
    let start = scheme_end + 3;
    let mut secret = vec![false; url.len()];
    if let Some(at) = url[start..].rfind('@') {
        secret[start..start + at].fill(true);
    }
    if let Some(q) = query_start(url, start) {
        for (key, value) in query_params(&url[q + 1..]) {
            if let (true, Some(v)) = (SECRET_PARAMS.contains(&key), value) {
                let from = v.as_ptr() as usize - url.as_ptr() as usize;
                secret[from..from + v.len()].fill(true);
            }
        }
    }
    // Every masked run starts and ends at an ASCII delimiter ("://", '@', '=', '&'), so the
    // slices below fall on character boundaries.
    let mut out = String::with_capacity(url.len());
    let mut i = 0;
    while i < url.len() {
        let run = secret[i..].iter().take_while(|&&m| m == secret[i]).count();
        if secret[i] {
            out.push_str("***");
        } else {
            out.push_str(&url[i..i + run]);
        }
        i += run;
    }
    out
}

/// Where the query of a URL starts: the first `?` after `from` followed by a known parameter
/// (`db=`, `user=`, `pass=`, `protocol=`, `sentinel_user=`, `sentinel_password=`).
fn query_start(url: &str, from: usize) -> Option<usize> {
    url[from..]
        .match_indices('?')
        .map(|(i, _)| from + i)
        .find(|&q| {
            let after = &url[q + 1..];
            UNIX_PARAMS.iter().chain(&SENTINEL_PARAMS).any(|p| {
                after
                    .strip_prefix(p)
                    .is_some_and(|r| r.is_empty() || r.starts_with('=') || r.starts_with('&'))
            })
        })
}

/// The check the URL fuzz target runs (`core/fuzz`) on any input, and the property test below
/// on generated ones: parsing never panics, and neither the redacted URL nor a parse error
/// shows the credentials part of `input` (what lies between `://` and its last `@`, when it
/// does not also stand in the rest of the URL).
///
/// # Panics
/// When a credential is shown: that is the finding.
#[doc(hidden)]
pub fn check_url_redaction(input: &str) {
    let tls = LoadedTls {
        certificates: None,
        insecure: true,
    };
    let parsed = parse_server(input, &tls).err();
    let redacted = redact_url(input);
    let Some((_, rest)) = input.split_once("://") else {
        return;
    };
    let Some((userinfo, after)) = rest.rsplit_once('@') else {
        return;
    };
    // Too short to tell from the rest of a message (a ":" or "a"), or standing elsewhere.
    if userinfo.len() < 4 || after.contains(userinfo) || "redis+sentinel".contains(userinfo) {
        return;
    }
    assert!(
        !redacted.contains(userinfo),
        "{userinfo:?} shown in {redacted:?}"
    );
    if let Some(e) = parsed {
        let shown = format!("server URL #0 ({redacted}): {e}");
        assert!(!shown.contains(userinfo), "{userinfo:?} shown in {shown:?}");
    }
}

/// The URL with its credentials percent-encoded (see the module doc), ready for the parser.
fn encode_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    if TCP_SCHEMES.contains(&scheme) {
        if let Some((userinfo, after)) = rest.rsplit_once('@') {
            return format!("{scheme}://{}@{after}", encode_userinfo(userinfo));
        }
    }
    if UNIX_SCHEMES.contains(&scheme) {
        if let Some((path, query)) = rest.split_once('?') {
            let query = query_params(query)
                .into_iter()
                .map(|(key, value)| match value {
                    Some(v) => format!("{key}={}", percent_encode(v)),
                    None => key.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("&");
            return format!("{scheme}://{path}?{query}");
        }
    }
    url.to_owned()
}

/// `user:password` with both parts percent-encoded; the user ends at the first `:`.
fn encode_userinfo(userinfo: &str) -> String {
    match userinfo.split_once(':') {
        Some((user, password)) => format!("{}:{}", percent_encode(user), percent_encode(password)),
        None => percent_encode(userinfo),
    }
}

/// The parameters of a URL's query, split at each `&` that starts a known parameter (of a
/// Unix socket or a Sentinel URL; so a password may hold `&`, `=`, `#`...): `(key, value)`
/// pairs.
fn query_params(query: &str) -> Vec<(&str, Option<&str>)> {
    let starts_param = |s: &str| {
        UNIX_PARAMS.iter().chain(&SENTINEL_PARAMS).any(|p| {
            s.strip_prefix(p)
                .is_some_and(|r| r.is_empty() || r.starts_with('='))
        })
    };
    let mut params: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, _) in query.match_indices('&') {
        if starts_param(&query[i + 1..]) {
            params.push((start, i));
            start = i + 1;
        }
    }
    params.push((start, query.len()));
    params
        .into_iter()
        .map(|(a, b)| {
            let param = &query[a..b];
            match param.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (param, None),
            }
        })
        .collect()
}

/// Decodes `%XX` escapes (a `%` not followed by two hex digits stays as it is).
fn percent_decode(s: &str) -> std::result::Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "a sentinel credential is not UTF-8 once decoded".into())
}

/// Percent-encodes every byte but the unreserved ones (RFC 3986) and a `%` that already
/// starts an escape.
fn percent_encode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, &b) in bytes.iter().enumerate() {
        let escape = b == b'%'
            && bytes.len() > i + 2
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit();
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || escape {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_masks_userinfo_only() {
        assert_eq!(redact_url("redis://u:p@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
        // An '@' ends credentials wherever it stands: when in doubt, mask.
        assert_eq!(redact_url("redis://h:1/a@b"), "redis://***@b");
        assert_eq!(redact_url("u:p@h"), "***");
        assert_eq!(
            redact_url("redis://u:pa/ss?x#y@h:1/0"),
            "redis://***@h:1/0",
            "a password holding '/', '?' and '#'"
        );
        assert_eq!(
            redact_url("redis+unix:///run/r.sock?db=2&pass=a&b=c#d&user=me"),
            "redis+unix:///run/r.sock?db=2&pass=***&user=***"
        );
    }

    #[test]
    fn sentinel_urls_carry_the_sentinels_credentials_and_tls() {
        let url = "redis+sentinel://:m/pw@h1:5000,h2/mymaster/3?sentinel_user=watch&sentinel_password=s&p=w%41";
        assert_eq!(
            redact_url(url),
            "redis+sentinel://***@h1:5000,h2/mymaster/3?sentinel_user=***&sentinel_password=***"
        );
        let spec = parse_server(url, &loaded()).unwrap();
        assert_eq!(password_of(&spec).as_deref(), Some("m/pw"), "the master's");
        let sentinels = &spec.sentinel.as_ref().unwrap().sentinels;
        assert_eq!(sentinels.len(), 2);
        for s in sentinels {
            let info = s.get_connection_info();
            assert_eq!(info.redis_settings().username(), Some("watch"));
            assert_eq!(info.redis_settings().password(), Some("s&p=wA"));
            assert!(matches!(info.addr(), ConnectionAddr::Tcp(..)));
        }
        assert!(!spec.tls);

        let spec = parse_server("rediss+sentinel://h1/m", &loaded()).unwrap();
        assert!(spec.tls);
        let s = &spec.sentinel.as_ref().unwrap().sentinels[0];
        assert!(matches!(
            s.get_connection_info().addr(),
            ConnectionAddr::TcpTls { port: 26379, .. }
        ));
        assert!(matches!(
            spec.client.get_connection_info().addr(),
            ConnectionAddr::TcpTls { .. }
        ));

        let e = parse_server("redis+sentinel://h1/m?sentinel_colour=red", &loaded())
            .err()
            .unwrap();
        assert!(e.contains("unknown parameter"), "{e}");
    }

    fn loaded() -> LoadedTls {
        LoadedTls {
            certificates: None,
            insecure: false,
        }
    }

    fn password_of(spec: &ServerSpec) -> Option<String> {
        let info = spec.client.get_connection_info();
        info.redis_settings().password().map(str::to_owned)
    }

    /// Every URL form with `password`, and the redacted form it must have.
    fn forms(password: &str) -> Vec<(String, String)> {
        vec![
            (
                format!("redis://user:{password}@127.0.0.1:6390/2"),
                "redis://***@127.0.0.1:6390/2".into(),
            ),
            (
                format!("redis://:{password}@127.0.0.1:6390"),
                "redis://***@127.0.0.1:6390".into(),
            ),
            (
                format!("rediss://user:{password}@127.0.0.1:6390/0"),
                "rediss://***@127.0.0.1:6390/0".into(),
            ),
            (
                format!("redis+unix:///tmp/r.sock?db=1&pass={password}"),
                "redis+unix:///tmp/r.sock?db=1&pass=***".into(),
            ),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The fuzz target's check on URL-shaped inputs of any characters.
        #[test]
        fn no_url_shows_its_credentials(
            scheme in "(redis|rediss|redis\\+unix|redis\\+sentinel|rediss\\+sentinel|valkey|http)",
            userinfo in "\\PC{0,30}",
            rest in "\\PC{0,30}",
        ) {
            check_url_redaction(&format!("{scheme}://{userinfo}@{rest}"));
            check_url_redaction(&format!("{scheme}://{rest}"));
            check_url_redaction(&userinfo);
        }

        /// Passwords of any printable character parse to themselves, and no message or
        /// redacted URL shows them (issue 20: base64 passwords hold '/', '+' and '=').
        #[test]
        fn any_printable_password_parses_and_is_never_shown(
            password in "[ -~]{6,40}|[ -~\u{e9}\u{4e2d}\u{1f512}]{6,20}"
        ) {
            // Raw, any password is masked, whatever it holds; exactly as below unless it holds
            // an '@', which makes the mask cover more (the path of a socket URL).
            for (url, redacted) in forms(&password) {
                let shown = redact_url(&url);
                proptest::prop_assert!(!shown.contains(&password), "{}", shown);
                if !password.contains('@') {
                    proptest::prop_assert_eq!(&shown, &redacted);
                }
            }
            // A '%' followed by two hex digits is an escape, as in any URL: a literal '%' is
            // written "%25"; everything else is written as it is.
            let written = password.replace('%', "%25");
            for (url, redacted) in forms(&written) {
                let spec = parse_server(&url, &loaded());
                let spec = spec.map_err(|e| {
                    proptest::test_runner::TestCaseError::fail(format!("{redacted}: {e}"))
                })?;
                proptest::prop_assert_eq!(password_of(&spec), Some(password.clone()));
                proptest::prop_assert!(!spec.label.contains(&password));
            }
            let sentinel = format!("redis+sentinel://:{written}@127.0.0.1:26390/mymaster/1");
            proptest::prop_assert_eq!(
                redact_url(&sentinel),
                "redis+sentinel://***@127.0.0.1:26390/mymaster/1"
            );
            let spec = parse_server(&sentinel, &loaded()).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("sentinel: {e}"))
            })?;
            proptest::prop_assert_eq!(password_of(&spec), Some(password.clone()));
            // A URL that fails to parse after the credentials shows none of them.
            let bad = format!("redis://user:{written}@127.0.0.1:99999/0");
            let err = parse_server(&bad, &loaded()).err().unwrap_or_default();
            proptest::prop_assert!(!err.contains(&password), "{}", err);
        }
    }
}
