"""The lock on a real Redis Cluster (3 masters, 3 replicas) from Python: one ``redis+cluster://``
URL is one server of the quorum; acquire, extend, release, fencing per name, a waiter woken
(sharded pub/sub) and served in order, the asyncio API, replica acknowledgment. The cluster
is started once for this module and stopped by PID at its end."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Iterator, List

import pytest
import redis

import fencelock
import fencelock.asyncio as fa
from redis_fixture import RedisClusterSetup


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterSetup]:
    c = RedisClusterSetup()
    yield c
    c.close()


def _queued(cluster: RedisClusterSetup, name: str) -> int:
    """Places in the wait queue of ``name`` (``fencelock:{SLOT-TAG}:queue:NAME``)."""
    client = cluster.client()
    keys = client.keys(f"fencelock:{{*}}:queue:{name}", target_nodes=redis.RedisCluster.PRIMARIES)
    return sum(client.zcard(k) for k in keys)


def _name() -> str:
    return "cl-" + uuid.uuid4().hex[:10]


def test_acquire_extend_release_and_fencing_on_a_cluster(cluster: RedisClusterSetup) -> None:
    m = fencelock.LockManager(cluster.url)
    client = cluster.client()
    for name in [_name(), "{tag}" + _name(), _name() + "{", "}{" + _name()]:
        lock = m.acquire(name, 5)
        assert client.get(name) == lock.token.encode()
        lock.extend(20)
        assert client.pttl(name) > 10_000
        first = lock.fencing_token
        lock.release()
        assert client.get(name) is None
        with m.lock(name, 5) as again:
            assert again.fencing_token > first
            assert m.try_acquire(name, 5) is None
    # The classic SET NX PX of another client excludes ours on a cluster too.
    shared = _name()
    assert client.set(shared, "someone-else", nx=True, px=5000)
    assert m.try_acquire(shared, 5) is None
    m.close()


def test_waiters_are_woken_and_served_in_order_on_a_cluster(cluster: RedisClusterSetup) -> None:
    name = _name()
    # A retry delay far longer than the test: a waiter gets the lock only by being woken.
    managers = [fencelock.LockManager(cluster.url, retry_delay=30) for _ in range(3)]
    holder = managers[0].acquire(name, 30)
    got: List[int] = []
    done = threading.Event()

    def wait(i: int) -> None:
        lock = managers[i].acquire(name, 30, wait=60)
        got.append(lock.fencing_token)
        lock.release()
        if len(got) == 2:
            done.set()

    threads = []
    for i in (1, 2):
        t = threading.Thread(target=wait, args=(i,))
        t.start()
        threads.append(t)
        # The waiter has taken its place in line before the next one comes.
        deadline = time.monotonic() + 10
        while _queued(cluster, name) < i:
            assert time.monotonic() < deadline, "the waiter never queued"
            time.sleep(0.01)
    started = time.monotonic()
    holder.release()
    assert done.wait(15), "the waiters were not woken (a retry delay is 30 s)"
    assert time.monotonic() - started < 15
    for t in threads:
        t.join()
    assert got == sorted(got) and got[0] > holder.fencing_token
    for m in managers:
        m.close()


def test_the_asyncio_api_on_a_cluster(cluster: RedisClusterSetup) -> None:
    name = _name()

    async def main() -> None:
        async with fa.LockManager(cluster.url) as m:
            async with m.lock(name, 5) as lock:
                assert cluster.client().get(name) == lock.token.encode()
                assert await m.try_acquire(name, 5) is None
            assert cluster.client().get(name) is None

    asyncio.run(main())


def test_replica_acknowledgment_on_a_cluster(cluster: RedisClusterSetup) -> None:
    m = fencelock.LockManager(cluster.url, replica_ack=1, replica_ack_timeout=1.0, server_timeout=2.0)
    name = _name()
    with m.lock(name, 5) as lock:
        lock.extend(10)
    m.close()
    with pytest.raises(ValueError, match="replica_ack"):
        fencelock.LockManager(cluster.url, replica_ack=0)
    with pytest.raises(ValueError, match="replica_ack_timeout is given without replica_ack"):
        fencelock.LockManager(cluster.url, replica_ack_timeout=1.0)
    with pytest.raises(TypeError, match="replica_ack"):
        fencelock.LockManager(cluster.url, replica_ack=True)


def test_bad_cluster_urls_fail_at_construction_without_showing_the_password() -> None:
    with pytest.raises(ValueError, match="no database") as e:
        fencelock.LockManager("redis+cluster://u:hunter2-secret@127.0.0.1:7000/2")
    assert "hunter2-secret" not in str(e.value)
