//! Manager configuration: server URLs and tuning options, all checked before any connection.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::keys::check_prefix;
use crate::lane::LoopIo;
use crate::measure::MetricNames;
use crate::timing::{
    self, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REFUSED_ATTEMPTS, DEFAULT_RETRY_DELAY,
    MAX_OPTION_DURATION, MIN_OPTION_DURATION,
};
use crate::tls::{Pem, TlsSettings};
use crate::url::{parse_server, redact_url, ServerSpec};

/// Default clock drift factor.
pub const DEFAULT_DRIFT_FACTOR: f64 = 0.01;
/// Most servers a manager accepts.
pub const MAX_SERVERS: usize = 64;

/// Replica acknowledgment (see [`Builder::replica_ack`]): after each acquire, extend and
/// fencing write-back on a server, `WAIT replicas timeout` on the same connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaAck {
    /// How many replicas must acknowledge the write.
    pub replicas: u32,
    /// How long a server waits for them (at most three quarters of the call's per-server
    /// timeout).
    pub timeout: Duration,
}

/// The validated settings of a [`LockManager`](crate::LockManager).
#[derive(Clone)]
pub struct Config {
    pub(crate) servers: Vec<ServerSpec>,
    pub(crate) prefix: Vec<u8>,
    pub(crate) retry_delay: Duration,
    pub(crate) retry_jitter: Duration,
    pub(crate) drift_factor: f64,
    pub(crate) server_timeout: Option<Duration>,
    pub(crate) connect_timeout: Duration,
    pub(crate) replica_ack: Option<ReplicaAck>,
    /// After how many attempts in a row on which every server refused the connection a wait
    /// gives up with `Unavailable`; 0: never.
    pub(crate) refused_attempts: u32,
    /// What the TLS settings are, for `Debug` (never key material).
    tls: Option<String>,
    /// Where the calls polled on an event loop's thread get their connections.
    pub(crate) loop_io: Option<Arc<dyn LoopIo>>,
    /// Which lock names the measurements carry (`crate::measure`).
    pub(crate) metric_names: MetricNames,
    /// The holder label this manager's locks note (`who.rs`); `None`: no note.
    pub(crate) holder_label: Option<String>,
}

impl Config {
    /// Labels of the servers (`host:port`, never a password), in the order given.
    pub fn server_labels(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.label.clone()).collect()
    }
    /// Replica acknowledgment, when asked for.
    pub fn replica_ack(&self) -> Option<ReplicaAck> {
        self.replica_ack
    }
    /// The key prefix.
    pub fn key_prefix(&self) -> &[u8] {
        &self.prefix
    }
    /// The longest sleep between tries when no release notification comes.
    pub fn retry_delay(&self) -> Duration {
        self.retry_delay
    }
    /// The largest random part taken off (or added to) a sleep between tries.
    pub fn retry_jitter(&self) -> Duration {
        self.retry_jitter
    }
    /// The clock drift factor.
    pub fn drift_factor(&self) -> f64 {
        self.drift_factor
    }
    /// The fixed per-server timeout, or `None` for the default of `ttl / 20` in [10 ms, 1 s].
    pub fn server_timeout(&self) -> Option<Duration> {
        self.server_timeout
    }
    /// The bound on opening a connection to one server.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }
    /// After how many attempts in a row refused by every server's address a wait gives up
    /// (see [`Builder::refused_attempts`]); 0: never.
    pub fn refused_attempts(&self) -> u32 {
        self.refused_attempts
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("servers", &self.server_labels())
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .field("retry_delay", &self.retry_delay)
            .field("retry_jitter", &self.retry_jitter)
            .field("drift_factor", &self.drift_factor)
            .field("server_timeout", &self.server_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("replica_ack", &self.replica_ack)
            .field("refused_attempts", &self.refused_attempts)
            .field("tls", &self.tls)
            .field("metric_names", &self.metric_names)
            .field("holder_label", &self.holder_label)
            .finish()
    }
}

/// Builds a [`LockManager`](crate::LockManager): `LockManager::builder(urls).key_prefix("app:").build()`.
///
/// Every option is checked in [`build`](Builder::build) (or [`config`](Builder::config)),
/// which fails with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) and never touches the network.
#[derive(Clone)]
pub struct Builder {
    urls: Vec<String>,
    prefix: Vec<u8>,
    retry_delay: Duration,
    retry_jitter: Option<Duration>,
    drift_factor: f64,
    server_timeout: Option<Duration>,
    connect_timeout: Duration,
    replica_ack: Option<ReplicaAck>,
    refused_attempts: u32,
    tls: TlsSettings,
    loop_io: Option<Arc<dyn LoopIo>>,
    metric_names: MetricNames,
    holder_label: Option<String>,
    /// Never printed (the Debug form leaves it out).
    password: Option<String>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field(
                "servers",
                &self.urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A builder for the given server URLs (one for the single-server lock, several for
    /// Redlock).
    pub fn new<I, S>(urls: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Builder {
            urls: urls.into_iter().map(|u| u.as_ref().to_owned()).collect(),
            prefix: Vec::new(),
            retry_delay: DEFAULT_RETRY_DELAY,
            retry_jitter: None,
            drift_factor: DEFAULT_DRIFT_FACTOR,
            server_timeout: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            replica_ack: None,
            refused_attempts: DEFAULT_REFUSED_ATTEMPTS,
            tls: TlsSettings::default(),
            loop_io: None,
            metric_names: MetricNames::Hidden,
            holder_label: None,
            password: None,
        }
    }

    /// Prefix of every key (`prefix + name`) and channel; default empty.
    pub fn key_prefix(mut self, prefix: impl AsRef<[u8]>) -> Builder {
        self.prefix = prefix.as_ref().to_vec();
        self
    }

    /// Longest sleep between tries when no release notification comes (default 200 ms).
    pub fn retry_delay(mut self, delay: Duration) -> Builder {
        self.retry_delay = delay;
        self
    }

    /// Largest random spread of a sleep between tries (default half the retry delay).
    pub fn retry_jitter(mut self, jitter: Duration) -> Builder {
        self.retry_jitter = Some(jitter);
        self
    }

    /// Clock drift factor, in `[0, 0.5)` (default 0.01).
    pub fn drift_factor(mut self, factor: f64) -> Builder {
        self.drift_factor = factor;
        self
    }

    /// A fixed per-server call timeout instead of the default `ttl / 20` in [10 ms, 1 s].
    pub fn server_timeout(mut self, timeout: Duration) -> Builder {
        self.server_timeout = Some(timeout);
        self
    }

    /// Replica acknowledgment: after every acquire, extend and fencing write-back on a server,
    /// `WAIT replicas timeout` on the same connection, so that a granted lock and its fencing
    /// counter survive a failover of the master that holds them (a Sentinel-managed master,
    /// or the master of the lock's slot on a cluster). A server whose write fewer replicas
    /// acknowledged within `timeout` does not count toward the quorum: the call fails on it
    /// (retried until the wait limit, like a server failing over), and with no quorum the
    /// acquire or extend fails with [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)
    /// naming how many replicas acknowledged. Off by default: each of these calls then waits
    /// for the replication round trip (docs/SAFETY.md has the trade-off). The ACL user needs
    /// `+wait`. `replicas` must be at least 1; `timeout` between 1 ms and 1 h (a server waits
    /// at most three quarters of the call's per-server timeout).
    pub fn replica_ack(mut self, replicas: u32, timeout: Duration) -> Builder {
        self.replica_ack = Some(ReplicaAck { replicas, timeout });
        self
    }

    /// Bound on opening a connection to one server (TCP connect, TLS handshake,
    /// authentication); default 2 s. Connections are opened in the background: a call waits
    /// for one at most its own per-server timeout, and a handshake that outlasts it is not
    /// wasted, the next call finds the connection open.
    pub fn connect_timeout(mut self, timeout: Duration) -> Builder {
        self.connect_timeout = timeout;
        self
    }

    /// After how many attempts in a row on which every server's address refused the
    /// connection (nothing listens there: a server that is not started, a wrong port) a wait
    /// gives up with [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable), instead of
    /// waiting until its limit, or for ever; default 10 (about 2 s at the default retry
    /// delay); 0 waits through refusals like any other outage. Only refusals count: a server
    /// that times out, is loading or failing over, and a master that a Sentinel or a
    /// Cluster names (a failover moves it) are waited through, with a warning every few
    /// seconds. For Sentinel, refusing means every sentinel refuses; for a Cluster, every
    /// node given.
    pub fn refused_attempts(mut self, attempts: u32) -> Builder {
        self.refused_attempts = attempts;
        self
    }

    /// The password of every server whose URL gives none (with the URL's user, if any; a
    /// Sentinel entry's master, a cluster's nodes; not the sentinels, which take
    /// `sentinel_password` in the URL). For passwords kept out of URLs, which end up in
    /// configuration files, command lines and logs: read it from the environment or a secret
    /// file and pass it here. A URL's own password wins. Never shown in any message.
    pub fn password(mut self, password: impl Into<String>) -> Builder {
        self.password = Some(password.into());
        self
    }

    /// For `rediss://` servers: trust the CA certificate(s) in this PEM file instead of the
    /// system's roots.
    pub fn tls_ca_file(mut self, path: impl Into<PathBuf>) -> Builder {
        self.tls.ca = Some(Pem::File(path.into()));
        self
    }

    /// For `rediss://` servers: trust the CA certificate(s) in this PEM document.
    pub fn tls_ca_pem(mut self, pem: impl AsRef<[u8]>) -> Builder {
        self.tls.ca = Some(Pem::Bytes(pem.as_ref().to_vec()));
        self
    }

    /// For `rediss://` servers that require client certificates (mutual TLS): the client
    /// certificate chain and its private key, as PEM files.
    pub fn tls_client_cert_files(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Builder {
        self.tls.client = Some((Pem::File(cert.into()), Pem::File(key.into())));
        self
    }

    /// As [`tls_client_cert_files`](Self::tls_client_cert_files), from PEM documents.
    pub fn tls_client_cert_pem(mut self, cert: impl AsRef<[u8]>, key: impl AsRef<[u8]>) -> Builder {
        self.tls.client = Some((
            Pem::Bytes(cert.as_ref().to_vec()),
            Pem::Bytes(key.as_ref().to_vec()),
        ));
        self
    }

    /// For `rediss://` servers: accept any certificate and host name. For self-signed
    /// development servers only: it gives up protection against a man in the middle. Off by
    /// default.
    pub fn tls_insecure(mut self, insecure: bool) -> Builder {
        self.tls.insecure = insecure;
        self
    }

    /// Connections driven by an event loop's thread, for the calls polled there inside
    /// [`crate::lane::on_loop`] (for bindings to event-loop languages; see
    /// `lane.rs`). Servers behind TLS, Sentinel or a cluster keep the runtime's
    /// connections.
    pub fn loop_io(mut self, io: Arc<dyn LoopIo>) -> Builder {
        self.loop_io = Some(io);
        self
    }

    /// Which lock names the measurements (`measure`) carry in their `name` label:
    /// by default none (the label is empty), since names are often unbounded.
    pub fn metric_names(mut self, names: MetricNames) -> Builder {
        self.metric_names = names;
        self
    }

    /// A label this manager's locks leave next to them while held, with since when and their
    /// fencing token, for [`LockManager::holder`](crate::LockManager::holder) to show (see
    /// `who.rs`; [`default_holder_label`](crate::default_holder_label) is
    /// `host:pid`). Off by default: nothing is written. Checked by [`config`](Self::config):
    /// 1 to 128 bytes, no control characters.
    pub fn holder_label(mut self, label: impl Into<String>) -> Builder {
        self.holder_label = Some(label.into());
        self
    }

    /// Checks every option and returns the configuration.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for no servers, too many, a URL that does not parse (the
    /// message shows it with its password masked), an empty password, the same server twice,
    /// a prefix over 1024 bytes, a zero or over-long retry delay, a jitter above the retry
    /// delay, a drift factor
    /// outside `[0, 0.5)` or a zero or over-long server timeout.
    pub fn config(&self) -> Result<Config> {
        let mut servers = self.servers()?;
        check_prefix(&self.prefix)?;
        let retry_jitter = self.check_timing()?;
        let response_timeout =
            timing::cluster_response_timeout(self.connect_timeout, self.server_timeout);
        for cluster in servers.iter_mut().filter_map(|s| s.cluster.as_mut()) {
            cluster.response_timeout = response_timeout;
        }
        Ok(Config {
            servers,
            prefix: self.prefix.clone(),
            retry_delay: self.retry_delay,
            retry_jitter,
            drift_factor: self.drift_factor,
            server_timeout: self.server_timeout,
            connect_timeout: self.connect_timeout,
            replica_ack: self.replica_ack,
            refused_attempts: self.refused_attempts,
            tls: self.tls.is_set().then(|| self.tls.describe()),
            loop_io: self.loop_io.clone(),
            metric_names: self.metric_names.clone(),
            holder_label: self.holder_label.clone(),
        })
    }

    /// The servers, checked: how many, each URL, none twice, TLS options used by one.
    fn servers(&self) -> Result<Vec<ServerSpec>> {
        if self.urls.is_empty() {
            return Err(Error::invalid("at least one server URL is required"));
        }
        if self.urls.len() > MAX_SERVERS {
            return Err(Error::invalid(format!(
                "{} servers given, the limit is {MAX_SERVERS}",
                self.urls.len()
            )));
        }
        if let Some(label) = &self.holder_label {
            crate::label::check_label(label)?;
        }
        let tls = self.tls.load()?;
        if self.password.as_deref() == Some("") {
            return Err(Error::invalid(
                "the password is empty (leave it unset for servers without one)",
            ));
        }
        let mut servers: Vec<ServerSpec> = Vec::with_capacity(self.urls.len());
        for (i, url) in self.urls.iter().enumerate() {
            let spec = parse_server(url, &tls, self.password.as_deref()).map_err(|why| {
                Error::invalid(format!("server URL #{i} ({}): {why}", redact_url(url)))
            })?;
            if let Some(j) = servers.iter().position(|s| s.label == spec.label) {
                return Err(Error::invalid(format!(
                    "server {} is given twice (URLs #{j} and #{i}); Redlock needs independent servers",
                    spec.label
                )));
            }
            servers.push(spec);
        }
        if self.tls.is_set() && !servers.iter().any(|s| s.tls) {
            return Err(Error::invalid(
                "TLS options are set but no server URL uses rediss://",
            ));
        }
        Ok(servers)
    }

    /// The timing options, checked; the retry jitter (half the retry delay by default).
    fn check_timing(&self) -> Result<Duration> {
        check_duration("retry_delay", self.retry_delay)?;
        let retry_jitter = self.retry_jitter.unwrap_or(self.retry_delay / 2);
        if retry_jitter > self.retry_delay {
            return Err(Error::invalid(format!(
                "retry_jitter ({retry_jitter:?}) must not exceed retry_delay ({:?})",
                self.retry_delay
            )));
        }
        if !(self.drift_factor.is_finite() && (0.0..0.5).contains(&self.drift_factor)) {
            return Err(Error::invalid(format!(
                "drift_factor must be in [0, 0.5), got {}",
                self.drift_factor
            )));
        }
        if let Some(t) = self.server_timeout {
            check_duration("server_timeout", t)?;
        }
        check_duration("connect_timeout", self.connect_timeout)?;
        if let Some(ack) = self.replica_ack {
            if ack.replicas == 0 {
                return Err(Error::invalid(
                    "replica_ack needs at least 1 replica (leave it unset for none)",
                ));
            }
            check_duration("replica_ack timeout", ack.timeout)?;
        }
        Ok(retry_jitter)
    }

    /// Checks every option and builds the manager. No connection is made here: servers are
    /// contacted on first use, so a server that is down does not fail the build.
    ///
    /// # Errors
    /// As for [`config`](Builder::config).
    pub fn build(&self) -> Result<crate::LockManager> {
        Ok(crate::LockManager::from_config(self.config()?))
    }
}

fn check_duration(what: &str, d: Duration) -> Result<()> {
    if d < MIN_OPTION_DURATION || d > MAX_OPTION_DURATION {
        return Err(Error::invalid(format!(
            "{what} must be between 1 ms and 1 h, got {d:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(b: Builder) -> String {
        b.config().unwrap_err().to_string()
    }

    #[test]
    fn defaults() {
        let c = Builder::new(["redis://127.0.0.1:7000"]).config().unwrap();
        assert_eq!(c.retry_delay(), Duration::from_millis(200));
        assert_eq!(c.retry_jitter(), Duration::from_millis(100));
        assert_eq!(c.drift_factor(), 0.01);
        assert_eq!(c.server_timeout(), None);
        assert_eq!(c.server_labels(), vec!["127.0.0.1:7000".to_string()]);
    }

    #[test]
    fn rejects_bad_server_lists() {
        assert!(err(Builder::new(Vec::<String>::new())).contains("at least one"));
        assert!(err(Builder::new(["localhost:6379"])).contains("expected redis://"));
        assert!(err(Builder::new(["http://x"])).contains("unsupported scheme"));
        assert!(err(Builder::new(["redis://h:1"]).tls_insecure(true))
            .contains("no server URL uses rediss://"));
        assert!(
            err(Builder::new(["rediss://h:1"]).tls_ca_file("/nonexistent/ca.pem"))
                .contains("cannot read the TLS CA file")
        );
        assert!(
            err(Builder::new(["rediss://h:1"]).tls_client_cert_pem("junk", "junk"))
                .contains("TLS settings cannot be used")
        );
        let c = Builder::new(["rediss://h:1"])
            .tls_insecure(true)
            .config()
            .unwrap();
        assert!(format!("{c:?}").contains("INSECURE"));
        assert!(err(Builder::new(["redis://a:1", "redis://a:1/"])).contains("given twice"));
        assert!(err(Builder::new(["redis://h:99999"])).contains("URL #0"));
        let many: Vec<String> = (0..65).map(|i| format!("redis://h:{}", 1000 + i)).collect();
        assert!(err(Builder::new(many)).contains("limit is 64"));
    }

    #[test]
    fn a_ca_bundle_without_a_certificate_is_rejected_at_build_time() {
        let e = err(Builder::new(["rediss://h:1"]).tls_ca_pem("not a certificate"));
        assert!(e.contains("no PEM certificate"), "{e}");
    }

    #[test]
    fn sentinel_urls() {
        let c = Builder::new(["redis+sentinel://:pw@h1:5000,h2/mymaster/3"])
            .config()
            .unwrap();
        assert_eq!(c.server_labels(), vec!["sentinel:mymaster/3"]);
        let s = c.servers[0].sentinel.as_ref().unwrap();
        assert_eq!(s.sentinels.len(), 2);
        assert_eq!(s.master, "mymaster");
        assert!(err(Builder::new(["redis+sentinel://h1:26379"])).contains("master-name"));
        assert!(
            err(Builder::new(["redis+sentinel://h1:26379/"])).contains("master name is missing")
        );
        assert!(err(Builder::new(["redis+sentinel://h1:x/m"])).contains("bad sentinel port"));
        assert!(err(Builder::new(["redis+sentinel://h1/m/x"])).contains("bad db"));
        let e = err(Builder::new(["redis+sentinel://:secret-pw@h1:x/m"]));
        assert!(!e.contains("secret-pw"), "{e}");
    }

    #[test]
    fn different_dbs_on_one_host_are_different_labels() {
        let c = Builder::new(["redis://h:1/0", "redis://h:1/2"])
            .config()
            .unwrap();
        assert_eq!(c.server_labels(), vec!["h:1", "h:1/2"]);
    }

    #[test]
    fn rejects_bad_options() {
        let b = || Builder::new(["redis://127.0.0.1:7000"]);
        assert!(err(b().drift_factor(0.5)).contains("drift_factor"));
        assert!(err(b().drift_factor(-0.1)).contains("drift_factor"));
        assert!(err(b().drift_factor(f64::NAN)).contains("drift_factor"));
        assert!(err(b().retry_delay(Duration::ZERO)).contains("retry_delay"));
        assert!(err(b().retry_delay(Duration::from_secs(7200))).contains("retry_delay"));
        assert!(err(b().retry_jitter(Duration::from_secs(1))).contains("retry_jitter"));
        assert!(err(b().server_timeout(Duration::ZERO)).contains("server_timeout"));
        assert!(err(b().connect_timeout(Duration::ZERO)).contains("connect_timeout"));
        assert!(err(b().key_prefix(vec![b'p'; 1025])).contains("prefix"));
        assert!(b().drift_factor(0.0).config().is_ok());
    }

    #[test]
    fn messages_never_show_passwords() {
        let e = err(Builder::new(["redis://user:hunter2@h:99999"]));
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("***@"), "{e}");
        let e = err(Builder::new(["redis://:hunter2@h:1", "redis://:other@h:1"]));
        assert!(!e.contains("hunter2") && !e.contains("other"), "{e}");
        let c = Builder::new(["redis://:hunter2@h:1"]).config().unwrap();
        assert!(!format!("{c:?}").contains("hunter2"));
        let b = Builder::new(["redis://:hunter2@h:1"]);
        assert!(!format!("{b:?}").contains("hunter2"));
    }
}
