//! # fencelock
//!
//! A distributed lock on Redis: the single-server lock (`SET key token NX PX ttl` +
//! compare-and-delete in Lua) and Redlock over several independent servers (quorum N/2+1),
//! which are one code path: the single-server lock is Redlock with N = 1.
//!
//! Every acquisition carries a **fencing token** that grows with every acquisition on the
//! server set, so a storage can reject the late write of a holder whose lock expired while it
//! was paused. Waiters do not poll, and they are served in the order they came: each takes a
//! place in a wait queue on the servers, and a release hands the lock straight to the first in
//! line.
//!
//! ```no_run
//! use std::time::Duration;
//! # async fn demo() -> fencelock::Result<()> {
//! let manager = fencelock::LockManager::new(["redis://127.0.0.1:6379"])?;
//! let lock = manager.acquire("invoices", Duration::from_secs(10), None).await?;
//! println!("fencing token {}", lock.fencing_token());
//! lock.release().await?;
//! # Ok(()) }
//! ```
//!
//! For callers that are not async, [`blocking`] has the same surface. What the bindings and
//! the test kits need beyond this API (limits, the measurement table and sinks, the event
//! listeners, a binding's event-loop lane) is in the hidden `ffi_support` module, which may
//! change in any release.
//!
//! The `observe` feature (on by default) records the measurements through the `metrics`
//! facade (`describe_metrics` describes them to a recorder installed late) and lets the
//! bindings listen to fencelock's events; without it neither `metrics` nor
//! `tracing-subscriber` is compiled, and the `tracing` spans and the bindings' sinks remain.
#![warn(missing_docs)]

// The module map (docs/ARCHITECTURE.md has it, with the path of one acquire): the public API
// (manager, lock, blocking, config); one acquire call and its waiting (acquire), one attempt
// (attempt) on the engine (engine, undo); the wait queue's protocol (queue) over the scripts
// and pub/sub (scripts, pubsub); one server (server, failure, url, tls, deadline); pure rules
// (quorum, timing, keys, token); observability (observe).
mod acquire;
mod attempt;
pub mod blocking;
mod cleanup;
mod config;
mod conn;
mod deadline;
mod deferred;
mod direct;
mod election;
mod engine;
mod error;
mod failure;
mod family;
#[doc(hidden)]
pub mod ffi_support;
mod identity;
mod inspect;
mod keys;
mod kind;
mod label;
mod lane;
mod leases;
mod lock;
mod lost;
mod manager;
mod measure;
#[cfg(feature = "observe")]
mod observe;
mod probe;
mod pubsub;
mod queue;
mod quorum;
mod rwlock;
mod scripts;
mod semaphore;
mod sentinel;
mod server;
mod sync;
mod timing;
mod tls;
mod token;
mod undo;
mod units;
mod url;
mod who;

pub use acquire::AcquireOptions;
pub use cleanup::settle_all;
pub use config::{Builder, Config, ReplicaAck, DEFAULT_DRIFT_FACTOR, MAX_SERVERS};
pub use election::{check_value, Election, Leader, Observer, Term, MAX_VALUE_LEN};
pub use error::{Error, ErrorKind, Result, ServerOutcome, ServerReport};
pub use family::{Family, FamilyState};
pub use inspect::LockState;
pub use keys::display_name;
pub use kind::LeaseKind;
pub use lock::{Lock, LostView};
pub use lost::LostReason;
pub use manager::LockManager;
#[cfg(feature = "observe")]
pub use measure::describe as describe_metrics;
pub use measure::MetricNames;
pub use rwlock::{RwLock, RwLockState};
pub use semaphore::{Semaphore, SemaphoreState};
pub use timing::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RETRY_DELAY, DEFAULT_TTL};
#[doc(hidden)]
pub use url::check_url_redaction;
pub use url::{redact_url, url_has_password};
pub use who::{default_holder_label, HolderNote, LockHolder};

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// docs/observability.md's Rust block, compiled and run by `cargo test --doc` as the README's.
#[doc = include_str!("../../docs/observability.md")]
#[cfg(doctest)]
pub struct ObservabilityDoctests;
