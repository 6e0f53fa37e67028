"""Inspection without acquiring (issue 22): ``is_locked`` and ``remaining``, sync and asyncio,
the quorum's view; a classic ``SET NX PX`` counts as held; bad input raises before any call."""

from __future__ import annotations

import asyncio
import math
from typing import List

import pytest

import fencelock
import fencelock.asyncio as fa
from redis_fixture import RedisServer


def test_is_locked_and_remaining_follow_the_lock(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    assert manager.is_locked(name) is False
    assert manager.remaining(name) is None
    lock = manager.acquire(name, 5)
    assert manager.is_locked(name) is True
    left = manager.remaining(name)
    assert left is not None and 3 < left <= 5
    assert server.client().get(name) == lock.token.encode()  # nothing changed
    lock.release()
    assert manager.is_locked(name) is False
    # A classic SET NX PX counts as held; a key without expiry lasts for ever.
    server.client().set(name, "someone-else", nx=True, px=2000)
    left = manager.remaining(name)
    assert left is not None and 0.5 < left <= 2
    server.client().set(name + "-forever", "someone-else")
    assert manager.remaining(name + "-forever") == math.inf


def test_redlock_needs_a_quorum_under_one_token(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3])
    servers3[0].client().set(name, "tok-a", px=10_000)
    assert not m.is_locked(name)
    servers3[1].client().set(name, "tok-a", px=3000)
    left = m.remaining(name)
    assert left is not None and 1.5 < left <= 3, "the quorum's guarantee is the shorter TTL"
    servers3[1].kill()
    servers3[2].kill()
    with pytest.raises(fencelock.Unavailable, match="only 1 of 3 servers answered"):
        m.is_locked(name)


def test_bad_names_raise_before_any_call() -> None:
    m = fencelock.LockManager("redis://127.0.0.1:1")
    for bad in ("", "fencelock:{1}:fence"):
        with pytest.raises(ValueError):
            m.is_locked(bad)
        with pytest.raises(ValueError):
            m.remaining(bad)
    with pytest.raises(TypeError):
        m.is_locked(42)  # type: ignore[arg-type]


def test_the_asyncio_manager_inspects_too(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            assert await m.is_locked(name) is False
            assert await m.remaining(name) is None
            async with m.lock(name, 5):
                assert await m.is_locked(name) is True
                left = await m.remaining(name)
                assert left is not None and 0 < left <= 5
            assert await m.remaining(name) is None

    asyncio.run(main())
