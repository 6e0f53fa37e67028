"""The coordination family's handles: ``Semaphore`` and ``RwLock`` (and their asyncio twins),
made by ``LockManager.semaphore(name, limit)`` and ``LockManager.rwlock(name)``.

They translate only: every call goes to the manager's private native calls, which run the
core's semaphore and read-write lock (a lease of either is a ``Lock`` like any other: token,
fencing token, ``extend``, auto-extension, ``lost``, ``with``). The asyncio classes are the
same with awaitables.
"""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, TypeVar, Union

from fencelock._decorate import scoped
from fencelock._holder import Holder

_Text = Union[str, bytes]
F = TypeVar("F", bound=Callable[..., Any])


class SemaphoreState(NamedTuple):
    """A semaphore's occupancy (``Semaphore.state()``): with several servers, the largest any
    answering server reports."""

    limit: int
    """The limit on the servers (the handle's when nobody holds or waits)."""
    held: int
    """Permits held by leases that have not ended."""
    holders: int
    """Leases that have not ended."""
    waiters: int
    """Callers waiting in line."""


class RwLockState(NamedTuple):
    """A read-write lock's occupancy (``RwLock.state()``)."""

    readers: int
    """Read shares held (0 while a writer holds it)."""
    writer: bool
    """Whether a writer holds it."""
    waiters: int
    """Callers waiting in line, readers and writers."""


class Semaphore:
    """A counting semaphore: at most ``limit`` permits of ``name`` held at any instant, across
    every process and language using the name (``LockManager.semaphore(name, limit)``).

    Each acquisition takes ``count`` permits, all or none, as a ``Lock`` of its own (its token,
    TTL, fencing token, ``extend``, auto-extension, ``lost``); ``with sem.acquire():`` releases
    at the end of the block, ``with sem.lock():`` also keeps the lease alive meanwhile. Waiters
    are served first come, first served: a waiter for 3 permits is not passed by later waiters
    for 1, and a release hands the freed permits to every waiter at the head of the line they
    satisfy. A holder that crashed gives its permits back when its lease ends. While permits are
    held or waited for, another limit raises ``ValueError`` naming both; a name held as a lock or
    a read-write lock raises ``WrongKind``.
    """

    _scope_async = False

    def __init__(self, manager: Any, name: _Text, limit: int) -> None:
        self._manager = manager
        self._name = name
        self._limit = limit

    @property
    def name(self) -> _Text:
        """The semaphore's name, as given."""
        return self._name

    @property
    def limit(self) -> int:
        """The semaphore's limit."""
        return self._limit

    def acquire(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        """Takes ``count`` permits for ``ttl`` seconds, waiting up to ``wait`` (``None``: until
        acquired; ``0``: one try). Other arguments as ``LockManager.acquire``. Raises
        ``NotAcquired`` when the wait limit passes, ``ValueError`` for a count outside 1 to
        the limit or another limit on the servers, ``WrongKind`` for a name of another kind."""
        return self._manager._acquire_lease(
            self._name, "semaphore", count, self._limit, ttl, wait=wait, token=token,
            reentrant=reentrant, auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost,
        )

    def try_acquire(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        """One try: the lease, or ``None`` when the permits are not free (or others wait
        ahead in line)."""
        return self._manager._acquire_lease(
            self._name, "semaphore", count, self._limit, ttl, token=token, reentrant=reentrant,
            auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost, try_once=True,
        )

    def lock(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        """A context manager holding ``count`` permits (auto-extended) while its block runs;
        raises ``LockLost`` at its end if the lease was lost meanwhile."""
        return self._manager._lease_scope(
            self._name, "semaphore", count, self._limit, ttl, wait=wait, max_hold=max_hold,
            on_lost=on_lost,
        )

    def locked(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[[Any], Any]] = None,
    ) -> Callable[[F], F]:
        """A decorator running the function inside ``self.lock(count, ttl, ...)``."""
        return scoped(
            self._scope_async,
            lambda: self.lock(count, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost),
            "an asyncio manager's semaphore(...).locked",
            "a LockManager's semaphore(...).locked",
        )

    def state(self) -> SemaphoreState:
        """Permits held, holders and waiters, changing nothing."""
        return SemaphoreState(*self._manager._lease_state(self._name, "semaphore", self._limit))

    def holders(self) -> List[Holder]:
        """The holders that left a note (their managers have the ``holder`` option): label,
        since when, fencing token and how long each lease still runs, longest first. Leases
        without a note are only counted by ``state()``."""
        return self._manager._lease_holders(self._name, "semaphore", self._limit)  # type: ignore[no-any-return]

    def release(self, token: _Text) -> None:
        """Releases the lease held with ``token`` (one handed across processes)."""
        return self._manager._lease_release(self._name, "semaphore", self._limit, token)

    def extend(self, token: _Text, ttl: float) -> float:
        """Extends the lease held with ``token`` to ``ttl`` seconds from now; returns the
        validity in seconds."""
        return self._manager._lease_extend(self._name, "semaphore", self._limit, token, ttl)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<fencelock.Semaphore name={self._name!r} limit={self._limit}>"


class RwLock:
    """A fair read-write lock: many readers or one writer on ``name``
    (``LockManager.rwlock(name)``).

    Each ``read()`` and ``write()`` is a ``Lock`` of its own (a crashed reader's share comes
    back when its TTL ends; auto-extension renews exactly that reader). Phase-fair: a waiting
    writer stops new readers, and when it releases, every reader that queued before the next
    writer enters at once. Asking to write with the token of a read share (or to read with the
    write hold's) raises ``WrongKind`` at once: it would wait for itself.
    """

    _scope_async = False

    def __init__(self, manager: Any, name: _Text) -> None:
        self._manager = manager
        self._name = name

    @property
    def name(self) -> _Text:
        """The lock's name, as given."""
        return self._name

    def _acquire(self, kind: str, ttl: float, try_once: bool = False, **options: Any) -> Any:
        return self._manager._acquire_lease(
            self._name, kind, 1, 1, ttl, try_once=try_once, **options
        )

    def read(
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        """Takes a read share for ``ttl`` seconds; arguments as ``LockManager.acquire``."""
        return self._acquire(
            "read", ttl, wait=wait, token=token, reentrant=reentrant,
            auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost,
        )

    def write(
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        """Takes the write hold for ``ttl`` seconds; arguments as ``LockManager.acquire``."""
        return self._acquire(
            "write", ttl, wait=wait, token=token, reentrant=reentrant,
            auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost,
        )

    def try_read(self, ttl: float = 30.0, **options: Any) -> Any:
        """One try to read: the share, or ``None`` while a writer holds it or waits."""
        return self._acquire("read", ttl, try_once=True, **options)

    def try_write(self, ttl: float = 30.0, **options: Any) -> Any:
        """One try to write: the hold, or ``None`` while anyone holds it or waits."""
        return self._acquire("write", ttl, try_once=True, **options)

    def reading(self, ttl: float = 30.0, *, wait: Optional[float] = None,
                max_hold: Optional[float] = None,
                on_lost: Optional[Callable[[Any], Any]] = None) -> Any:
        """A context manager holding a read share (auto-extended) while its block runs."""
        return self._manager._lease_scope(
            self._name, "read", 1, 1, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost
        )

    def writing(self, ttl: float = 30.0, *, wait: Optional[float] = None,
                max_hold: Optional[float] = None,
                on_lost: Optional[Callable[[Any], Any]] = None) -> Any:
        """A context manager holding the write hold (auto-extended) while its block runs."""
        return self._manager._lease_scope(
            self._name, "write", 1, 1, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost
        )

    def read_locked(self, ttl: float = 30.0, **options: Any) -> Callable[[F], F]:
        """A decorator running the function inside ``self.reading(ttl, ...)``."""
        return scoped(self._scope_async, lambda: self.reading(ttl, **options),
                      "an asyncio manager's rwlock(...).read_locked",
                      "a LockManager's rwlock(...).read_locked")

    def write_locked(self, ttl: float = 30.0, **options: Any) -> Callable[[F], F]:
        """A decorator running the function inside ``self.writing(ttl, ...)``."""
        return scoped(self._scope_async, lambda: self.writing(ttl, **options),
                      "an asyncio manager's rwlock(...).write_locked",
                      "a LockManager's rwlock(...).write_locked")

    def state(self) -> RwLockState:
        """Readers, whether a writer holds it, and waiters, changing nothing."""
        readers, writer, waiters = self._manager._lease_state(self._name, "read", 1)
        return RwLockState(readers, bool(writer), waiters)

    def holders(self) -> List[Holder]:
        """The readers or the writer that left a note (see ``Semaphore.holders``)."""
        return self._manager._lease_holders(self._name, "read", 1)  # type: ignore[no-any-return]

    def release(self, token: _Text) -> None:
        """Releases the share or hold held with ``token``."""
        return self._manager._lease_release(self._name, "read", 1, token)

    def extend(self, token: _Text, ttl: float) -> float:
        """Extends the share or hold held with ``token``; returns the validity in seconds."""
        return self._manager._lease_extend(self._name, "read", 1, token, ttl)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<fencelock.RwLock name={self._name!r}>"


class AsyncSemaphore(Semaphore):
    """``Semaphore`` of ``fencelock.asyncio.LockManager``: ``acquire``, ``try_acquire``,
    ``state``, ``release`` and ``extend`` are awaitable; ``lock()`` is an ``async with``
    scope and ``locked()`` decorates coroutine functions."""

    _scope_async = True

    async def state(self) -> SemaphoreState:  # type: ignore[override]
        """Permits held, holders and waiters, changing nothing."""
        st = await self._manager._lease_state(self._name, "semaphore", self._limit)
        return SemaphoreState(*st)

    async def holders(self) -> List[Holder]:  # type: ignore[override]
        """The holders that left a note; see ``fencelock.Semaphore.holders``."""
        return await self._manager._lease_holders(self._name, "semaphore", self._limit)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<fencelock.asyncio.Semaphore name={self._name!r} limit={self._limit}>"


class AsyncRwLock(RwLock):
    """``RwLock`` of ``fencelock.asyncio.LockManager``: awaitable calls, ``async with``
    scopes (``reading()``, ``writing()``), decorators for coroutine functions."""

    _scope_async = True

    async def state(self) -> RwLockState:  # type: ignore[override]
        """Readers, whether a writer holds it, and waiters, changing nothing."""
        readers, writer, waiters = await self._manager._lease_state(self._name, "read", 1)
        return RwLockState(readers, bool(writer), waiters)

    async def holders(self) -> List[Holder]:  # type: ignore[override]
        """The readers or the writer that left a note; see ``fencelock.RwLock.holders``."""
        return await self._manager._lease_holders(self._name, "read", 1)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<fencelock.asyncio.RwLock name={self._name!r}>"
