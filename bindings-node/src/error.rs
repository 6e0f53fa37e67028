//! The one mapping from the core's errors to the JavaScript error classes.
//!
//! The classes themselves (`LockError` and its subclasses) are defined in `index.js`, since
//! only JavaScript can `extend Error`; `index.js` hands them to [`set_error_classes`] once at
//! load time and every rejection is built here by calling the right constructor.

use std::cell::RefCell;

use fencelock::ErrorKind;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// What a binding call can fail with: a core error, or the binding's own usage error of
/// using a lock object that was already released.
#[derive(Debug)]
pub(crate) enum Failure {
    Core(fencelock::Error),
    Released(String),
}

impl From<fencelock::Error> for Failure {
    fn from(e: fencelock::Error) -> Failure {
        Failure::Core(e)
    }
}

/// Shorthand for a bad argument detected by the binding (types, units) before any call.
pub(crate) fn invalid(message: impl Into<String>) -> Failure {
    Failure::Core(fencelock::Error::new(ErrorKind::InvalidArgument, message))
}

/// The JavaScript class and `code` of each core error kind: the one exhaustive mapping.
pub(crate) fn class_and_code(kind: ErrorKind) -> (&'static str, &'static str) {
    match kind {
        ErrorKind::InvalidArgument => ("InvalidArgumentError", "ERR_INVALID_ARG"),
        ErrorKind::NotAcquired => ("NotAcquiredError", "ERR_NOT_ACQUIRED"),
        ErrorKind::NotHeld => ("LockLostError", "ERR_LOCK_LOST"),
        ErrorKind::Unavailable => ("UnavailableError", "ERR_UNAVAILABLE"),
        ErrorKind::Redis => ("ServerError", "ERR_REDIS"),
        // As Node's own APIs report an aborted operation.
        ErrorKind::Cancelled => ("AbortError", "ABORT_ERR"),
        ErrorKind::WrongKind => ("WrongKindError", "ERR_WRONG_KIND"),
    }
}

/// The class and code of the binding's own usage error (release/extend after release).
pub(crate) const RELEASED: (&str, &str) = ("LockReleasedError", "ERR_LOCK_RELEASED");

impl Failure {
    fn class_and_code(&self) -> (&'static str, &'static str) {
        match self {
            Failure::Core(e) => class_and_code(e.kind()),
            Failure::Released(_) => RELEASED,
        }
    }

    fn message(&self) -> &str {
        match self {
            Failure::Core(e) => e.message(),
            Failure::Released(m) => m,
        }
    }

    /// The JavaScript error object for this failure, with `cause` when given.
    pub(crate) fn to_js<'e>(&self, env: &'e Env, cause: Option<Unknown>) -> Result<Unknown<'e>> {
        let servers = match self {
            Failure::Core(e) => e.servers(),
            Failure::Released(_) => &[],
        };
        build(
            env,
            self.class_and_code().0,
            self.message(),
            (cause, servers),
        )
    }

    /// The same as a `napi::Error` that throws or rejects with exactly that object.
    pub(crate) fn into_js(self, env: &Env, cause: Option<Unknown>) -> Error {
        match self.to_js(env, cause) {
            Ok(value) => Error::from(value),
            // The classes were not registered (the native module loaded on its own): a plain
            // Error that still names the code.
            Err(_) => {
                let code = self.class_and_code().1;
                Error::new(
                    Status::GenericFailure,
                    format!("{code}: {}", self.message()),
                )
            }
        }
    }
}

thread_local! {
    /// The error classes of this thread's JavaScript environment (main thread or a worker).
    static CLASSES: RefCell<Option<ObjectRef<false>>> = const { RefCell::new(None) };
}

/// A server's answer in a failed acquisition, as `error.servers` shows it.
#[napi(object, js_name = "ServerReport")]
pub struct JsServerReport {
    /// The server as configured, without its password.
    pub server: String,
    /// `'granted'`, `'held'`, `'unreachable'`, `'timeout'` or `'error'`.
    #[napi(ts_type = "'granted' | 'held' | 'unreachable' | 'timeout' | 'error'")]
    pub outcome: String,
    /// For people: how long the holder keeps it, or why the server failed.
    pub detail: String,
}

fn build<'e>(
    env: &'e Env,
    class: &str,
    message: &str,
    (cause, servers): (Option<Unknown>, &[fencelock::ServerReport]),
) -> Result<Unknown<'e>> {
    let classes = CLASSES.with(|c| match c.borrow().as_ref() {
        Some(r) => r.get_value(env).map(Some),
        None => Ok(None),
    })?;
    let Some(classes) = classes else {
        return Err(Error::from_reason("error classes are not registered"));
    };
    let ctor: Function<FnArgs<(String, Object)>, Unknown> = classes.get_named_property(class)?;
    let mut options = Object::new(env)?;
    if let Some(cause) = cause {
        options.set_named_property("cause", cause)?;
    }
    let servers: Vec<JsServerReport> = servers
        .iter()
        .map(|r| JsServerReport {
            server: r.server.clone(),
            outcome: r.outcome.as_str().to_owned(),
            detail: r.detail.clone(),
        })
        .collect();
    options.set_named_property("servers", servers)?;
    ctor.new_instance((message.to_owned(), options).into())
}

/// Called once by `index.js` with `{ LockError, NotAcquiredError, ... }`.
#[napi(catch_unwind, js_name = "__setErrorClasses", skip_typescript)]
pub fn set_error_classes(classes: Object) -> Result<()> {
    let r = classes.create_ref::<false>()?;
    CLASSES.with(|c| *c.borrow_mut() = Some(r));
    Ok(())
}

/// One row of the error table, for the JavaScript test over every code.
#[napi(object, js_name = "ErrorTableRow")]
pub struct ErrorTableRow {
    pub kind: String,
    pub class_name: String,
    pub code: String,
}

/// Every core error kind with its class and code, plus the binding's own usage error.
#[napi(catch_unwind, js_name = "__errorTable", skip_typescript)]
pub fn error_table() -> Vec<ErrorTableRow> {
    let mut rows: Vec<ErrorTableRow> = ErrorKind::ALL
        .iter()
        .map(|&kind| {
            let (class_name, code) = class_and_code(kind);
            ErrorTableRow {
                kind: kind.as_str().to_owned(),
                class_name: class_name.to_owned(),
                code: code.to_owned(),
            }
        })
        .collect();
    rows.push(ErrorTableRow {
        kind: "released".to_owned(),
        class_name: RELEASED.0.to_owned(),
        code: RELEASED.1.to_owned(),
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_kind_has_its_own_class_and_code() {
        let expected = [
            (
                ErrorKind::InvalidArgument,
                "InvalidArgumentError",
                "ERR_INVALID_ARG",
            ),
            (
                ErrorKind::NotAcquired,
                "NotAcquiredError",
                "ERR_NOT_ACQUIRED",
            ),
            (ErrorKind::NotHeld, "LockLostError", "ERR_LOCK_LOST"),
            (
                ErrorKind::Unavailable,
                "UnavailableError",
                "ERR_UNAVAILABLE",
            ),
            (ErrorKind::Redis, "ServerError", "ERR_REDIS"),
            (ErrorKind::Cancelled, "AbortError", "ABORT_ERR"),
            (ErrorKind::WrongKind, "WrongKindError", "ERR_WRONG_KIND"),
        ];
        assert_eq!(expected.len(), ErrorKind::ALL.len());
        for kind in ErrorKind::ALL {
            let row = expected.iter().find(|(k, _, _)| *k == kind).unwrap();
            assert_eq!(class_and_code(kind), (row.1, row.2), "{kind:?}");
        }
        let mut classes: HashSet<&str> = ErrorKind::ALL
            .iter()
            .map(|&k| class_and_code(k).0)
            .collect();
        let mut codes: HashSet<&str> = ErrorKind::ALL
            .iter()
            .map(|&k| class_and_code(k).1)
            .collect();
        assert!(classes.insert(RELEASED.0) && codes.insert(RELEASED.1));
        assert_eq!(classes.len(), ErrorKind::ALL.len() + 1);
        assert_eq!(codes.len(), ErrorKind::ALL.len() + 1);
    }

    #[test]
    fn failures_keep_their_message() {
        let f = Failure::from(fencelock::Error::new(ErrorKind::NotHeld, "gone"));
        assert_eq!(f.class_and_code(), ("LockLostError", "ERR_LOCK_LOST"));
        assert_eq!(f.message(), "gone");
        let f = Failure::Released("twice".into());
        assert_eq!(f.class_and_code(), RELEASED);
        assert_eq!(invalid("x").class_and_code().1, "ERR_INVALID_ARG");
    }
}
