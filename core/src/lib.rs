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
//! For callers that are not async, [`blocking`] has the same surface.
#![warn(missing_docs)]

pub mod blocking;
mod config;
mod deadline;
mod error;
mod lock;
mod manager;
pub mod observe;
pub mod quorum;
mod scripts;
mod server;
pub mod token;

pub use config::{
    redact_url, Builder, Config, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DRIFT_FACTOR, DEFAULT_RETRY_DELAY,
};
pub use error::{Error, ErrorKind, Result};
pub use lock::Lock;
pub use manager::{AcquireOptions, LockManager};
pub use token::display_name;

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// Default TTL of the bindings' acquire calls: 30 s.
pub const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(30);
