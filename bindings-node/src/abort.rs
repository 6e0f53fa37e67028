//! An acquisition's `signal` option: the caller's `AbortSignal` checked and bridged to the
//! acquisition it may cancel.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use tokio::sync::Notify;

use crate::args::{self, Checked};
use crate::error::{invalid, Failure};

/// The caller's `AbortSignal`, bridged to a tokio `Notify` through an `abort` listener that
/// is removed again when the acquisition settles.
pub(crate) struct AbortBridge {
    signal: ObjectRef<false>,
    listener: ObjectRef<false>,
    pub(crate) notify: Arc<Notify>,
}

/// What an acquisition's `signal` option gives.
pub(crate) enum Signal<'e> {
    None,
    /// Already aborted: reject at once with this reason.
    Aborted(Unknown<'e>),
    Live(AbortBridge),
}

fn not_a_signal() -> Failure {
    invalid("signal must be an AbortSignal")
}

/// The `signal` option checked and, while not aborted, listened to.
pub(crate) fn bridge_signal<'e>(env: &'e Env, value: Unknown<'e>) -> Checked<Signal<'e>> {
    if args::is_nullish(&value) {
        return Ok(Signal::None);
    }
    if !matches!(value.get_type(), Ok(ValueType::Object)) {
        return Err(not_a_signal());
    }
    let signal: Object = unsafe { value.cast() }.map_err(|_| not_a_signal())?;
    let aborted: Unknown = signal
        .get_named_property("aborted")
        .map_err(|_| not_a_signal())?;
    if !matches!(aborted.get_type(), Ok(ValueType::Boolean)) {
        return Err(not_a_signal());
    }
    if unsafe { aborted.cast::<bool>() }.map_err(|_| not_a_signal())? {
        let reason = signal
            .get_named_property::<Unknown>("reason")
            .map_err(|_| not_a_signal())?;
        return Ok(Signal::Aborted(reason));
    }
    let js = |e: Error| invalid(format!("signal: {}", e.reason));
    let add: Function<FnArgs<(String, Unknown, Object)>, Unknown> = signal
        .get_named_property("addEventListener")
        .map_err(|_| not_a_signal())?;
    let notify = Arc::new(Notify::new());
    let wake = Arc::clone(&notify);
    let listener = env
        .create_function_from_closure::<(), (), _>("onAbort", move |_| {
            wake.notify_one();
            Ok(())
        })
        .map_err(js)?;
    let mut once = Object::new(env).map_err(js)?;
    once.set_named_property("once", true).map_err(js)?;
    add.apply(
        signal,
        ("abort".to_owned(), listener.to_unknown(), once).into(),
    )
    .map_err(|_| not_a_signal())?;
    let listener: Object = unsafe { listener.to_unknown().cast() }.map_err(js)?;
    Ok(Signal::Live(AbortBridge {
        signal: signal.create_ref().map_err(js)?,
        listener: listener.create_ref().map_err(js)?,
        notify,
    }))
}

impl AbortBridge {
    /// Removes the listener and drops the references; returns the signal's reason when it
    /// was aborted.
    pub(crate) fn finish<'e>(self, env: &'e Env, aborted: bool) -> Option<Unknown<'e>> {
        let mut reason = None;
        if let (Ok(signal), Ok(listener)) =
            (self.signal.get_value(env), self.listener.get_value(env))
        {
            if let Ok(remove) = signal
                .get_named_property::<Function<FnArgs<(String, Object)>, Unknown>>(
                    "removeEventListener",
                )
            {
                let _ = remove.apply(signal, ("abort".to_owned(), listener).into());
            }
            if aborted {
                reason = signal.get_named_property::<Unknown>("reason").ok();
            }
        }
        let _ = self.signal.unref(env);
        let _ = self.listener.unref(env);
        reason
    }
}
