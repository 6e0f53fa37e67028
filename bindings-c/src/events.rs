//! Seeing what fencelock does: an event callback (`fl_set_event_callback`) and the
//! `FENCELOCK_LOG` environment variable, both on the core's `fencelock::ffi_support::observe`.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Mutex, Once, RwLock};

use fencelock::ffi_support::observe::{self, Event, EventLevel};

use crate::error::boundary;
use crate::error::fl_status;
use crate::ffi;

/// Severity of a fencelock event, most verbose first. The numbers are stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum fl_event_level {
    /// Every acquire attempt (`acquire attempt`: servers, answered, granted, elapsed).
    FL_EVENT_TRACE = 0,
    /// `acquired`, `acquire failed`, `extend`, `release`.
    FL_EVENT_DEBUG = 1,
    /// Not used yet.
    FL_EVENT_INFO = 2,
    /// `lock lost`.
    FL_EVENT_WARN = 3,
    /// Not used yet.
    FL_EVENT_ERROR = 4,
}

impl fl_event_level {
    fn of(level: EventLevel) -> fl_event_level {
        match level {
            EventLevel::Trace => fl_event_level::FL_EVENT_TRACE,
            EventLevel::Debug => fl_event_level::FL_EVENT_DEBUG,
            EventLevel::Info => fl_event_level::FL_EVENT_INFO,
            EventLevel::Warn => fl_event_level::FL_EVENT_WARN,
            EventLevel::Error => fl_event_level::FL_EVENT_ERROR,
        }
    }
}

fn core_level(n: u32) -> Option<EventLevel> {
    Some(match n {
        0 => EventLevel::Trace,
        1 => EventLevel::Debug,
        2 => EventLevel::Info,
        3 => EventLevel::Warn,
        4 => EventLevel::Error,
        _ => return None,
    })
}

/// Receives one fencelock event: its level, what happened (`message`: `"acquired"`,
/// `"acquire failed"`, `"extend"`, `"release"`, `"lock lost"`, `"acquire attempt"`) and its
/// fields on one line (`fields`: `lock="jobs" attempts=1 elapsed_ms=0 fencing_token=17`;
/// never a token or a password). Both strings are valid only during the call.
///
/// Called on the library's own threads (a manager's runtime thread) or on the thread inside
/// a fencelock call, possibly on several threads at once: it must be thread-safe, must return
/// quickly without blocking (it delays the lock operation that emitted the event), and must not
/// call any fencelock function.
pub type fl_event_callback = Option<
    unsafe extern "C" fn(
        level: fl_event_level,
        message: *const c_char,
        fields: *const c_char,
        user_data: *mut c_void,
    ),
>;

/// The registered callback.
struct Sink {
    callback: unsafe extern "C" fn(fl_event_level, *const c_char, *const c_char, *mut c_void),
    user_data: *mut c_void,
    min: EventLevel,
}

// SAFETY: `user_data` is the caller's; the header asks for a callback (and data) usable from
// any thread.
unsafe impl Send for Sink {}
// SAFETY: as above.
unsafe impl Sync for Sink {}

/// The callback: read (shared) while it is called, written by `fl_set_event_callback`, which
/// therefore waits for calls in progress to return.
static SINK: RwLock<Option<Sink>> = RwLock::new(None);
/// The core listener feeding `SINK`, and its level.
static LISTENER: Mutex<Option<u64>> = Mutex::new(None);

thread_local! {
    /// Set while this thread runs the callback (catches a callback calling back in).
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// `lock="x" attempts=1 ...`: the event's fields on one line.
fn fields_line(event: &Event) -> String {
    let mut line = String::new();
    for (k, v) in &event.fields {
        if !line.is_empty() {
            line.push(' ');
        }
        let _ = write!(line, "{k}={v}");
    }
    line
}

fn c_string(s: String) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

fn deliver(event: &Event) {
    let sink = SINK.read().unwrap_or_else(|e| e.into_inner());
    let Some(sink) = sink.as_ref() else { return };
    if event.level < sink.min {
        return;
    }
    let message = c_string(event.message.clone());
    let fields = c_string(fields_line(event));
    IN_CALLBACK.with(|c| c.set(true));
    // SAFETY: a C function pointer given to fl_set_event_callback, with its user_data; the
    // strings live until it returns.
    unsafe {
        (sink.callback)(
            fl_event_level::of(event.level),
            message.as_ptr(),
            fields.as_ptr(),
            sink.user_data,
        )
    };
    IN_CALLBACK.with(|c| c.set(false));
}

/// Registers `callback` to receive fencelock's events at `min_level` (an `fl_event_level`) or
/// more severe, replacing any callback registered before; `callback` NULL unregisters it
/// (`min_level` is then ignored). `user_data` is passed to every call.
///
/// When this returns, the previous callback is no longer running and will not be called
/// again, so its `user_data` may be freed. One callback per process; `FENCELOCK_LOG` (see
/// `fl_manager_new`) works independently of it. Events cost nothing while no callback is
/// registered and `FENCELOCK_LOG` is unset.
///
/// The callback runs on library threads: see `fl_event_callback` for what it must not do.
///
/// Errors: `FL_INVALID_ARGUMENT` for a `min_level` that is not an `fl_event_level`, or when
/// called from inside the event callback.
#[no_mangle]
pub unsafe extern "C" fn fl_set_event_callback(
    callback: fl_event_callback,
    user_data: *mut c_void,
    min_level: u32,
) -> fl_status {
    boundary(|| {
        if IN_CALLBACK.with(Cell::get) {
            return Err(ffi::invalid(
                "fl_set_event_callback cannot be called from inside the event callback",
            ));
        }
        let sink = match callback {
            None => None,
            Some(callback) => Some(Sink {
                callback,
                user_data,
                min: core_level(min_level).ok_or_else(|| {
                    ffi::invalid(format!(
                        "min_level must be an fl_event_level (0 to 4), got {min_level}"
                    ))
                })?,
            }),
        };
        let min = sink.as_ref().map(|s| s.min);
        let mut listener = LISTENER.lock().unwrap_or_else(|e| e.into_inner());
        // Waits for calls of the old callback in progress.
        *SINK.write().unwrap_or_else(|e| e.into_inner()) = sink;
        if let Some(id) = listener.take() {
            observe::remove_listener(id);
        }
        if let Some(min) = min {
            *listener = Some(observe::add_listener(min, deliver)?);
        }
        Ok(())
    })
}

/// The level `FENCELOCK_LOG` names, if any; an error text for anything else.
fn env_level(value: &str) -> std::result::Result<EventLevel, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "trace" => Ok(EventLevel::Trace),
        "debug" => Ok(EventLevel::Debug),
        "info" => Ok(EventLevel::Info),
        "warn" => Ok(EventLevel::Warn),
        "error" => Ok(EventLevel::Error),
        _ => Err(format!(
            "fencelock: FENCELOCK_LOG={value:?} is not a level (trace, debug, info, warn, error); ignored"
        )),
    }
}

/// Reads `FENCELOCK_LOG` once per process (at the first `fl_manager_new`): when it names a
/// level, every event at that level or above is printed to stderr as
/// `fencelock <level>: <message> <fields>`.
pub(crate) fn log_from_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Some(value) = std::env::var_os("FENCELOCK_LOG") else {
            return;
        };
        let value = value.to_string_lossy();
        if value.is_empty() {
            return;
        }
        match env_level(&value) {
            Ok(level) => {
                let added = observe::add_listener(level, |event| {
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "fencelock {}: {}",
                        event.level.as_str(),
                        event.to_line()
                    );
                });
                if let Err(e) = added {
                    let _ = writeln!(std::io::stderr().lock(), "fencelock: FENCELOCK_LOG: {e}");
                }
            }
            Err(why) => {
                let _ = writeln!(std::io::stderr().lock(), "{why}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_both_ways_with_stable_numbers() {
        for (n, level, name) in [
            (0, EventLevel::Trace, "trace"),
            (1, EventLevel::Debug, "debug"),
            (2, EventLevel::Info, "info"),
            (3, EventLevel::Warn, "warn"),
            (4, EventLevel::Error, "error"),
        ] {
            assert_eq!(core_level(n), Some(level));
            assert_eq!(fl_event_level::of(level) as u32, n);
            assert_eq!(env_level(name), Ok(level));
            assert_eq!(env_level(&name.to_uppercase()), Ok(level));
        }
        assert_eq!(core_level(5), None);
        assert_eq!(core_level(u32::MAX), None);
        assert!(env_level("verbose").unwrap_err().contains("ignored"));
    }

    #[test]
    fn fields_are_one_line_without_the_message() {
        let e = Event {
            level: EventLevel::Debug,
            message: "acquired".into(),
            fields: vec![
                ("lock".into(), "\"a\"".into()),
                ("attempts".into(), "1".into()),
            ],
        };
        assert_eq!(fields_line(&e), "lock=\"a\" attempts=1");
        assert_eq!(c_string("a\0b".into()).as_bytes(), b"a\\0b");
    }
}
