//! What a failed connection says about the port: a `redis://` URL aimed at a TLS port sees its
//! connection reset, a `rediss://` URL aimed at a plain port sees its handshake hang. Both are
//! configuration mistakes that retrying never cures, so a connection that failed that way is
//! probed once: the other protocol is tried (without credentials, sending nothing secret), and
//! if the port speaks it the failure becomes a permanent one that says which URL to use.

use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::failure::ServerFailure;

/// `failure`, or the permanent failure it really is when the port speaks the other protocol.
/// Only a connection failure that looks like a mismatch is probed (see below).
pub(crate) async fn explain(
    addr: &ConnectionAddr,
    failure: ServerFailure,
    within: Duration,
) -> ServerFailure {
    // Only the symptoms of a mismatch are probed: a refused connection says nothing about the
    // protocol (and a server that is down must cost no more than before: a TLS client is
    // costly to build), a reset or closed one at a plain URL, a hung one at a TLS URL do.
    let text = failure.to_string();
    let reset = ["reset", "closed", "broken pipe", "end of file", "EOF"]
        .iter()
        .any(|m| text.contains(m));
    let hung = matches!(failure, ServerFailure::Timeout(_)) || text.contains("timed out");
    let probe = async {
        match addr {
            ConnectionAddr::Tcp(host, port) if reset && speaks_tls(host, *port).await => {
                Some("the server speaks TLS on this port: use a rediss:// URL")
            }
            ConnectionAddr::TcpTls { host, port, .. }
                if hung && speaks_plain(host, *port).await =>
            {
                Some("the server does not speak TLS on this port: use a redis:// URL")
            }
            _ => None,
        }
    };
    match tokio::time::timeout(within, probe).await {
        Ok(Some(why)) => ServerFailure::Config(format!("TLS mismatch: {why}")),
        _ => failure,
    }
}

/// A cluster's connection `failure` as what it is: [`ServerFailure::NotListening`] when no
/// seed node accepts a TCP connection (the cluster is not there: not started, wrong ports),
/// else a failure waited through (a master the slot map names may be down while a replica
/// takes its slots over; the cluster layer's own errors do not say which).
pub(crate) async fn cluster(
    seeds: &[ConnectionInfo],
    failure: ServerFailure,
    within: Duration,
) -> ServerFailure {
    let refused = |info: &ConnectionInfo| {
        let (host, port) = match info.addr() {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                (host.clone(), *port)
            }
            _ => return futures_util::future::Either::Left(async { false }),
        };
        futures_util::future::Either::Right(async move {
            matches!(
                tokio::net::TcpStream::connect((host.as_str(), port)).await,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
            )
        })
    };
    let probes = futures_util::future::join_all(seeds.iter().map(refused));
    match tokio::time::timeout(within, probes).await {
        Ok(all) if !all.is_empty() && all.iter().all(|r| *r) => ServerFailure::NotListening(
            format!("no seed node of the cluster accepts a connection ({failure})"),
        ),
        _ => failure.in_failover(),
    }
}

/// Whether a TLS handshake with `host:port` gets an answer in TLS: a connection (any
/// certificate accepted, no credentials sent), or a TLS alert or a Redis error after it.
async fn speaks_tls(host: &str, port: u16) -> bool {
    let addr = ConnectionAddr::TcpTls {
        host: host.to_owned(),
        port,
        insecure: true,
        tls_params: None,
    };
    let info: ConnectionInfo = match addr.into_connection_info() {
        Ok(info) => info,
        Err(_) => return false,
    };
    let Ok(client) = redis::Client::open(info) else {
        return false;
    };
    match client.get_multiplexed_async_connection().await {
        Ok(_) => true,
        Err(e) => e.to_string().contains("received fatal alert") || e.code().is_some(),
    }
}

/// Whether `host:port` answers a plain `PING` with a Redis reply (`+PONG`, or an error such
/// as `-NOAUTH`).
async fn speaks_plain(host: &str, port: u16) -> bool {
    let Ok(mut stream) = tokio::net::TcpStream::connect((host, port)).await else {
        return false;
    };
    if stream.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut first = [0u8; 1];
    matches!(stream.read(&mut first).await, Ok(1) if first[0] == b'+' || first[0] == b'-')
}
