//! Runtime bridging: core futures run on napi's tokio runtime and settle JavaScript Promises
//! on the main thread, where core failures become the JavaScript error classes.

use std::future::Future;

use napi::bindgen_prelude::*;

use crate::error::Failure;

/// A Promise settled by `fut`: `map` builds the value on the main thread; a failure rejects
/// with its JavaScript error class.
pub(crate) fn promise<'e, T, V, F, M>(env: &'e Env, fut: F, map: M) -> Result<PromiseRaw<'e, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    M: FnOnce(&'e Env, T) -> Result<V> + 'static,
{
    env.spawn_future_with_callback(
        async move { Ok(fut.await) },
        move |env, outcome| match outcome {
            Ok(value) => map(env, value),
            Err(failure) => Err(failure.into_js(env, None)),
        },
    )
}

/// A Promise already rejected with `failure` (bad arguments: no network call is made).
pub(crate) fn rejected<'e, V: ToNapiValue>(
    env: &'e Env,
    failure: Failure,
) -> Result<PromiseRaw<'e, V>> {
    promise(env, async move { Err::<(), _>(failure) }, |_, ()| {
        Err(Error::from_reason("a rejected promise resolved"))
    })
}
