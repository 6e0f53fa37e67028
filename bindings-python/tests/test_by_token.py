"""Server-checked ownership (``lock.is_held()``) and extension by name and token
(``manager.extend(name, token, ttl)``), sync and asyncio."""

from __future__ import annotations

import asyncio

import pytest

import fencelock
import fencelock.asyncio as fa
from redis_fixture import RedisServer


def test_is_held_sees_what_the_local_view_cannot(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 10.0)
    assert lock.is_held() is True
    server.client().set(name, b"someone-else")
    assert lock.lost is False  # this process cannot know
    assert lock.is_held() is False
    assert lock.lost_reason == "taken"
    assert server.client().get(name) == b"someone-else"  # read-only
    with pytest.raises(fencelock.LockLost):
        lock.release()
    assert lock.is_held() is False  # released: no call


def test_extend_by_name_and_token(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 2.0)
    token = lock.token
    lock.detach()
    with fencelock.LockManager(server.url) as elsewhere:
        validity = elsewhere.extend(name, token, 30.0)
        assert 29.0 < validity <= 30.0
        assert server.client().pttl(name) > 29_000
        with pytest.raises(fencelock.LockLost):
            elsewhere.extend(name, "not-the-token", 30.0)
        with pytest.raises(ValueError, match="at least 3 ms"):
            elsewhere.extend(name, token, 0.002)
        elsewhere.release(name, token)
        with pytest.raises(fencelock.LockLost, match="gone"):
            elsewhere.extend(name, token, 30.0)


def test_asyncio_is_held_and_extend(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            lock = await m.acquire(name, 10.0)
            assert await lock.is_held() is True
            server.client().delete(name)
            assert await lock.is_held() is False
            assert lock.lost_reason == "expired"
            other = await m.acquire(name + "-x", 2.0)
            token = other.token
            other.detach()
            assert 29.0 < await m.extend(name + "-x", token, 30.0) <= 30.0
            await m.release(name + "-x", token)

    asyncio.run(main())


def test_extend_with_add_adds_to_the_remaining_time(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 10.0)
    server.client().pexpire(name, 4000)
    lock.extend(20.0, add=True)
    assert 23_000 < server.client().pttl(name) <= 24_000
    assert 22.0 < lock.validity <= 24.0
    lock.extend(5.0)  # replaces
    assert server.client().pttl(name) <= 5000
    with pytest.raises(ValueError):
        lock.extend(-1.0, add=True)
    lock.release()
    with pytest.raises(fencelock.LockError, match="already released"):
        lock.extend(1.0, add=True)


def test_asyncio_extend_with_add(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            lock = await m.acquire(name, 10.0)
            server.client().pexpire(name, 4000)
            await lock.extend(20.0, add=True)
            assert 23_000 < server.client().pttl(name) <= 24_000
            await lock.release()

    asyncio.run(main())


def test_very_long_ttls(manager: fencelock.LockManager, name: str) -> None:
    years = 28_500 * 365 * 24 * 3600.0  # node-redlock's own tests lock this long
    lock = manager.acquire(name, years)
    assert lock.validity > years * 0.98
    lock.release()
    with pytest.raises(ValueError, match=r"ttl must be at most 9007199254740.99 s \(about 285,000 years\), got 10000000000000000 s"):
        manager.acquire(name, 1e16)
