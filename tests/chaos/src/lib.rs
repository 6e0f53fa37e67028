//! # fencelock-chaos
//!
//! The fault-injection suite of fencelock, and the pieces it is built from:
//!
//! - [`proxy`]: a fault-injecting TCP proxy (latency, stalls, blackhole, dropped
//!   connections) placed between clients and chosen servers;
//! - [`history`]: the history checker (no overlap within reported validity, nobody holding
//!   past validity, fencing tokens strictly increasing in hold order), and [`capacity`], its
//!   rules for semaphores and read-write locks (never over the limit, never a writer with
//!   anyone else);
//! - [`contend`]: holders contending for a few names while faults happen;
//! - [`store`]: a fenced and an unfenced store, to show what fencing tokens buy;
//! - [`paused`]: a holder paused past its TTL and fenced off when it resumes, for holders in
//!   any two languages;
//! - [`worker`]: worker processes (the `chaos-worker` binary) that can be paused and killed;
//! - [`mixed`]: worker processes in Rust, Python, Node, C, Java and Go contending for the same locks
//!   (`tests/chaos/workers/`).
//!
//! Three binaries make the pieces usable from tests in other languages: `chaos-worker` (a Rust
//! holder: `hold` one lock under the test's control, or `contend` and print `HOLD` lines),
//! `chaos-proxy` (the proxy, controlled over stdin) and `chaos-check` (the checker over the
//! `HOLD` lines of any workers' output; its exit status is the verdict).
//!
//! The tests are in `tests/`: `proxy.rs` (the proxy itself), `check.rs` (the checker process),
//! `faults.rs` (faults during contention), `pitfalls.rs` (the classic mistakes of Redis
//! locks, naive code against fencelock) and `mixed.rs` (Rust, Python, Node, C, Java and Go worker
//! processes contending for the same locks). Set `FENCELOCK_SOAK=1` for longer runs.
#![warn(missing_docs)]

pub mod capacity;
pub mod clock;
pub mod contend;
pub mod history;
pub mod hold;
pub mod judge;
pub mod mixed;
pub mod netns;
pub mod paused;
pub mod proxy;
pub mod soak;
pub mod store;
pub mod worker;

use std::time::Duration;

/// Whether the soak mode is on (`FENCELOCK_SOAK=1`): tests run longer. CI does not set it.
pub fn soak() -> bool {
    std::env::var("FENCELOCK_SOAK").is_ok_and(|v| v == "1")
}

/// `d` in normal runs, `d * factor` in soak mode.
pub fn scaled(d: Duration, factor: u32) -> Duration {
    if soak() {
        d * factor
    } else {
        d
    }
}

/// The URLs of servers, for a manager.
pub fn urls(servers: &[fencelock_testkit::RedisServer]) -> Vec<String> {
    servers.iter().map(|s| s.url()).collect()
}
