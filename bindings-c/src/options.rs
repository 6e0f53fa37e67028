//! `fl_manager_options`: an opaque builder of manager options, so new options can be added
//! later without changing any struct layout the caller compiled against.

use std::ffi::{c_char, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use fencelock::Builder;

use crate::error::fl_status;
use crate::error::{boundary, boundary_or};
use crate::ffi;

/// Options of a manager (key prefix, retry delay and jitter, drift factor, server and
/// connect timeouts, TLS, a password).
/// Opaque: made by `fl_manager_options_new`, given to `fl_manager_new` (which copies what it
/// needs, so the options may be freed or reused right after), freed by
/// `fl_manager_options_free`. The setters only record values; `fl_manager_new` checks them
/// all and fails with `FL_INVALID_ARGUMENT` naming the bad one. Not thread-safe: one thread
/// at a time may use a given options object.
#[derive(Debug, Default, Clone)]
pub struct fl_manager_options {
    key_prefix: Option<Vec<u8>>,
    retry_delay: Option<Duration>,
    retry_jitter: Option<Duration>,
    drift_factor: Option<f64>,
    server_timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
    refused_attempts: Option<u32>,
    replica_ack: Option<(u32, Duration)>,
    tls_ca: Option<Pem>,
    tls_client: Option<(Pem, Pem)>,
    tls_insecure: Option<bool>,
    password: Option<Secret>,
    /// Names let into the measurements' `name` label (`fl_manager_options_add_metric_name`).
    pub(crate) metric_names: Vec<Vec<u8>>,
    /// The holder label (`fl_manager_options_set_holder`).
    pub(crate) holder_label: Option<String>,
}

/// A password: its `Debug` form never shows it.
#[derive(Clone)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// A PEM input: a file to read when the manager is made, or the document itself.
#[derive(Debug, Clone)]
enum Pem {
    File(PathBuf),
    Text(Vec<u8>),
}

impl fl_manager_options {
    pub(crate) fn apply(&self, mut b: Builder) -> Builder {
        if let Some(p) = &self.key_prefix {
            b = b.key_prefix(p);
        }
        if let Some(d) = self.retry_delay {
            b = b.retry_delay(d);
        }
        if let Some(j) = self.retry_jitter {
            b = b.retry_jitter(j);
        }
        if let Some(f) = self.drift_factor {
            b = b.drift_factor(f);
        }
        if let Some(t) = self.server_timeout {
            b = b.server_timeout(t);
        }
        if let Some(t) = self.connect_timeout {
            b = b.connect_timeout(t);
        }
        if let Some(n) = self.refused_attempts {
            b = b.refused_attempts(n);
        }
        if let Some((n, t)) = self.replica_ack {
            b = b.replica_ack(n, t);
        }
        match &self.tls_ca {
            Some(Pem::File(p)) => b = b.tls_ca_file(p),
            Some(Pem::Text(t)) => b = b.tls_ca_pem(t),
            None => {}
        }
        match &self.tls_client {
            Some((Pem::File(c), Pem::File(k))) => b = b.tls_client_cert_files(c, k),
            Some((Pem::Text(c), Pem::Text(k))) => b = b.tls_client_cert_pem(c, k),
            Some(_) | None => {}
        }
        if let Some(i) = self.tls_insecure {
            b = b.tls_insecure(i);
        }
        if let Some(Secret(p)) = &self.password {
            b = b.password(p.as_str());
        }
        if !self.metric_names.is_empty() {
            b = b.metric_names(fencelock::MetricNames::listed(&self.metric_names));
        }
        if let Some(label) = &self.holder_label {
            b = b.holder_label(label.as_str());
        }
        b
    }
}

pub(crate) fn set(
    opts: *mut fl_manager_options,
    f: impl FnOnce(&mut fl_manager_options) -> fencelock::Result<()>,
) -> fl_status {
    // SAFETY: NULL or a live options object used by this thread only, by contract.
    boundary(|| f(unsafe { ffi::obj_mut(opts, "opts") }?))
}

/// Makes an options object holding the defaults (no key prefix, retry delay 200 ms, jitter
/// half the retry delay, drift factor 0.01, per-server timeout ttl/20 within [10 ms, 1 s],
/// connect timeout 2 s, TLS verified against the system's roots).
/// On success `*out` is a new object to free with `fl_manager_options_free`.
///
/// Errors: `FL_INVALID_ARGUMENT` if `out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_new(out: *mut *mut fl_manager_options) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        *out = Box::into_raw(Box::default());
        Ok(())
    })
}

/// Sets the prefix put before every lock name to make its Redis key (and before the
/// fencing counter and release channel). Any bytes but NUL; at most 1024 of them (checked by
/// `fl_manager_new`). The string is copied.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` or `prefix` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_key_prefix(
    opts: *mut fl_manager_options,
    prefix: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: prefix is NULL or a NUL-terminated string, by contract.
        o.key_prefix = Some(unsafe { ffi::bytes(prefix, "prefix") }?.to_vec());
        Ok(())
    })
}

/// Sets the longest sleep between tries when no release notification comes, in
/// milliseconds: 1 to 3,600,000 (checked by `fl_manager_new`).
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_retry_delay_ms(
    opts: *mut fl_manager_options,
    retry_delay_ms: u64,
) -> fl_status {
    set(opts, |o| {
        o.retry_delay = Some(ffi::millis(retry_delay_ms));
        Ok(())
    })
}

/// Sets the largest random spread of a sleep between tries, in milliseconds; at most the
/// retry delay (checked by `fl_manager_new`).
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_retry_jitter_ms(
    opts: *mut fl_manager_options,
    retry_jitter_ms: u64,
) -> fl_status {
    set(opts, |o| {
        o.retry_jitter = Some(ffi::millis(retry_jitter_ms));
        Ok(())
    })
}

/// Sets the clock drift factor, in [0, 0.5) (checked by `fl_manager_new`): the share of the
/// TTL taken off a lock's validity for clock drift between client and servers.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_drift_factor(
    opts: *mut fl_manager_options,
    drift_factor: f64,
) -> fl_status {
    set(opts, |o| {
        o.drift_factor = Some(drift_factor);
        Ok(())
    })
}

/// Sets a fixed timeout for each call to one server, in milliseconds (1 to 3,600,000,
/// checked by `fl_manager_new`), instead of the default ttl/20 within [10 ms, 1 s].
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_server_timeout_ms(
    opts: *mut fl_manager_options,
    server_timeout_ms: u64,
) -> fl_status {
    set(opts, |o| {
        o.server_timeout = Some(ffi::millis(server_timeout_ms));
        Ok(())
    })
}

/// Sets the longest time opening a connection to a server may take (TCP connect, TLS
/// handshake, authentication), in milliseconds: 1 to 3,600,000 (checked by
/// `fl_manager_new`); default 2000. A server that does not answer in time counts as down for
/// that attempt.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_connect_timeout_ms(
    opts: *mut fl_manager_options,
    connect_timeout_ms: u64,
) -> fl_status {
    set(opts, |o| {
        o.connect_timeout = Some(ffi::millis(connect_timeout_ms));
        Ok(())
    })
}

/// Sets after how many attempts in a row on which every server refused the connection
/// (nothing listens there: a server not started, a wrong port) a wait gives up:
/// `fl_lock_acquire` (and the semaphore's and read-write lock's) returns `FL_UNAVAILABLE`
/// saying so instead of waiting until its limit, or for ever. Default 10 (about 2 s at the
/// default retry delay); 0 waits through refusals. A Sentinel's or a Cluster's master down
/// during a failover is always waited through.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_refused_attempts(
    opts: *mut fl_manager_options,
    attempts: u32,
) -> fl_status {
    set(opts, |o| {
        o.refused_attempts = Some(attempts);
        Ok(())
    })
}

/// Asks for replica acknowledgment: after each acquire, extend and fencing write-back on a
/// server, a wait until `replicas` replicas acknowledged the write (at most `timeout_ms`), so
/// that a granted lock and its fencing counter survive a failover of the master that holds
/// them. A server whose write fewer replicas acknowledged
/// within `timeout_ms` does not count toward the quorum: the call fails on it (retried until
/// the wait limit), and without a quorum `fl_lock_acquire` or `fl_lock_extend` returns
/// `FL_UNAVAILABLE` with a message naming how many replicas acknowledged. `replicas` must be
/// at least 1 and `timeout_ms` 1 to 3,600,000 (checked by `fl_manager_new`); a server waits at
/// most three quarters of the per-server timeout. Off by default (docs/SAFETY.md has the
/// trade-off). The ACL user needs `+wait`.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_replica_ack(
    opts: *mut fl_manager_options,
    replicas: u32,
    timeout_ms: u64,
) -> fl_status {
    set(opts, |o| {
        o.replica_ack = Some((replicas, ffi::millis(timeout_ms)));
        Ok(())
    })
}

/// The password of every server whose URL has none (with the URL's user, if any; a Sentinel
/// entry's master, a cluster's nodes), so that it can come from the environment or a secret
/// file instead of a URL: a NUL-terminated UTF-8 string, copied. A URL's own password wins.
/// It never appears in a message or an event. Replaces an earlier password.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` or `password` is NULL or the password is not UTF-8
/// (an empty one is refused by `fl_manager_new`).
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_password(
    opts: *mut fl_manager_options,
    password: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let text = unsafe { ffi::utf8(password, "password") }?;
        o.password = Some(Secret(text.to_owned()));
        Ok(())
    })
}

unsafe fn path(p: *const c_char, what: &str) -> fencelock::Result<Pem> {
    // SAFETY: forwarded under the caller's contract.
    let bytes = unsafe { ffi::bytes(p, what) }?;
    Ok(Pem::File(PathBuf::from(OsStr::from_bytes(bytes))))
}

unsafe fn text(p: *const c_char, what: &str) -> fencelock::Result<Pem> {
    // SAFETY: forwarded under the caller's contract.
    Ok(Pem::Text(unsafe { ffi::bytes(p, what) }?.to_vec()))
}

/// For `rediss://` servers: trust the CA certificate(s) in the PEM file at `path` instead of
/// the system's roots. The file is read by `fl_manager_new` (an unreadable file or a bad
/// certificate is `FL_INVALID_ARGUMENT` there). Replaces an earlier CA setting.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` or `path` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_tls_ca_file(
    opts: *mut fl_manager_options,
    path: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: NULL or a NUL-terminated string, by contract.
        o.tls_ca = Some(unsafe { self::path(path, "path") }?);
        Ok(())
    })
}

/// As `fl_manager_options_set_tls_ca_file`, from a NUL-terminated PEM document (copied).
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` or `pem` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_tls_ca_pem(
    opts: *mut fl_manager_options,
    pem: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: NULL or a NUL-terminated string, by contract.
        o.tls_ca = Some(unsafe { text(pem, "pem") }?);
        Ok(())
    })
}

/// For `rediss://` servers that require client certificates (mutual TLS): the client
/// certificate chain and its private key, as PEM files read by `fl_manager_new`.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts`, `cert_path` or `key_path` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_tls_client_cert_files(
    opts: *mut fl_manager_options,
    cert_path: *const c_char,
    key_path: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: NULL or NUL-terminated strings, by contract.
        let cert = unsafe { path(cert_path, "cert_path") }?;
        // SAFETY: as above.
        let key = unsafe { path(key_path, "key_path") }?;
        o.tls_client = Some((cert, key));
        Ok(())
    })
}

/// As `fl_manager_options_set_tls_client_cert_files`, from NUL-terminated PEM documents
/// (copied).
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts`, `cert_pem` or `key_pem` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_tls_client_cert_pem(
    opts: *mut fl_manager_options,
    cert_pem: *const c_char,
    key_pem: *const c_char,
) -> fl_status {
    set(opts, |o| {
        // SAFETY: NULL or NUL-terminated strings, by contract.
        let cert = unsafe { text(cert_pem, "cert_pem") }?;
        // SAFETY: as above.
        let key = unsafe { text(key_pem, "key_pem") }?;
        o.tls_client = Some((cert, key));
        Ok(())
    })
}

/// For `rediss://` servers: when `insecure` is true, accept any certificate and host name.
/// For self-signed development servers only: it gives up protection against a man in the
/// middle. Off by default.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_tls_insecure(
    opts: *mut fl_manager_options,
    insecure: bool,
) -> fl_status {
    set(opts, |o| {
        o.tls_insecure = Some(insecure);
        Ok(())
    })
}

/// Frees an options object. NULL is a no-op. Freeing it twice, or using it after, is
/// undefined behaviour (the caller's contract).
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_free(opts: *mut fl_manager_options) {
    // SAFETY: NULL or made by fl_manager_options_new and not freed before, by contract.
    boundary_or((), || unsafe { ffi::free(opts) })
}
