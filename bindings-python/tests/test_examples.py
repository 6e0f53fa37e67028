"""The examples in examples/python run against a real server and say what they should."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from redis_fixture import RedisServer

EXAMPLES = Path(os.environ.get("FENCELOCK_EXAMPLES", Path(__file__).resolve().parents[2] / "examples" / "python"))

EXPECTED = {
    "plain_lock.py": ["holding 'monthly-report'", "released"],
    "try_once.py": ["worker-1: running the job", "worker-1: done", "worker-1 ran: True, worker-2 ran: True"],
    "long_job.py": ["step 5/5 done", "job finished", "without auto-extension: lost=True", "release reports it: LockLost"],
    "fencing.py": ["client 1's late write was refused", "stored: balance=100 (client 2)", "client 1's lock lost: True"],
    "logging_events.py": ['DEBUG fencelock: acquired lock="report"', "working under the lock",
                          'WARNING fencelock: lock lost lock="fragile"', "lock lost: True"],
    "request_id.py": ["process 1: try_get_lock('order:42', request id, 30000) -> True", "another request: try_get_lock -> False",
                      "another request: release_lock with its own id -> False", "is it still locked? True",
                      "process 2: release_lock('order:42',", ") -> True", "after process 2: locked=False",
                      "process 1 releasing again -> False"],
    "redis_lock_class.py": ["first acquires: True", "second, waiting 0.1 s: False", "second, waiting 3 s: True",
                            "fencing tokens grow: True", "the stale first holder's release: False",
                            "the second still holds it: True", "second releases: True"],
    "worker_pool.py": ["6 workers ran, at most 2 at once", "after: SemaphoreState(limit=2, held=0, holders=0, waiters=0)"],
    "cache_rebuild.py": ["readers holding it: 2", "a writer waits: a new reader tries and gets None",
                         "rebuilding under the write lock", "the readers that queued behind the writer saw versions [2, 2, 2]"],
    "async_lock.py": ["['reserved a', 'reserved b', 'reserved c']", "holding 'inventory'", "the other task gave up waiting"],
}


# Run with three servers by test_seed_patterns.py.
ELSEWHERE = {"redlock_validity.py"}


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(set(EXPECTED) | ELSEWHERE)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_runs(example: str, server: RedisServer) -> None:
    env = dict(os.environ, FENCELOCK_URL=server.url)
    out = subprocess.run([sys.executable, str(EXAMPLES / example)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in EXPECTED[example]:
        assert line in out.stdout, out.stdout
    assert "must not happen" not in out.stdout
    # Examples clean up after themselves: no lock keys left (only the fencing counters,
    # `fencelock:{SLOT-TAG}:fence`).
    assert [k for k in server.client().keys("*") if not re.fullmatch(rb"(example:)?fencelock:\{\d+\}:fence", k)] == []
