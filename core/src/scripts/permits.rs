//! The permit scripts' typed calls: a semaphore's permits and a read-write lock's shares and
//! holds ([`crate::kind`]), on the lock's machinery (the queue's helpers of `queue.lua`, the
//! replies of a lock's scripts).
//!
//! KEYS of every permit script are a prefix of one order, `[name, holders, fencing counter,
//! wait queue, queue deadlines, waiters' entries]` (see `permits.lua`). The acquire and
//! release calls have more than [`MAX_PARTS`](super::MAX_PARTS) parts; like the calls of
//! several names they reach only connections whose preflight passed (see
//! [`ScriptCall::unbounded`]).

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use super::{Packed, ScriptCall};
use crate::keys::LockKeys;
use crate::kind::LeaseKind;
use crate::queue::Place;
use crate::token::WAKE_ID_LEN;

/// Take a lease's weight of the name, or a place in line.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE_SRC));
const ACQUIRE_SRC: &str = concat!(
    include_str!("permits_acquire_lean.lua"),
    include_str!("queue.lua"),
    include_str!("permits.lua"),
    include_str!("permits_acquire.lua")
);
/// Give a lease's weight back and hand it to the head of the line.
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_SRC));
const RELEASE_SRC: &str = concat!(
    include_str!("permits_release_lean.lua"),
    include_str!("queue.lua"),
    include_str!("permits.lua"),
    include_str!("permits_release.lua")
);
/// Move a lease's end.
static EXTEND: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_SRC));
const EXTEND_SRC: &str = concat!(
    include_str!("queue.lua"),
    include_str!("permits.lua"),
    include_str!("permits_extend.lua")
);
/// Read-only: weights, holders, waiters, and one token's lease.
static INSPECT: LazyLock<Script> = LazyLock::new(|| Script::new(INSPECT_SRC));
const INSPECT_SRC: &str = concat!(
    include_str!("queue.lua"),
    include_str!("permits.lua"),
    include_str!("permits_inspect.lua")
);

/// The holder label's note of a lease (`note_permits.lua`, `who.rs`).
static NOTE: LazyLock<Script> = LazyLock::new(|| Script::new(NOTE_SRC));
const NOTE_SRC: &str = include_str!("note_permits.lua");
/// Read-only: the notes of the leases that still run (`whos.lua`).
static WHOS: LazyLock<Script> = LazyLock::new(|| Script::new(WHOS_SRC));
const WHOS_SRC: &str = include_str!("whos.lua");

/// The six keys of a permit script, in their order.
fn all(k: &LockKeys) -> [&[u8]; 6] {
    [
        &k.lock,
        &k.holders,
        &k.fence,
        &k.queue,
        &k.deadlines,
        &k.ttls,
    ]
}

impl ScriptCall {
    /// Acquire of a permit lease of `kind` (not [`LeaseKind::Lock`]): as
    /// [`acquire`](ScriptCall::acquire), with the kind's letter, capacity and weight. Reply:
    /// [`parse_acquire`](super::parse_acquire) of one name (a refusal's PTTL is how long until
    /// the first lease ends).
    pub fn permits_acquire(
        keys: &LockKeys,
        token: &[u8],
        (ttl, kind): (Duration, LeaseKind),
        place: Option<&Place>,
        own: bool,
    ) -> Self {
        let (letter, capacity, weight) = kind.weights().expect("a permit lease");
        let arg = Packed::acquiring(ttl, place, own)
            .bytes(&[letter])
            .num(capacity)
            .num(weight)
            .bytes(&keys.channel)
            .done();
        ScriptCall::unbounded((&ACQUIRE, ACQUIRE_SRC), &all(keys), (&[token, &arg], true))
            .guarded(keys)
            .acked()
    }

    /// Release of a permit lease (`mode` as [`Target::release_call`]'s). Reply:
    /// [`Compared`](super::Compared) (never another token's).
    ///
    /// [`Target::release_call`]: crate::engine::Target::release_call
    pub fn permits_release(keys: &LockKeys, token: &[u8], mode: u8) -> Self {
        let arg = Packed::new()
            .num(mode)
            .num(WAKE_ID_LEN)
            .bytes(&keys.channel)
            .done();
        ScriptCall::unbounded((&RELEASE, RELEASE_SRC), &all(keys), (&[token, &arg], true))
            .guarded(keys)
    }

    /// Extend of a permit lease to `ttl` (with `add`: by `ttl`). Reply: as
    /// [`extend`](ScriptCall::extend)'s and [`extend_by`](ScriptCall::extend_by)'s.
    pub fn permits_extend(keys: &LockKeys, token: &[u8], ttl: Duration, add: bool) -> Self {
        let ttl_ms = ttl.as_millis().to_string();
        let mode: &[u8] = if add { b"1" } else { b"0" };
        ScriptCall::new(
            (&EXTEND, EXTEND_SRC),
            &all(keys)[..2],
            (&[token, ttl_ms.as_bytes(), mode], false),
        )
        .guarded(keys)
        .acked()
    }

    /// The holder label's note of `token`'s lease (see `note_permits.lua`).
    pub fn permits_note(keys: &LockKeys, token: &[u8], note: &[u8]) -> Self {
        ScriptCall::new(
            (&NOTE, NOTE_SRC),
            &[&keys.holders, &keys.whos],
            (&[token, note], false),
        )
    }

    /// The notes of the leases that still run. Reply: [`parse_whos`](super::parse_whos).
    pub fn permits_whos(keys: &LockKeys) -> Self {
        ScriptCall::new(
            (&WHOS, WHOS_SRC),
            &[&keys.holders, &keys.whos],
            (&[], false),
        )
    }

    /// Inspect of a semaphore or read-write lock, and of `token`'s lease when given. Reply:
    /// [`parse_permits`](super::parse_permits).
    pub fn permits_inspect(keys: &LockKeys, token: Option<&[u8]>) -> Self {
        let token = token.unwrap_or_default();
        ScriptCall::new((&INSPECT, INSPECT_SRC), &all(keys)[..4], (&[token], false))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cluster_parts, parts};
    use super::*;

    #[test]
    fn permit_calls_keep_their_keys_order_and_pack_the_kind() {
        let keys = LockKeys::new(b"p:", b"jobs");
        let place = Place {
            arrival: 42,
            lasts: Duration::from_millis(900),
        };
        let ttl = Duration::from_millis(1500);
        let sem = LeaseKind::Permits { count: 3, limit: 4 };
        let acquire = parts(&ScriptCall::permits_acquire(
            &keys,
            b"tok",
            (ttl, sem),
            Some(&place),
            true,
        ));
        assert_eq!(acquire[2], b"6");
        for (i, key) in all(&keys).iter().enumerate() {
            assert_eq!(acquire[3 + i], *key);
        }
        let channel = String::from_utf8(keys.channel.clone()).unwrap();
        assert_eq!(
            acquire[10],
            format!("PUBLISH 1500 16 42 900 1 s 4 3 {channel}").as_bytes()
        );
        let write = parts(&ScriptCall::permits_acquire(
            &keys,
            b"tok",
            (ttl, LeaseKind::Write),
            None,
            false,
        ));
        let cap = crate::kind::RW_CAPACITY;
        assert_eq!(
            write[10],
            format!("PUBLISH 1500 16 0 0 0 w {cap} {cap} {channel}").as_bytes()
        );
        let release = parts(&ScriptCall::permits_release(&keys, b"tok", 1));
        assert_eq!(release[10], format!("PUBLISH 1 16 {channel}").as_bytes());
        let extend = parts(&ScriptCall::permits_extend(&keys, b"tok", ttl, false));
        assert_eq!(extend[2], b"2");
        assert_eq!(&extend[3..5], &[keys.lock.clone(), keys.holders.clone()]);
        assert!(extend.len() <= super::super::MAX_PARTS);
        let inspect = parts(&ScriptCall::permits_inspect(&keys, None));
        assert_eq!(inspect[2], b"4");
        assert!(inspect.len() <= super::super::MAX_PARTS);
        // On a cluster the acquire, release and extend declare the slot guard after their
        // keys; the read-only inspect does not.
        let calls = [
            ScriptCall::permits_acquire(&keys, b"tok", (ttl, sem), None, false),
            ScriptCall::permits_release(&keys, b"tok", 1),
            ScriptCall::permits_extend(&keys, b"tok", ttl, false),
            ScriptCall::permits_inspect(&keys, None),
        ];
        for (i, call) in calls.iter().enumerate() {
            let plain = parts(call);
            let n = usize::from(plain[2][0] - b'0');
            let routed = cluster_parts(call, false);
            if i < 3 {
                assert_eq!(routed[2], (n + 1).to_string().as_bytes());
                assert_eq!(routed[3 + n], keys.guard);
            } else {
                assert_eq!(routed, plain);
            }
        }
    }
}
