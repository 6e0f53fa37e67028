//! What the sync and asyncio classes share, defined once: the managers' constructor keywords
//! (one parser, [`Options::from_kwargs`]), the arguments of `lock()`/`locked()`
//! ([`ScopeArgs`]); a lock's facts and getters are in `lock.rs`.

use std::path::PathBuf;
use std::time::Duration;

use fencelock::{AcquireOptions, Builder, LeaseKind, MetricNames};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{
    connect_timeout_arg, drift_factor_arg, key_prefix_arg, non_negative_seconds, password_arg,
    positive_seconds, py_repr, read_file, refused_attempts_arg, replica_ack_arg,
    replica_ack_timeout_arg, retry_delay_arg, retry_jitter_arg, server_timeout_arg,
    tls_ca_file_arg, tls_client_cert_arg, tls_client_key_arg, tls_insecure_arg, ttl_seconds,
    wait_limit, CallerToken, Names, Servers, Text,
};
use crate::lost::Keep;
use crate::metrics::metric_names_arg;

/// The manager constructors' keyword arguments, in the order the docs list them.
pub const MANAGER_KEYWORDS: [&str; 16] = [
    "key_prefix",
    "retry_delay",
    "retry_jitter",
    "drift_factor",
    "server_timeout",
    "connect_timeout",
    "refused_attempts",
    "replica_ack",
    "replica_ack_timeout",
    "tls_ca_file",
    "tls_client_cert",
    "tls_client_key",
    "tls_insecure",
    "password",
    "metric_names",
    "holder",
];

/// `replica_ack_timeout` when only `replica_ack` is given, in seconds.
const DEFAULT_ACK_TIMEOUT: f64 = 0.1;

/// The manager options, as the Python constructors take them.
pub struct Options {
    pub servers: Servers,
    pub key_prefix: Text,
    pub retry_delay: f64,
    pub retry_jitter: Option<f64>,
    pub drift_factor: f64,
    pub server_timeout: Option<f64>,
    pub connect_timeout: Option<f64>,
    pub refused_attempts: Option<u32>,
    pub replica_ack: Option<u32>,
    pub replica_ack_timeout: Option<f64>,
    pub tls_ca_file: Option<PathBuf>,
    pub tls_client_cert: Option<PathBuf>,
    pub tls_client_key: Option<PathBuf>,
    pub tls_insecure: bool,
    /// For servers whose URL has none; never shown.
    pub password: Option<String>,
    /// Which names the measurements carry (`fencelock/metrics.py`).
    pub metric_names: MetricNames,
    /// The holder label this manager's locks note (`None`: none).
    pub holder: Option<String>,
}

impl Options {
    /// The core's builder; every option checked (no network call).
    pub fn builder(self) -> PyResult<Builder> {
        let mut b = Builder::new(self.servers.0)
            .key_prefix(self.key_prefix.as_bytes())
            .retry_delay(positive_seconds("retry_delay", self.retry_delay)?)
            .drift_factor(self.drift_factor)
            .tls_insecure(self.tls_insecure)
            .metric_names(self.metric_names);
        if let Some(label) = self.holder {
            b = b.holder_label(label);
        }
        if let Some(p) = self.password {
            b = b.password(p);
        }
        if let Some(j) = self.retry_jitter {
            b = b.retry_jitter(non_negative_seconds("retry_jitter", j)?);
        }
        if let Some(t) = self.server_timeout {
            b = b.server_timeout(positive_seconds("server_timeout", t)?);
        }
        if let Some(t) = self.connect_timeout {
            b = b.connect_timeout(positive_seconds("connect_timeout", t)?);
        }
        if let Some(n) = self.refused_attempts {
            b = b.refused_attempts(n);
        }
        match (self.replica_ack, self.replica_ack_timeout) {
            (Some(n), t) => {
                let t = positive_seconds("replica_ack_timeout", t.unwrap_or(DEFAULT_ACK_TIMEOUT))?;
                b = b.replica_ack(n, t);
            }
            (None, Some(_)) => {
                return Err(PyValueError::new_err(
                    "replica_ack_timeout is given without replica_ack (how many replicas must acknowledge)",
                ))
            }
            (None, None) => {}
        }
        // Read here rather than by the core, so that the error names the argument.
        if let Some(ca) = &self.tls_ca_file {
            b = b.tls_ca_pem(read_file("tls_ca_file", ca)?);
        }
        match (&self.tls_client_cert, &self.tls_client_key) {
            (Some(cert), Some(key)) => {
                b = b.tls_client_cert_pem(
                    read_file("tls_client_cert", cert)?,
                    read_file("tls_client_key", key)?,
                );
            }
            (None, None) => {}
            (Some(_), None) => {
                return Err(PyValueError::new_err(
                    "tls_client_cert is given without tls_client_key: mutual TLS needs both",
                ))
            }
            (None, Some(_)) => {
                return Err(PyValueError::new_err(
                    "tls_client_key is given without tls_client_cert: mutual TLS needs both",
                ))
            }
        }
        Ok(b)
    }

    /// The options of `LockManager(servers, **options)` (sync or asyncio), every keyword
    /// converted by its own extractor (a wrong type raises `TypeError` naming it) and an
    /// unknown one refused with `TypeError`, as Python does for a function's keywords.
    pub fn from_kwargs(
        class: &str,
        servers: Servers,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Options> {
        let mut o = Options {
            servers,
            key_prefix: Text::default(),
            retry_delay: 0.2,
            retry_jitter: None,
            drift_factor: fencelock::DEFAULT_DRIFT_FACTOR,
            server_timeout: None,
            connect_timeout: None,
            refused_attempts: None,
            replica_ack: None,
            replica_ack_timeout: None,
            tls_ca_file: None,
            tls_client_cert: None,
            tls_client_key: None,
            tls_insecure: false,
            password: None,
            metric_names: MetricNames::Hidden,
            holder: None,
        };
        for (key, value) in kwargs.into_iter().flatten() {
            let key: String = key.extract()?;
            match key.as_str() {
                "key_prefix" => o.key_prefix = key_prefix_arg(&value)?,
                "retry_delay" => o.retry_delay = retry_delay_arg(&value)?,
                "retry_jitter" => o.retry_jitter = retry_jitter_arg(&value)?,
                "drift_factor" => o.drift_factor = drift_factor_arg(&value)?,
                "server_timeout" => o.server_timeout = server_timeout_arg(&value)?,
                "connect_timeout" => o.connect_timeout = connect_timeout_arg(&value)?,
                "refused_attempts" => o.refused_attempts = refused_attempts_arg(&value)?,
                "replica_ack" => o.replica_ack = replica_ack_arg(&value)?,
                "replica_ack_timeout" => o.replica_ack_timeout = replica_ack_timeout_arg(&value)?,
                "tls_ca_file" => o.tls_ca_file = tls_ca_file_arg(&value)?,
                "tls_client_cert" => o.tls_client_cert = tls_client_cert_arg(&value)?,
                "tls_client_key" => o.tls_client_key = tls_client_key_arg(&value)?,
                "tls_insecure" => o.tls_insecure = tls_insecure_arg(&value)?,
                "password" => o.password = password_arg(&value)?,
                "metric_names" => o.metric_names = metric_names_arg(&value)?,
                "holder" => o.holder = crate::convert::holder_arg(&value)?,
                other => {
                    return Err(PyTypeError::new_err(format!(
                    "{class}() got an unexpected keyword argument {other:?}; the options are {}",
                    MANAGER_KEYWORDS.join(", ")
                )))
                }
            }
        }
        Ok(o)
    }
}

/// The arguments of `manager.lock(name, ttl, wait=...)` and `manager.locked(...)`, checked
/// when they are given, not when the block is entered.
#[derive(Clone)]
pub struct ScopeArgs {
    pub name: Text,
    pub ttl: f64,
    pub wait: Option<f64>,
    /// Auto-extended, up to `max_hold`, with `on_lost`.
    pub keep: Keep,
    /// What the scope holds of the name: a lock, or a lease of the family.
    pub kind: LeaseKind,
}

impl ScopeArgs {
    /// Checks the TTL, the wait limit, `max_hold` and `on_lost`.
    pub fn new(
        name: Text,
        ttl: f64,
        wait: Option<f64>,
        max_hold: Option<f64>,
        on_lost: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ScopeArgs> {
        ttl_seconds(ttl)?;
        wait_limit(wait)?;
        let keep = Keep::scoped(max_hold, on_lost)?;
        Ok(ScopeArgs {
            name,
            ttl,
            wait,
            keep,
            kind: LeaseKind::Lock,
        })
    }

    /// The same arguments for a lease of `kind` (a semaphore's permits, a read share, the
    /// write hold).
    pub fn of_kind(self, kind: LeaseKind) -> ScopeArgs {
        ScopeArgs { kind, ..self }
    }

    /// What the scope acquires.
    pub fn names(&self) -> Names {
        match self.kind {
            LeaseKind::Lock => Names::One(self.name.clone()),
            kind => Names::Lease(self.name.clone(), kind),
        }
    }

    /// `<CLASS name=... ttl=...>`, the scope objects' repr.
    pub fn repr(&self, py: Python<'_>, class: &str) -> String {
        let name = py_repr(self.name.to_object(py).bind(py));
        format!("<{class} name={name} ttl={}>", self.ttl)
    }

    /// The `locked` decorator of `manager` (`fencelock._decorate.locked`, which picks the
    /// sync or the coroutine wrapper).
    pub fn decorator<'py>(&self, manager: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = manager.py();
        py.import("fencelock._decorate")?.call_method1(
            "locked",
            (
                manager,
                self.name.to_object(py),
                self.ttl,
                self.wait,
                self.keep.max_hold_secs(),
                self.keep.on_lost_obj(py),
            ),
        )
    }
}

/// Whether a `__exit__`/`__aexit__` was given an exception (the block raised).
pub fn is_exception(exc_type: Option<&Bound<'_, PyAny>>) -> bool {
    exc_type.is_some_and(|t| !t.is_none())
}

/// The core's acquire options from the Python arguments (`keep`: whether and how long the
/// core keeps the lock alive once acquired).
pub fn acquire_options(
    py: Python<'_>,
    ttl: f64,
    wait: Option<Duration>,
    token: &CallerToken,
    keep: &Keep,
) -> PyResult<AcquireOptions> {
    let mut opts = keep.apply(AcquireOptions::new(ttl_seconds(ttl)?).wait(wait));
    if let Some(t) = &token.token {
        opts = opts.token(t.as_bytes()).reentrant(token.reentrant);
    }
    // The caller's trace context, on the caller's thread or task (a tracer attached only).
    Ok(opts.trace(crate::spans::parent(py)?))
}
