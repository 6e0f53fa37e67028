"""Type stubs of ``fencelock._election`` (leader election: ``Election``, ``Term``, ``Leader``)."""

import asyncio
import datetime
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any, NamedTuple, Optional, Type, TypeVar, Union

from fencelock._native import (
    AsyncLock,
    AsyncLockManager,
    AsyncObserver,
    Lock,
    LockLost,
    LockManager,
    Observer,
)

T = TypeVar("T")
_Text = Union[str, bytes]
_OnLost = Callable[[LockLost], object]

class Leader(NamedTuple):
    value: str
    fencing_token: int
    since: datetime.datetime
    remaining: float

class Term:
    """This candidate's term as leader (``election.campaign(value)``)."""

    def __init__(self, lock: Lock, value: str) -> None: ...
    @property
    def lock(self) -> Lock: ...
    @property
    def name(self) -> _Text: ...
    @property
    def value(self) -> str: ...
    @property
    def fencing_token(self) -> int: ...
    @property
    def lost(self) -> bool: ...
    @property
    def lost_reason(self) -> Optional[str]: ...
    def proclaim(self, value: str) -> None: ...
    def resign(self) -> None: ...
    def __enter__(self) -> Term: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> None: ...

class AsyncTerm(Term):
    """``Term`` of ``fencelock.asyncio``: awaitable ``proclaim`` and ``resign``."""

    def __init__(self, lock: AsyncLock, value: str) -> None: ...
    @property
    def lock(self) -> AsyncLock: ...  # type: ignore[override]
    async def proclaim(self, value: str) -> None: ...  # type: ignore[override]
    def resign(self) -> Coroutine[Any, Any, None]: ...  # type: ignore[override]
    async def __aenter__(self) -> AsyncTerm: ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> None: ...

class Election:
    """A leader election on one name (``LockManager.election(name)``)."""

    def __init__(self, manager: LockManager, name: _Text) -> None: ...
    @property
    def name(self) -> _Text: ...
    def campaign(
        self,
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Term: ...
    def try_campaign(
        self,
        value: str = "",
        ttl: float = 30.0,
        *,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Optional[Term]: ...
    def leader(self) -> Optional[Leader]: ...
    def observe(self) -> Observer: ...
    def on_leader(self, fn: Callable[[Optional[Leader]], object]) -> Observer: ...
    def run(
        self,
        fn: Callable[[Term], T],
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> T: ...

class AsyncElection(Election):
    """``Election`` of ``fencelock.asyncio``: awaitable calls, an async ``observe()``."""

    def __init__(self, manager: AsyncLockManager, name: _Text) -> None: ...
    def campaign(  # type: ignore[override]
        self,
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, AsyncTerm]: ...
    def try_campaign(  # type: ignore[override]
        self,
        value: str = "",
        ttl: float = 30.0,
        *,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, Optional[AsyncTerm]]: ...
    def leader(self) -> Awaitable[Optional[Leader]]: ...  # type: ignore[override]
    def observe(self) -> AsyncObserver: ...  # type: ignore[override]
    def on_leader(  # type: ignore[override]
        self, fn: Callable[[Optional[Leader]], object]
    ) -> asyncio.Task[None]: ...
    async def run(  # type: ignore[override]
        self,
        fn: Callable[[AsyncTerm], Awaitable[T]],
        value: str = "",
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
    ) -> T: ...
