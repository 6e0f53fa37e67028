//! A model of fencelock's protocol, checked by [stateright](https://docs.rs/stateright) in
//! every interleaving within bounds: the server's scripts as atomic steps, clients that
//! wait in line, hold, extend, write to a fenced store and release, and the faults that
//! matter (lost and delayed replies, crashes, pauses, keys and places that expire, a server
//! that restarts empty). docs/SAFETY.md lists the properties and the command that checks
//! each; `cargo test` here checks the bounds CI uses, `cargo run --release -- --help` larger
//! ones.
//!
//! One module per concern: [`lock`] the clients and the time, [`scripts`] the server (and
//! [`permits`] its semaphores and read-write locks, [`many`] a lock on several names),
//! [`properties`] what is checked, [`trace`] the runs the conformance test replays on a real
//! server.

pub mod lock;
pub mod many;
pub mod permits;
pub mod properties;
pub mod redlock;
pub mod scripts;
pub mod trace;
