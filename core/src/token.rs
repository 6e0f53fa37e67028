//! Tokens, names and TTLs: generation and the checks made before any network call.

use std::time::Duration;

use crate::error::{Error, Result};

/// Longest lock name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// Longest caller-supplied token, in bytes.
pub const MAX_TOKEN_LEN: usize = 512;
/// Longest key prefix, in bytes.
pub const MAX_PREFIX_LEN: usize = 1024;
/// Shortest TTL: Redis expiries have millisecond resolution.
pub const MIN_TTL: Duration = Duration::from_millis(1);
/// Longest TTL (ten years): far below what `PX` and the monotonic clock can represent.
pub const MAX_TTL: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// The fencing counter's key, after the prefix; it cannot be used as a lock name.
pub const FENCE_KEY: &[u8] = b"fencelock:fence";
/// The release channel's name, after the prefix and before the lock name.
pub const CHANNEL_PREFIX: &[u8] = b"fencelock:released:";
/// The wait queues' keys, after the prefix and before the lock name; names starting with it
/// are reserved.
pub const QUEUE_PREFIX: &[u8] = b"fencelock:queue:";

/// How many leading bytes of a waiter's token name its wake-up channel: a release wakes the
/// first waiter in line on `<lock's channel>|<those bytes of its token>`. A manager's tokens
/// share them (see [`generate`]), so one subscription serves all its waiters of a lock and a
/// release wakes one process, not every process that waits.
pub const WAKE_ID_LEN: usize = 16;

/// A manager's wake id: [`WAKE_ID_LEN`] random hex characters.
pub fn wake_id() -> [u8; WAKE_ID_LEN] {
    let hex = format!("{:016x}", rand::random::<u64>());
    let mut id = [0u8; WAKE_ID_LEN];
    id.copy_from_slice(hex.as_bytes());
    id
}

/// A fresh token: the manager's wake id, `.`, then a UUID v4 string (122 random bits from the
/// operating system's CSPRNG, which alone make tokens unique).
pub fn generate(wake_id: &[u8; WAKE_ID_LEN]) -> Vec<u8> {
    let mut token = Vec::with_capacity(WAKE_ID_LEN + 37);
    token.extend_from_slice(wake_id);
    token.push(b'.');
    token.extend_from_slice(uuid::Uuid::new_v4().hyphenated().to_string().as_bytes());
    token
}

/// The part of `token` that names its wake-up channel (all of a short token).
pub fn wake_part(token: &[u8]) -> &[u8] {
    &token[..token.len().min(WAKE_ID_LEN)]
}

/// Checks a caller-supplied token: non-empty, at most [`MAX_TOKEN_LEN`] bytes.
pub fn check_token(token: &[u8]) -> Result<()> {
    if token.is_empty() {
        return Err(Error::invalid("token must not be empty"));
    }
    if token.len() > MAX_TOKEN_LEN {
        return Err(Error::invalid(format!(
            "token is {} bytes, the limit is {MAX_TOKEN_LEN}",
            token.len()
        )));
    }
    Ok(())
}

/// Checks a lock name: non-empty, at most [`MAX_NAME_LEN`] bytes, not the fencing counter.
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

/// Checks a TTL and returns it in whole milliseconds (sub-millisecond parts are dropped).
pub fn check_ttl(ttl: Duration) -> Result<u64> {
    if ttl < MIN_TTL {
        return Err(Error::invalid(format!(
            "ttl must be at least 1 ms, got {ttl:?}"
        )));
    }
    if ttl > MAX_TTL {
        return Err(Error::invalid(format!(
            "ttl must be at most {} s, got {ttl:?}",
            MAX_TTL.as_secs()
        )));
    }
    // In range, so the cast cannot truncate.
    Ok(ttl.as_millis() as u64)
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
    fn generated_tokens_are_the_wake_id_then_a_distinct_uuid_v4() {
        let id = wake_id();
        let (a, b) = (generate(&id), generate(&id));
        assert_ne!(a, b);
        assert_eq!(wake_part(&a), &id[..]);
        assert_eq!(wake_part(&b), &id[..]);
        assert_eq!(a[WAKE_ID_LEN], b'.');
        let u = uuid::Uuid::parse_str(std::str::from_utf8(&a[WAKE_ID_LEN + 1..]).unwrap()).unwrap();
        assert_eq!(u.get_version_num(), 4);
        assert_eq!(a.len(), WAKE_ID_LEN + 1 + 36);
        assert_ne!(wake_id(), id, "each manager its own");
        assert_eq!(wake_part(b"short"), b"short");
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
    }

    #[test]
    fn bad_tokens_are_rejected() {
        assert!(check_token(b"").is_err());
        assert!(check_token(&[b't'; MAX_TOKEN_LEN]).is_ok());
        assert!(check_token(&[b't'; MAX_TOKEN_LEN + 1]).is_err());
    }

    #[test]
    fn ttl_bounds() {
        assert!(check_ttl(Duration::ZERO).is_err());
        assert!(check_ttl(Duration::from_micros(999)).is_err());
        assert_eq!(check_ttl(Duration::from_micros(1500)).unwrap(), 1);
        assert_eq!(check_ttl(Duration::from_secs(30)).unwrap(), 30_000);
        assert!(check_ttl(MAX_TTL).is_ok());
        assert!(check_ttl(MAX_TTL + Duration::from_millis(1)).is_err());
        assert!(check_ttl(Duration::MAX).is_err());
    }

    #[test]
    fn display_name_cuts_and_escapes() {
        assert_eq!(display_name(b"jobs"), "\"jobs\"");
        let long = vec![b'a'; 100];
        assert!(display_name(&long).ends_with("(+36 bytes)"));
        assert!(display_name(&[0xff]).contains('\u{fffd}'));
    }
}
