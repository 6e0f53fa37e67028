//! The debug hook behind `onEvent` (index.js): the core's events (`fencelock::ffi_support::observe`) handed
//! to a JavaScript listener through a weak threadsafe function, so a registered listener never
//! keeps Node running.

use std::cell::RefCell;
use std::collections::HashMap;

use fencelock::ffi_support::observe::{self, Event, EventLevel};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::CleanupEnvHook;
use napi_derive::napi;

use crate::error::{invalid, Failure};

// Type only (for native.d.ts): the value is built by `EventArg`, which keeps the fields in order.
/// One fencelock event, as `onEvent` listeners receive it.
#[allow(dead_code)]
#[napi(object, js_name = "FencelockEvent")]
pub struct JsEvent {
    /// Severity: `trace` (every acquire attempt), `debug` (acquired, acquire failed, extend,
    /// release), `warn` (lock lost).
    #[napi(ts_type = "'trace' | 'debug' | 'info' | 'warn' | 'error'")]
    pub level: String,
    /// What happened: `'acquired'`, `'acquire failed'`, `'extend'`, `'release'`,
    /// `'lock lost'`, `'acquire attempt'`.
    pub message: String,
    /// The event's fields (lock name, attempts, servers answered, elapsed time, ...) as text,
    /// in the order the core recorded them. Never a token or a password.
    pub fields: HashMap<String, String>,
}

/// A core event on its way to a listener: converted on the JavaScript thread.
pub struct EventArg(Event);

impl ToNapiValue for EventArg {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(env);
        Ok(to_js(&env, &val.0)?.raw())
    }
}

fn level_of(name: &str) -> Option<EventLevel> {
    Some(match name {
        "trace" => EventLevel::Trace,
        "debug" => EventLevel::Debug,
        "info" => EventLevel::Info,
        "warn" => EventLevel::Warn,
        "error" => EventLevel::Error,
        _ => return None,
    })
}

/// The event as the listener's argument: `{ level, message, fields }`.
fn to_js<'e>(env: &'e Env, event: &Event) -> Result<Object<'e>> {
    let mut fields = Object::new(env)?;
    for (k, v) in &event.fields {
        fields.set_named_property(k, v.as_str())?;
    }
    let mut obj = Object::new(env)?;
    obj.set_named_property("level", event.level.as_str())?;
    obj.set_named_property("message", event.message.as_str())?;
    obj.set_named_property("fields", fields)?;
    Ok(obj)
}

/// Registers `listener` for events at `level` or more severe; returns the id for
/// `__removeEventListener`. Arguments are checked by `onEvent` in index.js first.
#[napi(catch_unwind, js_name = "__addEventListener", skip_typescript)]
pub fn add_event_listener(
    env: Env,
    listener: Function<EventArg, ()>,
    level: String,
) -> Result<f64> {
    let fail = |f: Failure| f.into_js(&env, None);
    let Some(min) = level_of(&level) else {
        return Err(fail(invalid(format!(
            "level must be 'trace', 'debug', 'info', 'warn' or 'error', got '{level}'"
        ))));
    };
    let tsfn = listener
        .build_threadsafe_function::<Event>()
        .weak::<true>()
        .build_callback(|ctx| Ok(EventArg(ctx.value)))?;
    let id = observe::add_listener(min, move |event| {
        // Non-blocking: a listener must not block the runtime thread that emitted the event.
        tsfn.call(event.clone(), ThreadsafeFunctionCallMode::NonBlocking);
    })
    .map_err(|e| fail(e.into()))?;
    // A listener still registered when its environment goes away (a worker thread exits) is
    // removed with it.
    let hook = env.add_env_cleanup_hook(id, |id| {
        observe::remove_listener(id);
    })?;
    HOOKS.with(|h| h.borrow_mut().insert(id, hook));
    // Ids count up from 1: exact as a JavaScript number far beyond any real use.
    Ok(id as f64)
}

thread_local! {
    /// The cleanup hook of each listener registered from this thread's environment.
    static HOOKS: RefCell<HashMap<u64, CleanupEnvHook<u64>>> = RefCell::new(HashMap::new());
}

/// Unregisters a listener; returns whether it was registered.
#[napi(catch_unwind, js_name = "__removeEventListener", skip_typescript)]
pub fn remove_event_listener(env: Env, id: f64) -> bool {
    if id.fract() != 0.0 || id < 1.0 {
        return false;
    }
    let id = id as u64;
    if let Some(hook) = HOOKS.with(|h| h.borrow_mut().remove(&id)) {
        let _ = env.remove_env_cleanup_hook(hook);
    }
    observe::remove_listener(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_name_parses_to_its_level() {
        for level in [
            EventLevel::Trace,
            EventLevel::Debug,
            EventLevel::Info,
            EventLevel::Warn,
            EventLevel::Error,
        ] {
            assert_eq!(level_of(level.as_str()), Some(level));
        }
        assert_eq!(level_of("DEBUG"), None);
        assert_eq!(level_of(""), None);
    }
}
