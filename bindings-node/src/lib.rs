//! Node.js binding of fencelock (napi-rs): the npm package `fencelock`.
//!
//! Thin by design: argument conversion (`args`), error mapping (`error`), runtime bridging
//! (`promise`: core futures on napi's tokio runtime settle Promises) and handle ownership
//! (`manager`, `lock`). Every lock behaviour is the core's.

mod args;
pub mod error;
mod event_loop;
pub mod events;
mod family;
mod lock;
mod manager;
mod promise;
mod types;
