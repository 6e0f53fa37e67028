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


def test_a_caller_token_is_exclusive_unless_reentrant(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        holder = await m.acquire(name, 10, token="job-1")
        assert await m.try_acquire(name, 10, token="job-1") is None
        with pytest.raises(fencelock.NotAcquired) as e:
            await m.acquire(name, 10, token="job-1", wait=0.2)
        assert [r.outcome for r in e.value.servers] == ["held"]
        again = await m.acquire(name, 20, token="job-1", wait=0, reentrant=True)
        assert again.fencing_token > holder.fencing_token
        await again.release()
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


def test_many_calls_in_flight_all_settle(server: RedisServer, name: str) -> None:
    # Results reach the loop through one queue per loop: a burst of them, woken once or a few
    # times, must each settle its own future with its own value.
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            names = [f"{name}-{i}" for i in range(200)]
            locks = await asyncio.gather(*(m.acquire(n, 10) for n in names))
            assert [lock.name for lock in locks] == names
            assert all(lock.fencing_token >= 1 for lock in locks)
            assert all(server.client().get(n) == lock.token.encode() for n, lock in zip(names, locks))
            refused = await asyncio.gather(*(m.try_acquire(n, 10) for n in names))
            assert refused == [None] * 200
            await asyncio.gather(*(lock.release() for lock in locks))
            assert all(server.client().get(n) is None for n in names)

    run(main)


class _NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop that cannot watch file descriptors (like Windows' proactor loop)."""

    def add_reader(self, *args: Any) -> None:
        raise NotImplementedError


def test_a_loop_without_add_reader_is_woken_another_way(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            lock = await m.acquire(name, 10)
            with pytest.raises(fencelock.NotAcquired):
                await m.acquire(name, 10, wait=0.05)
            locks = await asyncio.gather(*(m.acquire(f"{name}-{i}", 10) for i in range(20)))
            await asyncio.gather(*(x.release() for x in [lock, *locks]))
            assert server.client().get(name) is None

    loop = _NoReaderLoop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


def test_loops_on_several_threads_share_a_manager(server: RedisServer, name: str) -> None:
    # Each result goes to the loop that made the call, with loops running at once on two
    # threads and one after the other on the same thread.
    import threading

    m = fa.LockManager(server.url)
    errors: List[BaseException] = []

    def worker(tag: str) -> None:
        async def main() -> None:
            for i in range(30):
                lock = await m.acquire(f"{name}-{tag}-{i}", 10)
                assert lock.name == f"{name}-{tag}-{i}"
                await lock.release()

        try:
            asyncio.run(main())
            asyncio.run(main())
        except BaseException as e:  # reported below, on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    run(m.close)


def test_close_need_not_be_awaited(server: RedisServer) -> None:
    import gc
    import warnings

    async def main() -> None:
        m = fa.LockManager(server.url)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            m.close()  # not awaited: allowed, and silent
            gc.collect()
        await fa.LockManager(server.url).close()  # awaiting works too

    run(main)


def test_lost_stays_true_after_a_release_found_the_lock_lost(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            lock = await m.acquire(name, 30)
            server.client().delete(name)
            with pytest.raises(fencelock.LockLost):
                await lock.release()
            assert lock.lost is True

    run(main)


def test_a_garbage_collected_async_lock_is_not_released(server: RedisServer, name: str) -> None:
    import gc

    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            with pytest.warns(ResourceWarning, match="garbage-collected while held and auto-extended"):
                # Dropped at once. A TTL far longer than the collection takes on a busy machine:
                # at 0.5 s the key once expired before the check below (a pass, then, would
                # have proved nothing either).
                await m.acquire(name, 30, auto_extend=True)
                for _ in range(3):  # the loop lets go of the finished future within a few turns
                    await asyncio.sleep(0)
                    gc.collect()
            assert await m.is_locked(name), "not released"
            assert await m.try_acquire(name, 5) is None

    run(main)
