//! `fl_election`: leader election. A term is an `fl_lock` handle of the election's name (its
//! fencing token is the term number; auto-extended; `fl_lock_release` resigns, and so does
//! freeing it while held; `fl_lock_is_lost`, `fl_lock_on_lost` as for any lock), and
//! `fl_election_proclaim` gives it a new value. The leader is read into a caller's
//! fixed-size `fl_leader` (no allocation to free), at once or by a long poll.

use std::ffi::{c_char, c_void};
use std::time::{Duration, Instant};

use fencelock::blocking::{Election, LockManager};
use fencelock::{AcquireOptions, Leader, Result};

use crate::error::fl_status;
use crate::error::{boundary, boundary_or};
use crate::ffi;
use crate::lock::{fl_interrupt_callback, fl_lock, hand_out, lock_ref, manager, INTERRUPT_POLL};
use crate::manager::fl_manager;
use crate::pending::{fl_acquire_done, fl_pending, start_prepared};

/// The longest leader's value, in bytes, without its NUL.
pub const FL_ELECTION_VALUE_MAX: usize = 16384;
/// The size of `fl_leader.value`: the longest value and its NUL.
pub const FL_ELECTION_VALUE_SIZE: usize = 16385;
const _: () = assert!(FL_ELECTION_VALUE_MAX == fencelock::MAX_VALUE_LEN);
const _: () = assert!(FL_ELECTION_VALUE_SIZE == FL_ELECTION_VALUE_MAX + 1);

/// A leader election on one name. Opaque: made by `fl_election_new`, freed by
/// `fl_election_free`; it keeps its manager's connections alive (the manager may be freed
/// first). Thread-safe.
pub struct fl_election {
    manager: LockManager,
    election: Election,
}

/// An election's leader, as `fl_election_leader` and `fl_election_observe` fill it.
#[repr(C)]
pub struct fl_leader {
    /// Whether someone leads; when false, the other fields are empty or 0.
    pub leads: bool,
    /// The value it proclaimed, NUL-terminated (`value_len` bytes before the NUL: a value
    /// proclaimed from another language may hold NUL bytes).
    pub value: [c_char; FL_ELECTION_VALUE_SIZE],
    /// The value's length in bytes.
    pub value_len: usize,
    /// Its term number: the term's fencing token, larger than every earlier term's.
    pub fencing_token: u64,
    /// When its term began, by its clock, in milliseconds since the Unix epoch.
    pub since_ms: i64,
    /// How long its term lasts at least without another extension, in milliseconds.
    pub remaining_ms: i64,
}

fn election<'a>(e: *const fl_election) -> Result<&'a fl_election> {
    // SAFETY: NULL or a live handle, by contract.
    unsafe { ffi::obj(e, "election") }
}

/// Fills `out` with `leader` (`None`: nobody leads).
fn fill(out: &mut fl_leader, leader: Option<&Leader>) {
    out.leads = leader.is_some();
    out.value = [0; FL_ELECTION_VALUE_SIZE];
    out.value_len = 0;
    (out.fencing_token, out.since_ms, out.remaining_ms) = (0, 0, 0);
    let Some(l) = leader else { return };
    let value = &l.value.as_bytes()[..l.value.len().min(FL_ELECTION_VALUE_MAX)];
    for (dst, src) in out.value.iter_mut().zip(value) {
        *dst = *src as c_char;
    }
    out.value_len = value.len();
    out.fencing_token = l.fencing_token;
    let since = l
        .since
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    out.since_ms = i64::try_from(since.as_millis()).unwrap_or(i64::MAX);
    out.remaining_ms = i64::try_from(l.remaining.as_millis()).unwrap_or(i64::MAX);
}

/// Whether `leader` is the state `seen` describes (the same term and value, or nobody).
fn is_seen(leader: Option<&Leader>, seen: &fl_leader) -> bool {
    match leader {
        None => !seen.leads,
        Some(l) => {
            let len = seen.value_len.min(FL_ELECTION_VALUE_MAX);
            let value = seen.value[..len].iter().map(|&c| c as u8);
            seen.leads && seen.fencing_token == l.fencing_token && value.eq(l.value.bytes())
        }
    }
}

/// Makes a leader election on `name` (as a lock name). Nothing is contacted. On success
/// `*out` is a new handle to free with `fl_election_free`.
///
/// A term is a lock of the name: a plain lock on it excludes the candidates (and shows no
/// leader); a semaphore or read-write lock on it fails campaigns with `FL_WRONG_KIND`.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a bad name.
#[no_mangle]
pub unsafe extern "C" fn fl_election_new(
    manager: *const fl_manager,
    name: *const c_char,
    out: *mut *mut fl_election,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let m = self::manager(manager)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let name = unsafe { ffi::bytes(name, "name") }?;
        let handle = fl_election {
            manager: m.inner.clone(),
            election: m.inner.election(name)?,
        };
        *out = Box::into_raw(Box::new(handle));
        Ok(())
    })
}

/// Frees an election handle (NULL is a no-op). Terms won through it are not affected.
#[no_mangle]
pub unsafe extern "C" fn fl_election_free(election: *mut fl_election) {
    // SAFETY: NULL or made by this library and not freed before, by contract.
    boundary_or((), || unsafe { ffi::free(election) })
}

/// Campaigns with `value` (UTF-8, at most `FL_ELECTION_VALUE_MAX` bytes; "" is a value) until
/// this candidate leads, waiting as `wait_ms` says (-1 until it leads, 0 one try, else that
/// many milliseconds) in line, first come first served. The term lives `ttl_ms` unless
/// extended and is extended every ttl/3 until released. On success `*out` is the term: a lock
/// handle whose fencing token is the term number; `fl_lock_release` resigns (the next
/// candidate leads at once). Otherwise `*out` is left as it was.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments, a value that is not UTF-8 or too long,
/// a bad TTL or wait (before any network call); `FL_NOT_ACQUIRED` when the wait passed
/// first; `FL_WRONG_KIND`; `FL_UNAVAILABLE`; `FL_REDIS`.
#[no_mangle]
pub unsafe extern "C" fn fl_election_campaign(
    election: *const fl_election,
    value: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    out: *mut *mut fl_lock,
) -> fl_status {
    // SAFETY: forwarded under the caller's contract.
    boundary(|| unsafe { campaign(election, value, (ttl_ms, wait_ms), None, out) })
}

/// As `fl_election_campaign`, giving up when `interrupted(user_data)`, asked about every 50
/// ms on the calling thread, returns true (`FL_CANCELLED`), as
/// `fl_lock_acquire_interruptible`.
///
/// Errors: as `fl_election_campaign`; `FL_CANCELLED` when interrupted; `FL_INVALID_ARGUMENT`
/// also for a NULL `interrupted`.
#[no_mangle]
pub unsafe extern "C" fn fl_election_campaign_interruptible(
    election: *const fl_election,
    value: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    interrupted: fl_interrupt_callback,
    user_data: *mut c_void,
    out: *mut *mut fl_lock,
) -> fl_status {
    boundary(|| {
        let interrupted = interrupted.ok_or_else(|| ffi::invalid("interrupted is NULL"))?;
        let poll = Some((interrupted, user_data));
        // SAFETY: forwarded under the caller's contract.
        unsafe { campaign(election, value, (ttl_ms, wait_ms), poll, out) }
    })
}

/// As `fl_lock_acquire_start`, for a campaign (the arguments of `fl_election_campaign`;
/// `flags` 0 or `FL_ACQUIRE_INLINE`): returns at once, the wait running in the manager's
/// runtime, and `done(status, term, user_data)` is called once when it ends, with the term's
/// lock handle (see `fl_acquire_done`). `*out` cancels it (`fl_pending_cancel`).
///
/// Errors: as `fl_election_campaign`'s argument checks, or a NULL `done` or `out`;
/// `FL_UNAVAILABLE` when the manager's runtime has shut down.
#[no_mangle]
pub unsafe extern "C" fn fl_election_campaign_start(
    election: *const fl_election,
    value: *const c_char,
    ttl_ms: u64,
    wait_ms: i64,
    flags: u32,
    done: fl_acquire_done,
    user_data: *mut c_void,
    out: *mut *mut fl_pending,
) -> fl_status {
    boundary(|| {
        let e = self::election(election)?;
        start_prepared(&e.manager, (done, user_data), flags, out, |flags| {
            if flags != 0 {
                return Err(ffi::invalid(format!(
                    "flags must be 0 or FL_ACQUIRE_INLINE, got {flags}"
                )));
            }
            // SAFETY: NULL or a NUL-terminated string, by contract.
            let value = unsafe { ffi::utf8(value, "value") }?;
            let opts = AcquireOptions::new(ffi::ttl(ttl_ms)).wait(ffi::wait(wait_ms)?);
            e.election.as_async().prepare_campaign(value, &opts)
        })
    })
}

/// A campaign, its arguments checked before any call, interruptible when `poll` is given.
///
/// # Safety
/// As the callers' contracts.
unsafe fn campaign(
    election: *const fl_election,
    value: *const c_char,
    (ttl_ms, wait_ms): (u64, i64),
    poll: Option<(unsafe extern "C" fn(*mut c_void) -> bool, *mut c_void)>,
    out: *mut *mut fl_lock,
) -> Result<()> {
    let out = ffi::out(out, "out")?;
    let e = self::election(election)?;
    // SAFETY: by contract.
    let value = unsafe { ffi::utf8(value, "value") }?;
    let opts = AcquireOptions::new(ffi::ttl(ttl_ms)).wait(ffi::wait(wait_ms)?);
    let campaign = e.election.as_async().prepare_campaign(value, &opts)?;
    let term = match poll {
        None => e.manager.acquire_future(campaign)?,
        Some((interrupted, user_data)) => {
            // SAFETY: a C function pointer given by the caller, called on this thread.
            let poll = || unsafe { interrupted(user_data) };
            e.manager
                .acquire_interruptible(campaign, INTERRUPT_POLL, poll)?
        }
    };
    hand_out(term, out)
}

/// Proclaims a new `value` (as `fl_election_campaign`'s) for the term `term`, in the same
/// term: noted on the servers and pushed to every observer.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments, a bad value, a lock that is not a term
/// or was already released; `FL_NOT_HELD` when the term is lost; `FL_UNAVAILABLE` when fewer
/// than a quorum of servers noted it (it is noted again at the term's next extension).
#[no_mangle]
pub unsafe extern "C" fn fl_election_proclaim(
    term: *const fl_lock,
    value: *const c_char,
) -> fl_status {
    boundary(|| {
        let l = lock_ref(term)?;
        // SAFETY: NULL or a NUL-terminated string, by contract.
        let value = unsafe { ffi::utf8(value, "value") }?;
        let guard = l.guard();
        let held = guard.as_ref().ok_or_else(|| l.released())?;
        held.proclaim(value)
    })
}

/// The leader now, changing nothing: fills `*out` (`leads` false when nobody leads). Any
/// manager can read it, with no holder label. Writes `*out` only on success.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments; `FL_UNAVAILABLE` when fewer than a
/// quorum of servers answer; `FL_WRONG_KIND` for a semaphore's or read-write lock's name.
#[no_mangle]
pub unsafe extern "C" fn fl_election_leader(
    election: *const fl_election,
    out: *mut fl_leader,
) -> fl_status {
    boundary(|| {
        let e = self::election(election)?;
        let out = ffi::out(out, "out")?;
        let leader = e.election.leader()?;
        fill(out, leader.as_ref());
        Ok(())
    })
}

/// A long poll of the leader: waits until the election's state differs from `last_seen` (a
/// state this call or `fl_election_leader` filled; NULL: report the state now), pushed by the
/// servers, or until `wait_ms` passed (-1: no limit), and fills `*out` with the state then,
/// which equals `last_seen` when the wait ran out (compare `leads`, `fencing_token` and the
/// value). `out` and `last_seen` may be the same struct. Writes `*out` only on success.
///
/// Errors: as `fl_election_leader`; `FL_INVALID_ARGUMENT` also for a `wait_ms` below -1.
#[no_mangle]
pub unsafe extern "C" fn fl_election_observe(
    election: *const fl_election,
    last_seen: *const fl_leader,
    wait_ms: i64,
    out: *mut fl_leader,
) -> fl_status {
    boundary(|| {
        let e = self::election(election)?;
        let wait = ffi::wait(wait_ms)?;
        ffi::out(out, "out")?;
        // SAFETY: NULL or a readable fl_leader, by contract.
        let seen = (!last_seen.is_null()).then(|| unsafe { &*last_seen });
        let leader = observe(e, seen, wait)?;
        let out = ffi::out(out, "out")?;
        fill(out, leader.as_ref());
        Ok(())
    })
}

/// An election's observer that keeps its subscriptions and what it reported between calls
/// (`fl_election_observer_new`): waited on in chunks, it reads the servers only when
/// something changed. Opaque; freed by `fl_observer_free`. One thread at a time.
pub struct fl_observer {
    observer: std::sync::Mutex<fencelock::blocking::Observer>,
}

/// Makes an observer of the election: its first `fl_observer_next` reports the state now,
/// then each change. On success `*out` is a new handle to free with `fl_observer_free`.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments.
#[no_mangle]
pub unsafe extern "C" fn fl_election_observer_new(
    election: *const fl_election,
    out: *mut *mut fl_observer,
) -> fl_status {
    boundary(|| {
        let out = ffi::out(out, "out")?;
        let e = self::election(election)?;
        let observer = std::sync::Mutex::new(e.election.observe());
        *out = Box::into_raw(Box::new(fl_observer { observer }));
        Ok(())
    })
}

/// Frees an observer (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn fl_observer_free(observer: *mut fl_observer) {
    // SAFETY: NULL or made by this library and not freed before, by contract.
    boundary_or((), || unsafe { ffi::free(observer) })
}

/// The observer's next report: the state now at the first call, then the next change, pushed
/// by the servers, waiting at most `wait_ms` (-1: no limit). `*reported` says whether a report
/// came (then `*out` is filled); false when the wait ran out first (`*out` untouched): call
/// again to wait on, without reading the servers again.
///
/// Errors: `FL_INVALID_ARGUMENT` for NULL arguments or a `wait_ms` below -1; `FL_UNAVAILABLE`
/// when too few servers answer a read (the observer stays usable); `FL_WRONG_KIND`.
#[no_mangle]
pub unsafe extern "C" fn fl_observer_next(
    observer: *const fl_observer,
    wait_ms: i64,
    out: *mut fl_leader,
    reported: *mut bool,
) -> fl_status {
    boundary(|| {
        // SAFETY: NULL or a live handle, by contract.
        let o = unsafe { ffi::obj(observer, "observer") }?;
        let wait = ffi::wait(wait_ms)?;
        ffi::out(out, "out")?;
        let flag = ffi::out(reported, "reported")?;
        let mut observer = o.observer.lock().unwrap_or_else(|e| e.into_inner());
        let report = match wait {
            None => Some(next(&mut observer)?),
            Some(w) => observer.next_within(w)?,
        };
        *flag = report.is_some();
        if let Some(leader) = report {
            fill(ffi::out(out, "out")?, leader.as_ref());
        }
        Ok(())
    })
}

/// The first state an observer reports that `seen` does not describe, or the state at the
/// end of `wait`.
fn observe(
    e: &fl_election,
    seen: Option<&fl_leader>,
    wait: Option<Duration>,
) -> Result<Option<Leader>> {
    let mut observer = e.election.observe();
    let deadline = wait.map(|w| Instant::now() + w);
    let mut now = next(&mut observer)?;
    loop {
        if !seen.is_some_and(|s| is_seen(now.as_ref(), s)) {
            return Ok(now);
        }
        let next = match deadline {
            None => Some(next(&mut observer)?),
            Some(d) => observer.next_within(d.saturating_duration_since(Instant::now()))?,
        };
        match next {
            Some(report) => now = report,
            None => return Ok(now),
        }
    }
}

/// An observer's next report (an observer never ends: `None` does not come).
fn next(observer: &mut fencelock::blocking::Observer) -> Result<Option<Leader>> {
    observer.next().unwrap_or(Ok(None))
}
