//! Argument conversion: Python values to owned Rust values, seconds to `Duration`, checked
//! before any network call. Range checks that belong to the lock (TTL bounds, name length,
//! option ranges) stay in the core; this only refuses what cannot become a `Duration`.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use fencelock::ffi_support::units::Unit;
use fencelock::{AcquireOptions, LeaseKind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyString};

/// A name, token or key prefix, remembering whether it was given as `str` or `bytes` so that
/// it comes back the same way.
#[derive(Clone, Debug)]
pub enum Text {
    /// Given as `str` (stored UTF-8 encoded).
    Str(String),
    /// Given as `bytes` or `bytearray`.
    Bytes(Vec<u8>),
}

impl Default for Text {
    fn default() -> Text {
        Text::Str(String::new())
    }
}

impl Text {
    /// The bytes the core sees.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Str(s) => s.as_bytes(),
            Text::Bytes(b) => b,
        }
    }

    /// The Python object: `str` or `bytes`, as given.
    pub fn to_object(&self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Text::Str(s) => PyString::new(py, s).into_any().unbind(),
            Text::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
        }
    }

    /// A generated token (ASCII) is given back as `str`; a caller's token as given.
    pub fn token(given: Option<&Text>, actual: &[u8]) -> Text {
        match given {
            Some(Text::Bytes(_)) => Text::Bytes(actual.to_vec()),
            _ => match std::str::from_utf8(actual) {
                Ok(s) => Text::Str(s.to_owned()),
                Err(_) => Text::Bytes(actual.to_vec()),
            },
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Text> {
        if let Ok(s) = obj.cast::<PyString>() {
            // A lone surrogate cannot become UTF-8: say so, rather than that a str is not a
            // str (Node refuses the same names).
            return s.to_cow().map(|c| Text::Str(c.into_owned())).map_err(|_| {
                PyValueError::new_err(
                    "a str holding a lone surrogate is not valid Unicode; pass bytes for names \
                     that are not text",
                )
            });
        }
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Text::Bytes(b.as_bytes().to_vec()));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(Text::Bytes(b.to_vec()));
        }
        // pyo3 prefixes this with "argument '<name>': ".
        Err(PyTypeError::new_err(format!(
            "expected str or bytes, got {}",
            type_name(&obj)
        )))
    }
}

/// `servers`: one URL string, or a sequence of them.
pub struct Servers(pub Vec<String>);

impl<'a, 'py> FromPyObject<'a, 'py> for Servers {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Servers> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Servers(vec![s.to_cow()?.into_owned()]));
        }
        let iter = obj.try_iter().map_err(|_| {
            PyTypeError::new_err(format!(
                "servers must be a redis:// URL or a list of them, got {}",
                type_name(&obj)
            ))
        })?;
        let mut urls = Vec::new();
        for (i, item) in iter.enumerate() {
            // Bounded while reading: an endless iterable must not be read forever.
            if i >= fencelock::MAX_SERVERS {
                return Err(PyValueError::new_err(format!(
                    "more than {} servers given, the limit is {}",
                    fencelock::MAX_SERVERS,
                    fencelock::MAX_SERVERS
                )));
            }
            let item = item?;
            let s = item.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "servers[{i}] must be a str URL, got {}",
                    type_name(&item)
                ))
            })?;
            urls.push(s.to_cow()?.into_owned());
        }
        Ok(Servers(urls))
    }
}

/// A positive number of seconds (`retry_delay`, `server_timeout`, `max_hold`): the core's
/// rule (`units`), its message in seconds.
pub fn positive_seconds(arg: &str, secs: f64) -> PyResult<Duration> {
    Unit::Seconds.positive(arg, secs).map_err(value_error)
}

/// A lock TTL in seconds: positive, and at most the core's longest.
pub fn ttl_seconds(secs: f64) -> PyResult<Duration> {
    Unit::Seconds.ttl(secs).map_err(value_error)
}

/// A number of seconds that may be zero (`retry_jitter`).
pub fn non_negative_seconds(arg: &str, secs: f64) -> PyResult<Duration> {
    Unit::Seconds.non_negative(arg, secs).map_err(value_error)
}

/// `wait`: `None` (or infinity) waits until acquired, `0` tries once.
pub fn wait_limit(wait: Option<f64>) -> PyResult<Option<Duration>> {
    Unit::Seconds.wait(wait).map_err(value_error)
}

/// The core's argument error as Python's `ValueError`.
fn value_error(e: fencelock::Error) -> PyErr {
    PyValueError::new_err(e.message().to_owned())
}

/// The ``token`` and ``reentrant`` arguments of an acquisition: a caller's token is exclusive
/// unless ``reentrant`` (which has no effect without one).
#[derive(Default)]
pub struct CallerToken {
    pub token: Option<Text>,
    pub reentrant: bool,
}

/// The longest a text argument can be, in bytes: checked on its length before it is copied
/// (a str of more code points than that has more bytes too); the core checks the exact rule.
fn text_limit(arg: &str) -> usize {
    match arg {
        "token" => fencelock::ffi_support::token::MAX_TOKEN_LEN,
        "key_prefix" => fencelock::ffi_support::keys::MAX_PREFIX_LEN,
        _ => fencelock::ffi_support::keys::MAX_NAME_LEN,
    }
}

fn text(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<Text> {
    let limit = text_limit(arg);
    let len = if let Ok(s) = obj.cast::<PyString>() {
        s.len().ok()
    } else if let Ok(b) = obj.cast::<PyBytes>() {
        Some(b.as_bytes().len())
    } else if let Ok(b) = obj.cast::<PyByteArray>() {
        Some(b.len())
    } else {
        None
    };
    if let Some(n) = len.filter(|&n| n > limit) {
        return Err(PyValueError::new_err(format!(
            "{arg} is {n} characters or bytes long, the limit is {limit} bytes"
        )));
    }
    obj.extract::<Text>().map_err(|e| {
        if e.is_instance_of::<PyValueError>(obj.py()) {
            PyValueError::new_err(format!("{arg}: {}", e.value(obj.py())))
        } else {
            PyTypeError::new_err(format!(
                "{arg} must be str or bytes, got {}",
                type_name(obj)
            ))
        }
    })
}

fn number(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    // A bool is an int in Python, but `True` seconds is a mistake, not 1 s (Node refuses
    // booleans too).
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyBool>()
    {
        return Err(not_a_number(arg, obj));
    }
    obj.extract::<f64>().map_err(|_| not_a_number(arg, obj))
}

fn not_a_number(arg: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "{arg} must be a number of seconds, got {}",
        type_name(obj)
    ))
}

fn optional<T>(
    obj: &Bound<'_, PyAny>,
    f: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>,
) -> PyResult<Option<T>> {
    if obj.is_none() {
        Ok(None)
    } else {
        f(obj).map(Some)
    }
}

// Extractors for `#[pyo3(from_py_with = ...)]`: a wrong type raises TypeError naming the
// argument (pyo3 itself only adds the name as a note).

/// `name`.
pub fn name_arg(obj: &Bound<'_, PyAny>) -> PyResult<Text> {
    text("name", obj)
}
/// The name or names of an acquisition, as the caller gave them.
#[derive(Clone)]
pub enum Names {
    /// `acquire(name, ...)`.
    One(Text),
    /// `acquire_many(names, ...)`: every name at once.
    Many(Vec<Text>),
    /// A semaphore's permits, a read share or the write hold (`fencelock/_family.py`).
    Lease(Text, LeaseKind),
    /// An election's term with the leader's value (`fencelock/_election.py`).
    Term(Text, String),
}

impl Names {
    /// The first name (the lock's `name`); empty for an empty list, which the core refuses.
    pub fn first(&self) -> Text {
        match self {
            Names::One(n) | Names::Lease(n, _) | Names::Term(n, _) => n.clone(),
            Names::Many(ns) => ns.first().cloned().unwrap_or_default(),
        }
    }

    /// Every name.
    pub fn all(&self) -> Vec<Text> {
        match self {
            Names::One(n) | Names::Lease(n, _) | Names::Term(n, _) => vec![n.clone()],
            Names::Many(ns) => ns.clone(),
        }
    }

    /// Every name's bytes.
    pub fn bytes(&self) -> Vec<Vec<u8>> {
        self.all().iter().map(|n| n.as_bytes().to_vec()).collect()
    }

    /// The core's acquisition of these names with `opts`, its arguments checked now (before
    /// any network call), owning what it needs: the sync API blocks on it, the asyncio API
    /// spawns it.
    ///
    /// # Errors
    /// The core's `InvalidArgument` for a bad name, token or TTL.
    pub fn prepare(
        &self,
        manager: &fencelock::LockManager,
        opts: &AcquireOptions,
    ) -> fencelock::Result<Acquisition> {
        Ok(match self {
            Names::One(name) => {
                Box::pin(manager.prepare_lease(name.as_bytes(), LeaseKind::Lock, opts)?)
            }
            Names::Lease(name, kind) => {
                Box::pin(manager.prepare_lease(name.as_bytes(), *kind, opts)?)
            }
            Names::Many(_) => Box::pin(manager.prepare_many(self.bytes(), opts)?),
            Names::Term(name, value) => Box::pin(
                manager
                    .election(name.as_bytes())?
                    .prepare_campaign(value, opts)?,
            ),
        })
    }
}

/// An acquisition of [`Names::prepare`].
pub type Acquisition =
    Pin<Box<dyn Future<Output = fencelock::Result<fencelock::Lock>> + Send + 'static>>;

/// The lease of the family's private calls (`fencelock/_family.py`): `kind` `"semaphore"`
/// (`count` permits of `limit`), `"read"` or `"write"`; the core checks the numbers.
pub fn lease_kind(kind: &str, count: u32, limit: u32) -> PyResult<LeaseKind> {
    match kind {
        "semaphore" => Ok(LeaseKind::Permits { count, limit }),
        "read" => Ok(LeaseKind::Read),
        "write" => Ok(LeaseKind::Write),
        other => Err(PyValueError::new_err(format!(
            "lease kind must be 'semaphore', 'read' or 'write', got {other:?}"
        ))),
    }
}

/// `names` of `acquire_many`: an iterable (list, tuple, ...) of str or bytes, not a str or
/// bytes itself (the core checks each name, duplicates and the count).
pub fn names_arg(obj: &Bound<'_, PyAny>) -> PyResult<Names> {
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
    {
        return Err(PyTypeError::new_err(
            "names must be a list or tuple of names (str or bytes), not a single name; use \
             acquire() for one",
        ));
    }
    let items = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "names must be a list or tuple of str or bytes, got {}",
            type_name(obj)
        ))
    })?;
    let max = fencelock::ffi_support::keys::MAX_NAMES;
    let mut names = Vec::new();
    for item in items {
        if names.len() == max {
            return Err(PyValueError::new_err(format!(
                "a lock on several names takes 1 to {max} names, got more"
            )));
        }
        names.push(text("name", &item?)?);
    }
    Ok(Names::Many(names))
}

/// `token` (required).
pub fn token_arg(obj: &Bound<'_, PyAny>) -> PyResult<Text> {
    text("token", obj)
}
/// `token=None`.
pub fn opt_token_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Text>> {
    optional(obj, |o| text("token", o))
}
/// `key_prefix`.
pub fn key_prefix_arg(obj: &Bound<'_, PyAny>) -> PyResult<Text> {
    text("key_prefix", obj)
}
/// `ttl`.
pub fn ttl_arg(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    number("ttl", obj)
}
/// `wait=None`.
pub fn wait_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    optional(obj, |o| number("wait", o))
}
/// `max_hold=None`.
pub fn max_hold_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    optional(obj, |o| number("max_hold", o))
}
/// `retry_delay`.
pub fn retry_delay_arg(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    number("retry_delay", obj)
}
/// `retry_jitter=None`.
pub fn retry_jitter_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    optional(obj, |o| number("retry_jitter", o))
}
/// `drift_factor`.
pub fn drift_factor_arg(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "drift_factor must be a number, got {}",
            type_name(obj)
        )));
    }
    obj.extract::<f64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "drift_factor must be a number, got {}",
            type_name(obj)
        ))
    })
}
/// `server_timeout=None`.
pub fn server_timeout_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    optional(obj, |o| number("server_timeout", o))
}
/// `connect_timeout=None`.
pub fn connect_timeout_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    optional(obj, |o| number("connect_timeout", o))
}

/// `refused_attempts=None`: after how many attempts refused by every server a wait gives up
/// (an `int` from 0, not a bool; 0 never).
pub fn refused_attempts_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
    optional(obj, |o| {
        let wrong = || {
            PyTypeError::new_err(format!(
                "refused_attempts must be a number of attempts (int), got {}",
                type_name(o)
            ))
        };
        if o.is_instance_of::<PyBool>() {
            return Err(wrong());
        }
        let n: i64 = o.extract().map_err(|_| wrong())?;
        u32::try_from(n).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "refused_attempts must be from 0 (never give up) to {}, got {n}",
                u32::MAX
            ))
        })
    })
}

/// `replica_ack=None`: how many replicas must acknowledge each write (an `int`, not a bool).
pub fn replica_ack_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
    optional(obj, |o| {
        if o.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(
                "replica_ack must be a number of replicas (int), got bool",
            ));
        }
        let n: i64 = o.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "replica_ack must be a number of replicas (int), got {}",
                type_name(o)
            ))
        })?;
        u32::try_from(n).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "replica_ack must be at least 1 replica, got {n}"
            ))
        })
    })
}
/// `replica_ack_timeout=None`.
pub fn replica_ack_timeout_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    optional(obj, |o| number("replica_ack_timeout", o))
}

/// A remaining time in seconds; `Duration::MAX` (a key without expiry) is `math.inf`.
pub fn seconds_or_inf(d: std::time::Duration) -> f64 {
    if d == std::time::Duration::MAX {
        f64::INFINITY
    } else {
        d.as_secs_f64()
    }
}

/// `tls_insecure`: exactly `True` or `False` (a truthy string must not turn verification off).
pub fn tls_insecure_arg(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        PyTypeError::new_err(format!(
            "tls_insecure must be True or False, got {}",
            type_name(obj)
        ))
    })
}

/// A file path argument: `str`, `bytes` or `os.PathLike`, not empty.
fn path(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let fspath = obj
        .py()
        .import("os")?
        .call_method1("fspath", (obj,))
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{arg} must be a path (str, bytes or os.PathLike), got {}",
                type_name(obj)
            ))
        })?;
    let path = if let Ok(s) = fspath.cast::<PyString>() {
        PathBuf::from(s.to_cow()?.into_owned())
    } else {
        let bytes = fspath.cast::<PyBytes>()?.as_bytes();
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
        }
        #[cfg(not(unix))]
        {
            PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
        }
    };
    if path.as_os_str().is_empty() {
        return Err(PyValueError::new_err(format!("{arg} must not be empty")));
    }
    Ok(path)
}

/// `tls_ca_file=None`.
pub fn tls_ca_file_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    optional(obj, |o| path("tls_ca_file", o))
}
/// `tls_client_cert=None`.
pub fn tls_client_cert_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    optional(obj, |o| path("tls_client_cert", o))
}
/// `tls_client_key=None`.
pub fn tls_client_key_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    optional(obj, |o| path("tls_client_key", o))
}

/// `password=None`: a `str` (its value never appears in an error).
pub fn password_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    optional(obj, |o| match o.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "password must be a str, got {}",
            type_name(o)
        ))),
    })
}

/// The contents of a file named by argument `arg` (the message names the argument and the
/// path, never the contents).
pub fn read_file(arg: &str, path: &Path) -> PyResult<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| PyValueError::new_err(format!("{arg}: cannot read {}: {e}", path.display())))
}

/// `LockManager.holder(name)`'s answer: a `fencelock.Holder`, or `None` when the lock is free.
pub fn holder_to_py(
    py: Python<'_>,
    holder: Option<fencelock::LockHolder>,
) -> PyResult<Bound<'_, PyAny>> {
    let Some(h) = holder else {
        return Ok(py.None().into_bound(py));
    };
    let note = h.note.as_ref();
    let since_ms = note.map(fencelock::HolderNote::since_ms);
    py.import("fencelock._holder")?.getattr("_make")?.call1((
        seconds_or_inf(h.remaining),
        note.map(|n| n.label.clone()),
        since_ms,
        note.map(|n| n.fencing_token),
    ))
}

/// The `holder` manager option: `None` (no note), `True` (`host:pid`) or a label (str).
pub fn holder_arg(value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_none() || value.is(PyBool::new(value.py(), false)) {
        return Ok(None);
    }
    if value.is(PyBool::new(value.py(), true)) {
        return Ok(Some(fencelock::default_holder_label()));
    }
    if let Ok(label) = value.cast::<PyString>() {
        return Ok(Some(label.to_cow()?.into_owned()));
    }
    Err(PyTypeError::new_err(format!(
        "holder must be True (host:pid), a label (str) or None, got {}",
        value.get_type().name()?
    )))
}

/// `repr(obj)`, or an empty string if it raises.
pub fn py_repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_default()
}
