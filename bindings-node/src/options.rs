//! `new LockManager(servers, options)`: the options object read into the core's builder, each
//! option checked with a message naming it (before any network call).

use napi::bindgen_prelude::*;

use crate::args::{self, Checked, Fields};
use crate::error::invalid;
use crate::types::LockManagerOptions;

/// The manager for `servers` and `options`.
pub(crate) fn manager(
    env: &Env,
    servers: Unknown,
    options: Option<Unknown>,
) -> Checked<fencelock::LockManager> {
    let urls = args::servers(&servers)?;
    let options = args::options("options", options)?;
    let fields = Fields::new(
        env,
        "the options of new LockManager()",
        options,
        LockManagerOptions::KEYS,
    )?;
    let mut builder = fencelock::LockManager::builder(urls);
    let field = |key| fields.get(key);
    let v = field("keyPrefix")?;
    if !args::is_nullish(&v) {
        builder = builder.key_prefix(args::bytes("keyPrefix", &v)?);
    }
    let v = field("retryDelay")?;
    if !args::is_nullish(&v) {
        builder = builder.retry_delay(args::duration("retryDelay", &v)?);
    }
    let v = field("retryJitter")?;
    if !args::is_nullish(&v) {
        builder = builder.retry_jitter(args::duration("retryJitter", &v)?);
    }
    let v = field("driftFactor")?;
    if !args::is_nullish(&v) {
        builder = builder.drift_factor(args::number("driftFactor", &v)?);
    }
    let v = field("serverTimeout")?;
    if !args::is_nullish(&v) {
        builder = builder.server_timeout(args::duration("serverTimeout", &v)?);
    }
    let v = field("connectTimeout")?;
    if !args::is_nullish(&v) {
        builder = builder.connect_timeout(args::duration("connectTimeout", &v)?);
    }
    let v = field("refusedAttempts")?;
    if !args::is_nullish(&v) {
        let n = args::number("refusedAttempts", &v)?;
        if n.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&n) {
            return Err(invalid(format!(
                "refusedAttempts must be a whole number of attempts from 0 (never give up); \
                 got {n}"
            )));
        }
        builder = builder.refused_attempts(n as u32);
    }
    let v = field("password")?;
    if !args::is_nullish(&v) {
        builder = builder.password(args::secret("password", &v)?);
    }
    let v = field("metricNames")?;
    if !args::is_nullish(&v) {
        let names = args::metric_names(&v)?;
        builder = builder.metric_names(fencelock::MetricNames::listed(names));
    }
    if let Some(label) = args::holder(&field("holder")?)? {
        builder = builder.holder_label(label);
    }
    builder = replica_ack(builder, &fields)?;
    builder = tls(builder, &fields)?;
    // Calls polled on this thread ride connections its event loop drives.
    if let Some(io) = crate::promise::loop_io(env)? {
        builder = builder.loop_io(io);
    }
    Ok(builder.build()?)
}

/// `replicaAck` and `replicaAckTimeout`.
fn replica_ack(mut builder: fencelock::Builder, fields: &Fields) -> Checked<fencelock::Builder> {
    let (acks, within) = (fields.get("replicaAck")?, fields.get("replicaAckTimeout")?);
    match (args::is_nullish(&acks), args::is_nullish(&within)) {
        (true, true) => {}
        (false, _) => {
            let n = args::number("replicaAck", &acks)?;
            if n.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&n) {
                return Err(invalid(format!(
                    "replicaAck must be a whole number of replicas, at least 1; got {n}"
                )));
            }
            let within = if args::is_nullish(&within) {
                std::time::Duration::from_millis(100)
            } else {
                args::duration("replicaAckTimeout", &within)?
            };
            builder = builder.replica_ack(n as u32, within);
        }
        (true, false) => {
            return Err(invalid(
                "replicaAckTimeout needs replicaAck (how many replicas must acknowledge)",
            ))
        }
    }
    Ok(builder)
}

/// `tlsCaFile`, `tlsClientCert` with `tlsClientKey`, `tlsInsecure`.
fn tls(mut builder: fencelock::Builder, fields: &Fields) -> Checked<fencelock::Builder> {
    let v = fields.get("tlsCaFile")?;
    if !args::is_nullish(&v) {
        builder = builder.tls_ca_file(args::path("tlsCaFile", &v)?);
    }
    let (cert, key) = (fields.get("tlsClientCert")?, fields.get("tlsClientKey")?);
    match (args::is_nullish(&cert), args::is_nullish(&key)) {
        (true, true) => {}
        (false, false) => {
            builder = builder.tls_client_cert_files(
                args::path("tlsClientCert", &cert)?,
                args::path("tlsClientKey", &key)?,
            );
        }
        (false, true) => return Err(invalid("tlsClientCert needs tlsClientKey")),
        (true, false) => return Err(invalid("tlsClientKey needs tlsClientCert")),
    }
    let v = fields.get("tlsInsecure")?;
    Ok(builder.tls_insecure(args::boolean("tlsInsecure", &v, false)?))
}
