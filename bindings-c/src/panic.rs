//! The panic boundary every exported function runs in.

use std::panic::{catch_unwind, AssertUnwindSafe};

use fencelock::Error;

use crate::error::{fl_status, set_last_core_error, set_last_error, status_of};

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
mod tests {
    use super::*;
    use crate::error::last_error;

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
