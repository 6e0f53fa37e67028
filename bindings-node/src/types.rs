//! The options objects, defined once: each `#[napi(object)]` type gives the generated
//! `native.d.ts` its interface, and its list of keys (`KEYS`, made by the same macro from
//! the same fields) is what `args::Fields` reads and checks: a key the type does not have is
//! an `ERR_INVALID_ARG` error naming it, not ignored. The values are converted field by field
//! in `args.rs`, with the binding's own `ERR_INVALID_ARG` messages instead of napi's generic
//! conversion errors.
#![allow(dead_code)]

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// An options type: the `#[napi(object)]` struct and, from the same field list, the keys
/// JavaScript passes (napi's camelCase of each field, checked by a test). Docs are written as
/// `#[doc = "..."]`: a `///` comment passed through a macro reaches napi as a raw string,
/// which it would copy into `native.d.ts` with its `r"` prefix.
macro_rules! js_options {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$fmeta:meta])* $field:ident / $js:literal : $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[napi(object)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// The keys of this options object, as JavaScript writes them.
            pub const KEYS: &'static [&'static str] = &[$($js),*];
            /// `(Rust field, JavaScript key)` pairs, for the test of their spelling.
            #[cfg(test)]
            pub const FIELDS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($field), $js)),*];
        }
    };
}

js_options! {
    #[doc = " Options of `new LockManager(servers, options)`. Durations are in milliseconds."]
    LockManagerOptions {
        #[doc = " Prefix of every key (`prefix + name`) and channel; default empty."]
        key_prefix / "keyPrefix": Option<Either<String, Buffer>>,
        #[doc = " Longest sleep between tries when no release notification comes; default 200."]
        retry_delay / "retryDelay": Option<f64>,
        #[doc = " Largest random spread of a sleep between tries; default half the retry delay."]
        retry_jitter / "retryJitter": Option<f64>,
        #[doc = " Clock drift factor in [0, 0.5); default 0.01."]
        drift_factor / "driftFactor": Option<f64>,
        #[doc = " A fixed per-server call timeout instead of ttl/20 within [10, 1000]."]
        server_timeout / "serverTimeout": Option<f64>,
        #[doc = " The longest time opening a connection to a server may take; default 2000."]
        connect_timeout / "connectTimeout": Option<f64>,
        #[doc = " After how many attempts in a row on which every server refused the connection"]
        #[doc = " (nothing listens: a server not started, a wrong port) a wait gives up with"]
        #[doc = " `UnavailableError`; default 10 (about 2 s), 0 waits through refusals. A"]
        #[doc = " Sentinel's or a Cluster's master down during a failover is waited through."]
        refused_attempts / "refusedAttempts": Option<u32>,
        #[doc = " How many replicas must acknowledge each acquire, extend and fencing"]
        #[doc = " write-back; a server whose replicas did not within `replicaAckTimeout` does not"]
        #[doc = " count toward the quorum, so that a granted lock survives a failover of its master."]
        #[doc = " Default: none (off)."]
        replica_ack / "replicaAck": Option<u32>,
        #[doc = " How long a server waits for `replicaAck` replicas; default 100."]
        replica_ack_timeout / "replicaAckTimeout": Option<f64>,
        #[doc = " For `rediss://` servers: a PEM file of the CA certificate(s) to trust instead of"]
        #[doc = " the system's roots."]
        tls_ca_file / "tlsCaFile": Option<String>,
        #[doc = " For `rediss://` servers requiring client certificates (mutual TLS): the PEM file of"]
        #[doc = " the client certificate chain. Needs `tlsClientKey`."]
        tls_client_cert / "tlsClientCert": Option<String>,
        #[doc = " The PEM file of the client certificate's private key. Needs `tlsClientCert`."]
        tls_client_key / "tlsClientKey": Option<String>,
        #[doc = " For `rediss://` servers: accept any certificate and host name. Self-signed"]
        #[doc = " development servers only; default false."]
        tls_insecure / "tlsInsecure": Option<bool>,
        #[doc = " The password of every server whose URL has none (with the URL's user, if any;"]
        #[doc = " a Sentinel entry's master, a cluster's nodes), to keep it out of URLs: pass"]
        #[doc = " `process.env.REDIS_PASSWORD`. A URL's own password wins; never shown."]
        password / "password": Option<String>,
        #[doc = " Lock names shown in the `name` label of fencelock's measurements (the"]
        #[doc = " `fencelock/metrics` exporters); others have an empty label, the default for all,"]
        #[doc = " since names are often unbounded."]
        metric_names / "metricNames": Option<Vec<String>>,
        #[doc = " Leave a note next to each lock acquired, saying who holds it (`true`: `host:pid`;"]
        #[doc = " or a label, 1 to 128 bytes), since when and with which fencing token, for"]
        #[doc = " `holder(name)` and `fencelock status`. Off by default: nothing more is written."]
        holder / "holder": Option<Either<bool, String>>,
    }
}

js_options! {
    #[doc = " Options of `LockManager.acquire` and `LockManager.using`. Durations are in"]
    #[doc = " milliseconds."]
    AcquireOptions {
        #[doc = " How long the lock lives unless extended; default 30000."]
        ttl / "ttl": Option<f64>,
        #[doc = " How long to keep trying: omitted (or `Infinity`) waits until acquired, 0 tries"]
        #[doc = " once."]
        wait / "wait": Option<f64>,
        #[doc = " A token of your own (a request or job id) instead of a random one. It is exclusive,"]
        #[doc = " as the classic request-id lock is: while the name is held with it (by another"]
        #[doc = " process passing the same token too), acquiring is refused like any other holder's,"]
        #[doc = " unless `reentrant`."]
        token / "token": Option<Either<String, Buffer>>,
        #[doc = " With `token`: a name already held with it is acquired again (its TTL reset, a new"]
        #[doc = " fencing token) instead of waiting for that holder; default false."]
        reentrant / "reentrant": Option<bool>,
        #[doc = " Extend in the background every ttl/3 until released or lost (default: false, but"]
        #[doc = " true in `using`)."]
        auto_extend / "autoExtend": Option<bool>,
        #[doc = " With `autoExtend`: stop extending this long after acquisition."]
        max_hold / "maxHold": Option<f64>,
        #[doc = " Aborting it stops the wait: the Promise rejects with an `AbortError` and no lock is"]
        #[doc = " left behind."]
        #[napi(ts_type = "AbortSignal")]
        signal / "signal": Option<()>,
    }
}

js_options! {
    #[doc = " Options of `LockManager.tryAcquire` (one attempt, so no `wait`)."]
    TryAcquireOptions {
        #[doc = " How long the lock lives unless extended; default 30000."]
        ttl / "ttl": Option<f64>,
        #[doc = " A token of your own instead of a random one (exclusive unless `reentrant`)."]
        token / "token": Option<Either<String, Buffer>>,
        #[doc = " With `token`: a name already held with it is acquired again; default false."]
        reentrant / "reentrant": Option<bool>,
        #[doc = " Extend in the background every ttl/3 until released or lost."]
        auto_extend / "autoExtend": Option<bool>,
        #[doc = " With `autoExtend`: stop extending this long after acquisition."]
        max_hold / "maxHold": Option<f64>,
        #[doc = " Aborting it abandons the attempt."]
        #[napi(ts_type = "AbortSignal")]
        signal / "signal": Option<()>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// napi names a field in camelCase: the keys read and checked must be those names.
    fn camel(snake: &str) -> String {
        let mut out = String::new();
        let mut upper = false;
        for c in snake.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.extend(c.to_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn every_key_is_the_camel_case_of_its_field() {
        for fields in [
            LockManagerOptions::FIELDS,
            AcquireOptions::FIELDS,
            TryAcquireOptions::FIELDS,
        ] {
            for (field, js) in fields {
                assert_eq!(camel(field), *js);
            }
        }
    }

    #[test]
    fn try_acquire_takes_the_options_of_acquire_but_wait() {
        // manager.rs checks tryAcquire's keys against acquire's, to answer `wait` clearly.
        let extra: Vec<&str> = AcquireOptions::KEYS
            .iter()
            .copied()
            .filter(|k| !TryAcquireOptions::KEYS.contains(k))
            .collect();
        assert_eq!(extra, ["wait"]);
        assert!(TryAcquireOptions::KEYS
            .iter()
            .all(|k| AcquireOptions::KEYS.contains(k)));
    }
}
