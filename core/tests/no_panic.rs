//! Hostile input: arbitrary names, tokens, TTLs, URLs and options never panic, and bad ones are
//! rejected with `InvalidArgument` before any network call.

use std::time::Duration;

use fencelock::{AcquireOptions, Builder, ErrorKind, LockManager};
use proptest::prelude::*;

fn closed_port_manager() -> LockManager {
    // Nothing listens here: a call that reached the network would end `Unavailable`.
    let port = fencelock_testkit::free_port();
    LockManager::builder([format!("redis://127.0.0.1:{port}")])
        .server_timeout(Duration::from_millis(50))
        .build()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_server_list_and_options_build_or_fail_cleanly(
        urls in prop::collection::vec(".{0,40}", 0..4),
        prefix in prop::collection::vec(any::<u8>(), 0..1100),
        delay_ns in any::<u64>(),
        jitter_ns in prop::option::of(any::<u64>()),
        drift in any::<f64>(),
        timeout_ns in prop::option::of(any::<u64>()),
    ) {
        let mut b = Builder::new(&urls)
            .key_prefix(&prefix)
            .retry_delay(Duration::from_nanos(delay_ns))
            .drift_factor(drift);
        if let Some(j) = jitter_ns { b = b.retry_jitter(Duration::from_nanos(j)); }
        if let Some(t) = timeout_ns { b = b.server_timeout(Duration::from_nanos(t)); }
        if let Err(e) = b.config() {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn any_redis_url_parses_or_is_rejected(host in "[a-z0-9.:@/_%-]{0,30}", scheme in "(redis|rediss|unix|http|)") {
        let url = format!("{scheme}://{host}");
        if let Err(e) = LockManager::new([url.as_str()]) {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn bad_names_tokens_and_ttls_fail_before_the_network(
        name in prop::collection::vec(any::<u8>(), 0..1100),
        token in prop::option::of(prop::collection::vec(any::<u8>(), 0..600)),
        ttl_ns in any::<u64>(),
        wait_ns in any::<u64>(),
    ) {
        let m = closed_port_manager();
        // Always a wait limit: with none, acquire keeps retrying an unreachable server.
        let mut opts = AcquireOptions::new(Duration::from_nanos(ttl_ns))
            .wait(Some(Duration::from_nanos(wait_ns % 1_000_000)));
        opts.token = token.clone();
        let valid = !name.is_empty() && name.len() <= 1024 && !name.starts_with(fencelock::ffi_support::keys::RESERVED_PREFIX)
            && token.as_ref().is_none_or(|t| !t.is_empty() && t.len() <= 512)
            && Duration::from_nanos(ttl_ns) >= fencelock::ffi_support::quorum::min_ttl(fencelock::DEFAULT_DRIFT_FACTOR)
            && Duration::from_nanos(ttl_ns) <= fencelock::ffi_support::timing::MAX_TTL;
        let e = runtime().block_on(m.acquire_with(&name, &opts)).unwrap_err();
        if valid {
            prop_assert_eq!(e.kind(), ErrorKind::Unavailable, "{}", e);
        } else {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
        }
    }
}
