"""Locks on several names at once (``acquire_many``): all or none, one token, one fencing
token per name, waiting without holding any of them; sync and asyncio."""

from __future__ import annotations

import asyncio
import threading
from typing import List, Optional

import pytest

import fencelock
import fencelock.asyncio as fa
from helpers import wait_until
from redis_fixture import RedisServer


def queued(server: RedisServer, name: str) -> int:
    """Places in the wait queue of lock ``name``."""
    client = server.client()
    keys = [k for k in client.keys("fencelock:{*}:queue:" + name)]
    return sum(int(client.zcard(k)) for k in keys)


def listening(server: RedisServer, name: str) -> bool:
    """Whether a waiter for lock ``name`` is subscribed to one of its wake-up channels: it
    takes its place at its first refusal and subscribes after it, and until then a newcomer
    may pass it."""
    return len(server.client().pubsub_channels("fencelock:{*}:released:" + name + "|*")) > 0


def test_every_name_is_taken_at_once_with_a_fencing_token_each(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    a, b = name + "-a", (name + "-b").encode()
    lock = manager.acquire_many([a, b], 10, wait=0)
    assert lock.names == (a, b) and lock.name == a
    assert len(lock.fencing_tokens) == 2 and lock.fencing_tokens[0] == lock.fencing_token
    client = server.client()
    assert client.get(a) == client.get(b) == lock.token.encode()
    lock.extend(20)
    assert client.pttl(b) > 15_000
    assert lock.is_held()
    lock.release()
    assert client.get(a) is None and client.get(b) is None
    again = manager.acquire_many((b, a), 5)
    assert again.fencing_tokens[1] > lock.fencing_tokens[0]
    again.release()


def test_none_is_taken_while_one_is_held_and_a_waiter_holds_nothing(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    a, b = name + "-a", name + "-b"
    client = server.client()
    client.set(b, "another-owner", px=60_000)
    with pytest.raises(fencelock.NotAcquired) as e:
        manager.acquire_many([a, b], 5, wait=0)
    assert [r.outcome for r in e.value.servers] == ["held"]
    assert client.get(a) is None
    client.delete(b)

    holder = manager.acquire(b, 30)
    got: List[Optional[fencelock.Lock]] = [None]
    waiter = threading.Thread(target=lambda: got.__setitem__(0, manager.acquire_many([a, b], 10, wait=10)))
    waiter.start()
    wait_until(lambda: queued(server, a) == 1 and listening(server, a), what="the waiter queued and listening")
    assert client.get(a) is None, "it holds nothing while it waits"
    with fencelock.LockManager(server.url) as other:
        assert other.try_acquire(a, 1) is None, "and nobody passes it"
    holder.release()
    waiter.join(10)
    lock = got[0]
    assert lock is not None and lock.names == (a, b)
    lock.release()


def test_bad_name_lists_are_refused_before_any_call(name: str) -> None:
    with fencelock.LockManager("redis://127.0.0.1:1") as m:
        with pytest.raises(TypeError, match="not a single name"):
            m.acquire_many(name, 1, wait=0)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            m.acquire_many(5, 1, wait=0)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            m.acquire_many([name, 7], 1, wait=0)  # type: ignore[list-item]
        for names in ([], [name, name], [f"{name}-{i}" for i in range(65)]):
            with pytest.raises(ValueError):
                m.acquire_many(names, 1, wait=0)


def test_asyncio_acquire_many(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url)
        lock = await m.acquire_many([name + "-x", name + "-y"], 10, wait=0)
        assert lock.names == (name + "-x", name + "-y") and len(lock.fencing_tokens) == 2
        assert await m.try_acquire(name + "-y", 1) is None
        await lock.release()
        assert not await m.is_locked(name + "-x")
        await m.close()

    asyncio.run(main())
