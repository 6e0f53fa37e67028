//! Who holds a lock (the core's `who`): the holder label a manager's options set, and the
//! inspection that reads it, into a caller's fixed-size struct (no allocation to free).

use std::ffi::c_char;

use crate::error::fl_status;
use crate::ffi;
use crate::lock::manager;
use crate::manager::fl_manager;
use crate::options::{fl_manager_options, set};
use crate::panic::boundary;

/// The longest holder label, in bytes, without its NUL.
pub const FL_HOLDER_LABEL_MAX: usize = 128;
/// The size of `fl_holder.label`: the longest label and its NUL.
pub const FL_HOLDER_LABEL_SIZE: usize = 129;
const _: () = assert!(FL_HOLDER_LABEL_MAX == fencelock::who::MAX_LABEL_LEN);
const _: () = assert!(FL_HOLDER_LABEL_SIZE == FL_HOLDER_LABEL_MAX + 1);

/// Who holds a lock, as `fl_manager_holder` fills it.
#[repr(C)]
pub struct fl_holder {
    /// Whether a quorum of the servers hold the lock; when false, nothing else is set.
    pub held: bool,
    /// How long it stays held at least, in milliseconds (`INT64_MAX`: no expiry).
    pub remaining_ms: i64,
    /// Whether its holder left a note (a manager with a holder label); when false, the three
    /// fields below are empty or 0.
    pub noted: bool,
    /// The holder's label, NUL-terminated (empty without a note).
    pub label: [c_char; FL_HOLDER_LABEL_SIZE],
    /// When it was granted the lock, by its clock, in milliseconds since the Unix epoch.
    pub since_ms: i64,
    /// Its fencing token.
    pub fencing_token: u64,
}

/// Has managers made with these options leave a note next to each lock they acquire, saying
/// who holds it (`label`, 1 to `FL_HOLDER_LABEL_MAX` bytes of UTF-8 without control
/// characters; NULL for `host:pid`), since when and with which fencing token, for
/// `fl_manager_holder` (and `fencelock status`) to show. Off by default: nothing more is
/// written. The label is checked by `fl_manager_new`; the string is copied.
///
/// Errors: `FL_INVALID_ARGUMENT` if `opts` is NULL or `label` is not UTF-8.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_options_set_holder(
    opts: *mut fl_manager_options,
    label: *const c_char,
) -> fl_status {
    set(opts, |o| {
        o.holder_label = Some(if label.is_null() {
            fencelock::default_holder_label()
        } else {
            // SAFETY: a NUL-terminated string, by contract.
            let bytes = unsafe { ffi::bytes(label, "label") }?;
            std::str::from_utf8(bytes)
                .map_err(|_| fencelock::Error::invalid_argument("a holder label must be UTF-8"))?
                .to_owned()
        });
        Ok(())
    })
}

/// Who holds the lock `name` now, changing nothing: fills `*out` (see `fl_holder`). Acquires
/// nothing; the token is never shown. Writes `*out` only on success.
///
/// Errors: as `fl_manager_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn fl_manager_holder(
    manager: *const fl_manager,
    name: *const c_char,
    out: *mut fl_holder,
) -> fl_status {
    boundary(|| {
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        let out = ffi::out(out, "out")?;
        let holder = m.inner.holder(name)?;
        let mut filled = fl_holder {
            held: holder.is_some(),
            remaining_ms: 0,
            noted: false,
            label: [0; FL_HOLDER_LABEL_SIZE],
            since_ms: 0,
            fencing_token: 0,
        };
        if let Some(h) = holder {
            filled.remaining_ms = i64::try_from(h.remaining.as_millis()).unwrap_or(i64::MAX);
            if let Some(note) = h.note {
                filled.noted = true;
                let label = note.label.as_bytes();
                let n = label.len().min(FL_HOLDER_LABEL_MAX);
                for (dst, src) in filled.label.iter_mut().zip(&label[..n]) {
                    *dst = *src as c_char;
                }
                filled.since_ms = note
                    .since
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                filled.fencing_token = note.fencing_token;
            }
        }
        *out = filled;
        Ok(())
    })
}
