//! Node.js binding of fencelock (napi-rs): the npm package `fencelock`.
//!
//! Thin by design: argument conversion (`args`), error mapping (`error`), runtime bridging
//! (`promise`: core futures on napi's tokio runtime settle Promises) and handle ownership
//! (`manager`, `lock`). Every lock behaviour is the core's.

// The classes' modules first: napi-derive names the class of a `#[napi] impl` block after
// the struct's `js_name` only when it expanded that struct before the block; otherwise after
// the Rust type (`JsLockManager`), and whichever block registers last names the class. So
// `family.rs`'s methods on `LockManager` must come after `manager.rs`.
mod lock;
mod manager;

mod abort;
mod args;
pub mod cli;
mod election;
pub mod error;
mod event_loop;
pub mod events;
mod family;
mod loop_stream;
pub mod metrics;
mod options;
mod promise;
pub mod spans;
mod types;
