"""Type stubs of the native module ``fencelock._native`` (checked with mypy.stubtest)."""

import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, Optional, TypeVar, Union, final

from fencelock._election import AsyncElection, Election, Leader
from fencelock._family import AsyncRwLock, AsyncSemaphore, RwLock, Semaphore
from fencelock._holder import Holder

if sys.version_info >= (3, 11):
    from typing import Self
else:
    from typing_extensions import Self

_F = TypeVar("_F", bound=Callable[..., Any])
_Text = Union[str, bytes, bytearray]
_Returned = Union[str, bytes]
_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Event = tuple[str, str, list[tuple[str, str]]]
_LostReason = Literal["expired", "taken", "unreachable"]
_OnLost = Callable[["LockLost"], object]
_Kind = Literal["lock", "semaphore", "read", "write"]

__all__ = [
    "__version__",
    "LockError",
    "NotAcquired",
    "LockLost",
    "Unavailable",
    "ServerError",
    "WrongKind",
    "ServerReport",
    "_error_kinds",
    "_error_for_kind",
    "_cli_main",
    "_at_exit",
    "_after_fork_in_child",
    "_set_event_level",
    "_event_level",
    "_next_events",
    "_take_events",
    "_set_span_capture",
    "_metric_measures",
    "_metric_start",
    "_metric_totals",
    "_metric_observations",
    "LockManager",
    "Lock",
    "LockScope",
    "AsyncLockManager",
    "AsyncLock",
    "AsyncLockScope",
    "Observer",
    "AsyncObserver",
]

__version__: str

class LockError(Exception):
    """Base class of every fencelock error; raised as such for misuse of a lock object."""

    servers: Sequence[ServerReport]
    """What each server answered in the last attempt of a failed acquisition, one report per
    configured server in order; empty for every other error."""

@final
class ServerReport:
    """What one server answered in the last attempt of a failed acquisition."""

    @property
    def server(self) -> str:
        """The server as configured, without its password."""
    @property
    def outcome(self) -> Literal["granted", "held", "unreachable", "timeout", "error"]:
        """What it answered."""
    @property
    def detail(self) -> str:
        """For people: how long the holder keeps it, or why the server failed."""

class NotAcquired(LockError, TimeoutError):
    """The wait limit passed while the lock was held by another owner."""

class LockLost(LockError):
    """The lock is no longer held (expired, deleted or taken by another owner)."""

    reason: Optional[Literal["expired", "taken", "unreachable"]]
    """On the error an ``on_lost`` callback receives: why the lock was lost; else None."""
    name: Optional[_Returned]
    """On the error an ``on_lost`` callback receives: the lock's name; else None."""
    fencing_token: Optional[int]
    """On the error an ``on_lost`` callback receives: the lost lock's fencing token."""

class Unavailable(LockError, ConnectionError):
    """Too few Redis servers answered to reach a quorum."""

class ServerError(LockError):
    """A Redis server answered with an unexpected reply."""

class WrongKind(LockError):
    """The name is held as another kind (lock, semaphore, read-write lock), or the token
    holds the other mode of a read-write lock."""

@final
class LockManager:
    """A distributed lock manager over one Redis server or several (Redlock)."""

    def __new__(
        cls,
        servers: Union[str, Sequence[str]],
        *,
        key_prefix: _Text = ...,
        retry_delay: float = 0.2,
        retry_jitter: Optional[float] = None,
        drift_factor: float = 0.01,
        server_timeout: Optional[float] = None,
        connect_timeout: Optional[float] = None,
        refused_attempts: int = 10,
        replica_ack: Optional[int] = None,
        replica_ack_timeout: Optional[float] = None,
        tls_ca_file: Optional[_Path] = None,
        tls_client_cert: Optional[_Path] = None,
        tls_client_key: Optional[_Path] = None,
        tls_insecure: bool = False,
        password: Optional[str] = None,
        metric_names: Union[None, Iterable[_Text], Callable[[str], Optional[str]]] = None,
        holder: Union[None, bool, str] = None,
    ) -> Self: ...
    def acquire(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Lock:
        """Acquires ``name`` for ``ttl`` seconds, waiting up to ``wait`` (None: no limit)."""
    def acquire_many(
        self,
        names: Iterable[_Text],
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Lock:
        """Acquires every name of ``names`` at once, or none: one lock for all of them."""
    def try_acquire(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Optional[Lock]:
        """Tries once: the lock, or None when another owner holds it."""
    def lock(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> LockScope:
        """A context manager holding ``name`` (auto-extended) while its block runs."""
    def locked(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Callable[[_F], _F]:
        """A decorator running the function inside ``self.lock(name, ttl, wait=wait)``."""
    def is_locked(self, name: _Text) -> bool:
        """Whether a quorum of the servers hold ``name`` under one token."""
    def remaining(self, name: _Text) -> Optional[float]:
        """Seconds ``name`` stays held at least (``math.inf``: no expiry), ``None`` when free."""
    def holder(self, name: _Text) -> Optional[Holder]:
        """Who holds ``name`` (the note its holder left, if any), ``None`` when free."""
    def extend(self, name: _Text, token: _Text, ttl: float) -> float:
        """Extends ``name`` if it is held with ``token``; returns the validity in seconds."""
    def release(self, name: _Text, token: _Text) -> None:
        """Releases ``name`` if it is held with ``token``."""
    def semaphore(self, name: _Text, limit: int) -> Semaphore:
        """A counting semaphore on ``name``: at most ``limit`` permits held at once."""
    def rwlock(self, name: _Text) -> RwLock:
        """A fair read-write lock on ``name``: many readers or one writer."""
    def election(self, name: _Text) -> Election:
        """A leader election on ``name``: campaign, leader, observe."""
    def close(self) -> None:
        """Closes the manager; locks already acquired stay usable."""
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc_info: object) -> bool: ...

@final
class LockScope:
    """The context manager returned by ``LockManager.lock``."""

    def __enter__(self) -> Lock: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class Lock:
    """A lock held through ``fencelock.LockManager``."""

    @property
    def name(self) -> _Returned:
        """The lock's name, as given (str or bytes)."""
    @property
    def token(self) -> _Returned:
        """This acquisition's token (as given, or the generated token as a str)."""
    @property
    def fencing_token(self) -> int:
        """The fencing token: grows with every acquisition on the server set."""
    @property
    def names(self) -> tuple[_Returned, ...]:
        """Every name of the lock, as given (one for ``acquire``)."""
    @property
    def fencing_tokens(self) -> tuple[int, ...]:
        """One fencing token per name, in the order of ``names``."""
    @property
    def validity(self) -> float:
        """Seconds the lock is still safe to use; 0.0 once released, lost or expired."""
    @property
    def lost(self) -> bool:
        """Whether the lock is known to be lost."""
    @property
    def lost_reason(self) -> Optional[_LostReason]:
        """Why the lock was lost (``"expired"``, ``"taken"``, ``"unreachable"``), else None."""
    @property
    def kind(self) -> _Kind:
        """What the lease holds of its name: ``"lock"``, ``"semaphore"``, ``"read"``,
        ``"write"``."""
    @property
    def permits(self) -> Optional[int]:
        """How many permits a semaphore's lease holds; None for other kinds."""
    def release(self) -> None:
        """Releases the lock."""
    def is_held(self) -> bool:
        """Whether a quorum of the servers still hold this lock (asks them)."""
    def detach(self) -> None:
        """Gives up this object's hold without releasing the lock (it expires or is released
        by name and token)."""
    def extend(self, ttl: float, *, add: bool = False) -> None:
        """Makes the lock expire ``ttl`` seconds from now."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class AsyncLockManager:
    """The asyncio lock manager (``fencelock.asyncio.LockManager``)."""

    def __new__(
        cls,
        servers: Union[str, Sequence[str]],
        *,
        key_prefix: _Text = ...,
        retry_delay: float = 0.2,
        retry_jitter: Optional[float] = None,
        drift_factor: float = 0.01,
        server_timeout: Optional[float] = None,
        connect_timeout: Optional[float] = None,
        refused_attempts: int = 10,
        replica_ack: Optional[int] = None,
        replica_ack_timeout: Optional[float] = None,
        tls_ca_file: Optional[_Path] = None,
        tls_client_cert: Optional[_Path] = None,
        tls_client_key: Optional[_Path] = None,
        tls_insecure: bool = False,
        password: Optional[str] = None,
        metric_names: Union[None, Iterable[_Text], Callable[[str], Optional[str]]] = None,
        holder: Union[None, bool, str] = None,
    ) -> Self: ...
    def acquire(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[["LockLost"], object]] = None,
    ) -> Coroutine[Any, Any, AsyncLock]:
        """Acquires ``name`` for ``ttl`` seconds, waiting up to ``wait`` (None: no limit)."""
    def acquire_many(
        self,
        names: Iterable[_Text],
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, AsyncLock]:
        """Acquires every name of ``names`` at once, or none: one lock for all of them."""
    def try_acquire(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[["LockLost"], object]] = None,
    ) -> Coroutine[Any, Any, Optional[AsyncLock]]:
        """Tries once: the lock, or None when another owner holds it."""
    def lock(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[["LockLost"], object]] = None,
    ) -> AsyncLockScope:
        """An async context manager holding ``name`` while its block runs."""
    def locked(
        self,
        name: _Text,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Callable[[_F], _F]:
        """A decorator for coroutine functions, as ``async with self.lock(...)``."""
    def is_locked(self, name: _Text) -> Coroutine[Any, Any, bool]:
        """Whether a quorum of the servers hold ``name`` under one token."""
    def remaining(self, name: _Text) -> Coroutine[Any, Any, Optional[float]]:
        """Seconds ``name`` stays held at least (``math.inf``: no expiry), ``None`` when free."""
    def holder(self, name: _Text) -> Coroutine[Any, Any, Optional[Holder]]:
        """Who holds ``name`` (the note its holder left, if any), ``None`` when free."""
    def extend(self, name: _Text, token: _Text, ttl: float) -> Coroutine[Any, Any, float]:
        """Extends ``name`` if it is held with ``token``; returns the validity in seconds."""
    def release(self, name: _Text, token: _Text) -> Coroutine[Any, Any, None]:
        """Releases ``name`` if it is held with ``token``."""
    def semaphore(self, name: _Text, limit: int) -> AsyncSemaphore:
        """A counting semaphore on ``name``: at most ``limit`` permits held at once."""
    def election(self, name: _Text) -> AsyncElection:
        """A leader election on ``name``: campaign, leader, observe."""
    def rwlock(self, name: _Text) -> AsyncRwLock:
        """A fair read-write lock on ``name``: many readers or one writer."""
    def close(self) -> Coroutine[Any, Any, None]:
        """Closes the manager at once; awaiting the result is optional."""
    def __aenter__(self) -> Coroutine[Any, Any, Self]: ...
    def __aexit__(self, *exc_info: object) -> Coroutine[Any, Any, bool]: ...

@final
class AsyncLockScope:
    """The async context manager returned by ``AsyncLockManager.lock``."""

    def __aenter__(self) -> Coroutine[Any, Any, AsyncLock]: ...
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> Coroutine[Any, Any, bool]: ...

@final
class AsyncLock:
    """A lock held through ``fencelock.asyncio.LockManager``."""

    @property
    def name(self) -> _Returned:
        """The lock's name, as given (str or bytes)."""
    @property
    def token(self) -> _Returned:
        """This acquisition's token (as given, or the generated token as a str)."""
    @property
    def fencing_token(self) -> int:
        """The fencing token: grows with every acquisition on the server set."""
    @property
    def names(self) -> tuple[_Returned, ...]:
        """Every name of the lock, as given (one for ``acquire``)."""
    @property
    def fencing_tokens(self) -> tuple[int, ...]:
        """One fencing token per name, in the order of ``names``."""
    @property
    def validity(self) -> float:
        """Seconds the lock is still safe to use; 0.0 once released, lost or expired."""
    @property
    def lost(self) -> bool:
        """Whether the lock is known to be lost."""
    @property
    def lost_reason(self) -> Optional[_LostReason]:
        """Why the lock was lost (``"expired"``, ``"taken"``, ``"unreachable"``), else None."""
    @property
    def kind(self) -> _Kind:
        """What the lease holds of its name: ``"lock"``, ``"semaphore"``, ``"read"``,
        ``"write"``."""
    @property
    def permits(self) -> Optional[int]:
        """How many permits a semaphore's lease holds; None for other kinds."""
    def release(self) -> Coroutine[Any, Any, None]:
        """Releases the lock."""
    def is_held(self) -> Coroutine[Any, Any, bool]:
        """Whether a quorum of the servers still hold this lock (asks them)."""
    def detach(self) -> None:
        """Gives up this object's hold without releasing the lock (it expires or is released
        by name and token)."""
    def extend(self, ttl: float, *, add: bool = False) -> Coroutine[Any, Any, None]:
        """Makes the lock expire ``ttl`` seconds from now."""
    def __aenter__(self) -> Coroutine[Any, Any, Self]: ...
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> Coroutine[Any, Any, bool]: ...

def _error_kinds() -> list[str]:
    """Names of every core error kind (for the mapping table test)."""

def _error_for_kind(kind: str, message: str) -> BaseException:
    """The exception a core error of ``kind`` becomes (for the mapping table test)."""

def _cli_main(argv: list[str]) -> int:
    """Runs the ``fencelock`` command line (program name first); its exit code (fencelock._cli)."""

def _at_exit() -> None:
    """The atexit hook: no thread re-enters Python through fencelock after it."""

def _after_fork_in_child() -> None:
    """The fork hook: forgets the parent's threads."""

def _set_event_level(level: Optional[str]) -> None:
    """Forwards the core's events at ``level`` ("trace" ... "error") or more severe; None: none."""

def _event_level() -> Optional[str]:
    """The level events are forwarded at, or None."""

_SpanRow = tuple[str, Any, int, int, dict[str, Union[str, int, bool]]]

def _next_events() -> Optional[tuple[list[_Event], int, list[_SpanRow]]]:
    """Waits (GIL released) for queued events and span records: (events, dropped count,
    spans as (name, context, start_ns, end_ns, attributes)); None when closing."""

def _take_events() -> tuple[list[_Event], int, list[_SpanRow]]:
    """The queued events and span records, without waiting."""

def _set_span_capture(capture: Optional[Callable[[], Any]]) -> None:
    """Attaches (a function returning the caller's OpenTelemetry context) or detaches (None)
    the tracer: acquisitions capture their caller's context and queue span records."""

def _metric_measures() -> list[tuple[str, str, str, list[str], list[float], str]]:
    """The measures: (name, instrument, unit, labels, buckets, help) each."""

def _metric_start(observations: bool = False) -> None:
    """Keeps the totals (and with ``observations`` the histograms' observations) from now on."""

def _metric_totals() -> list[tuple[str, list[str], Union[float, tuple[list[int], int, float]]]]:
    """Every series' total: a float, or a histogram's (cumulative buckets, count, sum)."""

def _metric_observations() -> list[tuple[str, list[str], float]]:
    """The histogram observations kept since the last call, oldest first."""

@final
class Observer:
    """Follows an election's leader (``election.observe()``): the current leader (``None``:
    nobody leads), then each change; ``close()`` from any thread ends it."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> Optional[Leader]: ...
    def close(self) -> None:
        """Ends the iteration (a blocked ``next`` returns at once); from any thread."""

@final
class AsyncObserver:
    """``Observer`` of ``fencelock.asyncio``: ``async for leader in election.observe():``."""

    def __aiter__(self) -> Self: ...
    def __anext__(self) -> Awaitable[Optional[Leader]]: ...
    def close(self) -> None:
        """Ends the iteration; from any thread."""
