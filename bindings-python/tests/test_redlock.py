"""Redlock over three servers: quorum, a killed server, and too few servers."""

from __future__ import annotations

from typing import List

import pytest

import fencelock
from redis_fixture import RedisServer


def test_lock_is_written_on_every_server(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3])
    lock = m.acquire(name, 10)
    for s in servers3:
        assert s.client().get(name) == lock.token.encode()
    lock.release()
    for s in servers3:
        assert s.client().get(name) is None


def test_one_killed_server_of_three_still_gives_a_quorum(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3], server_timeout=0.2)
    first = m.acquire(name + "a", 10)
    before = m.acquire(name, 10)
    before.release()
    servers3[2].kill()
    with m.lock(name, 5) as lock:
        assert lock.fencing_token > before.fencing_token
        assert servers3[0].client().get(name) == lock.token.encode()
        assert m.try_acquire(name, 5) is None
    first.release()
    with m.acquire(name, 5, wait=0) as again:
        assert again.fencing_token > lock.fencing_token


def test_a_minority_holding_the_key_does_not_block_a_majority(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3])
    servers3[0].client().set(name, "stale", px=60000)
    lock = m.acquire(name, 10, wait=0)
    assert servers3[1].client().get(name) == lock.token.encode()
    lock.release()
    servers3[1].client().set(name, "stale", px=60000)
    assert m.try_acquire(name, 10) is None


def test_two_killed_servers_of_three_are_unavailable(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3], server_timeout=0.2)
    lock = m.acquire(name, 10)
    servers3[1].kill()
    servers3[2].kill()
    with pytest.raises(fencelock.Unavailable) as info:
        m.try_acquire(name + "x", 5)
    msg = str(info.value)
    assert str(servers3[1].port) in msg and str(servers3[2].port) in msg
    with pytest.raises((fencelock.Unavailable, fencelock.LockLost)):
        lock.release()


def test_a_lost_majority_is_reported_as_lock_lost(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3])
    lock = m.acquire(name, 10)
    servers3[0].client().delete(name)
    servers3[1].client().delete(name)
    with pytest.raises(fencelock.LockLost):
        lock.extend(10)
    assert lock.lost
