"""Who holds a lock: ``LockManager(holder=...)`` leaves a note, ``LockManager.holder(name)``
reads it (sync and asyncio), against a real redis-server; nothing written without it; bad
labels refused before any network call."""

from __future__ import annotations

import asyncio
import datetime
import os
import socket

import pytest

import fencelock
import fencelock.asyncio
from redis_fixture import RedisServer


def test_the_holder_shows_its_label_since_and_fencing_token(server: RedisServer, name: str) -> None:
    with fencelock.LockManager(server.url, holder="worker-7 (invoices)") as web, \
            fencelock.LockManager(server.url) as ops:
        assert ops.holder(name) is None
        before = datetime.datetime.now(datetime.timezone.utc)
        with web.lock(name, 30) as lock:
            h = ops.holder(name)
            assert isinstance(h, fencelock.Holder)
            assert h.label == "worker-7 (invoices)"
            assert h.fencing_token == lock.fencing_token
            assert h.since is not None and before - datetime.timedelta(seconds=1) <= h.since
            assert h.since <= datetime.datetime.now(datetime.timezone.utc)
            assert 25 < h.remaining <= 30
        assert ops.holder(name) is None


def test_holder_true_is_host_and_pid_and_no_option_writes_nothing(server: RedisServer, name: str) -> None:
    with fencelock.LockManager(server.url, holder=True) as web:
        with web.lock(name, 30):
            h = web.holder(name)
            assert h is not None and h.label == f"{socket.gethostname()}:{os.getpid()}"
    with fencelock.LockManager(server.url) as plain:
        with plain.lock(name + "-plain", 30):
            h = plain.holder(name + "-plain")
            assert h is not None and (h.label, h.since, h.fencing_token) == (None, None, None)
            assert server.client().keys(f"*who:{name}-plain") == [], "no note written"
            assert server.client().keys(f"*who:{name}") != [], "the labelled lock's note"


def test_asyncio_holder(server: RedisServer, name: str) -> None:
    async def main() -> fencelock.Holder:
        async with fencelock.asyncio.LockManager(server.url, holder="async-job") as m:
            async with m.lock(name, 30) as lock:
                h = await m.holder(name)
                assert h is not None and h.fencing_token == lock.fencing_token
                assert await m.holder(name + "-free") is None
                return h

    assert asyncio.run(main()).label == "async-job"


@pytest.mark.parametrize("bad, error, says", [
    ("", ValueError, "1 to 128 bytes"),
    ("two\nlines", ValueError, "control characters"),
    ("x" * 129, ValueError, "1 to 128 bytes"),
    (42, TypeError, "holder must be True"),
])
def test_bad_labels_are_refused_before_any_network_call(bad: object, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        fencelock.LockManager("redis://127.0.0.1:1", holder=bad)  # type: ignore[arg-type]


def test_a_semaphores_and_a_read_write_locks_noted_holders(server: RedisServer, name: str) -> None:
    with fencelock.LockManager(server.url, holder="render-a") as a, \
            fencelock.LockManager(server.url) as plain:
        sem = a.semaphore(name, 3)
        with sem.lock(1, 30) as first, plain.semaphore(name, 3).lock(1, 30):
            [h] = plain.semaphore(name, 3).holders()
            assert (h.label, h.fencing_token) == ("render-a", first.fencing_token)
            assert plain.semaphore(name, 3).state().holders == 2
            assert 25 < h.remaining <= 30
        assert sem.holders() == []
        with a.rwlock(name + "-rw").writing(30) as w:
            [h] = plain.rwlock(name + "-rw").holders()
            assert (h.label, h.fencing_token) == ("render-a", w.fencing_token)

    async def main() -> list[fencelock.Holder]:
        async with fencelock.asyncio.LockManager(server.url, holder="async-a") as m:
            async with m.semaphore(name + "-async", 2).lock(1, 30):
                return await m.semaphore(name + "-async", 2).holders()

    assert [h.label for h in asyncio.run(main())] == ["async-a"]
