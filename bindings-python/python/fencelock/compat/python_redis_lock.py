"""A drop-in for python-redis-lock's ``redis_lock``, on fencelock.

Migrating is one changed line::

    from fencelock.compat import python_redis_lock as redis_lock     # was: import redis_lock

    with redis_lock.Lock(conn, "name-of-the-lock", expire=60, auto_renewal=True):
        ...

The same ``Lock`` (its arguments, ``acquire``, ``release``, ``extend``, ``locked``,
``get_owner_id``, ``reset``, the context manager), ``reset_all`` and exceptions, over the
server the redis-py client points at (one fencelock manager per client). The key is the
library's, ``lock:<name>``, holding the lock's id, so a process still on python-redis-lock and
one on the drop-in exclude each other; a release also pushes the library's wake-up signal
(``lock-signal:<name>``) so that its waiters do not wait for it in vain. What differs, and
why, is in docs/migrating.md; mainly:

- waiters are served in the order they came and woken by the release (no ``BLPOP`` race);
- every acquisition carries a fencing token (:attr:`Lock.fencing_token`);
- ``expire=None`` is a lease: the key has a TTL (:attr:`Lock.lease_ttl`, 30 s) that
  fencelock extends in the background while the lock is held, so a holder that dies frees
  the lock after at most that long instead of never;
- ``reset_all`` releases only the locks under ``lock:`` that hold a value, never scanning
  with ``KEYS`` inside a script.

Importing this module needs redis-py: ``pip install fencelock[redis]``.
"""

from __future__ import annotations

import threading
import weakref
from base64 import b64encode
from logging import getLogger
from os import getpid, urandom
from types import TracebackType
from typing import Any, ClassVar, Optional, Tuple, Type, Union

try:
    import redis
except ImportError as _missing:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "fencelock.compat.python_redis_lock needs redis-py, which is not installed: "
        "pip install fencelock[redis]"
    ) from _missing

import fencelock
from fencelock.compat.redis_py import _ManagerCache

__all__ = [
    "AlreadyAcquired",
    "AlreadyStarted",
    "InvalidTimeout",
    "Lock",
    "NotAcquired",
    "NotExpirable",
    "TimeoutNotUsable",
    "TimeoutTooLarge",
    "manager_for",
    "reset_all",
]

__version__ = "4.0.1"

# python-redis-lock's log lines, on loggers named as its are under this module: what a
# service watches in its logs keeps appearing.
logger_for_acquire = getLogger(f"{__name__}.acquire")
logger_for_release = getLogger(f"{__name__}.release")

#: python-redis-lock's key prefixes: the lock key, and the list its waiters block on.
PREFIX = "lock:"
SIGNAL_PREFIX = "lock-signal:"


class AlreadyAcquired(RuntimeError):
    pass


class NotAcquired(RuntimeError):
    pass


class AlreadyStarted(RuntimeError):
    pass


class TimeoutNotUsable(RuntimeError):
    pass


class InvalidTimeout(RuntimeError):
    pass


class TimeoutTooLarge(RuntimeError):
    pass


class NotExpirable(RuntimeError):
    pass


_managers = _ManagerCache()


def manager_for(client: Any) -> fencelock.LockManager:
    """The :class:`fencelock.LockManager` the drop-in uses for redis-py ``client``: one per
    client object, its keys under python-redis-lock's ``lock:`` prefix."""

    def make(url: str, **options: Any) -> fencelock.LockManager:
        return fencelock.LockManager(url, key_prefix=PREFIX, **options)

    manager: fencelock.LockManager = _managers.get(client, make)
    return manager


# The first 16 characters of this process's default lock ids, and the process (a fork's
# child makes its own).
_id_prefix: Tuple[int, str] = (0, "")


def _new_id() -> str:
    """A default lock id as python-redis-lock's (24 base64 characters of 18 random bytes),
    whose first 16 characters (12 bytes) are the same for every lock of this process and the
    other 8 (6 bytes) its own. fencelock wakes a waiter on a channel named by its token's first
    16 characters: shared like this, the process's waiters of a name share one subscription,
    as fencelock's own tokens do, instead of subscribing and unsubscribing for every ``Lock``
    that waits."""
    global _id_prefix
    pid = getpid()
    if _id_prefix[0] != pid:
        _id_prefix = (pid, b64encode(urandom(12)).decode("ascii"))
    return _id_prefix[1] + b64encode(urandom(6)).decode("ascii")


def _id_text(id: Union[str, bytes, None]) -> str:
    if id is None:
        return _new_id()
    if isinstance(id, bytes):
        try:
            return id.decode("ascii")
        except UnicodeDecodeError:
            return b64encode(id).decode("ascii")
    if isinstance(id, str):
        return id
    raise TypeError(f"Incorrect type for `id`. Must be bytes/str not {type(id)}.")


class Lock:
    """A lock on ``name``, as python-redis-lock 4.0.1's: ``expire`` seconds (``None``: until
    released, as an auto-extended lease), ``id`` its value (random by default),
    ``auto_renewal`` to keep it alive while held, ``blocking`` for the context manager;
    ``strict`` (the default) refuses a client that is not a ``redis.StrictRedis``."""

    lease_ttl: ClassVar[float] = 30.0
    """The TTL, in seconds, of the lease that stands for ``expire=None``."""

    def __init__(
        self,
        redis_client: Any,
        name: str,
        expire: Optional[float] = None,
        id: Union[str, bytes, None] = None,
        auto_renewal: bool = False,
        strict: bool = True,
        signal_expire: int = 1000,
        blocking: bool = True,
    ) -> None:
        if strict and not isinstance(redis_client, redis.StrictRedis):
            raise ValueError(
                "redis_client must be instance of StrictRedis. Use strict=False if you know what you're doing."
            )
        if auto_renewal and expire is None:
            raise ValueError("Expire may not be None when auto_renewal is set")
        self._client = redis_client
        expire_s: Optional[int] = None
        if expire:
            expire_s = int(expire)
            if expire_s < 0:
                raise ValueError("A negative expire is not acceptable.")
        self._expire = expire_s
        self._signal_expire = signal_expire
        self._id = _id_text(id)
        self._plain_name = name
        self._name = PREFIX + name
        self._signal = SIGNAL_PREFIX + name
        self._auto_renewal = bool(auto_renewal)
        # python-redis-lock's renewal attributes, for code that reads them: the period its
        # thread would renew at, and no thread (fencelock's core extends the lock itself,
        # every third of ``expire``).
        self._lock_renewal_interval: Optional[float] = (
            float(expire_s) * 2 / 3 if auto_renewal and expire_s else None
        )
        self._lock_renewal_thread: Optional[threading.Thread] = None
        self.blocking = blocking
        self._lock: Optional[fencelock.Lock] = None
        self._dropped: Optional[Any] = None  # the finalizer of the current hold
        self._guard = threading.Lock()

    @property
    def id(self) -> str:
        """The lock's value: what the key holds while this lock is held."""
        return self._id

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the current hold (not in python-redis-lock), or ``None``."""
        return None if self._lock is None else self._lock.fencing_token

    def _manager(self) -> fencelock.LockManager:
        return manager_for(self._client)

    def get_owner_id(self) -> Optional[str]:
        """The id of the lock's holder, or ``None`` when it is free."""
        owner = self._client.get(self._name)
        if isinstance(owner, bytes):
            return owner.decode("ascii", "replace")
        return owner  # type: ignore[no-any-return]

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Takes the lock: ``True``, or ``False`` when ``blocking=False`` found it held or
        ``timeout`` seconds passed."""
        logger_for_acquire.debug("Acquiring Lock(%r) ...", self._name)
        if self._lock is not None:
            raise AlreadyAcquired("Already acquired from this Lock instance.")
        try:
            wait = self._wait(blocking, timeout)
        except (TimeoutNotUsable, InvalidTimeout, TimeoutTooLarge):
            self._refuse_if_held()  # python-redis-lock checks the owner first
            raise
        ttl = float(self._expire) if self._expire else self.lease_ttl
        keep = self._auto_renewal or self._expire is None
        # One try first: a free lock is taken in one round trip. Refused, the owner check
        # python-redis-lock makes before anything (AlreadyAcquired), then the wait in line.
        lock = self._take(ttl, 0.0, keep)
        if lock is None:
            self._refuse_if_held()
            if wait != 0.0:
                lock = self._take(ttl, wait, keep)
        if lock is None:
            if not blocking:
                logger_for_acquire.warning("Failed to acquire Lock(%r).", self._name)
            return False
        with self._guard:
            self._lock = lock
        # Dropped without a release, python-redis-lock's lock stays until its key expires (and
        # its renewal stops): so here, silently, rather than with fencelock's warning.
        self._dropped = weakref.finalize(self, _let_expire, lock)
        logger_for_acquire.info("Acquired Lock(%r).", self._name)
        return True

    def _refuse_if_held(self) -> None:
        """``AlreadyAcquired`` when the key holds this lock's id (taken through another
        ``Lock`` with the same id, or by python-redis-lock itself)."""
        if self.get_owner_id() == self._id:
            raise AlreadyAcquired("Already acquired from this Lock instance.")

    def _wait(self, blocking: bool, timeout: Optional[float]) -> Optional[float]:
        """How long ``acquire`` waits (``None``: until acquired), from python-redis-lock's
        arguments, which it checks in this order."""
        if not blocking and timeout is not None:
            raise TimeoutNotUsable("Timeout cannot be used if blocking=False")
        if not timeout:
            return None if blocking else 0.0
        timeout_s = int(timeout)
        if timeout_s < 0:
            raise InvalidTimeout(f"Timeout ({timeout_s}) cannot be less than or equal to 0")
        if self._expire and not self._auto_renewal and timeout_s > self._expire:
            raise TimeoutTooLarge(
                f"Timeout ({timeout_s}) cannot be greater than expire ({self._expire})"
            )
        return float(timeout_s)

    def _take(self, ttl: float, wait: Optional[float], keep: bool) -> Optional[fencelock.Lock]:
        """The lock, or ``None`` when it stayed held for ``wait`` seconds."""
        try:
            return self._manager().acquire(
                self._plain_name, ttl, wait=wait, token=self._id, auto_extend=keep
            )
        except fencelock.NotAcquired:
            return None

    def extend(self, expire: Optional[float] = None) -> None:
        """Resets the lock's expiry to ``expire`` seconds (the lock's own by default)."""
        if expire:
            seconds = int(expire)
            if seconds < 0:
                raise ValueError("A negative expire is not acceptable.")
        elif self._expire is not None:
            seconds = self._expire
        else:
            raise TypeError(
                "To extend a lock 'expire' must be provided as an argument to extend() method or at initialization time."
            )
        if self._lock is not None and self._expire is None:
            # Held as python-redis-lock's lock without expiry (here a lease kept alive).
            raise NotExpirable(f"Lock {self._name} has no assigned expiration time")
        try:
            self._manager().extend(self._plain_name, self._id, float(seconds))
        except fencelock.LockLost as e:
            raise NotAcquired(f"Lock {self._name} is not acquired or it already expired.") from e

    def release(self) -> None:
        """Releases the lock held with this lock's id (also one acquired elsewhere:
        ``Lock(conn, name, id=its_id).release()``); ``NotAcquired`` when it is not held."""
        with self._guard:
            lock, self._lock = self._lock, None
        if self._dropped is not None:
            self._dropped.detach()
        logger_for_release.debug("Releasing Lock(%r).", self._name)
        try:
            if lock is not None:
                lock.release()
            else:
                self._manager().release(self._plain_name, self._id)
        except fencelock.LockLost as e:
            raise NotAcquired(f"Lock({self._name}) is not acquired or it already expired.") from e
        self._signal_waiters()

    def _signal_waiters(self) -> None:
        """Wakes python-redis-lock's own waiters (a rolling migration's old processes), which
        block on the signal list rather than on fencelock's queue."""
        pipe = self._client.pipeline(transaction=True)
        pipe.delete(self._signal)
        pipe.lpush(self._signal, 1)
        pipe.pexpire(self._signal, self._signal_expire)
        pipe.execute()

    def locked(self) -> bool:
        """Whether anyone holds the lock (this lock or another)."""
        return bool(self._manager().is_locked(self._plain_name))

    def reset(self) -> None:
        """Forcibly releases the lock, whoever holds it. Use this with care."""
        owner = self.get_owner_id()
        if owner is not None:
            try:
                self._manager().release(self._plain_name, owner)
            except fencelock.LockLost:
                pass  # released or expired meanwhile
        self._signal_waiters()

    def __enter__(self) -> "Lock":
        if not self.acquire(blocking=self.blocking):
            if self.blocking:
                raise AssertionError(f"Lock({self._name}) wasn't acquired, but blocking=True was used!")
            raise NotAcquired(f"Lock({self._name}) is not acquired or it already expired.")
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc_value: Optional[BaseException] = None,
        traceback: Optional[TracebackType] = None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<fencelock.compat.python_redis_lock.Lock {self._name!r} expire={self._expire}>"


def _let_expire(lock: fencelock.Lock) -> None:
    """A collected drop-in lock's hold: left to expire after its TTL, extended no more."""
    try:
        lock.detach()
    except fencelock.LockError:
        pass


def reset_all(redis_client: Any) -> None:
    """Forcibly releases every lock under ``lock:``. Use this with care: unlike
    python-redis-lock's, it scans (``SCAN``, not ``KEYS`` in a script) and releases only lock
    keys, never fencelock's own queue keys."""
    manager = manager_for(redis_client)
    own = (PREFIX + "fencelock:{").encode()
    for key in redis_client.scan_iter(match=PREFIX + "*", count=1000):
        raw = key if isinstance(key, bytes) else str(key).encode()
        if raw.startswith(own) or redis_client.type(key) not in (b"string", "string"):
            continue
        owner = redis_client.get(key)
        if owner is None:
            continue
        name = raw[len(PREFIX):]
        try:
            manager.release(name, owner)
        except fencelock.LockLost:
            continue
        pipe = redis_client.pipeline(transaction=True)
        signal = SIGNAL_PREFIX.encode() + name
        pipe.delete(signal)
        pipe.lpush(signal, 1)
        pipe.expire(signal, 1)
        pipe.execute()
