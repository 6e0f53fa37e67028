//! Statuses, the thread-local last error message, the version string, and the boundary every
//! exported function runs in (an error into a status and the message, a panic into
//! `FL_PANIC`).

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};

use std::panic::{catch_unwind, AssertUnwindSafe};

use fencelock::{Error, ErrorKind, ServerOutcome};

/// The result of every fallible call. The numbers are stable: a value never changes meaning
/// and is never reused. Read it as an integer (`fl_status` is a `uint32_t`): a newer library
/// may return a status this header does not name yet; `fl_status_str()` handles any value.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_status {
    /// Success: the out-pointers have been written.
    FL_OK = 0,
    /// A NULL pointer, a text that is not valid UTF-8 where UTF-8 is required (URLs), a zero or
    /// too long TTL, a bad URL or option, or a lock handle that was already released.
    /// Reported before any network call.
    FL_INVALID_ARGUMENT = 1,
    /// The wait limit passed while the lock was held by another owner (or no quorum agreed).
    FL_NOT_ACQUIRED = 2,
    /// Release or extend of a lock that had expired or been taken by another owner, or a lock
    /// lost while `fl_with_lock`'s callback ran.
    FL_NOT_HELD = 3,
    /// Too few servers answered to reach a quorum; the message names them and why.
    FL_UNAVAILABLE = 4,
    /// A server answered with an unexpected reply (for example WRONGTYPE).
    FL_REDIS_ERROR = 5,
    /// The operation was interrupted.
    FL_CANCELLED = 6,
    /// A bug in fencelock was caught at the boundary (a Rust panic); the message says where.
    FL_PANIC = 7,
    /// The name is held as another kind than the call asks for (a lock, a semaphore, a
    /// read-write lock; the message names the kind found), or the token holds the other mode
    /// of a read-write lock (a reader asking to write would wait for itself).
    FL_WRONG_KIND = 8,
}

/// The status of each error kind: the one mapping of the core's errors to C.
pub fn status_of(kind: ErrorKind) -> fl_status {
    match kind {
        ErrorKind::InvalidArgument => fl_status::FL_INVALID_ARGUMENT,
        ErrorKind::NotAcquired => fl_status::FL_NOT_ACQUIRED,
        ErrorKind::NotHeld => fl_status::FL_NOT_HELD,
        ErrorKind::Unavailable => fl_status::FL_UNAVAILABLE,
        ErrorKind::Redis => fl_status::FL_REDIS_ERROR,
        ErrorKind::Cancelled => fl_status::FL_CANCELLED,
        ErrorKind::WrongKind => fl_status::FL_WRONG_KIND,
    }
}

/// What one server answered in the last attempt of a failed acquisition
/// (`fl_last_error_server`). The numbers are stable and never reused; read it as an integer:
/// `fl_server_outcome_str()` handles any value.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_server_outcome {
    /// It granted the lock (the acquisition still failed: too few others did, or too late).
    FL_SERVER_GRANTED = 0,
    /// Another owner holds the lock there (or this token, and re-entry was not asked for).
    FL_SERVER_HELD = 1,
    /// It could not be reached, or cannot serve yet (loading, failing over, a slot moving).
    FL_SERVER_UNREACHABLE = 2,
    /// It did not answer within the per-server timeout.
    FL_SERVER_TIMEOUT = 3,
    /// It answered with an error (a key of another type, a missing permission).
    FL_SERVER_ERROR = 4,
}

/// The outcome of each core outcome: the one mapping to C.
pub fn outcome_of(outcome: ServerOutcome) -> fl_server_outcome {
    match outcome {
        ServerOutcome::Granted => fl_server_outcome::FL_SERVER_GRANTED,
        ServerOutcome::Held => fl_server_outcome::FL_SERVER_HELD,
        ServerOutcome::Unreachable => fl_server_outcome::FL_SERVER_UNREACHABLE,
        ServerOutcome::TimedOut => fl_server_outcome::FL_SERVER_TIMEOUT,
        ServerOutcome::Error => fl_server_outcome::FL_SERVER_ERROR,
    }
}

/// One server's report of the last failed acquisition, as C reads it.
struct Report {
    server: CString,
    outcome: fl_server_outcome,
    detail: CString,
}

/// The last failed call on a thread: its message and, for an acquisition, the servers' reports.
#[derive(Default)]
struct LastError {
    message: CString,
    servers: Vec<Report>,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

/// Records the message of a failed call for `fl_last_error_message` on this thread (and no
/// server reports).
pub(crate) fn set_last_error(message: &str) {
    let last = LastError {
        message: c_text(message),
        servers: Vec::new(),
    };
    // Fails only while the thread is being torn down; then there is no one to read it.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = last);
}

/// Records a core error: its message and what each server answered.
pub(crate) fn set_last_core_error(e: &fencelock::Error) {
    let servers = e
        .servers()
        .iter()
        .map(|r| Report {
            server: c_text(&r.server),
            outcome: outcome_of(r.outcome),
            detail: c_text(&r.detail),
        })
        .collect();
    let last = LastError {
        message: c_text(&e.to_string()),
        servers,
    };
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = last);
}

#[cfg(test)]
pub(crate) fn last_error() -> String {
    LAST_ERROR.with(|slot| slot.borrow().message.to_string_lossy().into_owned())
}

/// How many servers the last failed call on this thread reports (`fl_last_error_server`): one
/// per configured server, in the manager's order, after a failed acquisition
/// (`FL_NOT_ACQUIRED`, `FL_UNAVAILABLE`, `FL_REDIS_ERROR` from an acquire call); 0 after
/// any other failure, or when no call has failed on this thread.
#[no_mangle]
pub extern "C" fn fl_last_error_server_count() -> usize {
    boundary_or(0, || {
        LAST_ERROR
            .try_with(|slot| slot.borrow().servers.len())
            .unwrap_or(0)
    })
}

/// What server `index` (0-based, below `fl_last_error_server_count()`) answered in the last
/// attempt of this thread's last failed acquisition: `*server` its address as configured
/// (never a password), `*outcome` an `fl_server_outcome` number, `*detail` a sentence for
/// people (how long the holder keeps the lock, or why the server failed). The strings stay
/// valid until the next failing fencelock call on this thread; any out-pointer may be NULL
/// to skip it.
///
/// Errors: `FL_INVALID_ARGUMENT` for an index out of range (the out-pointers untouched).
#[no_mangle]
pub unsafe extern "C" fn fl_last_error_server(
    index: usize,
    server: *mut *const c_char,
    outcome: *mut u32,
    detail: *mut *const c_char,
) -> fl_status {
    boundary_or(fl_status::FL_PANIC, || {
        let found = LAST_ERROR
            .try_with(|slot| {
                let last = slot.borrow();
                let r = last.servers.get(index)?;
                Some((r.server.as_ptr(), r.outcome as u32, r.detail.as_ptr()))
            })
            .ok()
            .flatten();
        let Some((s, o, d)) = found else {
            // Not recorded as the last error: that would erase the reports being read.
            return fl_status::FL_INVALID_ARGUMENT;
        };
        // SAFETY: each pointer is NULL or points to writable memory, by contract.
        unsafe {
            if !server.is_null() {
                *server = s;
            }
            if !outcome.is_null() {
                *outcome = o;
            }
            if !detail.is_null() {
                *detail = d;
            }
        }
        fl_status::FL_OK
    })
}

/// A short, static, lower-case name of a server outcome (`"granted"`, `"held"`,
/// `"unreachable"`, `"timeout"`, `"error"`), or `"unknown outcome"` for a number this library
/// does not know. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn fl_server_outcome_str(outcome: u32) -> *const c_char {
    let s: &'static CStr = match outcome {
        0 => c"granted",
        1 => c"held",
        2 => c"unreachable",
        3 => c"timeout",
        4 => c"error",
        _ => c"unknown outcome",
    };
    s.as_ptr()
}

/// The message of the last call on this thread that did not return `FL_OK`: what failed and
/// why, naming the lock and the servers involved (never a password). An empty string if no
/// call has failed on this thread yet. Successful calls leave it as it is.
///
/// Never NULL. The pointer stays valid until the next fencelock call on the same thread that
/// fails (or the thread exits); copy the text (or use `fl_last_error_copy`) to keep it longer.
/// Each thread has its own message, so threads never see each other's errors.
#[no_mangle]
pub extern "C" fn fl_last_error_message() -> *const c_char {
    boundary_or(c"".as_ptr(), || {
        LAST_ERROR
            .try_with(|slot| slot.borrow().message.as_ptr())
            .unwrap_or(c"".as_ptr())
    })
}

/// Copies this thread's last error message (see `fl_last_error_message`) into `buf`, cut to
/// `buf_len - 1` bytes and always NUL-terminated when `buf_len > 0`, as `snprintf` does.
/// Returns the full length of the message (without the NUL): a result `>= buf_len` means it
/// was cut. `buf` may be NULL when `buf_len` is 0, to learn the length.
#[no_mangle]
pub unsafe extern "C" fn fl_last_error_copy(buf: *mut c_char, buf_len: usize) -> usize {
    boundary_or(0, || {
        LAST_ERROR
            .try_with(|slot| {
                let last = slot.borrow();
                let bytes = last.message.as_bytes();
                if !buf.is_null() && buf_len > 0 {
                    let n = bytes.len().min(buf_len - 1);
                    // SAFETY: the caller gives a buffer of buf_len writable bytes; n < buf_len.
                    unsafe {
                        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, n);
                        *buf.add(n) = 0;
                    }
                }
                bytes.len()
            })
            .unwrap_or(0)
    })
}

/// A short, static, lower-case name of a status (`"ok"`, `"not acquired"`, ...), or
/// `"unknown status"` for a number this library does not know. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn fl_status_str(status: u32) -> *const c_char {
    let s: &'static CStr = match status {
        0 => c"ok",
        1 => c"invalid argument",
        2 => c"not acquired",
        3 => c"not held",
        4 => c"unavailable",
        5 => c"redis error",
        6 => c"cancelled",
        7 => c"panic",
        8 => c"wrong kind",
        _ => c"unknown status",
    };
    s.as_ptr()
}

/// The library's version, e.g. `"0.1.0"` (static; never freed).
#[no_mangle]
pub extern "C" fn fl_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: *const c_char) -> String {
        unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn every_error_kind_maps_to_its_own_status_with_the_same_name() {
        let mut seen = Vec::new();
        for kind in ErrorKind::ALL {
            let st = status_of(kind);
            assert_ne!(st, fl_status::FL_OK);
            assert_ne!(st, fl_status::FL_PANIC);
            assert!(!seen.contains(&st), "{kind:?} shares a status");
            seen.push(st);
            // The C name of a status reads as the core's name of its kind.
            assert_eq!(text(fl_status_str(st as u32)), kind.as_str());
        }
    }

    #[test]
    fn every_server_outcome_maps_to_its_own_number_with_the_same_name() {
        let mut seen = Vec::new();
        for outcome in ServerOutcome::ALL {
            let o = outcome_of(outcome);
            assert!(!seen.contains(&o), "{outcome:?} shares a number");
            seen.push(o);
            assert_eq!(text(fl_server_outcome_str(o as u32)), outcome.as_str());
        }
        assert_eq!(text(fl_server_outcome_str(5)), "unknown outcome");
    }

    #[test]
    fn the_last_errors_server_reports_are_read_by_index() {
        use fencelock::{Error, ServerReport};
        let e = Error::not_acquired("held").with_servers(vec![ServerReport {
            server: "127.0.0.1:7001".into(),
            outcome: ServerOutcome::Held,
            detail: "held by another owner for 5 ms more".into(),
        }]);
        set_last_core_error(&e);
        assert_eq!(fl_last_error_server_count(), 1);
        let (mut s, mut o, mut d) = (std::ptr::null(), 99u32, std::ptr::null());
        assert_eq!(
            unsafe { fl_last_error_server(0, &mut s, &mut o, &mut d) },
            fl_status::FL_OK
        );
        assert_eq!(text(s), "127.0.0.1:7001");
        assert_eq!(o, fl_server_outcome::FL_SERVER_HELD as u32);
        assert!(text(d).contains("5 ms"));
        let before = last_error();
        assert_eq!(
            unsafe { fl_last_error_server(1, &mut s, &mut o, &mut d) },
            fl_status::FL_INVALID_ARGUMENT
        );
        assert_eq!(
            last_error(),
            before,
            "reading does not replace the last error"
        );
        set_last_error("another failure");
        assert_eq!(fl_last_error_server_count(), 0);
    }

    #[test]
    fn status_numbers_are_stable() {
        use fl_status::*;
        let table = [
            (FL_OK, 0, "ok"),
            (FL_INVALID_ARGUMENT, 1, "invalid argument"),
            (FL_NOT_ACQUIRED, 2, "not acquired"),
            (FL_NOT_HELD, 3, "not held"),
            (FL_UNAVAILABLE, 4, "unavailable"),
            (FL_REDIS_ERROR, 5, "redis error"),
            (FL_CANCELLED, 6, "cancelled"),
            (FL_PANIC, 7, "panic"),
            (FL_WRONG_KIND, 8, "wrong kind"),
        ];
        for (st, n, name) in table {
            assert_eq!(st as u32, n);
            assert_eq!(text(fl_status_str(n)), name);
        }
        assert_eq!(text(fl_status_str(9)), "unknown status");
        assert_eq!(text(fl_status_str(u32::MAX)), "unknown status");
    }

    #[test]
    fn last_error_is_per_thread_and_copies_like_snprintf() {
        set_last_error("first\0bad");
        assert_eq!(text(fl_last_error_message()), "first\\0bad");
        std::thread::spawn(|| assert_eq!(text(fl_last_error_message()), ""))
            .join()
            .unwrap();
        set_last_error("hello world");
        let mut buf = [1 as c_char; 6];
        let n = unsafe { fl_last_error_copy(buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, 11);
        assert_eq!(text(buf.as_ptr()), "hello");
        assert_eq!(unsafe { fl_last_error_copy(std::ptr::null_mut(), 0) }, 11);
    }

    #[test]
    fn version_is_the_crate_version() {
        assert_eq!(text(fl_version()), env!("CARGO_PKG_VERSION"));
    }
}

// The boundary every exported function runs in: nothing unwinds past it.

/// Runs `body`, turning its error into a status (and the thread's last error message) and a
/// panic into `FL_PANIC`. Nothing unwinds past this point.
pub(crate) fn boundary(body: impl FnOnce() -> Result<(), Error>) -> fl_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => fl_status::FL_OK,
        Ok(Err(e)) => {
            set_last_core_error(&e);
            status_of(e.kind())
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            set_last_error(&format!(
                "internal error (a Rust panic was caught at the C boundary): {what}"
            ));
            fl_status::FL_PANIC
        }
    }
}

/// For functions that return a value rather than a status (`_free`, `fl_status_str`, ...):
/// a panic yields `fallback`.
pub(crate) fn boundary_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

#[cfg(test)]
mod boundary_tests {
    use super::*;

    #[test]
    fn a_panic_becomes_fl_panic_with_a_message() {
        let st = boundary(|| panic!("boom {}", 42));
        assert_eq!(st, fl_status::FL_PANIC);
        assert!(last_error().contains("boom 42"), "{}", last_error());
        let st = boundary(|| std::panic::panic_any(7u8));
        assert_eq!(st, fl_status::FL_PANIC);
        assert!(last_error().contains("unknown cause"));
        assert_eq!(boundary_or(5, || panic!("x")), 5);
        assert_eq!(boundary(|| Ok(())), fl_status::FL_OK);
    }
}
