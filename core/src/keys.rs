//! The key layout: every key and channel name fencelock writes on a server is built here, from
//! the manager's prefix and the lock's name, and nowhere else. The scripts receive them as
//! KEYS (see [`crate::scripts`]), in one fixed order.
//!
//! For a lock `name` under prefix `P`:
//!
//! | what | name |
//! |---|---|
//! | the lock (its value is the holder's token) | `P name` |
//! | the fencing counter | `P fencelock:fence` |
//! | the wait queue (token → arrival) | `P fencelock:queue: name` |
//! | the queue's deadlines (token → server time) | `P fencelock:queue: name :deadlines` |
//! | the waiters' TTLs (token → ms) | `P fencelock:queue: name :ttls` |
//! | the release channel | `P fencelock:released: name` |
//! | a waiter's wake-up channel | the release channel, `|`, the first [`WAKE_ID_LEN`] bytes of its token |
//!
//! The lock key is the name itself (with the prefix), so the classic `SET name value NX PX`
//! of other clients excludes fencelock and the other way round.

use crate::error::{Error, Result};
use crate::token::wake_part;
#[cfg(doc)]
use crate::token::WAKE_ID_LEN;

/// Longest lock name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// Longest key prefix, in bytes.
pub const MAX_PREFIX_LEN: usize = 1024;
/// The fencing counter's key, after the prefix; it cannot be used as a lock name.
pub const FENCE_KEY: &[u8] = b"fencelock:fence";
/// The release channel's name, after the prefix and before the lock name.
pub const CHANNEL_PREFIX: &[u8] = b"fencelock:released:";
/// The wait queues' keys, after the prefix and before the lock name; names starting with it
/// are reserved.
pub const QUEUE_PREFIX: &[u8] = b"fencelock:queue:";
/// Separates the release channel from a waiter's wake id in its wake-up channel.
pub(crate) const WAKE_SEPARATOR: u8 = b'|';

/// The keys and channel of one lock, under a manager's prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockKeys {
    /// `prefix + name`: holds the holder's token.
    pub lock: Vec<u8>,
    /// The fencing counter the lock's acquisitions increment.
    pub fence: Vec<u8>,
    /// The wait queue: token → arrival (a sorted set).
    pub queue: Vec<u8>,
    /// The queue's deadlines: token → server time after which a waiter that stopped trying
    /// loses its place.
    pub deadlines: Vec<u8>,
    /// The waiters' TTLs: token → ms, for the release that hands the lock over.
    pub ttls: Vec<u8>,
    /// The release channel; a waiter's wake-up channel is built from it
    /// ([`wake_channel`](Self::wake_channel)).
    pub channel: Vec<u8>,
}

impl LockKeys {
    /// The keys of lock `name` under `prefix` (neither is checked here: see [`check_name`]).
    pub fn new(prefix: &[u8], name: &[u8]) -> LockKeys {
        let join = |parts: &[&[u8]]| parts.concat();
        let queue = join(&[prefix, QUEUE_PREFIX, name]);
        LockKeys {
            lock: join(&[prefix, name]),
            fence: join(&[prefix, FENCE_KEY]),
            deadlines: join(&[&queue, b":deadlines"]),
            ttls: join(&[&queue, b":ttls"]),
            queue,
            channel: join(&[prefix, CHANNEL_PREFIX, name]),
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

/// Checks a lock name: non-empty, at most [`MAX_NAME_LEN`] bytes, not a reserved key.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the rule broken.
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
    if name.starts_with(QUEUE_PREFIX) {
        return Err(Error::invalid(format!(
            "lock names starting with {:?} are reserved for the wait queues",
            String::from_utf8_lossy(QUEUE_PREFIX)
        )));
    }
    if name == FENCE_KEY {
        return Err(Error::invalid(format!(
            "lock name {:?} is reserved for the fencing counter",
            String::from_utf8_lossy(FENCE_KEY)
        )));
    }
    Ok(())
}

/// Checks a key prefix: at most [`MAX_PREFIX_LEN`] bytes.
///
/// # Errors
/// [`Error::InvalidArgument`] for a longer one.
pub fn check_prefix(prefix: &[u8]) -> Result<()> {
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(Error::invalid(format!(
            "key prefix is {} bytes, the limit is {MAX_PREFIX_LEN}",
            prefix.len()
        )));
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
    fn every_key_of_a_lock_is_built_from_the_prefix_and_the_name() {
        let k = LockKeys::new(b"app:", b"jobs");
        assert_eq!(k.lock, b"app:jobs");
        assert_eq!(k.fence, b"app:fencelock:fence");
        assert_eq!(k.queue, b"app:fencelock:queue:jobs");
        assert_eq!(k.deadlines, b"app:fencelock:queue:jobs:deadlines");
        assert_eq!(k.ttls, b"app:fencelock:queue:jobs:ttls");
        assert_eq!(k.channel, b"app:fencelock:released:jobs");
        let token = b"0123456789abcdef.rest-of-the-token";
        assert_eq!(
            k.wake_channel(token),
            b"app:fencelock:released:jobs|0123456789abcdef"
        );
        assert_eq!(
            k.wake_channel(b"short"),
            b"app:fencelock:released:jobs|short"
        );
        assert_eq!(crate::token::WAKE_ID_LEN, 16);
    }

    #[test]
    fn bad_names_are_rejected_with_the_reason() {
        assert!(check_name(b"").unwrap_err().message().contains("empty"));
        let long = vec![b'x'; MAX_NAME_LEN + 1];
        assert!(check_name(&long).unwrap_err().message().contains("1025"));
        assert!(check_name(&long[..MAX_NAME_LEN]).is_ok());
        assert!(check_name(b"fencelock:queue:x")
            .unwrap_err()
            .message()
            .contains("reserved"));
        assert!(check_name(FENCE_KEY)
            .unwrap_err()
            .message()
            .contains("reserved"));
        assert!(check_name(&[0, 255, 10]).is_ok(), "any bytes are allowed");
        assert!(check_prefix(&[b'p'; MAX_PREFIX_LEN]).is_ok());
        assert!(check_prefix(&[b'p'; MAX_PREFIX_LEN + 1])
            .unwrap_err()
            .message()
            .contains("prefix"));
    }

    #[test]
    fn display_name_cuts_and_escapes() {
        assert_eq!(display_name(b"jobs"), "\"jobs\"");
        let long = vec![b'a'; 100];
        assert!(display_name(&long).ends_with("(+36 bytes)"));
        assert!(display_name(&[0xff]).contains('\u{fffd}'));
    }
}
