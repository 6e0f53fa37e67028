"""Leader election: ``Election`` and ``AsyncElection`` (``manager.election(name)``), the
``Term`` a candidate leads for and the ``Leader`` everyone reads.

They translate only: a term is a ``Lock`` of the election's name (its fencing token is the
term number; auto-extended; ``lost``), campaigned for, read and followed through the
manager's private native calls, which run the core's election (docs/election.md). The
asyncio classes are the same bodies over the asyncio manager, whose calls return awaitables
(typed in ``_election.pyi``); only the term's wrapping, ``proclaim`` and ``run`` differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import inspect
import logging
import threading
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    NamedTuple,
    Optional,
    Set,
    Type,
    TypeVar,
    Union,
)

_Text = Union[str, bytes]
_OnLost = Callable[[Any], Any]
T = TypeVar("T")


class Leader(NamedTuple):
    """An election's leader (``election.leader()``, each report of ``election.observe()``)."""

    value: str
    """The value it proclaimed (at its campaign, or since with ``term.proclaim``)."""
    fencing_token: int
    """Its term number: larger than every earlier term's."""
    since: datetime.datetime
    """When its term began (an aware UTC ``datetime``, by the leader's clock)."""
    remaining: float
    """Seconds its term lasts at least without another extension."""


def _leader(value: str, fencing_token: int, since_ms: int, remaining: float) -> Leader:
    since = datetime.datetime.fromtimestamp(since_ms / 1000, tz=datetime.timezone.utc)
    return Leader(value, fencing_token, since, remaining)


class Term:
    """This candidate's term as leader (``election.campaign(value)``), auto-extended until it
    resigns. As a context manager it resigns at the end of the block and raises ``LockLost``
    there if the term was lost meanwhile (a block that raised keeps its own exception)."""

    def __init__(self, lock: Any, value: str) -> None:
        self._lock = lock
        self._value = value

    @property
    def lock(self) -> Any:
        """The term's lease: a ``Lock`` of the election's name."""
        return self._lock

    @property
    def name(self) -> _Text:
        """The election's name, as given."""
        name: _Text = self._lock.name
        return name

    @property
    def value(self) -> str:
        """The value this leader proclaims now."""
        now: Optional[str] = self._lock._term_value
        if now is not None:
            self._value = now
        return self._value

    @property
    def fencing_token(self) -> int:
        """The term number: larger than every earlier term's. Pass it to the storage the
        leader writes and have it reject smaller ones."""
        token: int = self._lock.fencing_token
        return token

    @property
    def lost(self) -> bool:
        """Whether the term is known to be lost (its lock expired, was taken, or its servers
        were unreachable): stop acting as the leader."""
        lost: bool = self._lock.lost
        return lost

    @property
    def lost_reason(self) -> Optional[str]:
        """Why the term was lost (``"expired"``, ``"taken"``, ``"unreachable"``), else None."""
        reason: Optional[str] = self._lock.lost_reason
        return reason

    def proclaim(self, value: str) -> None:
        """Proclaims a new value, in the same term: noted on the servers and pushed to every
        observer. Raises ``LockLost`` when the term is lost, ``Unavailable`` when fewer than a
        quorum noted it, ``ValueError`` for a value over 16 KiB."""
        self._lock._proclaim(value)
        self._value = value

    def resign(self) -> Any:
        """Resigns (awaitable in ``fencelock.asyncio``): the next candidate in line leads at
        once. Raises ``LockLost`` if the term had been lost."""
        return self._lock.release()

    def __enter__(self) -> Term:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> None:
        self._lock.__exit__(exc_type, exc, tb)

    def __repr__(self) -> str:
        return f"<fencelock.Term name={self.name!r} fencing_token={self.fencing_token} value={self.value!r}>"


class AsyncTerm(Term):
    """``Term`` of ``fencelock.asyncio``: ``proclaim`` and ``resign`` are awaitable, and
    ``async with`` resigns at the end of the block."""

    async def proclaim(self, value: str) -> None:  # type: ignore[override]
        """Proclaims a new value, in the same term (awaitable; as ``Term.proclaim``)."""
        await self._lock._proclaim(value)
        self._value = value

    async def __aenter__(self) -> AsyncTerm:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> None:
        await self._lock.__aexit__(exc_type, exc, tb)


class Election:
    """A leader election on one name (``LockManager.election(name)``): at most one leader at
    any instant (within the lock's assumptions), whose value everyone can read and follow.

    Candidates ``campaign`` in line, first come first served; the leader's term is a lock of
    the name, auto-extended, whose fencing token is the term number; ``resign`` hands over to
    the next candidate at once, and a crashed leader is replaced when its TTL runs out. A plain
    lock on the name excludes the candidates (and shows no leader); a semaphore or read-write
    lock on it raises ``WrongKind``."""

    def __init__(self, manager: Any, name: _Text) -> None:
        self._manager = manager
        self._name = name

    @property
    def name(self) -> _Text:
        """The election's name, as given."""
        return self._name

    def _term(self, lock: Any, value: str) -> Any:
        """The term of a campaign's lock (``None``: a try that found a leader)."""
        return None if lock is None else Term(lock, value)

    def campaign(
        self,
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Any:
        """Campaigns with ``value`` (any text up to 16 KiB: an address, a host name) until
        this candidate leads, waiting up to ``wait`` seconds (``None``: until it leads,
        interruptible by Ctrl-C; awaitable in ``fencelock.asyncio``, where cancelling the task
        gives the campaign up and leaves nothing behind); the term lives ``ttl`` seconds unless
        extended and is extended every ttl/3 (up to ``max_hold`` seconds). ``on_lost`` as for a
        lock. Raises ``NotAcquired`` when ``wait`` passed first, ``WrongKind``,
        ``Unavailable``, ``ValueError`` for bad arguments (before any network call)."""
        lock = self._manager._campaign(
            self._name, value, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost
        )
        return self._term(lock, value)

    def try_campaign(
        self,
        value: str = "",
        ttl: float = 30.0,
        *,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Any:
        """One campaign attempt (awaitable in ``fencelock.asyncio``): the ``Term``, or
        ``None`` when someone else leads (or candidates wait ahead in line)."""
        lock = self._manager._campaign(
            self._name, value, ttl, max_hold=max_hold, on_lost=on_lost, try_once=True
        )
        return self._term(lock, value)

    def leader(self) -> Any:
        """The leader now (``None``: nobody leads), from any manager, with no holder label
        (awaitable in ``fencelock.asyncio``)."""
        return self._manager._leader(self._name)

    def observe(self) -> Any:
        """An iterator of the leader: the current one first (``None``: nobody), then each
        change (a new term, a proclaimed value, nobody leading), pushed by the servers; it may
        skip a state shorter than a read, never the last. Blocks between reports (the GIL
        released; Ctrl-C interrupts); ``close()`` from any thread, or closing the manager,
        ends it. In ``fencelock.asyncio`` an async iterator (``async for``), which cancelling
        the awaiting task ends too."""
        return self._manager._observe(self._name)

    def on_leader(self, fn: Callable[[Any], Any]) -> Any:
        """Calls ``fn(leader)`` with the leader now and then at each change (``None``: nobody
        leads), as client-go's ``OnNewLeader``, from a daemon thread; returns the observer,
        whose ``close()`` (from any thread) stops it. An exception from ``fn`` stops it too,
        logged on the ``fencelock`` logger. In ``fencelock.asyncio`` a task that awaits ``fn``
        when it returns an awaitable; cancelling the task stops it."""
        observer = self.observe()

        def follow() -> None:
            try:
                for leader in observer:
                    fn(leader)
            except Exception:
                logging.getLogger("fencelock").exception(
                    "on_leader(%r): the callback raised; no longer following", self._name
                )
                observer.close()

        threading.Thread(target=follow, name="fencelock-on-leader", daemon=True).start()
        return observer

    def run(
        self,
        fn: Callable[[Term], T],
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> T:
        """Campaigns, runs ``fn(term)`` while leading, resigns, and returns what ``fn``
        returned; raises ``LockLost`` if the term was lost while ``fn`` ran (its result is
        then dropped). A thread cannot be stopped from outside: ``fn`` checks ``term.lost``
        between steps (or pass ``on_lost``, called at once from a background thread)."""
        with self.campaign(value, ttl, wait=wait, on_lost=on_lost) as term:
            return fn(term)

    def __repr__(self) -> str:
        return f"<fencelock.Election name={self._name!r}>"


class AsyncElection(Election):
    """``Election`` of ``fencelock.asyncio``: the calls are awaitable, ``observe()`` is an
    async iterator, and ``run`` cancels its task when the term is lost."""

    def _term(self, lock: Any, value: str) -> Any:
        async def term() -> Optional[AsyncTerm]:
            got = await lock
            return None if got is None else AsyncTerm(got, value)

        return term()

    def on_leader(self, fn: Callable[[Any], Any]) -> Any:
        """``Election.on_leader`` in a task of the running loop: ``fn(leader)`` at the leader
        now and each change, awaited when it returns an awaitable; cancel the task to stop."""

        async def follow() -> None:
            async for leader in self.observe():
                called = fn(leader)
                if inspect.isawaitable(called):
                    await called

        return asyncio.ensure_future(follow())

    async def run(  # type: ignore[override]
        self,
        fn: Callable[[AsyncTerm], Awaitable[T]],
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
    ) -> T:
        """Campaigns, runs ``await fn(term)`` as a task while leading, resigns, and returns
        its result. When the term is lost the task is cancelled and ``LockLost`` raised."""
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

        def on_lost(error: BaseException) -> None:
            if not lost.done():
                lost.set_result(error)

        term = await self.campaign(value, ttl, wait=wait, on_lost=on_lost)
        async with term:
            task = asyncio.ensure_future(fn(term))
            either: Set[asyncio.Future[Any]] = {task, lost}
            try:
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            except BaseException:
                task.cancel()
                raise
            if task.done():
                return task.result()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise lost.result()

    def __repr__(self) -> str:
        return f"<fencelock.asyncio.Election name={self._name!r}>"
