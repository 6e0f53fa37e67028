//! Who holds a lock (the core's `who`): the holder label a manager's options set, and the
//! inspections that read it (a lock's holder, a semaphore's or read-write lock's noted
//! holders) into a caller's fixed-size structs (no allocation to free).

use std::ffi::c_char;

use fencelock::LockHolder;

use crate::error::boundary;
use crate::error::fl_status;
use crate::family::{fl_rwlock, fl_semaphore};
use crate::ffi;
use crate::lock::manager;
use crate::manager::fl_manager;
use crate::options::{fl_manager_options, set};

/// The longest holder label, in bytes, without its NUL.
pub const FL_HOLDER_LABEL_MAX: usize = 128;
/// The size of `fl_holder.label`: the longest label and its NUL.
pub const FL_HOLDER_LABEL_SIZE: usize = 129;
const _: () = assert!(FL_HOLDER_LABEL_MAX == fencelock::ffi_support::who::MAX_LABEL_LEN);
const _: () = assert!(FL_HOLDER_LABEL_SIZE == FL_HOLDER_LABEL_MAX + 1);

/// Who holds a lock, as `fl_manager_holder` fills it.
#[repr(C)]
pub struct fl_holder {
    /// Whether a quorum of the servers hold the lock; when false, the other fields are 0.
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
        *out = filled(m.inner.holder(name)?);
        Ok(())
    })
}

/// An `fl_holder` of `holder` (`None`: free).
fn filled(holder: Option<LockHolder>) -> fl_holder {
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
            filled.since_ms = i64::try_from(note.since_ms()).unwrap_or(i64::MAX);
            filled.fencing_token = note.fencing_token;
        }
    }
    filled
}

/// Writes the first `capacity` of `holders` to `out` and their number to `*count`.
///
/// # Safety
/// `out` is NULL with `capacity` 0, or points to `capacity` writable `fl_holder`s.
unsafe fn list(
    holders: Vec<LockHolder>,
    out: *mut fl_holder,
    capacity: usize,
    count: *mut usize,
) -> fencelock::Result<()> {
    let count = ffi::out(count, "count")?;
    if out.is_null() && capacity > 0 {
        return Err(fencelock::Error::invalid_argument(
            "out is NULL with a capacity above 0",
        ));
    }
    *count = holders.len();
    for (i, h) in holders.into_iter().take(capacity).enumerate() {
        // SAFETY: i < capacity, within the caller's array, by contract.
        unsafe { out.add(i).write(filled(Some(h))) };
    }
    Ok(())
}

/// The semaphore's holders that left a note (their managers set a holder label), longest
/// lease first: the first `capacity` into `out` (an array of that many; NULL with 0 to count
/// them only), and how many there are into `*count` (more than `capacity` when the array was
/// too small: call again with a larger one). Leases without a note are only counted by
/// `fl_semaphore_state`.
///
/// Errors: `FL_INVALID_ARGUMENT` for a NULL `semaphore` or `count`, or a NULL `out` with a
/// capacity; as `fl_semaphore_state` otherwise.
#[no_mangle]
pub unsafe extern "C" fn fl_semaphore_holders(
    semaphore: *const fl_semaphore,
    out: *mut fl_holder,
    capacity: usize,
    count: *mut usize,
) -> fl_status {
    boundary(|| {
        let s = crate::family::semaphore(semaphore)?;
        let handle = s.manager.as_async().semaphore(&s.name, s.limit)?;
        let holders = s.manager.block_on(handle.holders())??;
        // SAFETY: forwarded under the caller's contract.
        unsafe { list(holders, out, capacity, count) }
    })
}

/// The read-write lock's readers or writer that left a note, as `fl_semaphore_holders`.
///
/// Errors: as `fl_semaphore_holders`.
#[no_mangle]
pub unsafe extern "C" fn fl_rwlock_holders(
    rwlock: *const fl_rwlock,
    out: *mut fl_holder,
    capacity: usize,
    count: *mut usize,
) -> fl_status {
    boundary(|| {
        let r = crate::family::rwlock(rwlock)?;
        let handle = r.manager.as_async().rwlock(&r.name)?;
        let holders = r.manager.block_on(handle.holders())??;
        // SAFETY: forwarded under the caller's contract.
        unsafe { list(holders, out, capacity, count) }
    })
}
