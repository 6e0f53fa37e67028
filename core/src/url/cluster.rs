//! `redis+cluster://` entries: a Redis Cluster named by some of its nodes, one member of the
//! quorum.

use redis::{ConnectionAddr, IntoConnectionInfo};

use super::credentials::encode_userinfo;
use super::{tls_client, with_password, ServerSpec};
use crate::tls::LoadedTls;

/// A Redis Cluster, named by some of its nodes: one member of the quorum.
#[derive(Clone)]
pub(crate) struct ClusterSpec {
    /// The seed nodes, each with the credentials and the TLS mode.
    pub nodes: Vec<redis::ConnectionInfo>,
    /// The TLS certificates (CA, client identity) of a `rediss+cluster://` entry.
    pub certificates: Option<redis::TlsCertificates>,
    /// How long the cluster layer waits for any node's reply (its own checks of nodes
    /// included) before giving up on it: see [`crate::timing::cluster_response_timeout`].
    pub response_timeout: std::time::Duration,
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
            .retry_wait_formula(10, 2)
            .response_timeout(self.response_timeout);
        if let Some(certs) = &self.certificates {
            builder = builder.certs(certs.clone());
        }
        builder
    }
}

/// `redis+cluster://[user:password@]host[:port][,host[:port]...]`: a Redis Cluster named by
/// some of its nodes (the seeds; the others are found from them; default port 6379); the
/// credentials are every node's. `rediss+cluster://` speaks TLS to every node, with the
/// manager's TLS options.
pub(super) fn parse_cluster(
    url: &str,
    tls: &LoadedTls,
    password: Option<&str>,
) -> std::result::Result<ServerSpec, String> {
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
        let (info, seed) = seed_node(entry, node_scheme, userinfo.as_deref(), (tls, password))?;
        seeds.push(seed);
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
        // The manager's options set it (`Builder::config`).
        response_timeout: crate::timing::cluster_response_timeout(
            crate::timing::DEFAULT_CONNECT_TIMEOUT,
            None,
        ),
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

/// One seed node of a cluster URL (`host[:port]`, default port 6379): its connection info,
/// with the URL's credentials (or the manager's password) and TLS, and its `host:port`.
fn seed_node(
    entry: &str,
    scheme: &str,
    userinfo: Option<&str>,
    (tls, password): (&LoadedTls, Option<&str>),
) -> std::result::Result<(redis::ConnectionInfo, String), String> {
    const FORM: &str = "expected redis+cluster://[user:password@]host[:port][,host[:port]...]";
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
    let node = match userinfo {
        Some(u) => format!("{scheme}://{u}@{host}:{port}"),
        None => format!("{scheme}://{host}:{port}"),
    };
    let info = node
        .as_str()
        .into_connection_info()
        .map_err(|e| format!("bad cluster node address {entry:?} ({:?})", e.kind()))?;
    let mut info = with_password(info, password);
    if let (true, ConnectionAddr::TcpTls { host, port, .. }) = (tls.insecure, info.addr()) {
        let addr = ConnectionAddr::TcpTls {
            host: host.clone(),
            port: *port,
            insecure: true,
            tls_params: None,
        };
        info = info.set_addr(addr);
    }
    Ok((info, format!("{host}:{port}")))
}
