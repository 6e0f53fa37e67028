//! `fl_manager`: a lock manager over one server (the single-server lock) or several
//! (Redlock).

use std::ffi::c_char;
use std::time::Duration;

use fencelock::blocking::LockManager;
use fencelock::Builder;

use crate::error::fl_status;
use crate::error::{boundary, boundary_or};
use crate::ffi;
use crate::options::fl_manager_options;

/// The longest `fl_manager_free` waits for the manager's thread to stop.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// A lock manager: the servers, the options, the connections and a small runtime of its own.
/// Opaque: made by `fl_manager_new`, freed by `fl_manager_free`.
///
/// Thread-safe: one manager may be used from any number of threads at once; share one per
/// server set rather than making one per thread. Not usable in a child process after `fork()`
/// (its threads do not survive the fork): make a new manager in the child, and do not free
/// the parent's there.
pub struct fl_manager {
    pub(crate) inner: LockManager,
}

/// Makes a manager from `n_urls` server URLs (UTF-8): one URL for the single-server lock,
/// several independent servers for Redlock (quorum n/2+1). Each URL is
/// `redis://[[user]:password@]host[:port][/db]`, `rediss://...` (TLS),
/// `redis+sentinel://[user:password@]host:port[,host:port...]/mastername[/db]` (a master
/// found through Sentinel, followed through failovers) or `redis+unix:///path`. A wrong
/// password is reported when a call connects: `FL_UNAVAILABLE`, "authentication failed",
/// naming the server, never the password. `opts` may be NULL for the defaults; it is not
/// kept. No server is contacted here, so a server that is down does not make this fail. On
/// success `*out` is a new manager to free with `fl_manager_free`.
///
/// The first call in a process reads the environment variable `FENCELOCK_LOG`: set to
/// `trace`, `debug`, `info`, `warn` or `error`, it prints every fencelock event at that level
/// or above to stderr, one line each (`fencelock debug: acquired lock="jobs" attempts=1 ...`;
/// never a token or a password). Any other non-empty value prints one warning line and is
/// ignored.
///
/// Errors: `FL_INVALID_ARGUMENT` if `urls` (with `n_urls > 0`), a URL or `out` is NULL, a
/// URL is not UTF-8 or does not parse, `n_urls` is 0 or over 64, a server is given twice, or
/// an option is out of range (the message names it; passwords are masked);
/// `FL_UNAVAILABLE` if the manager's thread cannot be started.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_new(
    urls: *const *const c_char,
    n_urls: usize,
    opts: *const fl_manager_options,
    out: *mut *mut fl_manager,
) -> fl_status {
    boundary(|| {
        crate::events::log_from_env();
        let out = ffi::out(out, "out")?;
        if urls.is_null() && n_urls > 0 {
            return Err(ffi::invalid("urls is NULL"));
        }
        // Bounded before reading: a wrong count must not walk past the caller's array.
        if n_urls > fencelock::MAX_SERVERS {
            return Err(ffi::invalid(format!(
                "n_urls is {n_urls}, the limit is {}",
                fencelock::MAX_SERVERS
            )));
        }
        let mut list = Vec::with_capacity(n_urls);
        for i in 0..n_urls {
            // SAFETY: urls points to n_urls readable pointers, by contract.
            let p = unsafe { *urls.add(i) };
            // SAFETY: each is NULL or a NUL-terminated string, by contract.
            list.push(unsafe { ffi::utf8(p, &format!("server URL #{i}")) }?);
        }
        let mut builder = Builder::new(list);
        if !opts.is_null() {
            // SAFETY: a live options object, by contract.
            builder = unsafe { &*opts }.apply(builder);
        }
        let inner = LockManager::from_config(builder.config()?)?;
        *out = Box::into_raw(Box::new(fl_manager { inner }));
        Ok(())
    })
}

/// Waits until no background clean-up of any manager of the process runs (a wait
/// interrupted through `fl_lock_acquire_interruptible` gives its place in line up in the
/// background; a lock freed while held is released there), at most `timeout_ms`: for a program
/// about to exit without freeing its managers (`atexit`, a signal handler's last words on
/// another thread), so that nothing is left in the servers' queues. Each clean-up is bounded
/// by its server timeout; with none running this returns at once.
///
/// Errors: `FL_UNAVAILABLE` when clean-ups still run after `timeout_ms` (their servers do not
/// answer).
#[no_mangle]
pub extern "C" fn fl_settle_all(timeout_ms: u64) -> fl_status {
    boundary(|| {
        if fencelock::settle_all(Duration::from_millis(timeout_ms)) {
            Ok(())
        } else {
            Err(fencelock::Error::unavailable(format!(
                "background clean-ups still running after {timeout_ms} ms"
            )))
        }
    })
}

/// Frees a manager. NULL is a no-op. When no lock made by it is still alive, this also stops
/// the manager's thread before returning, so no thread outlives it: it first lets the
/// manager's background clean-ups finish (an interrupted acquisition's place in line given
/// up, a dropped lock's release: each bounded by its server timeout), then cancels any other
/// background work (normally well under a millisecond, at most 1 s each), so that a program
/// that frees its manager and exits leaves nothing behind in the servers' queues. Locks
/// made by it stay valid (they keep what they need alive) until freed themselves; free them
/// first, though, if you want an unreleased lock to be released in the background by
/// `fl_lock_free` rather than expire after its TTL. Freeing a manager twice, or using it
/// after, is undefined behaviour (the caller's contract); so is freeing it while another
/// thread is inside a call on it.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_free(manager: *mut fl_manager) {
    boundary_or((), || {
        if !manager.is_null() {
            // SAFETY: made by fl_manager_new and not freed before, by contract.
            let manager = unsafe { Box::from_raw(manager) };
            manager.inner.close(CLOSE_TIMEOUT);
        }
    })
}
