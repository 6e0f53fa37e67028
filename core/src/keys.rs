//! The key layout: every key and channel name fencelock writes on a server is built here, from
//! the manager's prefix and the lock's name, and nowhere else. The scripts receive them as
//! KEYS (see [`crate::scripts`]), in one fixed order.
//!
//! For a lock `name` under prefix `P`, whose lock key `P name` is in hash slot `S` (the Redis
//! Cluster rule: CRC16 of the key, or of its hash tag, modulo 16384; see [`hash_slot`]), and
//! `T` the slot's tag ([`slot_tag`]: the smallest decimal number whose own slot is `S`):
//!
//! | what | name |
//! |---|---|
//! | the lock (its value is the holder's token); of a semaphore or read-write lock, a hash: its kind, limit, weights held and each holder's weight | `P name` |
//! | the leases of a semaphore's or read-write lock's holders (token → server time it ends) | `P fencelock:{T}:holders: name` |
//! | the fencing counter, one per hash slot | `P fencelock:{T}:fence` |
//! | the wait queue (token → arrival) | `P fencelock:{T}:queue: name` |
//! | the queue's deadlines (token → server time) | `P fencelock:{T}:deadlines: name` |
//! | the waiters' TTLs (token → ms) | `P fencelock:{T}:ttls: name` |
//! | the release channel | `P fencelock:{T}:released: name` |
//! | a waiter's wake-up channel | the release channel, `|`, the first [`WAKE_ID_LEN`] bytes of its token |
//! | the slot guard: never written (see below) | `P fencelock:{T}:guard` |
//! | the holder label's note, written only by managers with a label (`who.rs`) | `P fencelock:{T}:who: name` |
//! | a semaphore's or read-write lock's holder notes (token → note), the same | `P fencelock:{T}:whos: name` |
//!
//! The lock key is the name itself (with the prefix), so the classic `SET name value NX PX`
//! of other clients excludes fencelock and the other way round, on a cluster too. Every other
//! key and channel carries the hash tag `{T}`, so it lands in the lock key's slot whatever the
//! name holds (braces included): a script touches one slot, as Redis Cluster requires, and the
//! same layout serves standalone and Sentinel servers. A prefix with a hash tag of its own
//! (`{app}:`) puts all of a manager's keys in that tag's slot: `T` is then that slot's tag, and
//! everything still lands together. A prefix whose first `{` is not closed inside the prefix by
//! a non-empty tag cannot (the tag would run on into the name) and is refused
//! ([`check_prefix`]).
//!
//! The slot guard is a key that never exists. On a cluster, the scripts that can delete a key
//! declare it besides their own ([`crate::scripts`]): a node runs a script of a slot being
//! migrated only when it has every key the script declares, so with the guard declared it runs
//! none (ASK, then TRYAGAIN on the importing node), and the call is sent again until the slot
//! is settled. Without it a script whose keys were all still there ran on the migrating node,
//! and stopped half done, its writes so far kept, at its first command on a key it had just
//! emptied (`Script attempted to access a non local key`).
//!
//! One fencing counter per slot (at most 16,384 keys, no single hot key): a name always maps
//! to the same slot, so its tokens strictly increase, as fencing requires.

use std::sync::LazyLock;

use crate::error::{Error, Result};
use crate::token::wake_part;
#[cfg(doc)]
use crate::token::WAKE_ID_LEN;

/// Longest lock name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// Most names of a lock on several names.
pub const MAX_NAMES: usize = 64;
/// Longest key prefix, in bytes.
pub const MAX_PREFIX_LEN: usize = 1024;
/// What every key of fencelock's own starts with, after the prefix; lock names starting with
/// it are reserved.
pub const RESERVED_PREFIX: &[u8] = b"fencelock:{";
/// How many hash slots a Redis Cluster has.
pub const SLOTS: u16 = 16384;
/// Separates the release channel from a waiter's wake id in its wake-up channel.
pub(crate) const WAKE_SEPARATOR: u8 = b'|';

/// The keys and channel of one lock, under a manager's prefix (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockKeys {
    /// `prefix + name`: holds the holder's token.
    pub lock: Vec<u8>,
    /// The fencing counter the lock's acquisitions increment (one per hash slot).
    pub fence: Vec<u8>,
    /// The wait queue: token → arrival (a sorted set).
    pub queue: Vec<u8>,
    /// The queue's deadlines: token → server time after which a waiter that stopped trying
    /// loses its place.
    pub deadlines: Vec<u8>,
    /// The waiters' TTLs: token → ms, for the release that hands the lock over.
    pub ttls: Vec<u8>,
    /// A semaphore's or read-write lock's leases: token → server time in ms when it ends (a
    /// sorted set).
    pub holders: Vec<u8>,
    /// The holder label's note (`who.rs`): who holds the lock, since when, with which
    /// fencing token; written only by holders that set a label.
    pub who: Vec<u8>,
    /// A semaphore's or read-write lock's holder notes (a hash: token → note), written only
    /// by holders that set a label.
    pub whos: Vec<u8>,
    /// The release channel; a waiter's wake-up channel is built from it
    /// ([`wake_channel`](Self::wake_channel)).
    pub channel: Vec<u8>,
    /// The slot guard: never written; declared on a cluster by the scripts that can delete a
    /// key, so that they never run while their slot is being migrated (see the module doc).
    pub guard: Vec<u8>,
    /// The hash slot every key and channel above is in.
    pub slot: u16,
}

impl LockKeys {
    /// The keys of lock `name` under `prefix` (neither is checked here: see [`check_name`]
    /// and [`check_prefix`]).
    pub fn new(prefix: &[u8], name: &[u8]) -> LockKeys {
        let lock = [prefix, name].concat();
        let slot = hash_slot(&lock);
        let mut digits = [0u8; 20];
        let tag = decimal(slot_tag(slot).into(), &mut digits);
        // Each key written once at its size (this runs for every acquire: bench/notes.md).
        let own = |kind: &[u8], name: &[u8]| {
            let parts: [&[u8]; 6] = [prefix, RESERVED_PREFIX, tag, b"}:", kind, name];
            let mut key = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
            for part in parts {
                key.extend_from_slice(part);
            }
            key
        };
        LockKeys {
            fence: own(b"fence", b""),
            queue: own(b"queue:", name),
            deadlines: own(b"deadlines:", name),
            ttls: own(b"ttls:", name),
            holders: own(b"holders:", name),
            who: own(b"who:", name),
            whos: own(b"whos:", name),
            channel: own(b"released:", name),
            guard: own(b"guard", b""),
            lock,
            slot,
        }
    }

    /// The wake-up channel of the waiter with `token`: the release channel, `|`, the token's
    /// wake id (its first [`WAKE_ID_LEN`] bytes, shared by a manager's tokens, so that one
    /// subscription serves all its waiters of a lock). `release.lua` builds the same name from
    /// the release channel and the wake-id length it is passed.
    pub fn wake_channel(&self, token: &[u8]) -> Vec<u8> {
        [&self.channel[..], &[WAKE_SEPARATOR], wake_part(token)].concat()
    }
}

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag (what lies between
/// the first `{` and the first `}` after it, when that is not empty) or else of the whole key,
/// modulo 16384.
pub fn hash_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % SLOTS
}

/// The hash tag of `slot`: the smallest decimal number whose own hash slot is `slot`.
///
/// The table of all 16,384 is built once per process, on first use: about 180,000 numbers
/// tried, each hashed from a stack buffer with a table-driven CRC (a process that takes one
/// lock, such as the `fencelock` command, pays for it at start).
pub fn slot_tag(slot: u16) -> u32 {
    static TAGS: LazyLock<Vec<u32>> = LazyLock::new(|| {
        let mut tags = vec![u32::MAX; usize::from(SLOTS)];
        let mut left = tags.len();
        let mut digits = [0u8; 20];
        let mut n = 0u32;
        while left > 0 {
            let tag = &mut tags[usize::from(crc16(decimal(n.into(), &mut digits)) % SLOTS)];
            if *tag == u32::MAX {
                *tag = n;
                left -= 1;
            }
            n += 1;
        }
        tags
    });
    TAGS[usize::from(slot % SLOTS)]
}

/// `n` in decimal, written at the end of `buf`.
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum of Redis Cluster.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// The CRC of each byte value, computed at compile time.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 0x8000 != 0 {
                (c << 1) ^ 0x1021
            } else {
                c << 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Checks a lock name: non-empty, at most [`MAX_NAME_LEN`] bytes, not one of fencelock's own
/// keys (starting with [`RESERVED_PREFIX`]).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the rule broken.
pub fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "lock name is {} bytes, the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if name.starts_with(RESERVED_PREFIX) {
        return Err(Error::invalid(format!(
            "lock names starting with {:?} are reserved for fencelock's own keys (fencing counters, wait queues)",
            String::from_utf8_lossy(RESERVED_PREFIX)
        )));
    }
    Ok(())
}

/// Checks a key prefix: at most [`MAX_PREFIX_LEN`] bytes, and a hash tag it opens is closed
/// inside it (a `{` followed by a non-empty tag and `}`), so that a lock's keys can share one
/// hash slot (see the module doc).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a longer one, or one whose hash tag runs on into the name.
pub fn check_prefix(prefix: &[u8]) -> Result<()> {
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(Error::invalid(format!(
            "key prefix is {} bytes, the limit is {MAX_PREFIX_LEN}",
            prefix.len()
        )));
    }
    if let Some(open) = prefix.iter().position(|&b| b == b'{') {
        let closed = prefix[open + 1..]
            .iter()
            .position(|&b| b == b'}')
            .is_some_and(|close| close > 0);
        if !closed {
            return Err(Error::invalid(format!(
                "key prefix {} opens a hash tag with '{{' that it does not close with a non-empty tag ('{{tag}}'): a lock's keys could not share one Redis Cluster hash slot; close the tag in the prefix or leave the brace out",
                display_name(prefix)
            )));
        }
    }
    Ok(())
}

/// A lock name for messages: UTF-8 names as they are (quoted), others escaped, long ones cut.
pub fn display_name(name: &[u8]) -> String {
    const SHOWN: usize = 64;
    let cut = name.len() > SHOWN;
    let shown = &name[..name.len().min(SHOWN)];
    let mut s = format!("{:?}", String::from_utf8_lossy(shown));
    if cut {
        s.push_str(&format!(" (+{} bytes)", name.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_a_lock_is_built_from_the_prefix_the_name_and_the_slot() {
        let k = LockKeys::new(b"app:", b"jobs");
        let slot = hash_slot(b"app:jobs");
        let t = slot_tag(slot);
        assert_eq!(k.slot, slot);
        assert_eq!(k.lock, b"app:jobs");
        assert_eq!(k.fence, format!("app:fencelock:{{{t}}}:fence").as_bytes());
        assert_eq!(
            k.queue,
            format!("app:fencelock:{{{t}}}:queue:jobs").as_bytes()
        );
        assert_eq!(
            k.deadlines,
            format!("app:fencelock:{{{t}}}:deadlines:jobs").as_bytes()
        );
        assert_eq!(
            k.ttls,
            format!("app:fencelock:{{{t}}}:ttls:jobs").as_bytes()
        );
        let channel = format!("app:fencelock:{{{t}}}:released:jobs");
        assert_eq!(k.channel, channel.as_bytes());
        let token = b"0123456789abcdef.rest-of-the-token";
        assert_eq!(
            k.wake_channel(token),
            format!("{channel}|0123456789abcdef").as_bytes()
        );
        assert_eq!(
            k.wake_channel(b"short"),
            format!("{channel}|short").as_bytes()
        );
        assert_eq!(crate::token::WAKE_ID_LEN, 16);
    }

    #[test]
    fn hash_slots_follow_the_cluster_specification() {
        // The specification's check value, and slots `CLUSTER KEYSLOT` gives (Redis 7.0).
        assert_eq!(crc16(b"123456789"), 0x31C3);
        let mut buf = [0u8; 20];
        for n in [0, 7, 10, 4096, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"somekey"), 11058);
        assert_eq!(hash_slot(b"{user1000}.following"), hash_slot(b"user1000"));
        // Only the first `{` and the first `}` after it count; an empty tag hashes the key.
        assert_eq!(hash_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(hash_slot(b"foo{{bar}}zap"), hash_slot(b"{bar"));
        assert_eq!(hash_slot(b"foo{bar}{zap}"), hash_slot(b"bar"));
        assert_eq!(hash_slot(b"}{x"), crc16(b"}{x") % SLOTS);
    }

    #[test]
    fn every_slot_has_the_smallest_tag_that_hashes_to_it() {
        for slot in 0..SLOTS {
            assert_eq!(hash_slot(slot_tag(slot).to_string().as_bytes()), slot);
        }
        // The smallest: every number up to the largest tag has a tag no larger than itself.
        let largest = (0..SLOTS).map(slot_tag).max().unwrap();
        for n in 0..=largest {
            assert!(slot_tag(hash_slot(n.to_string().as_bytes())) <= n);
        }
    }

    #[test]
    fn names_with_braces_keep_every_key_in_the_lock_keys_slot() {
        let names: [&[u8]; 9] = [
            b"{", b"}", b"{}", b"}{", b"{a}", b"a{b}c", b"{{x}}", b"x{}{y}", b"{\xff}",
        ];
        for prefix in [&b""[..], b"p:", b"{app}:", b"{app}{"] {
            for name in names {
                let k = LockKeys::new(prefix, name);
                for key in [
                    &k.lock,
                    &k.fence,
                    &k.queue,
                    &k.deadlines,
                    &k.ttls,
                    &k.channel,
                ] {
                    assert_eq!(hash_slot(key), k.slot, "{key:?}");
                }
                assert_eq!(hash_slot(&k.wake_channel(b"token")), k.slot);
            }
        }
    }

    #[test]
    fn bad_names_and_prefixes_are_rejected_with_the_reason() {
        assert!(check_name(b"").unwrap_err().message().contains("empty"));
        let long = vec![b'x'; MAX_NAME_LEN + 1];
        assert!(check_name(&long).unwrap_err().message().contains("1025"));
        assert!(check_name(&long[..MAX_NAME_LEN]).is_ok());
        let own = LockKeys::new(b"", b"x");
        for key in [&own.fence, &own.queue, &own.deadlines, &own.ttls] {
            assert!(check_name(key).unwrap_err().message().contains("reserved"));
        }
        assert!(
            check_name(b"fencelock:queue:x").is_ok(),
            "the old layout's names are free"
        );
        assert!(check_name(&[0, 255, 10]).is_ok(), "any bytes are allowed");
        assert!(check_prefix(&[b'p'; MAX_PREFIX_LEN]).is_ok());
        assert!(check_prefix(&[b'p'; MAX_PREFIX_LEN + 1])
            .unwrap_err()
            .message()
            .contains("prefix"));
        for good in [&b"app:"[..], b"{app}:", b"{app}{", b"}app{x}:", b""] {
            assert!(check_prefix(good).is_ok(), "{good:?}");
        }
        for bad in [&b"{app:"[..], b"app{}:", b"a}{"] {
            let e = check_prefix(bad).unwrap_err();
            assert!(e.message().contains("hash tag"), "{}", e.message());
        }
    }

    #[test]
    fn display_name_cuts_and_escapes() {
        assert_eq!(display_name(b"jobs"), "\"jobs\"");
        let long = vec![b'a'; 100];
        assert!(display_name(&long).ends_with("(+36 bytes)"));
        assert!(display_name(&[0xff]).contains('\u{fffd}'));
    }
}
