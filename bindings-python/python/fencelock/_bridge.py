"""Helpers of the asyncio bridge: they turn the native futures into coroutines."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, Awaitable, Callable, Generator, TypeVar

T = TypeVar("T")


async def wait(future: "asyncio.Future[T]") -> T:
    """Awaits a future completed by the native runtime (so callers get a coroutine)."""
    return await future


async def ready(value: T) -> T:
    """A coroutine that returns ``value`` at once."""
    return value


class Done(Coroutine[Any, Any, T]):
    """A coroutine of ``value`` that is not a Python coroutine object: dropping it unawaited
    warns of nothing (``manager.close()``, whose awaiting is optional), and ``await`` or
    ``asyncio.run`` take it as any coroutine."""

    __slots__ = ("_value",)

    def __init__(self, value: T) -> None:
        self._value = value

    def send(self, value: Any) -> Any:
        raise StopIteration(self._value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        raise typ if val is None else val

    def close(self) -> None:
        pass

    def __await__(self) -> Generator[Any, None, T]:
        yield from ()
        return self._value

    def __repr__(self) -> str:
        return "<fencelock done>"


async def enter(scope: Any, acquiring: "Awaitable[T]") -> T:
    """``AsyncLockScope.__aenter__``: awaits the acquisition, then records the lock in the
    scope (not before: a task cancelled meanwhile must leave the scope empty)."""
    lock = await acquiring
    scope._entered(lock)
    return lock


def running_loop() -> Any:
    """The running event loop (raises RuntimeError outside one)."""
    return asyncio.get_running_loop()


_local = threading.local()


def completions(loop: Any, make: Callable[[], Any]) -> Any:
    """The native completion queue of ``loop`` (made by ``make`` and registered with the loop
    once): results from the runtime's threads reach the loop through it."""
    current = getattr(_local, "completions", None)
    if current is None or current[0] is not loop:
        queue = make()
        try:
            if queue.fileno() < 0:  # no Unix socket on this platform
                raise NotImplementedError
            loop.add_reader(queue.fileno(), queue.drain)
        except NotImplementedError:
            queue.use_loop(loop)
        # One running loop per thread: a new loop on this thread replaces the last one's.
        current = _local.completions = (loop, queue)
    return current[1]
