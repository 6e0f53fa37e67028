//! Tokens: generation (a manager's wake id, then a random UUID) and the check of a
//! caller-supplied one, made before any network call. Key and channel names are
//! [`crate::keys`]'s.

use crate::error::{Error, Result};

/// Longest caller-supplied token, in bytes.
pub const MAX_TOKEN_LEN: usize = 512;

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
    fn bad_tokens_are_rejected() {
        assert!(check_token(b"").is_err());
        assert!(check_token(&[b't'; MAX_TOKEN_LEN]).is_ok());
        assert!(check_token(&[b't'; MAX_TOKEN_LEN + 1]).is_err());
    }
}
