//! A model of fencelock's protocol, checked by [stateright](https://docs.rs/stateright) in
//! every interleaving within bounds: the server's scripts as atomic steps, clients that
//! wait in line, hold, extend, write to a fenced store and release, and the faults that
//! matter (lost and delayed replies, crashes, pauses, keys and places that expire, a server
//! that restarts empty). docs/SAFETY.md lists the properties and the command that checks
//! each; `cargo test` here checks the bounds CI uses, `cargo run --release -- --help` larger
//! ones.
//!
//! One module per concern: [`world`] the shared vocabulary (clients, keys, places, requests,
//! replies, the store, the faults; the single-server model's bounds and state), [`votes`]
//! Redlock's bounds and state, [`lock`] the single-server model's steps and time, [`scripts`]
//! the server (and [`permits`] its semaphores and read-write locks, [`many`] a lock on several
//! names), [`redlock`] the model on several servers, [`properties`] what is checked, [`trace`]
//! the runs the conformance test replays on a real server. The vocabulary is a leaf: no
//! module uses one that uses it back.

/// The allocator of the checker's programs (its tests and `fencelock-model`): it clones every
/// state it generates, and mimalloc makes those small allocations cheaper than the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod lock;
pub mod many;
pub mod permits;
pub mod properties;
pub mod redlock;
pub mod scripts;
pub mod trace;
pub mod votes;
pub mod world;
