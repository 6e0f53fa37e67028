"""Helpers of the asyncio bridge: they turn the native futures into coroutines."""

from __future__ import annotations

import asyncio
import inspect
import logging
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


_log = logging.getLogger("fencelock")
# Tasks of coroutine on_lost callbacks: held until done (the loop keeps only weak references).
_on_lost_tasks: "set[asyncio.Future[Any]]" = set()


def _callback_failed(error: Any) -> None:
    _log.exception("the on_lost callback of lock %r raised", getattr(error, "name", None))


def call_on_lost(callback: Callable[[Any], Any], error: Any) -> None:
    """The sync API's ``on_lost``: called on the background thread that noticed the loss;
    whatever it raises is logged, never lost silently."""
    try:
        callback(error)
    except BaseException:
        _callback_failed(error)


def schedule_on_lost(loop: Any, callback: Callable[[Any], Any], error: Any) -> None:
    """The asyncio API's ``on_lost``: run on the event loop that acquired the lock (a
    coroutine it returns runs as a task); what it raises is logged."""
    try:
        loop.call_soon_threadsafe(_run_on_lost, callback, error)
    except RuntimeError:  # the loop is closed: nobody is left to tell but the log
        _log.warning(
            "lock %r was lost (%s) after its event loop closed; on_lost was not called",
            getattr(error, "name", None),
            getattr(error, "reason", None),
        )


def _run_on_lost(callback: Callable[[Any], Any], error: Any) -> None:
    try:
        result = callback(error)
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            _on_lost_tasks.add(task)
            task.add_done_callback(lambda t: _on_lost_done(t, error))
    except Exception:
        _callback_failed(error)


def _on_lost_done(task: "asyncio.Future[Any]", error: Any) -> None:
    _on_lost_tasks.discard(task)
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        _log.error(
            "the on_lost callback of lock %r raised",
            getattr(error, "name", None),
            exc_info=(type(exc), exc, exc.__traceback__),
        )
