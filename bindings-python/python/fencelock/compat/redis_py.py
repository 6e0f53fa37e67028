"""A drop-in for redis-py's ``Lock``, on fencelock.

Migrating is one changed line::

    from fencelock.compat.redis_py import Lock          # was: from redis.lock import Lock

    lock = r.lock("resource", timeout=10, lock_class=Lock)   # or Lock(r, "resource", timeout=10)
    with lock:
        ...

``AsyncLock`` does the same for ``redis.asyncio`` clients. The locks take the same arguments,
have the same methods and raise redis-py's own ``LockError`` / ``LockNotOwnedError``; they
reach the servers the client points at (host, port, db, credentials, TLS, Unix socket,
Sentinel, Cluster) through one fencelock manager per client (:func:`manager_for`,
:func:`async_manager_for`). What differs, and why, is in docs/migrating.md; mainly:

- ``timeout=None`` is a lease: the key has a TTL (:attr:`Lock.lease_ttl`, 30 s) that
  fencelock extends in the background while the lock is held, so a holder that dies frees
  the lock after at most that long instead of never;
- a waiting ``acquire`` does not poll every ``sleep`` seconds: it is woken when the holder
  releases (``sleep`` is accepted and ignored);
- names are at most 1024 bytes and must not start with ``fencelock:{``.

Importing this module needs redis-py: ``pip install fencelock[redis]``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from types import SimpleNamespace, TracebackType
from typing import (
    Any, Callable, ClassVar, Dict, Generator, Literal, NoReturn, Optional, Tuple, Type, TypeVar,
    Union,
)

try:
    import redis.exceptions
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError as _missing:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "fencelock.compat.redis_py needs redis-py, which is not installed: "
        "pip install fencelock[redis]"
    ) from _missing

import fencelock
import fencelock.asyncio
from fencelock.compat._redis_client import server_spec

__all__ = [
    "AsyncLock",
    "Lock",
    "LockError",
    "LockNotOwnedError",
    "async_manager_for",
    "manager_for",
]

logger = logging.getLogger(__name__)

_Name = Union[str, bytes, memoryview]
_Token = Union[str, bytes]
_Number = Union[int, float]


# ---------------------------------------------------------------------------------------------
# One fencelock manager per redis-py client


class _ManagerCache:
    """Managers of one flavour, one per client object, closed when the client is collected."""

    def __init__(self) -> None:
        self._managers: Dict[int, Any] = {}
        # Re-entrant: a collection inside get() may run the finalizer of another client
        # (_forget) on this thread while the guard is held.
        self._guard = threading.RLock()

    def get(self, client: Any, make: Any) -> Any:
        key = id(client)
        with self._guard:
            manager = self._managers.get(key)
            if manager is None:
                spec = server_spec(client)
                manager = make(spec.url, **spec.options)
                self._managers[key] = manager
                weakref.finalize(client, self._forget, key, manager)
            return manager

    def _forget(self, key: int, manager: Any) -> None:
        with self._guard:
            if self._managers.get(key) is manager:
                del self._managers[key]
        manager.close()


_sync_managers = _ManagerCache()
_async_managers = _ManagerCache()


def manager_for(client: Any) -> fencelock.LockManager:
    """The :class:`fencelock.LockManager` the drop-in uses for redis-py ``client``.

    One per client object, made on first use from the client's connection settings (see
    :func:`server_spec`), reused by every ``Lock`` on that client, and closed when the client
    is garbage-collected. Use it for what redis-py has no word for (fencing tokens,
    ``remaining``, auto-extension with ``max_hold``)."""
    manager: fencelock.LockManager = _sync_managers.get(client, fencelock.LockManager)
    return manager


def async_manager_for(client: Any) -> fencelock.asyncio.LockManager:
    """The :class:`fencelock.asyncio.LockManager` the drop-in uses for ``client``: one per
    client object, as :func:`manager_for`."""
    manager: fencelock.asyncio.LockManager = _async_managers.get(
        client, fencelock.asyncio.LockManager
    )
    return manager


# ---------------------------------------------------------------------------------------------
# What the sync and the asyncio lock share


class _ThreadToken(threading.local):
    """Thread-local storage of a token: ``None`` in a thread that has not acquired (where
    redis-py's plain ``threading.local`` raises AttributeError)."""

    token: Optional[bytes] = None


class _LockBase:
    """State and rules shared by :class:`Lock` and :class:`AsyncLock`."""

    lease_ttl: ClassVar[float] = 30.0
    """The TTL, in seconds, of the lease that stands for ``timeout=None``: the key expires
    this long after its holder stopped extending it (a dead process, a collected lock)."""

    def __init__(
        self,
        redis: Any,
        name: _Name,
        timeout: Optional[_Number] = None,
        sleep: _Number = 0.1,
        blocking: bool = True,
        blocking_timeout: Optional[_Number] = None,
        thread_local: bool = True,
        raise_on_release_error: bool = True,
    ) -> None:
        self.redis = redis
        self.name = name
        self.timeout = timeout
        self.sleep = sleep
        self.blocking = blocking
        self.blocking_timeout = blocking_timeout
        self.thread_local = bool(thread_local)
        self.raise_on_release_error = raise_on_release_error
        self.local: Union[threading.local, SimpleNamespace] = (
            _ThreadToken() if self.thread_local else SimpleNamespace()
        )
        self.local.token = None
        self._key = bytes(self._encoder().encode(name))
        # The fencelock locks this object acquired, by token: they outlive the thread that
        # acquired them (a lock is released by release() or its TTL, never by a thread's end).
        self._held: Dict[bytes, Any] = {}

    # -- helpers ------------------------------------------------------------------------------

    def _encoder(self) -> Any:
        try:
            return self.redis.get_encoder()
        except AttributeError:
            return self.redis.connection_pool.get_encoder()

    def _encode_token(self, token: _Token) -> bytes:
        return bytes(self._encoder().encode(token))

    def _lease(self) -> Tuple[float, bool]:
        """(ttl, auto_extend) of an acquisition: the timeout, or an auto-extended lease."""
        if self.timeout:
            return float(self.timeout), False
        return float(self.lease_ttl), True

    def _wait(
        self, blocking: Optional[bool], blocking_timeout: Optional[_Number]
    ) -> Optional[float]:
        """fencelock's ``wait``: 0 for one try, None for no limit."""
        if blocking is None:
            blocking = self.blocking
        if not blocking:
            return 0.0
        if blocking_timeout is None:
            blocking_timeout = self.blocking_timeout
        return None if blocking_timeout is None else max(0.0, float(blocking_timeout))

    def _owned_token(self, what: str) -> bytes:
        """The token of this thread's acquisition, or redis-py's LockError."""
        token: Optional[bytes] = self.local.token
        if token is None:
            raise _error(LockError, f"Cannot {what} an unlocked lock", self._shown_name())
        return token

    def _check_timeout(self, what: str) -> None:
        if not self.timeout:
            raise _error(LockError, f"Cannot {what} a lock with no timeout", self._shown_name())

    def _shown_name(self) -> str:
        name = self.name
        if isinstance(name, str):
            return name
        return bytes(name).decode("utf-8", "backslashreplace")

    def _raise(self, error: BaseException, what: str) -> NoReturn:
        """Raises what redis-py would for fencelock's ``error``, chained to it."""
        name = self._shown_name()
        if isinstance(error, LockError):  # already redis-py's (LockError is a ValueError)
            raise error
        if isinstance(error, fencelock.LockLost):
            raise _error(
                LockNotOwnedError, f"Cannot {what} a lock that's no longer owned", name
            ) from error
        if isinstance(error, fencelock.Unavailable):
            raise redis.exceptions.ConnectionError(str(error)) from error
        if isinstance(error, fencelock.ServerError):
            raise redis.exceptions.ResponseError(str(error)) from error
        if isinstance(error, (fencelock.LockError, ValueError)):
            raise _error(LockError, str(error), name) from error
        raise error

    def _forget(self, token: bytes) -> None:
        if self.local.token == token:
            self.local.token = None

    def __repr__(self) -> str:
        return (
            f"<{type(self).__module__}.{type(self).__name__}"
            f" name={self._shown_name()!r} timeout={self.timeout!r}>"
        )

    # -- the methods, once for both classes -------------------------------------------------
    #
    # Each is a generator of steps: it yields a call on the manager, a lock or the client and
    # gets its value back (or its exception thrown in). `Lock` runs the steps with `_run`,
    # `AsyncLock` with `_run_async`, which awaits each step's value.

    @property
    def manager(self) -> Any:
        """The fencelock manager the steps call (each class has its flavour's)."""
        raise NotImplementedError

    #: Whether a release keeps the token until it completed (or found the lock not owned),
    #: so that a release whose task was cancelled can be retried, as redis-py's asyncio lock.
    _token_kept_until_released: ClassVar[bool] = False

    def _not_acquired(self) -> LockError:
        return _error(
            LockError, "Unable to acquire lock within the time specified", self._shown_name()
        )

    def _acquire(
        self, blocking: Optional[bool], blocking_timeout: Optional[_Number],
        token: Optional[_Token],
    ) -> _Steps[bool]:
        wanted = None if token is None else self._encode_token(token)
        ttl, auto_extend = self._lease()
        wait = self._wait(blocking, blocking_timeout)
        manager = self.manager  # outside the try: a settings error stays a ValueError
        try:
            if wait == 0.0:
                held = yield lambda: manager.try_acquire(
                    self._key, ttl, token=wanted, auto_extend=auto_extend
                )
            else:
                held = yield lambda: manager.acquire(
                    self._key, ttl, wait=wait, token=wanted, auto_extend=auto_extend
                )
        except fencelock.NotAcquired:
            return False
        except _FENCELOCK_ERRORS as error:
            self._raise(error, "acquire")
        if held is None:
            return False
        got = wanted if wanted is not None else _as_bytes(held.token)
        self._held[got] = held
        self.local.token = got
        return True

    def _locked(self) -> _Steps[bool]:
        manager = self.manager  # outside the try: a settings error stays a ValueError
        try:
            locked: bool = yield lambda: manager.is_locked(self._key)
        except _FENCELOCK_ERRORS as error:
            self._raise(error, "inspect")
        return locked

    def _owned(self) -> _Steps[bool]:
        token: Optional[bytes] = self.local.token
        if token is None:
            return False
        held = self._held.get(token)
        if held is not None:
            try:
                owned: bool = yield held.is_held
            except _FENCELOCK_ERRORS as error:
                self._raise(error, "inspect")
            return owned
        # A token set by hand (not acquired through this object): compare as redis-py does.
        stored = yield lambda: self.redis.get(self.name)
        return _same_token(stored, token, self._encoder())

    def _release(self) -> _Steps[None]:
        token: Optional[bytes] = self.local.token
        if token is None:
            raise _error(
                LockError,
                "Cannot release a lock that's not owned or is already unlocked.",
                self._shown_name(),
            )
        if not self._token_kept_until_released:
            self.local.token = None
        # A cancelled fencelock release still completes in the background: a retry then
        # goes by token (and finds the lock released: LockNotOwnedError, as redis-py's would).
        held = self._held.pop(token, None)
        manager = self.manager  # outside the try: a settings error stays a ValueError
        try:
            if held is not None:
                yield held.release
            else:
                yield lambda: manager.release(self._key, token)
        except fencelock.LockLost as error:
            self._forget(token)
            self._raise(error, "release")
        except _FENCELOCK_ERRORS as error:
            self._raise(error, "release")
        self._forget(token)

    def _extend(self, additional_time: _Number, replace_ttl: bool) -> _Steps[Literal[True]]:
        token = self._owned_token("extend")
        self._check_timeout("extend")
        held = self._held.get(token)
        manager = self.manager  # outside the try: a settings error stays a ValueError
        try:
            if held is not None:
                yield lambda: held.extend(float(additional_time), add=not replace_ttl)
            elif replace_ttl:
                yield lambda: manager.extend(self._key, token, float(additional_time))
            else:
                # Additive extend by name + token has no fencelock call: the remaining time
                # (a lower bound) plus the addition, then a compare-and-extend by token.
                remaining = yield lambda: manager.remaining(self._key)
                if remaining is None:
                    raise _error(
                        LockNotOwnedError,
                        "Cannot extend a lock that's no longer owned",
                        self._shown_name(),
                    )
                total = remaining + float(additional_time)
                yield lambda: manager.extend(self._key, token, total)
        except _FENCELOCK_ERRORS as error:
            self._raise(error, "extend")
        return True

    def _reacquire(self) -> _Steps[Literal[True]]:
        token = self._owned_token("reacquire")
        self._check_timeout("reacquire")
        assert self.timeout is not None
        ttl = float(self.timeout)
        held = self._held.get(token)
        manager = self.manager  # outside the try: a settings error stays a ValueError
        try:
            if held is not None:
                yield lambda: held.extend(ttl)
            else:
                yield lambda: manager.extend(self._key, token, ttl)
        except _FENCELOCK_ERRORS as error:
            self._raise(error, "reacquire")
        return True

    def _exit_released(self) -> bool:
        """After a release at the end of a ``with`` block raised LockError: whether to raise
        it (``raise_on_release_error``); logs it otherwise."""
        if self.raise_on_release_error:
            return True
        logger.warning("Lock was unlocked or no longer owned when exiting context manager.")
        return False


_T = TypeVar("_T")
_Steps = Generator[Callable[[], Any], Any, _T]


def _run(steps: _Steps[_T]) -> _T:
    """Runs a method's steps (see ``_LockBase``) with each step's value as it comes."""
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = step(), None
        except BaseException as raised:  # noqa: B902 - thrown back into the method
            value, error = None, raised


async def _run_async(steps: _Steps[_T]) -> _T:
    """As :func:`_run`, awaiting each step's value (the asyncio manager's calls)."""
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = await step(), None
        except BaseException as raised:  # noqa: B902 - thrown back into the method
            value, error = None, raised


_Lock = TypeVar("_Lock", bound="Lock")
_AsyncLock = TypeVar("_AsyncLock", bound="AsyncLock")

_FENCELOCK_ERRORS = (fencelock.LockError, ValueError)


# ---------------------------------------------------------------------------------------------
# The sync lock


class Lock(_LockBase):
    """A drop-in for ``redis.lock.Lock``: ``r.lock(name, ..., lock_class=Lock)`` or
    ``Lock(r, name, timeout=None, sleep=0.1, blocking=True, blocking_timeout=None,
    thread_local=True, raise_on_release_error=True)``.

    ``timeout`` (seconds) is the lock's TTL; ``None`` makes it a lease extended in the
    background while held (:attr:`lease_ttl`). ``sleep`` is accepted and ignored: a waiter
    is woken when the holder releases. The token is kept in ``self.local.token`` (bytes), in
    thread-local storage unless ``thread_local=False``, as redis-py does."""

    @property
    def manager(self) -> fencelock.LockManager:
        """The fencelock manager of this lock's client (:func:`manager_for`)."""
        return manager_for(self.redis)

    def __enter__(self: _Lock) -> _Lock:
        if self.acquire():
            return self
        raise self._not_acquired()

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        try:
            self.release()
        except LockError:
            if self._exit_released():
                raise

    def acquire(
        self,
        sleep: Optional[_Number] = None,
        blocking: Optional[bool] = None,
        blocking_timeout: Optional[_Number] = None,
        token: Optional[_Token] = None,
    ) -> bool:
        """Acquires the lock: True once acquired, False when ``blocking`` is False and it is
        held, or when ``blocking_timeout`` seconds passed. ``token`` (str or bytes): the value
        to store instead of a generated one. ``sleep`` is ignored (no polling)."""
        del sleep
        return _run(self._acquire(blocking, blocking_timeout, token))

    def locked(self) -> bool:
        """Whether the key is held by anyone (asks the servers)."""
        return _run(self._locked())

    def owned(self) -> bool:
        """Whether the key is held under this thread's token (asks the servers)."""
        return _run(self._owned())

    def release(self) -> None:
        """Releases the lock; LockNotOwnedError if it had expired or been taken."""
        _run(self._release())

    def extend(self, additional_time: _Number, replace_ttl: bool = False) -> Literal[True]:
        """Adds ``additional_time`` seconds to the lock's remaining TTL (atomically on the
        server), or with ``replace_ttl=True`` sets its TTL to it."""
        return _run(self._extend(additional_time, replace_ttl))

    def reacquire(self) -> Literal[True]:
        """Resets the lock's TTL to ``timeout``."""
        return _run(self._reacquire())


# ---------------------------------------------------------------------------------------------
# The asyncio lock


class AsyncLock(_LockBase):
    """A drop-in for ``redis.asyncio.lock.Lock`` (``redis.asyncio`` clients): the same as
    :class:`Lock` with coroutine methods and ``async with``.

    As redis-py's, a release keeps the token until it completed (or found the lock not
    owned), so a release whose task was cancelled can be retried."""

    _token_kept_until_released = True

    @property
    def manager(self) -> fencelock.asyncio.LockManager:
        """The fencelock manager of this lock's client (:func:`async_manager_for`)."""
        return async_manager_for(self.redis)

    async def __aenter__(self: _AsyncLock) -> _AsyncLock:
        if await self.acquire():
            return self
        raise self._not_acquired()

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        try:
            await self.release()
        except LockError:
            if self._exit_released():
                raise

    async def acquire(
        self,
        blocking: Optional[bool] = None,
        blocking_timeout: Optional[_Number] = None,
        token: Optional[_Token] = None,
    ) -> bool:
        """Acquires the lock, as :meth:`Lock.acquire` (redis-py's asyncio lock has no
        ``sleep`` argument)."""
        return await _run_async(self._acquire(blocking, blocking_timeout, token))

    async def locked(self) -> bool:
        """Whether the key is held by anyone (asks the servers)."""
        return await _run_async(self._locked())

    async def owned(self) -> bool:
        """Whether the key is held under this thread's token (asks the servers)."""
        return await _run_async(self._owned())

    async def release(self) -> None:
        """Releases the lock; LockNotOwnedError if it had expired or been taken."""
        await _run_async(self._release())

    async def extend(self, additional_time: _Number, replace_ttl: bool = False) -> Literal[True]:
        """As :meth:`Lock.extend`."""
        return await _run_async(self._extend(additional_time, replace_ttl))

    async def reacquire(self) -> Literal[True]:
        """As :meth:`Lock.reacquire`."""
        return await _run_async(self._reacquire())


def _error(cls: Type[LockError], message: str, name: str) -> LockError:
    """redis-py's ``cls(message, lock_name=name)`` (older redis-py versions take no
    ``lock_name``: it is then set on the error)."""
    try:
        return cls(message, lock_name=name)
    except TypeError:
        error = cls(message)
        error.lock_name = name
        return error


def _as_bytes(token: Union[str, bytes]) -> bytes:
    return token.encode() if isinstance(token, str) else bytes(token)


def _same_token(stored: Any, token: bytes, encoder: Any) -> bool:
    if stored is None:
        return False
    return bytes(encoder.encode(stored)) == token
