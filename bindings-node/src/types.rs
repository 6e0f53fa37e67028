//! Type-only declarations: they give the generated `native.d.ts` its option interfaces. The
//! values themselves are read field by field in `args.rs`, with the binding's own
//! `ERR_INVALID_ARG` errors instead of napi's generic conversion errors.
#![allow(dead_code)]

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// Options of `new LockManager(servers, options)`. Durations are in milliseconds.
#[napi(object)]
pub struct LockManagerOptions {
    /// Prefix of every key (`prefix + name`) and channel; default empty.
    pub key_prefix: Option<Either<String, Buffer>>,
    /// Longest sleep between tries when no release notification comes; default 200.
    pub retry_delay: Option<f64>,
    /// Largest random spread of a sleep between tries; default half the retry delay.
    pub retry_jitter: Option<f64>,
    /// Clock drift factor in [0, 0.5); default 0.01.
    pub drift_factor: Option<f64>,
    /// A fixed per-server call timeout instead of ttl/20 within [10, 1000].
    pub server_timeout: Option<f64>,
    /// The longest time opening a connection to a server may take; default 2000.
    pub connect_timeout: Option<f64>,
    /// For `rediss://` servers: a PEM file of the CA certificate(s) to trust instead of the
    /// system's roots.
    pub tls_ca_file: Option<String>,
    /// For `rediss://` servers requiring client certificates (mutual TLS): the PEM file of the
    /// client certificate chain. Needs `tlsClientKey`.
    pub tls_client_cert: Option<String>,
    /// The PEM file of the client certificate's private key. Needs `tlsClientCert`.
    pub tls_client_key: Option<String>,
    /// For `rediss://` servers: accept any certificate and host name. Self-signed development
    /// servers only; default false.
    pub tls_insecure: Option<bool>,
}

/// Options of `LockManager.acquire` and `LockManager.using`. Durations are in milliseconds.
#[napi(object)]
pub struct AcquireOptions {
    /// How long the lock lives unless extended; default 30000.
    pub ttl: Option<f64>,
    /// How long to keep trying: omitted (or `Infinity`) waits until acquired, 0 tries once.
    pub wait: Option<f64>,
    /// A token of your own instead of a random one; acquiring again with it resets the TTL.
    pub token: Option<Either<String, Buffer>>,
    /// Extend in the background every ttl/3 until released or lost (default: false, but
    /// true in `using`).
    pub auto_extend: Option<bool>,
    /// With `autoExtend`: stop extending this long after acquisition.
    pub max_hold: Option<f64>,
    /// Aborting it stops the wait: the Promise rejects with an `AbortError` and no lock is left
    /// behind.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<()>,
}

/// Options of `LockManager.tryAcquire` (one attempt, so no `wait`).
#[napi(object)]
pub struct TryAcquireOptions {
    /// How long the lock lives unless extended; default 30000.
    pub ttl: Option<f64>,
    /// A token of your own instead of a random one.
    pub token: Option<Either<String, Buffer>>,
    /// Extend in the background every ttl/3 until released or lost.
    pub auto_extend: Option<bool>,
    /// With `autoExtend`: stop extending this long after acquisition.
    pub max_hold: Option<f64>,
    /// Aborting it abandons the attempt.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<()>,
}
