//! `redis+sentinel://` entries: a master watched by Redis Sentinel, asked of the sentinels on
//! every connect.

use redis::{ConnectionAddr, IntoConnectionInfo};

use super::credentials::{encode_userinfo, percent_decode, query_params};
use super::{tls_client, with_password, ServerSpec};
use crate::tls::LoadedTls;

/// A Sentinel-monitored master: asked of the sentinels whenever a connection is opened.
#[derive(Clone)]
pub(crate) struct SentinelSpec {
    pub sentinels: Vec<redis::Client>,
    pub master: String,
}

/// The form of a Sentinel URL, for the errors that name what is wrong with one.
const FORM: &str =
    "expected redis+sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db][?sentinel_user=U&sentinel_password=P]";

/// `redis+sentinel://[user:password@]host[:port],host[:port]/master[/db][?sentinel_user=U&sentinel_password=P]`:
/// the credentials and db before the query are the master's; `sentinel_user` and
/// `sentinel_password` are the sentinels' own (default port 26379; asked without credentials
/// when not given). `rediss+sentinel://` speaks TLS to the sentinels and to the master, with
/// the manager's TLS options.
pub(super) fn parse_sentinel(
    url: &str,
    tls: &LoadedTls,
    password: Option<&str>,
) -> std::result::Result<ServerSpec, String> {
    let (scheme, rest) = url.split_once("://").ok_or(FORM)?;
    let secure = scheme == "rediss+sentinel";
    let (rest, query) = match rest.find("?sentinel_") {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let auth = sentinel_auth(query)?;
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((u, a)) => (Some(encode_userinfo(u)), a),
        None => (None, rest),
    };
    let (hosts, path) = after.split_once('/').ok_or(FORM)?;
    let sentinels = hosts
        .split(',')
        .map(|entry| sentinel_client(entry, &auth, secure, tls))
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let (master, db) = master_and_db(path)?;
    let client = master_template(userinfo.as_deref(), db, (secure, tls), password)?;
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

/// The sentinels' own credentials, from the query (`sentinel_user`, `sentinel_password`).
fn sentinel_auth(query: Option<&str>) -> std::result::Result<redis::RedisConnectionInfo, String> {
    let mut auth = redis::RedisConnectionInfo::default();
    for (key, value) in query.map(query_params).unwrap_or_default() {
        let value = percent_decode(value.unwrap_or(""))?;
        auth = match key {
            "sentinel_user" => auth.set_username(value),
            "sentinel_password" => auth.set_password(value),
            other => return Err(format!("unknown parameter {other:?}; {FORM}")),
        };
    }
    Ok(auth)
}

/// The client of one sentinel, `host[:port]` (26379 by default).
fn sentinel_client(
    entry: &str,
    auth: &redis::RedisConnectionInfo,
    secure: bool,
    tls: &LoadedTls,
) -> std::result::Result<redis::Client, String> {
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
    let bad = |e: redis::RedisError| format!("bad sentinel address {entry:?} ({:?})", e.kind());
    let info = addr
        .into_connection_info()
        .map_err(bad)?
        .set_redis_settings(auth.clone());
    if secure {
        tls_client(info, tls)
    } else {
        redis::Client::open(info).map_err(bad)
    }
}

/// The master's name and database, from the URL's path (`master-name[/db]`).
fn master_and_db(path: &str) -> std::result::Result<(&str, i64), String> {
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
    Ok((master, db))
}

/// The template of the master's client (its credentials, database and TLS; the address is the
/// one the sentinels name, filled in at each connection).
fn master_template(
    userinfo: Option<&str>,
    db: i64,
    (secure, tls): (bool, &LoadedTls),
    password: Option<&str>,
) -> std::result::Result<redis::Client, String> {
    let master_scheme = if secure { "rediss" } else { "redis" };
    let template = match userinfo {
        Some(u) => format!("{master_scheme}://{u}@127.0.0.1:1/{db}"),
        None => format!("{master_scheme}://127.0.0.1:1/{db}"),
    };
    let info = template
        .as_str()
        .into_connection_info()
        .map_err(|e| format!("does not parse ({:?})", e.kind()))?;
    let info = with_password(info, password);
    if secure {
        tls_client(info, tls)
    } else {
        redis::Client::open(info).map_err(|e| format!("does not parse ({:?})", e.kind()))
    }
}
