"""The asyncio API: every public method, cancellation, and that waits never block the loop."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Coroutine, List, TypeVar

import pytest

import fencelock
import fencelock.asyncio as fa
from helpers import wait_until
from redis_fixture import RedisServer

T = TypeVar("T")


def run(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(fn())


def test_module_exports_the_same_surface() -> None:
    assert fa.LockError is fencelock.LockError and fa.NotAcquired is fencelock.NotAcquired
    assert fa.LockLost is fencelock.LockLost and fa.Unavailable is fencelock.Unavailable
    assert fa.ServerError is fencelock.ServerError
    assert fa.LockManager.__doc__ and fa.Lock.__doc__ and fa.LockScope.__doc__


def test_acquire_release_extend_and_properties(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            lock = await m.acquire(name, 10)
            assert isinstance(lock, fa.Lock)
            assert lock.name == name and isinstance(lock.token, str)
            assert server.client().get(name) == lock.token.encode()
            assert lock.fencing_token >= 1 and 9 < lock.validity <= 10 and not lock.lost
            assert repr(lock).startswith(f"<fencelock.asyncio.Lock name='{name}' fencing_token={lock.fencing_token} validity=")
            assert lock.token not in repr(lock)
            assert repr(m.lock(name)).startswith(f"<fencelock.asyncio.LockScope name='{name}'")
            await lock.extend(20)
            assert server.client().pttl(name) > 15000
            await lock.release()
            assert server.client().get(name) is None
            assert lock.validity == 0.0
            assert repr(lock).endswith("released>")
            with pytest.raises(fencelock.LockError, match="already released"):
                await lock.release()
            with pytest.raises(fencelock.LockError, match="already released"):
                await lock.extend(1)
            async with lock:  # no-op after release
                pass
        assert "closed" in repr(m)

    run(main)


def test_try_acquire_and_wait_limits(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        holder = await m.acquire(name, 10, token=b"holder")
        assert holder.token == b"holder"
        assert await m.try_acquire(name, 10) is None
        start = time.monotonic()
        with pytest.raises(fencelock.NotAcquired):
            await m.acquire(name, 10, wait=0.3)
        assert 0.25 < time.monotonic() - start < 3.0
        await holder.release()
        lock = await m.try_acquire(name, 10, token="t2", auto_extend=True)
        assert lock is not None and lock.token == "t2"
        await lock.release()
        await m.close()

    run(main)


def test_waiting_does_not_block_the_event_loop(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        holder = await m.acquire(name, 30)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        waiter = asyncio.create_task(m.acquire(name, 5))
        await asyncio.sleep(0.5)
        assert ticks > 10, f"the loop was blocked: {ticks} ticks in 0.5 s"
        await holder.release()
        lock = await asyncio.wait_for(waiter, 5)
        await lock.release()
        t.cancel()

    run(main)


def test_lock_scope_auto_extends_and_reports_loss(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url, server_timeout=0.5)
        async with m.lock(name, 0.6) as lock:
            assert isinstance(lock, fa.Lock)
            await asyncio.sleep(1.3)
            assert server.client().get(name) == lock.token.encode()
        assert server.client().get(name) is None
        with pytest.raises(fencelock.LockLost):
            async with m.lock(name, 0.6) as lock:
                server.client().delete(name)
                while not lock.lost:
                    await asyncio.sleep(0.02)
        with pytest.raises(ValueError):  # the block's own error wins over the loss
            async with m.lock(name, 5) as lock:
                server.client().delete(name)
                raise ValueError("mine")
        scope = m.lock(name, 5, wait=1)
        async with scope:
            with pytest.raises(fencelock.LockError, match="already entered"):
                async with scope:
                    pass
        with pytest.raises(fencelock.LockLost):
            async with await m.acquire(name, 10) as lock:
                server.client().set(name, "other")

    run(main)


def test_locked_decorator_on_coroutine_functions(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        inside: List[int] = []
        overlap = False

        @m.locked(name, 5)
        async def work(i: int) -> int:
            nonlocal overlap
            overlap = overlap or bool(inside)
            inside.append(i)
            await asyncio.sleep(0.02)
            inside.remove(i)
            return i

        assert sorted(await asyncio.gather(*(work(i) for i in range(5)))) == list(range(5))
        assert not overlap
        with pytest.raises(TypeError, match="coroutine"):
            m.locked(name)(lambda: None)

    run(main)


def test_release_by_token_and_errors(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        lock = await m.acquire(name, 10)
        with pytest.raises(fencelock.LockLost):
            await m.release(name, "wrong")
        await m.release(name, lock.token)
        assert server.client().get(name) is None
        with pytest.raises(ValueError, match="ttl"):
            await m.acquire(name, -1)
        with pytest.raises(TypeError, match="name"):
            await m.acquire(5)  # type: ignore[arg-type]
        server.client().rpush(name, "x")
        with pytest.raises(fencelock.ServerError):
            await m.acquire(name, 5, wait=0.1)
        await m.close()
        with pytest.raises(fencelock.LockError, match="closed"):
            await m.acquire(name)

    run(main)


def test_unavailable_when_the_server_is_down(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url, server_timeout=0.2)
        server.kill()
        with pytest.raises(fencelock.Unavailable):
            await m.try_acquire(name)

    run(main)


def test_cancelling_a_waiting_acquire_leaves_nothing_behind(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        holder = await m.acquire(name, 30)
        task = asyncio.create_task(m.acquire(name, 30))
        await asyncio.sleep(0.3)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - start < 1.0
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(m.acquire(name, 30), 0.2)
        await holder.release()
        # Had a cancelled waiter lived on, it would take the lock now.
        lock = await m.acquire(name, 30, wait=2)
        assert server.client().get(name) == lock.token.encode()
        await lock.release()

    run(main)


def test_cancelling_mid_attempt_releases_the_votes_already_won(servers3: List[RedisServer], name: str) -> None:
    """A, B, C: B held by someone else, C paused. The attempt wins A's vote, is refused by B
    and hangs on C; cancelling it then must delete our key on A."""
    a, b, c = servers3

    async def main() -> None:
        m = fa.LockManager([s.url for s in servers3], server_timeout=5.0)
        b.client().set(name, "someone-else", px=60000)
        c.stop()
        try:
            task = asyncio.create_task(m.acquire(name, 60))
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_until(lambda: a.client().get(name) is not None, what="a vote on A"))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_until(lambda: a.client().get(name) is None, timeout=3, what="the vote on A to be released"))
        finally:
            c.cont()
        assert b.client().get(name) == b"someone-else"

    run(main)


def test_fork_safety_is_shared_with_the_sync_manager(server: RedisServer) -> None:
    # (The fork tests in test_process.py cover both flavours; this checks the repr here.)
    m = fa.LockManager(server.url, key_prefix=b"\xff")
    assert repr(m) == f"<fencelock.asyncio.LockManager servers=['127.0.0.1:{server.port}'] key_prefix=b'\\xff'>"


def test_a_scope_cancelled_while_acquiring_stays_empty_and_reusable(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        scope = m.lock(name, 5)
        holder = await m.acquire(name, 30)

        async def use() -> None:
            async with scope:
                pytest.fail("entered a held lock")

        task = asyncio.create_task(use())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await holder.release()
        async with scope as lock:  # not "already entered"
            assert server.client().get(name) == lock.token.encode()
        assert server.client().get(name) is None

    run(main)
