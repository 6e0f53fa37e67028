//! The methods both managers share, written once: `manager_methods!` writes them into
//! `fencelock.LockManager` (sync.rs) and `fencelock.asyncio.LockManager` (aio.rs), each
//! running through its face (`face.rs`). What differs stays with each manager: its
//! `start_acquire` (blocking with Ctrl-C honoured, or an awaitable that cancelling aborts),
//! its scope class, `close` and the context-manager protocol.

/// The shared methods of a manager class `$manager` (a `managed: Managed` field) whose face
/// is `$face` and whose `lock()` scope is `$scope`.
macro_rules! manager_methods {
    ($manager:ident, $face:ty, $scope:ty, $repr:literal) => {
        impl $manager {
            pub(crate) fn live(&self, py: Python<'_>) -> PyResult<$crate::managed::Live> {
                self.managed.live().map_err(|f| f.into_py(py))
            }

            /// Turns true when the manager closes.
            pub(crate) fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
                self.managed.closing()
            }

            /// `call` on the async manager, run through the face; its result converted.
            pub(crate) fn call<'py, T, F, C>(
                &self,
                py: Python<'py>,
                call: impl FnOnce(fencelock::LockManager) -> F,
                convert: C,
            ) -> PyResult<Bound<'py, PyAny>>
            where
                T: Send + 'static,
                F: std::future::Future<Output = fencelock::Result<T>> + Send + 'static,
                C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Bound<'a, PyAny>> + Send + 'static,
            {
                let live = self.live(py)?;
                let fut = call(live.manager.as_async().clone());
                let fut = async move { fut.await.map_err($crate::errors::Failure::Core) };
                <$face as $crate::face::Face>::run(py, &live, fut, convert)
            }
        }

        #[pymethods]
        impl $manager {
            #[new]
            #[pyo3(signature = (servers, **options))]
            fn new(
                py: Python<'_>,
                servers: $crate::convert::Servers,
                options: Option<&Bound<'_, pyo3::types::PyDict>>,
            ) -> PyResult<$manager> {
                let options =
                    $crate::options::Options::from_kwargs("LockManager", servers, options)?;
                let managed = $crate::managed::Managed::new(py, options)?;
                Ok($manager { managed })
            }

            /// Acquires the lock ``name`` (str or bytes) for ``ttl`` seconds and returns the
            /// ``Lock`` (an awaitable of it in ``fencelock.asyncio``).
            ///
            /// ``wait``: ``None`` (the default) waits until acquired, interruptible by Ctrl-C
            /// (by cancelling the awaiting task in asyncio); a number of seconds gives up
            /// after that long with ``NotAcquired``; ``0`` tries once. ``token``: your own
            /// token (str or bytes: a job or request id) instead of a random one; it is
            /// exclusive, as the classic request-id lock is: while the name is held with it
            /// (by another process passing it too), acquiring waits like for any other holder,
            /// unless ``reentrant=True``, which acquires it again (TTL reset, a new fencing
            /// token). ``auto_extend``: keep the lock alive in the background (extends every
            /// ttl/3) until released; ``lock.lost`` turns true if it is lost anyway.
            /// ``max_hold`` (seconds, with ``auto_extend``): stop extending that long after
            /// acquisition, so the lock expires then at the latest. ``on_lost``: a callable
            /// called once with a ``LockLost`` error (``reason``: ``"expired"``, ``"taken"`` or
            /// ``"unreachable"``; ``name``, ``fencing_token``) if the lock is lost while held;
            /// never after a release: from a background thread, or in asyncio on the event
            /// loop that acquired (a coroutine function's coroutine is run as a task). What it
            /// raises is logged on the ``fencelock`` logger.
            ///
            /// Raises ``NotAcquired`` (wait limit passed), ``Unavailable`` (too few servers
            /// answer), ``ServerError``, ``ValueError``/``TypeError`` for bad arguments. The
            /// GIL is released while waiting; a cancelled asyncio acquisition leaves nothing
            /// locked.
            #[pyo3(signature = (
                        name, ttl = 30.0, *, wait = None, token = None, reentrant = false,
                        auto_extend = false, max_hold = None, on_lost = None
                    ))]
            #[allow(clippy::too_many_arguments)]
            fn acquire<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = $crate::convert::wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = $crate::convert::opt_token_arg)] token: Option<
                    $crate::convert::Text,
                >,
                reentrant: bool,
                auto_extend: bool,
                #[pyo3(from_py_with = $crate::convert::max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let keep = $crate::lost::Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
                let token = $crate::convert::CallerToken { token, reentrant };
                let names = $crate::convert::Names::One(name);
                self.start_acquire(py, names, ttl, wait, token, keep, false)
            }

            /// Acquires every name of ``names`` (a list or tuple of str or bytes) at once, or
            /// none, and returns one ``Lock`` for all of them: on each server one script sets
            /// every key or none, with one token and one fencing token per name
            /// (``lock.names``, ``lock.fencing_tokens``). It waits in every name's queue in the
            /// order callers came, without holding any of the names meanwhile (a release never
            /// hands it one name alone), so locks on overlapping names never deadlock.
            /// ``extend``, ``release`` and auto-extension act on all the names. On a Redis
            /// Cluster the names must share a hash slot: give them a common hash tag
            /// (``["{order-42}:payment", "{order-42}:stock"]``). Other arguments and errors as
            /// for ``acquire``; ``ValueError`` also for no names, more than 64, or one given
            /// twice.
            #[pyo3(signature = (
                        names, ttl = 30.0, *, wait = None, token = None, reentrant = false,
                        auto_extend = false, max_hold = None, on_lost = None
                    ))]
            #[allow(clippy::too_many_arguments)]
            fn acquire_many<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::names_arg)] names: $crate::convert::Names,
                #[pyo3(from_py_with = $crate::convert::ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = $crate::convert::wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = $crate::convert::opt_token_arg)] token: Option<
                    $crate::convert::Text,
                >,
                reentrant: bool,
                auto_extend: bool,
                #[pyo3(from_py_with = $crate::convert::max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let keep = $crate::lost::Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
                let token = $crate::convert::CallerToken { token, reentrant };
                self.start_acquire(py, names, ttl, wait, token, keep, false)
            }

            /// Tries once to acquire ``name``: the ``Lock``, or ``None`` when another owner
            /// holds it (awaitable in ``fencelock.asyncio``).
            ///
            /// Unreachable servers raise ``Unavailable`` rather than returning ``None``.
            /// Arguments as for ``acquire``.
            #[pyo3(signature = (
                        name, ttl = 30.0, *, token = None, reentrant = false, auto_extend = false,
                        max_hold = None, on_lost = None
                    ))]
            #[allow(clippy::too_many_arguments)]
            fn try_acquire<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = $crate::convert::opt_token_arg)] token: Option<
                    $crate::convert::Text,
                >,
                reentrant: bool,
                auto_extend: bool,
                #[pyo3(from_py_with = $crate::convert::max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let keep = $crate::lost::Keep::new(auto_extend, max_hold, on_lost.as_ref())?;
                let token = $crate::convert::CallerToken { token, reentrant };
                let names = $crate::convert::Names::One(name);
                self.start_acquire(py, names, ttl, None, token, keep, true)
            }

            /// A context manager that holds ``name`` while its block runs:
            /// ``with manager.lock("jobs") as lock: ...`` (``async with`` in
            /// ``fencelock.asyncio``).
            ///
            /// Entering acquires (``wait`` as for ``acquire``; ``None`` waits until acquired)
            /// with auto-extension on (for at most ``max_hold`` seconds when given;
            /// ``on_lost`` as for ``acquire``); leaving releases. If the lock was lost while
            /// the block ran, leaving raises ``LockLost`` (unless the block itself raised: that
            /// exception propagates).
            #[pyo3(signature = (name, ttl = 30.0, *, wait = None, max_hold = None, on_lost = None))]
            fn lock(
                slf: Bound<'_, Self>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = $crate::convert::wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = $crate::convert::max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$scope> {
                let args =
                    $crate::options::ScopeArgs::new(name, ttl, wait, max_hold, on_lost.as_ref())?;
                Ok(<$scope>::new(slf.unbind(), args))
            }

            /// A decorator that runs the function while holding ``name``, as ``with
            /// manager.lock(name, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost)``; in
            /// ``fencelock.asyncio``, for coroutine functions, with ``async with``.
            #[pyo3(signature = (name, ttl = 30.0, *, wait = None, max_hold = None, on_lost = None))]
            fn locked<'py>(
                slf: &Bound<'py, Self>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::ttl_arg)] ttl: f64,
                #[pyo3(from_py_with = $crate::convert::wait_arg)] wait: Option<f64>,
                #[pyo3(from_py_with = $crate::convert::max_hold_arg)] max_hold: Option<f64>,
                on_lost: Option<Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                $crate::options::ScopeArgs::new(name, ttl, wait, max_hold, on_lost.as_ref())?
                    .decorator(slf.as_any())
            }

            /// Whether ``name`` is held (a ``bool``; awaitable in ``fencelock.asyncio``): a
            /// quorum of the servers hold its key under one token (taken by fencelock or by
            /// another client's classic set-if-absent lock with an expiry). Acquires nothing;
            /// the holder's token is never shown. Raises ``Unavailable`` when too few servers
            /// answer, as ``acquire`` does.
            fn is_locked<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let held =
                    |m: fencelock::LockManager| async move { m.is_locked(name.as_bytes()).await };
                self.call(py, held, $crate::face::boolean)
            }

            /// How long ``name`` stays held at least, in seconds, or ``None`` when it is free
            /// (awaitable in ``fencelock.asyncio``): the quorum's view (what a quorum of the
            /// servers holding it under one token still keep, less this call's time and the
            /// clock drift; never more); ``math.inf`` for a key without expiry. Raises as
            /// ``is_locked``.
            fn remaining<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let left =
                    |m: fencelock::LockManager| async move { m.remaining(name.as_bytes()).await };
                self.call(py, left, |py, left: Option<std::time::Duration>| {
                    Ok(match left {
                        Some(d) => {
                            let secs = $crate::convert::seconds_or_inf(d);
                            pyo3::types::PyFloat::new(py, secs).into_any()
                        }
                        None => py.None().into_bound(py),
                    })
                })
            }

            /// Who holds ``name`` now: a ``fencelock.Holder`` (how long it stays held at least,
            /// and the label, since when and fencing token its holder noted, when its manager
            /// has the ``holder`` option), or ``None`` when it is free (awaitable in
            /// ``fencelock.asyncio``). Acquires nothing; raises as ``is_locked``.
            fn holder<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let holder =
                    |m: fencelock::LockManager| async move { m.holder(name.as_bytes()).await };
                self.call(py, holder, $crate::convert::holder_to_py)
            }

            /// Extends ``name`` if it is held with ``token`` (a lock handed over from another
            /// process or thread): it expires ``ttl`` seconds from now on every server holding
            /// it with ``token``. Returns the validity this gives, in seconds (as
            /// ``Lock.validity``; awaitable in ``fencelock.asyncio``). Raises ``LockLost`` if it
            /// is not held with that token (expired, or taken by another owner),
            /// ``Unavailable`` if too few servers answered, ``ValueError`` for a bad ttl.
            fn extend<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::token_arg)] token: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::ttl_arg)] ttl: f64,
            ) -> PyResult<Bound<'py, PyAny>> {
                let ttl = $crate::convert::ttl_seconds(ttl)?;
                let extend = move |m: fencelock::LockManager| async move {
                    m.extend_by_token(name.as_bytes(), token.as_bytes(), ttl)
                        .await
                };
                self.call(py, extend, $crate::face::seconds)
            }

            /// Releases ``name`` if it is held with ``token`` (a lock handed over from another
            /// process or thread; awaitable in ``fencelock.asyncio``). Raises ``LockLost`` if
            /// it was not held with that token (expired, or taken by another owner),
            /// ``Unavailable`` if too few servers answered.
            fn release<'py>(
                &self,
                py: Python<'py>,
                #[pyo3(from_py_with = $crate::convert::name_arg)] name: $crate::convert::Text,
                #[pyo3(from_py_with = $crate::convert::token_arg)] token: $crate::convert::Text,
            ) -> PyResult<Bound<'py, PyAny>> {
                let release = |m: fencelock::LockManager| async move {
                    m.release_by_token(name.as_bytes(), token.as_bytes()).await
                };
                self.call(py, release, $crate::face::none)
            }

            fn __repr__(&self, py: Python<'_>) -> String {
                self.managed.repr(py, $repr)
            }
        }
    };
}

pub(crate) use manager_methods;
