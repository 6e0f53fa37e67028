"""Type stubs of ``fencelock._family`` (the handles of semaphores and read-write locks)."""

from collections.abc import Callable, Coroutine
from typing import Any, NamedTuple, Optional, TypeVar, Union

from fencelock._holder import Holder
from fencelock._native import (
    AsyncLock,
    AsyncLockManager,
    AsyncLockScope,
    Lock,
    LockLost,
    LockManager,
    LockScope,
)

F = TypeVar("F", bound=Callable[..., Any])
_Text = Union[str, bytes]
_OnLost = Callable[[LockLost], object]

class SemaphoreState(NamedTuple):
    limit: int
    held: int
    holders: int
    waiters: int

class RwLockState(NamedTuple):
    readers: int
    writer: bool
    waiters: int

class Semaphore:
    """A counting semaphore: at most ``limit`` permits of ``name`` held at any instant."""

    def __init__(self, manager: LockManager, name: _Text, limit: int) -> None: ...
    @property
    def name(self) -> _Text: ...
    @property
    def limit(self) -> int: ...
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
        on_lost: Optional[_OnLost] = None,
    ) -> Lock: ...
    def try_acquire(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Optional[Lock]: ...
    def lock(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> LockScope: ...
    def locked(
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Callable[[F], F]: ...
    def state(self) -> SemaphoreState: ...
    def holders(self) -> list[Holder]: ...
    def release(self, token: _Text) -> None: ...
    def extend(self, token: _Text, ttl: float) -> float: ...

class RwLock:
    """A fair read-write lock: many readers or one writer on ``name``."""

    def __init__(self, manager: LockManager, name: _Text) -> None: ...
    @property
    def name(self) -> _Text: ...
    def read(
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Lock: ...
    def write(
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Lock: ...
    def try_read(self, ttl: float = 30.0, **options: Any) -> Optional[Lock]: ...
    def try_write(self, ttl: float = 30.0, **options: Any) -> Optional[Lock]: ...
    def reading(
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> LockScope: ...
    def writing(
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> LockScope: ...
    def read_locked(self, ttl: float = 30.0, **options: Any) -> Callable[[F], F]: ...
    def write_locked(self, ttl: float = 30.0, **options: Any) -> Callable[[F], F]: ...
    def state(self) -> RwLockState: ...
    def holders(self) -> list[Holder]: ...
    def release(self, token: _Text) -> None: ...
    def extend(self, token: _Text, ttl: float) -> float: ...

class AsyncSemaphore(Semaphore):
    """``Semaphore`` of ``fencelock.asyncio.LockManager``: awaitable calls."""

    def __init__(self, manager: AsyncLockManager, name: _Text, limit: int) -> None: ...
    def acquire(  # type: ignore[override]
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, AsyncLock]: ...
    def try_acquire(  # type: ignore[override]
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, Optional[AsyncLock]]: ...
    def lock(  # type: ignore[override]
        self,
        count: int = 1,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> AsyncLockScope: ...
    async def state(self) -> SemaphoreState: ...  # type: ignore[override]
    async def holders(self) -> list[Holder]: ...  # type: ignore[override]
    def release(self, token: _Text) -> Coroutine[Any, Any, None]: ...  # type: ignore[override]
    def extend(self, token: _Text, ttl: float) -> Coroutine[Any, Any, float]: ...  # type: ignore[override]

class AsyncRwLock(RwLock):
    """``RwLock`` of ``fencelock.asyncio.LockManager``: awaitable calls."""

    def __init__(self, manager: AsyncLockManager, name: _Text) -> None: ...
    def read(  # type: ignore[override]
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, AsyncLock]: ...
    def write(  # type: ignore[override]
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        token: Optional[_Text] = None,
        reentrant: bool = False,
        auto_extend: bool = False,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> Coroutine[Any, Any, AsyncLock]: ...
    def try_read(self, ttl: float = 30.0, **options: Any) -> Coroutine[Any, Any, Optional[AsyncLock]]: ...  # type: ignore[override]
    def try_write(self, ttl: float = 30.0, **options: Any) -> Coroutine[Any, Any, Optional[AsyncLock]]: ...  # type: ignore[override]
    def reading(  # type: ignore[override]
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> AsyncLockScope: ...
    def writing(  # type: ignore[override]
        self,
        ttl: float = 30.0,
        *,
        wait: Optional[float] = None,
        max_hold: Optional[float] = None,
        on_lost: Optional[_OnLost] = None,
    ) -> AsyncLockScope: ...
    async def state(self) -> RwLockState: ...  # type: ignore[override]
    async def holders(self) -> list[Holder]: ...  # type: ignore[override]
    def release(self, token: _Text) -> Coroutine[Any, Any, None]: ...  # type: ignore[override]
    def extend(self, token: _Text, ttl: float) -> Coroutine[Any, Any, float]: ...  # type: ignore[override]
