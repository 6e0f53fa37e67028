//! The holder label's rules and its default (`host:pid`): a leaf that the configuration checks
//! against and the holder's note ([`crate::who`]) writes.

use crate::error::{Error, Result};

/// The longest holder label, in bytes.
pub const MAX_LABEL_LEN: usize = 128;

/// `host:pid`: this machine's host name (or `localhost` when it cannot be read) and this
/// process's id.
pub fn default_holder_label() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    let label = format!("{host}:{}", std::process::id());
    // A host name is at most 253 bytes: keep the pid, cut the host.
    if label.len() <= MAX_LABEL_LEN {
        return label;
    }
    let pid = format!(":{}", std::process::id());
    let mut cut = MAX_LABEL_LEN - pid.len();
    while !host.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{pid}", &host[..cut])
}

/// Checks a holder label: 1 to [`MAX_LABEL_LEN`] bytes, no control characters.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the rule broken.
pub fn check_label(label: &str) -> Result<()> {
    if label.is_empty() || label.len() > MAX_LABEL_LEN {
        return Err(Error::invalid_argument(format!(
            "a holder label is 1 to {MAX_LABEL_LEN} bytes, got {}",
            label.len()
        )));
    }
    if label.chars().any(char::is_control) {
        return Err(Error::invalid_argument(
            "a holder label has no control characters (newlines, tabs, ...)",
        ));
    }
    Ok(())
}
