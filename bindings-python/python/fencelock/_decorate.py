"""The ``locked`` decorators of both managers (called by ``LockManager.locked``)."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, TypeVar, Union

F = TypeVar("F", bound=Callable[..., Any])


def locked(
    manager: Any,
    name: Union[str, bytes],
    ttl: float,
    wait: Optional[float],
    max_hold: Optional[float] = None,
    on_lost: Optional[Callable[[Any], Any]] = None,
) -> Callable[[F], F]:
    """Returns a decorator that runs the function inside ``manager.lock(name, ttl, wait=wait,
    max_hold=max_hold, on_lost=on_lost)``.

    With the synchronous manager it takes plain functions; with the asyncio manager,
    coroutine functions (the lock is then held across the awaits of the call).
    """
    is_async = type(manager).__name__ == "AsyncLockManager"
    return scoped(
        is_async,
        lambda: manager.lock(name, ttl, wait=wait, max_hold=max_hold, on_lost=on_lost),
        "fencelock.asyncio.LockManager.locked",
        "fencelock.LockManager.locked",
    )


def scoped(
    is_async: bool,
    scope: Callable[[], Any],
    async_form: str,
    sync_form: str,
) -> Callable[[F], F]:
    """Returns a decorator that runs the function inside ``with scope():`` (``async with``
    when ``is_async``; the function must then be a coroutine function, and not otherwise).
    ``async_form`` and ``sync_form`` name the decorators for the error that says which to use.
    """

    def decorate(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):
            if not is_async:
                raise TypeError(
                    f"{fn.__qualname__} is a coroutine function: decorate it with "
                    f"{async_form}, not {sync_form}"
                )

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with scope():
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        if is_async:
            raise TypeError(
                f"{getattr(fn, '__qualname__', fn)!r} is not a coroutine function: decorate it "
                f"with {sync_form}, or make it `async def`"
            )

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with scope():
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate
