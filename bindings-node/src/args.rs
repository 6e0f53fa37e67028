//! Argument conversion: JavaScript values to owned Rust values, with the binding's own
//! `ERR_INVALID_ARG` errors for wrong types. Ranges and units are the core's checks (name and
//! token length, TTL bounds, option bounds, `units` for milliseconds).

use std::time::Duration;

use napi::bindgen_prelude::*;

use fencelock::ffi_support::units::Unit;

use crate::error::{invalid, Failure};

pub(crate) type Checked<T> = std::result::Result<T, Failure>;

fn type_name(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::String) => "a string",
        Ok(ValueType::Symbol) => "a symbol",
        Ok(ValueType::Object) => "an object",
        Ok(ValueType::Function) => "a function",
        Ok(ValueType::BigInt) => "a bigint",
        _ => "a value of unknown type",
    }
}

/// Whether the value is `undefined` or `null` (an omitted optional argument).
pub(crate) fn is_nullish(v: &Unknown) -> bool {
    matches!(v.get_type(), Ok(ValueType::Undefined | ValueType::Null))
}

/// A `string` (as UTF-8) or a `Buffer`/`Uint8Array` (as is).
pub(crate) fn bytes(what: &str, v: &Unknown) -> Checked<Vec<u8>> {
    let wrong = || {
        invalid(format!(
            "{what} must be a string or a Buffer, got {}",
            type_name(v)
        ))
    };
    check_length(what, v)?;
    match v.get_type() {
        Ok(ValueType::String) => {
            let s = unsafe { v.cast::<String>() }.map_err(|_| wrong())?;
            // The UTF-8 conversion turns a lone surrogate into U+FFFD, so that two different
            // names would be one lock: refuse them (Python does too).
            if s.contains('\u{FFFD}') && has_lone_surrogate(v).map_err(|_| wrong())? {
                return Err(invalid(format!(
                    "{what} holds a lone surrogate: not valid Unicode; pass a Buffer for names \
                     that are not text"
                )));
            }
            Ok(s.into_bytes())
        }
        Ok(ValueType::Object) if v.is_buffer().unwrap_or(false) => {
            unsafe { v.cast::<BufferSlice>() }
                .map(|b| b.to_vec())
                .map_err(|_| wrong())
        }
        Ok(ValueType::Object) if v.is_typedarray().unwrap_or(false) => {
            unsafe { v.cast::<Uint8Array>() }
                .map(|b| b.to_vec())
                .map_err(|_| wrong())
        }
        _ => Err(wrong()),
    }
}

/// Refuses a name, token or prefix whose length already exceeds its limit, before anything is
/// copied: a string of more UTF-16 units than the limit has more UTF-8 bytes too. The core
/// checks the exact rule.
fn check_length(what: &str, v: &Unknown) -> Checked<()> {
    let limit = match what {
        "token" => fencelock::ffi_support::token::MAX_TOKEN_LEN,
        "keyPrefix" => fencelock::ffi_support::keys::MAX_PREFIX_LEN,
        _ => fencelock::ffi_support::keys::MAX_NAME_LEN,
    };
    let len = match v.get_type() {
        Ok(ValueType::String) => unsafe { v.cast::<napi::JsString>() }
            .and_then(|s| s.utf16_len())
            .ok(),
        Ok(ValueType::Object) if v.is_buffer().unwrap_or(false) => {
            unsafe { v.cast::<BufferSlice>() }.map(|b| b.len()).ok()
        }
        _ => None,
    };
    match len {
        Some(n) if n > limit => Err(invalid(format!(
            "{what} is {n} characters or bytes long, the limit is {limit} bytes"
        ))),
        _ => Ok(()),
    }
}

/// Whether the string `v` holds a UTF-16 surrogate without its pair.
fn has_lone_surrogate(v: &Unknown) -> Result<bool> {
    let js = unsafe { v.cast::<napi::JsString>() }?;
    let units = js.into_utf16()?;
    Ok(char::decode_utf16(units.as_slice().iter().copied()).any(|r| r.is_err()))
}

/// A JavaScript number, for a duration in milliseconds.
fn millis(what: &str, v: &Unknown) -> Checked<f64> {
    match v.get_type() {
        Ok(ValueType::Number) => {
            unsafe { v.cast::<f64>() }.map_err(|_| invalid(format!("{what} must be a number")))
        }
        _ => Err(invalid(format!(
            "{what} must be a number of milliseconds, got {}",
            type_name(v)
        ))),
    }
}

/// A duration in milliseconds (finite, not negative: the core's rule, `units`).
pub(crate) fn duration(what: &str, v: &Unknown) -> Checked<Duration> {
    Ok(Unit::Millis.non_negative(what, millis(what, v)?)?)
}

/// A wait limit in milliseconds: `undefined`/`null`/`Infinity` wait forever, `0` tries once.
pub(crate) fn wait(v: &Unknown) -> Checked<Option<Duration>> {
    if is_nullish(v) {
        return Ok(None);
    }
    Ok(Unit::Millis.wait(Some(millis("wait", v)?))?)
}

/// A boolean option (`undefined`/`null`: the default).
pub(crate) fn boolean(what: &str, v: &Unknown, default: bool) -> Checked<bool> {
    match v.get_type() {
        Ok(ValueType::Undefined | ValueType::Null) => Ok(default),
        Ok(ValueType::Boolean) => {
            unsafe { v.cast::<bool>() }.map_err(|_| invalid(format!("{what} must be a boolean")))
        }
        _ => Err(invalid(format!(
            "{what} must be a boolean, got {}",
            type_name(v)
        ))),
    }
}

/// A leader's value: a string (the core checks its length).
pub(crate) fn value(v: &Unknown) -> Checked<String> {
    string("value", "a string", v)
}

/// A string option; a message says it should be `expected`.
fn string(what: &str, expected: &str, v: &Unknown) -> Checked<String> {
    match v.get_type() {
        Ok(ValueType::String) => {
            unsafe { v.cast::<String>() }.map_err(|_| invalid(format!("{what} must be a string")))
        }
        _ => Err(invalid(format!(
            "{what} must be {expected}, got {}",
            type_name(v)
        ))),
    }
}

/// The `holder` option: `true` (`host:pid`), a label (checked by the core), or
/// `false`/`undefined`/`null` (no note).
pub(crate) fn holder(v: &Unknown) -> Checked<Option<String>> {
    match v.get_type() {
        Ok(ValueType::Undefined | ValueType::Null) => Ok(None),
        Ok(ValueType::Boolean) => {
            Ok(boolean("holder", v, false)?.then(fencelock::default_holder_label))
        }
        _ => string("holder", "true (host:pid), a label string or false", v).map(Some),
    }
}

/// A secret option (`password`): a string (an empty one is refused by the core). Its value
/// never appears in a message.
pub(crate) fn secret(what: &str, v: &Unknown) -> Checked<String> {
    string(what, "a string", v)
}

/// A file path option: a non-empty string (the file is read by the core when the manager is
/// built).
pub(crate) fn path(what: &str, v: &Unknown) -> Checked<String> {
    let s = string(what, "a file path string", v)?;
    if s.is_empty() {
        return Err(invalid(format!("{what} must be a file path, got ''")));
    }
    Ok(s)
}

/// A plain number option (e.g. the drift factor); range checks are the core's.
pub(crate) fn number(what: &str, v: &Unknown) -> Checked<f64> {
    match v.get_type() {
        Ok(ValueType::Number) => {
            unsafe { v.cast::<f64>() }.map_err(|_| invalid(format!("{what} must be a number")))
        }
        _ => Err(invalid(format!(
            "{what} must be a number, got {}",
            type_name(v)
        ))),
    }
}

/// The options object: `undefined`/`null` is no options; anything else must be an object.
pub(crate) fn options<'e>(what: &str, v: Option<Unknown<'e>>) -> Checked<Option<Object<'e>>> {
    let Some(v) = v else { return Ok(None) };
    if is_nullish(&v) {
        return Ok(None);
    }
    match v.get_type() {
        Ok(ValueType::Object) => unsafe { v.cast::<Object>() }
            .map(Some)
            .map_err(|_| invalid(format!("{what} must be an object"))),
        _ => Err(invalid(format!(
            "{what} must be an object, got {}",
            type_name(&v)
        ))),
    }
}

/// The fields of one options object, checked against its type's keys (`types.rs`): a key
/// the type does not have is refused, naming it and the known ones.
pub(crate) struct Fields<'e> {
    env: &'e Env,
    obj: Option<Object<'e>>,
    keys: &'static [&'static str],
}

impl<'e> Fields<'e> {
    /// `what` (e.g. "options of acquire()") holding `obj`, whose type has `keys`.
    pub(crate) fn new(
        env: &'e Env,
        what: &str,
        obj: Option<Object<'e>>,
        keys: &'static [&'static str],
    ) -> Checked<Fields<'e>> {
        if let Some(o) = &obj {
            let names = o
                .get_property_names()
                .map_err(|_| invalid(format!("the keys of {what} cannot be read")))?;
            let n = names.get_array_length().unwrap_or(0);
            for i in 0..n {
                let key: String = names
                    .get_element::<String>(i)
                    .map_err(|_| invalid(format!("the keys of {what} cannot be read")))?;
                if !keys.contains(&key.as_str()) {
                    return Err(invalid(format!(
                        "{what} has no option {key:?}; the options are {}",
                        keys.join(", ")
                    )));
                }
            }
        }
        Ok(Fields { env, obj, keys })
    }

    /// The value of `key` (`undefined` when absent or when there are no options).
    pub(crate) fn get(&self, key: &str) -> Checked<Unknown<'e>> {
        debug_assert!(
            self.keys.contains(&key),
            "{key} is not an option of this type"
        );
        field(self.env, &self.obj, key)
    }
}

/// One property of an options object (`undefined` when absent or when there are no options).
pub(crate) fn field<'e>(env: &'e Env, obj: &Option<Object<'e>>, key: &str) -> Checked<Unknown<'e>> {
    let undefined =
        || -> Checked<Unknown<'e>> { ().into_unknown(env).map_err(|e| invalid(e.reason.clone())) };
    match obj {
        None => undefined(),
        Some(o) => o
            .get_named_property::<Unknown>(key)
            .map_err(|_| invalid(format!("option {key} cannot be read"))),
    }
}

/// The names of a lock on several names: an array of strings or Buffers (the core checks
/// each name, duplicates and the count).
pub(crate) fn names(v: &Unknown) -> Checked<Vec<Vec<u8>>> {
    let max = fencelock::ffi_support::keys::MAX_NAMES;
    byte_strings(
        "names",
        v,
        max,
        &format!("a lock on several names takes 1 to {max} names"),
    )
}

/// Most names of the `metricNames` option.
const MAX_METRIC_NAMES: usize = 10_000;

/// The `metricNames` option: an array of strings or Buffers.
pub(crate) fn metric_names(v: &Unknown) -> Checked<Vec<Vec<u8>>> {
    let max = MAX_METRIC_NAMES;
    byte_strings(
        "metricNames",
        v,
        max,
        &format!("metricNames takes at most {max} names"),
    )
}

/// An array of at most `max` strings or Buffers (`too_many` says so otherwise).
fn byte_strings(what: &str, v: &Unknown, max: usize, too_many: &str) -> Checked<Vec<Vec<u8>>> {
    if !matches!(v.get_type(), Ok(ValueType::Object)) || !v.is_array().unwrap_or(false) {
        return Err(invalid(format!(
            "{what} must be an array of strings or Buffers, got {}",
            type_name(v)
        )));
    }
    let arr =
        unsafe { v.cast::<Array>() }.map_err(|_| invalid(format!("{what} cannot be read")))?;
    // Bounded before anything is allocated for it: a sparse array can claim 2^32 - 1 entries.
    if arr.len() as usize > max {
        return Err(invalid(format!("{too_many}, got {}", arr.len())));
    }
    (0..arr.len())
        .map(|i| {
            let item: Unknown = arr
                .get(i)
                .ok()
                .flatten()
                .ok_or_else(|| invalid(format!("{what}[{i}] cannot be read")))?;
            bytes(&format!("{what}[{i}]"), &item)
        })
        .collect()
}

/// The server list: one URL string or an array of them.
pub(crate) fn servers(v: &Unknown) -> Checked<Vec<String>> {
    let wrong = || {
        invalid(format!(
            "servers must be a redis:// URL string or an array of them, got {}",
            type_name(v)
        ))
    };
    match v.get_type() {
        Ok(ValueType::String) => unsafe { v.cast::<String>() }
            .map(|s| vec![s])
            .map_err(|_| wrong()),
        Ok(ValueType::Object) if v.is_array().unwrap_or(false) => {
            let arr = unsafe { v.cast::<Array>() }.map_err(|_| wrong())?;
            // Bounded before anything is allocated for it: a sparse array can claim 2^32 - 1
            // entries.
            if arr.len() as usize > fencelock::MAX_SERVERS {
                return Err(invalid(format!(
                    "{} servers given, the limit is {}",
                    arr.len(),
                    fencelock::MAX_SERVERS
                )));
            }
            let mut urls = Vec::with_capacity(arr.len() as usize);
            for i in 0..arr.len() {
                let item: Unknown = arr.get(i).ok().flatten().ok_or_else(wrong)?;
                match item.get_type() {
                    Ok(ValueType::String) => {
                        urls.push(unsafe { item.cast::<String>() }.map_err(|_| wrong())?)
                    }
                    _ => {
                        return Err(invalid(format!(
                            "servers[{i}] must be a redis:// URL string, got {}",
                            type_name(&item)
                        )))
                    }
                }
            }
            Ok(urls)
        }
        _ => Err(wrong()),
    }
}
