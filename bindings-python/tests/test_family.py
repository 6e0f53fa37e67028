"""The coordination family in Python (issue 34 item 5): ``manager.semaphore(name, limit)`` and
``manager.rwlock(name)``, sync and asyncio; their leases are ``Lock`` objects; errors are the
same kinds as everywhere."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import List

import pytest

import fencelock
import fencelock.asyncio as fa
from redis_fixture import RedisServer


def test_a_semaphore_holds_at_most_its_limit(manager: fencelock.LockManager, name: str) -> None:
    sem = manager.semaphore(name, 3)
    assert (sem.name, sem.limit) == (name, 3)
    two = sem.acquire(2, 10, wait=0)
    assert (two.kind, two.permits) == ("semaphore", 2)
    assert sem.try_acquire(2, 10) is None, "2 of the 1 permit left: none taken"
    one = sem.try_acquire(1, 10)
    assert one is not None and one.fencing_token > two.fencing_token
    assert sem.state() == fencelock.SemaphoreState(limit=3, held=3, holders=2, waiters=0)
    with one:
        pass  # `with lease:` releases at the end of the block
    assert sem.state().held == 2
    two.release()
    with sem.acquire(3, 10):
        assert sem.state().held == 3
    assert sem.state().held == 0


def test_bad_arguments_raise_before_any_network_call() -> None:
    m = fencelock.LockManager("redis://127.0.0.1:1")
    with pytest.raises(ValueError):
        m.semaphore("jobs", 0)
    with pytest.raises(ValueError):
        m.semaphore("", 2)
    with pytest.raises(OverflowError):
        m.semaphore("jobs", -1)
    sem = m.semaphore("jobs", 2)
    with pytest.raises(ValueError):
        sem.acquire(3, 1)
    with pytest.raises(ValueError):
        sem.acquire(0, 1)
    with pytest.raises(ValueError):
        m.rwlock("")


def test_a_worker_pool_capped_at_n(manager: fencelock.LockManager, name: str) -> None:
    """Six threads, a limit of 2: never more than 2 inside at once, every one runs."""
    sem = manager.semaphore(name, 2)
    inside, most, done = [0], [0], []
    guard = threading.Lock()

    @sem.locked(1, 10)
    def job(i: int) -> None:
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        with guard:
            inside[0] -= 1
            done.append(i)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(done) == list(range(6))
    assert most[0] == 2


def test_another_limit_and_another_kind_are_refused(manager: fencelock.LockManager, name: str) -> None:
    lease = manager.semaphore(name, 4).acquire(1, 10)
    with pytest.raises(ValueError, match="limit 4"):
        manager.semaphore(name, 5).acquire(1, 10, wait=0)
    with pytest.raises(fencelock.WrongKind, match="as a semaphore"):
        manager.acquire(name, 10, wait=0)
    with pytest.raises(fencelock.WrongKind):
        manager.rwlock(name).read(10, wait=0)
    with pytest.raises(fencelock.WrongKind):
        manager.is_locked(name)
    lease.release()
    with manager.lock(name, 10):
        with pytest.raises(fencelock.WrongKind, match="as a lock"):
            manager.semaphore(name, 2).acquire(1, 10, wait=0)


def test_a_rwlock_shares_reads_and_excludes_a_writer(manager: fencelock.LockManager, name: str) -> None:
    rw = manager.rwlock(name)
    r1, r2 = rw.read(10, wait=0), rw.read(10, wait=0)
    assert r1.kind == "read" and r1.permits is None
    assert rw.state() == fencelock.RwLockState(readers=2, writer=False, waiters=0)
    assert rw.try_write(10) is None
    r1.release()
    r2.release()
    with rw.writing(10) as w:
        assert w.kind == "write" and w.fencing_token > r2.fencing_token
        assert rw.state().writer
        assert rw.try_read(10) is None


def test_a_reader_asking_to_write_with_its_token_is_refused(manager: fencelock.LockManager, name: str) -> None:
    rw = manager.rwlock(name)
    with rw.read(10, token="worker-1"):
        with pytest.raises(fencelock.WrongKind, match="read share"):
            rw.write(10, token="worker-1")


def test_release_and_extend_by_token(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    sem = manager.semaphore(name, 2)
    lease = sem.acquire(1, 5)
    token = lease.token
    lease.detach()
    assert 9 < sem.extend(token, 10) <= 10
    sem.release(token)
    with pytest.raises(fencelock.LockLost):
        sem.release(token)
    rw = manager.rwlock(name + "-rw")
    share = rw.read(5)
    share.detach()
    rw.release(share.token)
    assert rw.state().readers == 0


def test_asyncio_semaphore_and_rwlock(server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with fa.LockManager(server.url, server_timeout=0.5) as m:
            sem = m.semaphore(name, 2)
            assert isinstance(sem, fa.Semaphore)
            lease = await sem.acquire(2, 10)
            assert lease.permits == 2
            assert await sem.try_acquire(1, 10) is None
            waiter = asyncio.ensure_future(sem.acquire(1, 10))
            await asyncio.sleep(0.2)
            assert (await sem.state()).waiters == 1
            await lease.release()
            got = await asyncio.wait_for(waiter, 10)
            await got.release()
            async with sem.lock(2, 10) as held:
                assert held.kind == "semaphore"

            @sem.locked(1, 10)
            async def job() -> int:
                return (await sem.state()).held

            assert await job() == 1
            rw = m.rwlock(name + "-rw")
            async with rw.reading(10):
                assert (await rw.state()).readers == 1
                assert await rw.try_write(10) is None
            async with rw.writing(10) as w:
                assert w.kind == "write"
            async with sem.lock(1, 10):
                with pytest.raises(fa.WrongKind):
                    await m.acquire(name, 10, wait=0)

    asyncio.run(main())


def test_redlock_semaphore_needs_every_server_for_a_limit_of_two(servers3: List[RedisServer], name: str) -> None:
    m = fencelock.LockManager([s.url for s in servers3], server_timeout=0.5)
    sem = m.semaphore(name, 2)
    a, b = sem.acquire(1, 10, wait=0), sem.acquire(1, 10, wait=0)
    assert sem.try_acquire(1, 10) is None
    a.release()
    b.release()
    servers3[2].kill()
    with pytest.raises((fencelock.Unavailable, fencelock.NotAcquired)):
        sem.acquire(1, 10, wait=0)
    w = m.rwlock(name + "-rw").write(10, wait=0)  # a majority is enough for a writer
    w.release()
