//! The Lua scripts, run with EVALSHA (`Server::eval`), and loaded with SCRIPT LOAD when a
//! server does not know them yet (a new server, a restart, a SCRIPT FLUSH).

use std::sync::LazyLock;

use redis::Script;

/// `SET NX PX` + fencing `INCR` (first come, first served), or the holder's `PTTL` and the
/// counter, taking a place in the wait queue.
pub(crate) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("scripts/queue.lua"),
        include_str!("scripts/acquire.lua")
    ))
});
/// Compare-and-delete + `PUBLISH` of the first waiter in line on the release channel.
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("scripts/queue.lua"),
        include_str!("scripts/release.lua")
    ))
});
/// Compare-and-`PEXPIRE`.
pub(crate) static EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/extend.lua")));
/// Raise the fencing counter to at least a value.
pub(crate) static RAISE_FENCE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/raise_fence.lua")));
