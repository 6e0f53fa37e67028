"""Losing a lock, observed as in every language: ``on_lost`` (once, with a ``LockLost`` whose
``reason`` says why; from a background thread for the sync API, on the event loop for
asyncio), ``lock.lost_reason``, and ``max_hold`` bounding auto-extension."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from typing import Any, List

import pytest

import fencelock
import fencelock.asyncio as fa
from helpers import wait_until
from redis_fixture import RedisServer


def test_on_lost_is_called_once_from_a_background_thread_with_why(
    manager: fencelock.LockManager, server: RedisServer, name: str
) -> None:
    heard: "queue.Queue[tuple[fencelock.LockLost, int]]" = queue.Queue()
    lock = manager.acquire(
        name, 0.6, auto_extend=True, on_lost=lambda e: heard.put((e, threading.get_ident()))
    )
    assert lock.lost_reason is None
    server.client().set(name, b"someone-else")
    error, thread = heard.get(timeout=5)
    assert isinstance(error, fencelock.LockLost)
    assert error.reason == "taken"
    assert error.name == name
    assert error.fencing_token == lock.fencing_token
    assert "another token holds its key" in str(error)
    assert thread != threading.get_ident()
    assert lock.lost and lock.lost_reason == "taken"
    with pytest.raises(queue.Empty):
        heard.get(timeout=0.5)  # once
    with pytest.raises(fencelock.LockLost):
        lock.release()
    assert lock.lost_reason == "taken", "known after the release too"


def test_a_deleted_key_is_expired_and_a_frozen_server_unreachable(
    server: RedisServer, name: str
) -> None:
    m = fencelock.LockManager(server.url, server_timeout=0.1)
    try:
        reasons: "queue.Queue[str | None]" = queue.Queue()
        deleted = m.acquire(name, 0.6, auto_extend=True, on_lost=lambda e: reasons.put(e.reason))
        server.client().delete(name)
        assert reasons.get(timeout=5) == "expired"
        assert deleted.lost_reason == "expired"

        frozen = m.acquire(name + "-f", 0.6, auto_extend=True, on_lost=lambda e: reasons.put(e.reason))
        server.stop()  # SIGSTOP: nothing answers
        try:
            assert reasons.get(timeout=5) == "unreachable"
        finally:
            server.cont()
        assert frozen.lost_reason == "unreachable"
    finally:
        m.close()


def test_on_lost_is_never_called_after_a_release(
    manager: fencelock.LockManager, name: str
) -> None:
    heard: List[Any] = []
    lock = manager.acquire(name, 0.3, on_lost=heard.append)
    lock.release()
    time.sleep(0.6)  # past the TTL: a lock still watched would report itself lost by now
    assert heard == []
    assert lock.lost is False and lock.lost_reason is None


def test_what_on_lost_raises_is_logged_not_lost(
    manager: fencelock.LockManager, server: RedisServer, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    done = threading.Event()

    def broken(error: fencelock.LockLost) -> None:
        done.set()
        raise RuntimeError("callback bug")

    with caplog.at_level(logging.ERROR, logger="fencelock"):
        lock = manager.acquire(name, 0.3, on_lost=broken)  # validity runs out: expired
        assert done.wait(5)
        wait_until(lambda: any("on_lost" in r.getMessage() for r in caplog.records), what="the log record")
    assert lock.lost_reason == "expired"
    record = next(r for r in caplog.records if "on_lost" in r.getMessage())
    assert record.exc_info is not None and "callback bug" in str(record.exc_info[1])


def test_max_hold_bounds_auto_extension(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    reasons: "queue.Queue[str | None]" = queue.Queue()
    started = time.monotonic()
    lock = manager.acquire(name, 0.3, auto_extend=True, max_hold=0.8, on_lost=lambda e: reasons.put(e.reason))
    assert reasons.get(timeout=5) == "expired"
    held = time.monotonic() - started
    assert 0.6 <= held < 3.0, f"held {held:.2f} s with max_hold 0.8 s"
    # The local validity ends a drift allowance before the servers' TTL: the key goes just
    # after.
    wait_until(lambda: server.client().get(name) is None, timeout=1.0, what="the key expired")
    assert lock.lost


def test_scopes_take_max_hold_and_on_lost(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    heard: "queue.Queue[str | None]" = queue.Queue()
    with pytest.raises(fencelock.LockLost, match="another token holds its key"):
        with manager.lock(name, 0.6, on_lost=lambda e: heard.put(e.reason)) as lock:
            server.client().set(name, b"intruder")
            wait_until(lambda: lock.lost, what="auto-extension to notice")
    assert heard.get(timeout=5) == "taken"

    @manager.locked(name + "-d", 0.3, max_hold=0.5, on_lost=lambda e: heard.put(e.reason))
    def job() -> bool:
        wait_until(lambda: not heard.empty(), timeout=5, what="the loss at max_hold")
        return True

    with pytest.raises(fencelock.LockLost):
        job()
    assert heard.get_nowait() == "expired"


def test_bad_on_lost_and_max_hold_fail_before_any_call() -> None:
    m = fencelock.LockManager("redis://127.0.0.1:1")  # nothing listens: a call would be Unavailable
    try:
        with pytest.raises(TypeError, match="on_lost must be a callable"):
            m.acquire("x", on_lost=42)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_hold bounds auto-extension"):
            m.acquire("x", max_hold=5)
        with pytest.raises(ValueError, match="max_hold must be a positive number"):
            m.lock("x", max_hold=-1)
        with pytest.raises(TypeError):
            m.locked("x", on_lost="print")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="max_hold"):
            m.try_acquire("x", auto_extend=True, max_hold="5")  # type: ignore[arg-type]
    finally:
        m.close()


def test_asyncio_on_lost_runs_on_the_event_loop(server: RedisServer, name: str) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        heard: "asyncio.Queue[tuple[str | None, bool]]" = asyncio.Queue()
        async with fa.LockManager(server.url, server_timeout=0.5) as m:

            def on_lost(error: fencelock.LockLost) -> None:
                on_loop = asyncio.get_running_loop() is loop
                heard.put_nowait((error.reason, on_loop))

            lock = await m.acquire(name, 0.6, auto_extend=True, on_lost=on_lost)
            server.client().delete(name)
            reason, on_loop = await asyncio.wait_for(heard.get(), 5)
            assert (reason, on_loop) == ("expired", True)
            assert lock.lost_reason == "expired"

            # A coroutine function's coroutine runs as a task on the loop.
            async def on_lost_async(error: fencelock.LockLost) -> None:
                await asyncio.sleep(0)
                heard.put_nowait((error.reason, True))

            async with m.lock(name + "-s", 0.6, on_lost=on_lost_async) as scoped:
                server.client().set(name + "-s", b"intruder")
                assert await asyncio.wait_for(heard.get(), 5) == ("taken", True)
                assert scoped.lost_reason == "taken"
                with pytest.raises(fencelock.LockLost):
                    await scoped.release()  # the scope's exit then finds nothing to release
            with pytest.raises(ValueError, match="max_hold"):
                await m.acquire(name, max_hold=1)

    asyncio.run(main())


def test_on_lost_may_call_the_manager(manager: fencelock.LockManager, name: str) -> None:
    # The callback's thread is outside fencelock's runtime: a blocking call from it works.
    out: "queue.Queue[object]" = queue.Queue()

    def retake(error: fencelock.LockLost) -> None:
        try:
            again = manager.acquire(name, 1.0, wait=2.0)
            out.put(again.fencing_token)
            again.release()
        except BaseException as e:  # reported to the test, not only logged
            out.put(e)

    lock = manager.acquire(name, 0.3, on_lost=retake)
    fencing = out.get(timeout=5)
    assert isinstance(fencing, int) and fencing > lock.fencing_token, fencing


def test_a_ttl_the_drift_rule_can_never_grant_is_refused_before_any_call() -> None:
    m = fencelock.LockManager("redis://127.0.0.1:1")  # nothing listens: a call would be Unavailable
    try:
        for ttl in (0.001, 0.002):
            with pytest.raises(ValueError, match="at least 3 ms"):
                m.acquire("x", ttl)
        with pytest.raises(ValueError, match="at least 3 ms"):
            m.try_acquire("x", 0.002)
    finally:
        m.close()
