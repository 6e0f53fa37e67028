"""The seeds' Python ``RedisLock`` class, re-expressed on fencelock (examples/python/
redis_lock_class.py): it excludes a second process, and a stale holder cannot release the
lock its successor holds."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import fencelock
from redis_fixture import RedisServer

EXAMPLES = Path(os.environ.get("FENCELOCK_EXAMPLES", Path(__file__).resolve().parents[2] / "examples" / "python"))

# The second process: takes the lock through the same class, reports, and releases when told.
OTHER_PROCESS = textwrap.dedent(
    """
    import importlib.util, sys
    import fencelock
    spec = importlib.util.spec_from_file_location("redis_lock_class", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    with fencelock.LockManager(sys.argv[2]) as manager:
        lock = mod.RedisLock(manager, "shared")
        got = lock.acquire(acquire_timeout=float(sys.argv[3]), lock_timeout=30)
        print("acquired" if got else "refused", got, flush=True)
        sys.stdin.readline()
        print("released", lock.release(), flush=True)
    """
)


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("redis_lock_class", EXAMPLES / "redis_lock_class.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def other_process(server: RedisServer, wait: float) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        [sys.executable, "-c", OTHER_PROCESS, str(EXAMPLES / "redis_lock_class.py"), server.url, str(wait)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: "subprocess.Popen[str]") -> str:
    out, err = proc.communicate("\n", timeout=30)
    assert proc.returncode == 0, err
    return out


def test_the_redis_lock_class_excludes_a_second_process_and_a_stale_holder_cannot_release(server: RedisServer) -> None:
    RedisLock = load_example().RedisLock
    with fencelock.LockManager(server.url) as manager:
        holder = RedisLock(manager, "shared")
        # A lock_timeout well past a second process's start (over 1 s on a busy machine): the
        # refused process must try while the lock is still held.
        identifier = holder.acquire(acquire_timeout=1, lock_timeout=5.0)
        assert isinstance(identifier, str) and server.client().get("lock:shared") == identifier.encode()

        # A second process, waiting 0.3 s while the lock is held: refused.
        refused = other_process(server, 0.3)
        assert refused.stdout is not None
        assert refused.stdout.readline().startswith("refused False")
        assert "released False" in finish(refused)

        # The holder stalls past its lock_timeout; a second process waiting gets the lock then.
        started = time.monotonic()
        successor = other_process(server, 20)
        assert successor.stdout is not None
        line = successor.stdout.readline()
        assert line.startswith("acquired "), line
        successor_id = line.split()[1]
        assert time.monotonic() - started < 20
        assert server.client().get("lock:shared") == successor_id.encode()

        # The stale holder's release does not touch the successor's lock.
        assert holder.release() is False
        assert server.client().get("lock:shared") == successor_id.encode()
        assert manager.is_locked("lock:shared")
        assert "released True" in finish(successor)
        assert not manager.is_locked("lock:shared")


def test_the_csharp_redlock_validity_rule_on_three_servers(servers3: "list[RedisServer]") -> None:
    urls = ",".join(s.url for s in servers3)

    def run() -> str:
        out = subprocess.run(
            [sys.executable, str(EXAMPLES / "redlock_validity.py")],
            capture_output=True, text=True, timeout=60, env=dict(os.environ, FENCELOCK_URLS=urls),
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    out = run()
    assert "servers 3, quorum 2, ttl 10000 ms, drift 102 ms" in out, out
    assert "C# figure <= fencelock's <= ttl - drift: True" in out, out
    servers3[0].kill()  # one master down: two of three still make the quorum
    assert "C# figure <= fencelock's <= ttl - drift: True" in run()
