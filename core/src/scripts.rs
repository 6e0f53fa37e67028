//! The Lua scripts, and one typed call per script that fixes its KEYS and packs its ARGV, so
//! that no caller can get either wrong.
//!
//! Every script takes a prefix of one KEYS order, the same key at the same place everywhere:
//! `[lock, fencing counter, wait queue, queue deadlines, waiters' TTLs]` (see
//! [`crate::keys::LockKeys`]). ARGV is packed here: a command may have at most
//! [`MAX_PARTS`] parts (EVALSHA, the hash, the key count, the keys and the arguments), because
//! a server refuses longer ones from a client that has not authenticated with a protocol error
//! instead of its NOAUTH reply, which names the real problem. On a cluster the scripts that can
//! delete a key declare one key more, the slot guard (see [`crate::keys`]), so that they never
//! run while their slot is being migrated: those calls follow the connection's preflight, which
//! declares none.
//!
//! Scripts run with EVALSHA (`Server::eval`) and are loaded with SCRIPT LOAD when a server
//! does not know them yet (a new server, a restart, a SCRIPT FLUSH).

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use redis::Script;

use crate::conn::Route;
use crate::keys::LockKeys;
use crate::queue::{Place, OBSERVERS};
use crate::token::WAKE_ID_LEN;
use packed::Packed;

#[cfg(test)]
mod conformance;
mod packed;
mod permits;
mod replies;
pub(crate) use replies::{
    parse_acquire, parse_inspect, parse_permits, parse_whos, AcquireReply, Compared, Holder,
    PermitsView,
};

/// Most parts a script call may have (see the module doc).
pub(crate) const MAX_PARTS: usize = 10;

/// `SET NX PX` + fencing `INCR` (first come, first served), or the holder's `PTTL` and the
/// counter, taking a place in the wait queue.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE_SRC));
const ACQUIRE_SRC: &str = concat!(
    include_str!("scripts/acquire.lua"),
    include_str!("scripts/holder.lua"),
    include_str!("scripts/queue.lua"),
    include_str!("scripts/acquire_queued.lua")
);
/// Compare-and-delete + `PUBLISH` of the first waiter in line on the release channel.
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_SRC));
const RELEASE_SRC: &str = concat!(
    include_str!("scripts/release.lua"),
    include_str!("scripts/holder.lua"),
    include_str!("scripts/queue.lua"),
    include_str!("scripts/release_queued.lua")
);
/// Compare-and-`PEXPIRE`.
static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_SRC));
const EXTEND_SRC: &str = concat!(
    include_str!("scripts/holder.lua"),
    include_str!("scripts/extend.lua")
);
/// Raise the fencing counter to at least a value.
static RAISE_FENCE: LazyLock<Script> = LazyLock::new(|| Script::new(RAISE_FENCE_SRC));
const RAISE_FENCE_SRC: &str = include_str!("scripts/raise_fence.lua");

/// [`ACQUIRE`] for several names at once, all or none.
static ACQUIRE_MANY: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE_MANY_SRC));
const ACQUIRE_MANY_SRC: &str = concat!(
    include_str!("scripts/holder.lua"),
    include_str!("scripts/queue.lua"),
    include_str!("scripts/acquire_many.lua")
);
/// [`RELEASE`] for several names at once.
static RELEASE_MANY: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_MANY_SRC));
const RELEASE_MANY_SRC: &str = concat!(
    include_str!("scripts/holder.lua"),
    include_str!("scripts/queue.lua"),
    include_str!("scripts/release_many.lua")
);
/// [`EXTEND`] for several names at once, all or none.
static EXTEND_MANY: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_MANY_SRC));
const EXTEND_MANY_SRC: &str = concat!(
    include_str!("scripts/holder.lua"),
    include_str!("scripts/extend_many.lua")
);

/// Read-only: the holder's token and PTTL.
static INSPECT: LazyLock<Script> = LazyLock::new(|| Script::new(INSPECT_SRC));
const INSPECT_SRC: &str = concat!(
    include_str!("scripts/holder.lua"),
    include_str!("scripts/inspect.lua")
);

/// The holder label's note, written next to a held lock (see `note.lua`, `who.rs`).
static NOTE: LazyLock<Script> = LazyLock::new(|| Script::new(NOTE_SRC));
const NOTE_SRC: &str = include_str!("scripts/note.lua");
/// How a note of an election's term is told to its observers (see `note.lua`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Announce {
    /// Not at all: a holder label's note.
    Silent,
    /// A change (a new term, a proclaimed value): an empty message, on which every observer
    /// reads the election again.
    Change,
    /// The term `term` extended, nothing else changed: a message "TERM PTTL observer" naming
    /// the observers' token ([`OBSERVERS`]; the release message's format, its arrival field
    /// the key's new PTTL), from which they learn the term's new end without a read.
    Renewal { term: u64 },
}

/// An election's announcement of a change that no note tells (see `announce.lua`).
static ANNOUNCE: LazyLock<Script> = LazyLock::new(|| Script::new(ANNOUNCE_SRC));
const ANNOUNCE_SRC: &str = include_str!("scripts/announce.lua");

/// Every command the other scripts run, once per connection (see `preflight.lua`).
static PREFLIGHT: LazyLock<Script> = LazyLock::new(|| Script::new(PREFLIGHT_SRC));
const PREFLIGHT_SRC: &str = include_str!("scripts/preflight.lua");

/// The reserved name whose keys the preflight uses: it starts with fencelock's own keys'
/// prefix, which no lock name may start with (`keys::check_name`).
const PREFLIGHT_NAME: &[u8] = b"fencelock:{preflight}";

/// The command the scripts wake a waiter with on a standalone or Sentinel-managed server; its
/// sharded twin (`S` + it) on a cluster that has sharded pub/sub, where the wake-up channel
/// lives in the lock's slot; `C` + it on a cluster without (Redis 6.2): PUBLISH, which the
/// cluster carries to every node, so that the scripts know a node's count of listeners does
/// not say who hears it (queue.lua's `listening`).
const PUBLISH: &[u8] = b"PUBLISH";

/// One script call, ready to send to any number of servers: the script (to load it where it
/// is missing) and its EVALSHA command, built once and sized up front.
pub(crate) struct ScriptCall {
    script: &'static Script,
    /// The script's code, to name the command of an error by its line.
    source: &'static str,
    cmd: redis::Cmd,
    /// Whether the script publishes wake-ups: then its last argument starts with
    /// [`PUBLISH`], and [`cmd_for`](Self::cmd_for) a cluster makes it `SPUBLISH` (sharded
    /// pub/sub) or `CPUBLISH` (without).
    publishes: bool,
    /// How many keys `cmd` declares.
    keys: usize,
    /// The slot guard ([`LockKeys::guard`]), which the call declares on a cluster after its
    /// own keys: set for the scripts that can delete a key, so that none of them runs while
    /// its slot is being migrated (see [`crate::keys`]).
    guard: Option<Vec<u8>>,
    /// The call for a cluster, without and with sharded pub/sub, made the first time one asks.
    routed: [OnceLock<redis::Cmd>; 2],
    /// Whether its write must be acknowledged by replicas when the manager asks for it
    /// (acquire, extend, fencing write-back; not release, whose loss in a failover only
    /// leaves a key to expire).
    acked: bool,
}

impl ScriptCall {
    fn new(
        script: (&'static Script, &'static str),
        keys: &[&[u8]],
        args: (&[&[u8]], bool),
    ) -> ScriptCall {
        let parts = 3 + keys.len() + args.0.len();
        debug_assert!(parts <= MAX_PARTS, "{parts} parts");
        Self::unbounded(script, keys, args)
    }

    /// A call of any length: for the calls of several names, which grow with their number.
    /// They reach only connections whose preflight (a short call) passed, so authenticated
    /// ones, which take commands of any length.
    fn unbounded(
        (script, source): (&'static Script, &'static str),
        keys: &[&[u8]],
        (args, publishes): (&[&[u8]], bool),
    ) -> ScriptCall {
        let parts = 3 + keys.len() + args.len();
        let size = keys.iter().chain(args).map(|a| a.len()).sum::<usize>() + 7 + 40 + 4;
        let mut cmd = redis::Cmd::with_capacity(parts, size);
        cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys.len());
        for a in keys.iter().chain(args) {
            cmd.arg(*a);
        }
        ScriptCall {
            script,
            source,
            cmd,
            publishes,
            keys: keys.len(),
            guard: None,
            routed: Default::default(),
            acked: false,
        }
    }

    fn acked(self) -> Self {
        ScriptCall {
            acked: true,
            ..self
        }
    }

    /// The call, declaring `keys`' slot guard on a cluster: for the scripts that can delete a
    /// key.
    fn guarded(self, keys: &LockKeys) -> Self {
        ScriptCall {
            guard: Some(keys.guard.clone()),
            ..self
        }
    }

    /// Whether the call's write waits for replica acknowledgment when the manager asks for it.
    pub fn wants_ack(&self) -> bool {
        self.acked
    }

    /// Acquire: grants the lock to `token` for `ttl` (free, or already held by this call's
    /// `token`), or reports the holder's PTTL and the counter, keeping a place in the queue
    /// when `place` is given. With `own`, a key already holding `token` is this call's (a
    /// token of its own, re-entry, or a vote of an earlier attempt); without, it is only when
    /// a release handed it to this call's `place`. Reply: [`parse_acquire`].
    pub fn acquire(
        keys: &LockKeys,
        token: &[u8],
        ttl: Duration,
        place: Option<&Place>,
        own: bool,
    ) -> Self {
        let arg = Packed::acquiring(ttl, place, own)
            .bytes(&keys.channel)
            .done();
        let k = keys;
        ScriptCall::new(
            (&ACQUIRE, ACQUIRE_SRC),
            &[&k.lock, &k.fence, &k.queue, &k.deadlines, &k.ttls],
            (&[token, &arg], true),
        )
        .guarded(k)
        .acked()
    }

    /// [`acquire`](Self::acquire) of several names at once, all or none: `keys` holds each
    /// name's keys (at least one name; on a cluster all in one slot, whose guard it declares). Reply: [`parse_acquire`] with `keys.len()` names.
    pub fn acquire_many(
        keys: &[&LockKeys],
        token: &[u8],
        ttl: Duration,
        place: Option<&Place>,
        own: bool,
    ) -> Self {
        let arg = Packed::acquiring(ttl, place, own).done();
        let (all, mut args) = Self::many_parts(keys, token);
        args.push(&arg);
        ScriptCall::unbounded((&ACQUIRE_MANY, ACQUIRE_MANY_SRC), &all, (&args, true))
            .guarded(keys[0])
            .acked()
    }

    /// [`release`](Self::release) of several names at once (`mode`: 0 keep the place, 1 leave
    /// it too, 2 leave the place only). Reply: [`Compared`].
    pub fn release_many(keys: &[&LockKeys], token: &[u8], mode: u8) -> Self {
        let arg = Packed::new().num(mode).num(WAKE_ID_LEN).done();
        let (all, mut args) = Self::many_parts(keys, token);
        args.push(&arg);
        ScriptCall::unbounded((&RELEASE_MANY, RELEASE_MANY_SRC), &all, (&args, true))
            .guarded(keys[0])
    }

    /// [`extend`](Self::extend) (or, with `add`, [`extend_by`](Self::extend_by)) of several
    /// names at once, all or none. Reply: as theirs (adding: the shortest new TTL).
    pub fn extend_many(keys: &[&LockKeys], token: &[u8], ttl: Duration, add: bool) -> Self {
        let ttl_ms = ttl.as_millis().to_string();
        let mode: &[u8] = if add { b"1" } else { b"0" };
        let locks: Vec<&[u8]> = keys.iter().map(|k| k.lock.as_slice()).collect();
        let args: [&[u8]; 3] = [token, ttl_ms.as_bytes(), mode];
        ScriptCall::unbounded((&EXTEND_MANY, EXTEND_MANY_SRC), &locks, (&args, false)).acked()
    }

    /// Every name's five keys in the one order, and ARGV's token and channels.
    fn many_parts<'a>(keys: &[&'a LockKeys], token: &'a [u8]) -> (Vec<&'a [u8]>, Vec<&'a [u8]>) {
        let all = keys
            .iter()
            .flat_map(|k| [&k.lock, &k.fence, &k.queue, &k.deadlines, &k.ttls])
            .map(Vec::as_slice)
            .collect();
        let mut args = vec![token];
        args.extend(keys.iter().map(|k| k.channel.as_slice()));
        (all, args)
    }

    /// Release: compare-and-delete by `token`, handing the lock to the first waiter in line;
    /// with `leave`, `token` also gives its own place in the queue up. Reply: [`Compared`].
    pub fn release(keys: &LockKeys, token: &[u8], leave: bool) -> Self {
        Self::release_mode(keys, token, u8::from(leave))
    }

    /// [`release`](Self::release) with `leave`, by a holder that got the lock after waiting in
    /// line: the script skips the lean path's check that nobody is in line (someone likely
    /// still is) and goes straight to the queue's code, which also handles an empty queue.
    /// Reply: [`Compared`].
    pub fn release_after_waiting(keys: &LockKeys, token: &[u8]) -> Self {
        Self::release_mode(keys, token, 3)
    }

    /// Gives `token`'s place in the queue up, leaving the key alone (a waiter whose caller
    /// token holds the key for another acquisition there). Reply: [`Compared`] (always gone).
    pub fn leave_queue(keys: &LockKeys, token: &[u8]) -> Self {
        Self::release_mode(keys, token, 2)
    }

    fn release_mode(keys: &LockKeys, token: &[u8], mode: u8) -> Self {
        let arg = Packed::new()
            .num(mode)
            .num(WAKE_ID_LEN)
            .bytes(&keys.channel)
            .done();
        let k = keys;
        ScriptCall::new(
            (&RELEASE, RELEASE_SRC),
            &[&k.lock, &k.fence, &k.queue, &k.deadlines, &k.ttls],
            (&[token, &arg], true),
        )
        .guarded(k)
    }

    /// Extend: compare-and-PEXPIRE by `token` to `ttl`. Reply: [`Compared`].
    pub fn extend(keys: &LockKeys, token: &[u8], ttl: Duration) -> Self {
        Self::extend_mode(keys, token, ttl, false)
    }

    /// Additive extend: compare by `token`, then add `add` to the key's remaining TTL. Reply:
    /// the new TTL in ms (at least 1) when extended, else 0 (gone) or -1 (another token), as
    /// [`Compared::parse_added`] reads it.
    pub fn extend_by(keys: &LockKeys, token: &[u8], add: Duration) -> Self {
        Self::extend_mode(keys, token, add, true)
    }

    fn extend_mode(keys: &LockKeys, token: &[u8], ttl: Duration, add: bool) -> Self {
        let ttl_ms = ttl.as_millis().to_string();
        let mode: &[u8] = if add { b"1" } else { b"0" };
        ScriptCall::new(
            (&EXTEND, EXTEND_SRC),
            &[&keys.lock],
            (&[token, ttl_ms.as_bytes(), mode], false),
        )
        .acked()
    }

    /// Fencing write-back: raises the lock's counter to at least `fence`. Reply: the
    /// counter's value afterwards.
    pub fn raise_fence(keys: &LockKeys, fence: u64) -> Self {
        let fence = fence.to_string();
        ScriptCall::new(
            (&RAISE_FENCE, RAISE_FENCE_SRC),
            &[&keys.lock, &keys.fence],
            (&[fence.as_bytes()], false),
        )
        .acked()
    }

    /// Inspect: the holder's token and PTTL, and the waiters in line, changing nothing. Reply:
    /// [`parse_inspect`].
    pub fn inspect(keys: &LockKeys) -> Self {
        ScriptCall::new(
            (&INSPECT, INSPECT_SRC),
            &[&keys.lock, &keys.queue, &keys.who],
            (&[], false),
        )
    }

    /// The holder label's note for the lock held with `token` (see `note.lua`); an election's
    /// term's note is announced to its observers, on the lock's release channel, as `announce`
    /// says.
    pub fn note(keys: &LockKeys, token: &[u8], note: &[u8], announce: Announce) -> Self {
        let keys_of = [&keys.lock[..], &keys.who];
        let publish = Packed::new().bytes(&keys.channel).done();
        match announce {
            Announce::Silent => {
                ScriptCall::new((&NOTE, NOTE_SRC), &keys_of, (&[token, note], false))
            }
            Announce::Change => ScriptCall::new(
                (&NOTE, NOTE_SRC),
                &keys_of,
                (&[token, note, &publish], true),
            ),
            Announce::Renewal { term } => {
                let term = term.to_string();
                let args: [&[u8]; 5] = [token, note, term.as_bytes(), OBSERVERS, &publish];
                ScriptCall::new((&NOTE, NOTE_SRC), &keys_of, (&args, true))
            }
        }
    }

    /// Tells an election's observers, on the lock's release channel, that it changed (see
    /// `announce.lua`).
    pub fn announce(keys: &LockKeys) -> Self {
        let publish = Packed::new().bytes(&keys.channel).done();
        ScriptCall::new(
            (&ANNOUNCE, ANNOUNCE_SRC),
            &[&keys.lock],
            (&[&publish], true),
        )
    }

    /// Preflight: every command the scripts use, on scratch keys under `prefix` (see
    /// `preflight.lua`). Reply: 1, or 2 when a sharded call found no SPUBLISH (Redis 6.2): the
    /// connection's scripts then publish with PUBLISH.
    pub fn preflight(prefix: &[u8]) -> Self {
        let k = LockKeys::new(prefix, PREFLIGHT_NAME);
        let channel = k.wake_channel(b"preflight");
        ScriptCall::new(
            (&PREFLIGHT, PREFLIGHT_SRC),
            &[&k.lock, &k.fence, &k.queue, &k.deadlines, &k.ttls],
            (&[&channel, PUBLISH], true),
        )
    }

    /// The script, to load it on a server that does not know it.
    pub fn script(&self) -> &'static Script {
        self.script
    }

    /// The script's code.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The EVALSHA command for a connection that takes it by `route`. On a cluster, a script
    /// that can delete a key declares the slot guard after its own keys, and a script that
    /// publishes wake-ups does it with `SPUBLISH` (sharded pub/sub, in the lock's slot), or
    /// is told `CPUBLISH`: PUBLISH on a cluster, which reaches every node.
    pub fn cmd_for(&self, route: Route) -> &redis::Cmd {
        let Route::Cluster(sharded) = route else {
            return &self.cmd;
        };
        let respell = self.publishes;
        if self.guard.is_none() && !respell {
            return &self.cmd;
        }
        self.routed[usize::from(sharded)].get_or_init(|| {
            let args: Vec<&[u8]> = self
                .cmd
                .args_iter()
                .filter_map(|a| match a {
                    redis::Arg::Simple(b) => Some(b),
                    _ => None,
                })
                .collect();
            let (head, rest) = args.split_at(3 + self.keys);
            let (last, argv) = rest.split_last().expect("every script takes arguments");
            let mut cmd = redis::Cmd::with_capacity(args.len() + 1, 0);
            let guard = self.guard.as_deref();
            cmd.arg(head[0]).arg(head[1]);
            cmd.arg(self.keys + usize::from(guard.is_some()));
            for a in head[3..].iter().chain(&guard).chain(argv) {
                cmd.arg(*a);
            }
            match (respell, sharded) {
                (true, true) => cmd.arg([b"S", *last].concat()),
                (true, false) => cmd.arg([b"C", *last].concat()),
                (false, _) => cmd.arg(*last),
            };
            cmd
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every part of `call`'s command (the plain one, not a cluster's).
    pub(crate) fn parts(call: &ScriptCall) -> Vec<Vec<u8>> {
        call.cmd_for(Route::Single)
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn every_call_fits_an_unauthenticated_command_and_keeps_the_keys_order() {
        let keys = LockKeys::new(b"p:", b"n");
        let place = Place {
            arrival: 42,
            lasts: Duration::from_millis(900),
        };
        let order = [
            &keys.lock,
            &keys.fence,
            &keys.queue,
            &keys.deadlines,
            &keys.ttls,
        ];
        let ttl = Duration::from_millis(1500);
        let calls = [
            ScriptCall::acquire(&keys, b"tok", ttl, Some(&place), true),
            ScriptCall::acquire(&keys, b"tok", ttl, None, false),
            ScriptCall::release(&keys, b"tok", true),
            ScriptCall::extend(&keys, b"tok", ttl),
            ScriptCall::raise_fence(&keys, 7),
            ScriptCall::release_after_waiting(&keys, b"tok"),
            ScriptCall::preflight(b"p:"),
        ];
        let scratch = LockKeys::new(b"p:", PREFLIGHT_NAME);
        for (i, call) in calls.iter().enumerate() {
            let p = parts(call);
            let order = if i == calls.len() - 1 {
                [
                    &scratch.lock,
                    &scratch.fence,
                    &scratch.queue,
                    &scratch.deadlines,
                    &scratch.ttls,
                ]
            } else {
                order
            };
            assert!(p.len() <= MAX_PARTS, "{} parts", p.len());
            assert_eq!(p[0], b"EVALSHA");
            assert_eq!(p[1], call.script().get_hash().as_bytes());
            let n: usize = std::str::from_utf8(&p[2]).unwrap().parse().unwrap();
            for (i, key) in p[3..3 + n].iter().enumerate() {
                assert_eq!(
                    key,
                    order[i],
                    "KEYS[{}] of every script is the same key",
                    i + 1
                );
            }
        }
        let channel = String::from_utf8(keys.channel.clone()).unwrap();
        assert_eq!(
            parts(&calls[0])[9],
            format!("PUBLISH 1500 16 42 900 1 {channel}").as_bytes()
        );
        assert_eq!(
            parts(&calls[1])[9],
            format!("PUBLISH 1500 16 0 0 0 {channel}").as_bytes()
        );
        assert_eq!(
            parts(&calls[2])[9],
            format!("PUBLISH 1 16 {channel}").as_bytes()
        );
        assert_eq!(parts(&calls[3])[5], b"1500");
        assert_eq!(parts(&calls[4])[5], b"7");
        assert_eq!(
            parts(&calls[5])[9],
            format!("PUBLISH 3 16 {channel}").as_bytes()
        );
        // On a cluster the scripts that can delete a key declare the slot guard after their
        // keys, and the scripts that wake waiters do it with SPUBLISH (sharded pub/sub) or are
        // told CPUBLISH (PUBLISH, which a cluster carries to every node); on one server every
        // call is as it is.
        for (i, call) in calls.iter().enumerate() {
            let plain = parts(call);
            let guarded = [0, 1, 2, 5].contains(&i);
            for sharded in [false, true] {
                let mut want = plain.clone();
                if guarded {
                    let n: usize = std::str::from_utf8(&plain[2]).unwrap().parse().unwrap();
                    want[2] = (n + 1).to_string().into_bytes();
                    want.insert(3 + n, keys.guard.clone());
                }
                if [0, 1, 2, 5, 6].contains(&i) {
                    let last = want.len() - 1;
                    let prefix: &[u8] = if sharded { b"S" } else { b"C" };
                    want[last] = [prefix, &want[last][..]].concat();
                }
                assert_eq!(
                    cluster_parts(call, sharded),
                    want,
                    "call {i}, sharded {sharded}"
                );
            }
            assert_eq!(call.cmd_for(Route::Single).args_iter().count(), plain.len());
        }
    }

    /// Every part of `call`'s command for a cluster.
    pub(crate) fn cluster_parts(call: &ScriptCall, sharded: bool) -> Vec<Vec<u8>> {
        call.cmd_for(Route::Cluster(sharded))
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => Vec::new(),
            })
            .collect()
    }
}
