"""Helpers of the asyncio bridge: they turn the native futures into coroutines."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, TypeVar

T = TypeVar("T")


async def wait(future: "asyncio.Future[T]") -> T:
    """Awaits a future completed by the native runtime (so callers get a coroutine)."""
    return await future


async def ready(value: T) -> T:
    """A coroutine that returns ``value`` at once."""
    return value


async def enter(scope: Any, acquiring: "Awaitable[T]") -> T:
    """``AsyncLockScope.__aenter__``: awaits the acquisition, then records the lock in the
    scope (not before: a task cancelled meanwhile must leave the scope empty)."""
    lock = await acquiring
    scope._entered(lock)
    return lock


def running_loop() -> Any:
    """The running event loop (raises RuntimeError outside one)."""
    return asyncio.get_running_loop()
