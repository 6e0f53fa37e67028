//! Checked conversions of the raw pointers and numbers that come in from C.

use std::ffi::{c_char, CStr};
use std::time::Duration;

use fencelock::{Error, Result};

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_argument(message.into())
}

/// A handle or other input object: `InvalidArgument` when NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` for `'a`.
pub(crate) unsafe fn obj<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| invalid(format!("{what} is NULL")))
}

/// A handle to change: `InvalidArgument` when NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T`, used by no other thread, for `'a`.
pub(crate) unsafe fn obj_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} is NULL")))
}

/// An out-pointer: `InvalidArgument` when NULL.
pub(crate) fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: non-NULL out-pointers point to writable storage, by the caller's contract. Only
    // written through, never read.
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} (the out-pointer) is NULL")))
}

/// The bytes of a NUL-terminated string (any bytes but NUL).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const c_char, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// A NUL-terminated string that must be UTF-8.
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn utf8<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded.
    let b = unsafe { bytes(p, what) }?;
    std::str::from_utf8(b).map_err(|e| {
        invalid(format!(
            "{what} is not valid UTF-8 (bad byte at offset {})",
            e.valid_up_to()
        ))
    })
}

/// A TTL in milliseconds; the core rejects 0 and absurdly long ones before any network call.
pub(crate) fn ttl(ttl_ms: u64) -> Duration {
    Duration::from_millis(ttl_ms)
}

/// A wait limit: -1 forever (`None`), 0 one attempt, otherwise that many milliseconds.
pub(crate) fn wait(wait_ms: i64) -> Result<Option<Duration>> {
    match wait_ms {
        -1 => Ok(None),
        ms if ms >= 0 => Ok(Some(Duration::from_millis(ms as u64))),
        ms => Err(invalid(format!(
            "wait_ms must be -1 (forever), 0 (one try) or a positive number of milliseconds, got {ms}"
        ))),
    }
}

/// A duration option in milliseconds (range checked by the core when the manager is built).
pub(crate) fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Frees a handle this library made with `Box::into_raw` (the body of every `_free` but the
/// manager's); NULL is a no-op.
///
/// # Safety
/// `p` is NULL or a handle made by this library and not freed before.
pub(crate) unsafe fn free<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: by contract.
        drop(unsafe { Box::from_raw(p) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_maps_minus_one_to_forever_and_rejects_other_negatives() {
        assert_eq!(wait(-1).unwrap(), None);
        assert_eq!(wait(0).unwrap(), Some(Duration::ZERO));
        assert_eq!(wait(1500).unwrap(), Some(Duration::from_millis(1500)));
        assert!(wait(-2).unwrap_err().message().contains("got -2"));
        assert!(wait(i64::MIN).is_err());
    }

    #[test]
    fn strings_are_checked_for_null_and_utf8() {
        unsafe {
            assert!(bytes(std::ptr::null(), "name")
                .unwrap_err()
                .message()
                .contains("name is NULL"));
            let bad = b"ab\xffc\0";
            assert_eq!(bytes(bad.as_ptr().cast(), "x").unwrap(), b"ab\xffc");
            let e = utf8(bad.as_ptr().cast(), "URL #0").unwrap_err();
            assert!(e
                .message()
                .contains("not valid UTF-8 (bad byte at offset 2)"));
            assert_eq!(utf8(c"redis://h".as_ptr(), "u").unwrap(), "redis://h");
        }
    }
}
