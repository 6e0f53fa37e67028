"""Mutual exclusion: across threads, across processes, and with redis-py's Lock on one key."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

import fencelock
from redis_fixture import RedisServer


def test_threads_exclude_each_other(manager: fencelock.LockManager, name: str) -> None:
    inside = 0
    max_inside = 0
    counter = 0
    guard = threading.Lock()
    errors: List[BaseException] = []

    def worker() -> None:
        nonlocal inside, max_inside, counter
        try:
            for _ in range(15):
                with manager.lock(name, 5):
                    with guard:
                        inside += 1
                        max_inside = max(max_inside, inside)
                    seen = counter
                    time.sleep(0.001)
                    counter = seen + 1  # lost updates if two were inside
                    with guard:
                        inside -= 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert max_inside == 1
    assert counter == 6 * 15


WORKER = r"""
import os, sys, time, fencelock
url, name, path, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
m = fencelock.LockManager(url)
marker = path + ".inside"
for _ in range(rounds):
    with m.lock(name, 5):
        # O_EXCL: fails if another process is inside the critical section.
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        with open(path) as f:
            n = int(f.read())
        time.sleep(0.002)
        with open(path, "w") as f:
            f.write(str(n + 1))
        os.close(fd)
        os.unlink(marker)
print("done")
"""


def test_processes_exclude_each_other(server: RedisServer, name: str, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, server.url, name, str(counter), "10"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.strip() == "done"
    assert counter.read_text() == "40"


def test_a_redis_py_lock_excludes_ours_and_ours_excludes_it(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    r = server.client()
    theirs = r.lock(name, timeout=10)
    assert theirs.acquire(blocking=False)
    assert manager.try_acquire(name, 10) is None
    with pytest.raises(fencelock.NotAcquired):
        manager.acquire(name, 10, wait=0.2)
    theirs.release()

    ours = manager.acquire(name, 10)
    assert r.get(name) == ours.token.encode()
    other = r.lock(name, timeout=10)
    assert not other.acquire(blocking=False)
    assert not other.acquire(blocking=True, blocking_timeout=0.2)
    ours.release()
    assert other.acquire(blocking=False)
    other.release()


def test_a_waiter_takes_over_when_a_redis_py_lock_expires(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    theirs = server.client().lock(name, timeout=0.3)
    assert theirs.acquire(blocking=False)
    start = time.monotonic()
    lock = manager.acquire(name, 5, wait=5)
    # Slept until the holder's PTTL ran out (no release notification from redis-py).
    assert time.monotonic() - start < 2.0
    lock.release()


def test_name_given_as_str_and_bytes_is_the_same_lock(manager: fencelock.LockManager, name: str) -> None:
    lock = manager.acquire(name, 5)
    assert manager.try_acquire(name.encode(), 5) is None
    lock.release()


def test_fencing_tokens_are_shared_across_managers_and_processes(server: RedisServer, name: str) -> None:
    # One lock name, taken in turn by two managers and another process: one sequence of
    # tokens (each name counts on its hash slot's counter on the server).
    a = fencelock.LockManager(server.url)
    b = fencelock.LockManager(server.url)
    t1 = a.acquire(name, 5)
    t1.release()
    t2 = b.acquire(name, 5)
    t2.release()
    out = subprocess.run(
        [sys.executable, "-c", "import sys, fencelock; l = fencelock.LockManager(sys.argv[1]).acquire(sys.argv[2], 5); print(l.fencing_token); l.release()",
         server.url, name], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    t3 = int(out.stdout)
    assert t1.fencing_token < t2.fencing_token < t3
