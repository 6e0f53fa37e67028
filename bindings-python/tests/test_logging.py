"""fencelock's events in the standard logging module (logger "fencelock")."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
import time
from typing import Iterator, List

import pytest

import fencelock
import fencelock.asyncio
from fencelock import _native
from helpers import wait_until
from redis_fixture import RedisServer


@pytest.fixture(autouse=True)
def _restore_level() -> Iterator[None]:
    yield
    fencelock.enable_logging(logging.WARNING)


def records_for(caplog: pytest.LogCaptureFixture, lock: str, message: str) -> List[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name == "fencelock" and r.getMessage().startswith(message + " ") and getattr(r, "lock", None) == lock]


def test_acquired_and_lock_lost_records_name_the_lock_and_never_the_token(
    caplog: pytest.LogCaptureFixture, manager: fencelock.LockManager, server: RedisServer, name: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="fencelock")
    fencelock.enable_logging(logging.DEBUG)
    lock = manager.acquire(name, 1, auto_extend=True)
    token = str(lock.token)
    server.client().delete(name)  # the next auto-extension finds it gone
    wait_until(lambda: lock.lost, timeout=5, what="the lock to be lost")
    wait_until(lambda: records_for(caplog, name, "lock lost"), what="a 'lock lost' record")
    acquired = records_for(caplog, name, "acquired")
    assert len(acquired) == 1
    rec = acquired[0]
    assert rec.levelno == logging.DEBUG
    assert rec.getMessage().startswith(f'acquired lock="{name}" attempts=1 ')
    assert rec.attempts == 1  # type: ignore[attr-defined]
    assert rec.fencing_token == lock.fencing_token  # type: ignore[attr-defined]
    assert rec.fencelock_fields["lock"] == f'"{name}"'  # type: ignore[attr-defined]
    lost = records_for(caplog, name, "lock lost")[0]
    assert lost.levelno == logging.WARNING
    for r in caplog.records:
        assert token not in r.getMessage() and token not in repr(vars(r))


def test_levels_map_and_trace_shows_every_attempt(caplog: pytest.LogCaptureFixture, manager: fencelock.LockManager, name: str) -> None:
    caplog.set_level(fencelock.TRACE, logger="fencelock")
    fencelock.enable_logging(fencelock.TRACE)
    assert _native._event_level() == "trace"
    manager.acquire(name, 5).release()
    wait_until(lambda: records_for(caplog, name, "release"), what="a 'release' record")
    attempts = records_for(caplog, name, "acquire attempt")
    assert attempts and all(r.levelno == fencelock.TRACE for r in attempts)
    assert records_for(caplog, name, "release")[0].levelno == logging.DEBUG
    # Python level -> the most verbose core level it lets through.
    for level, core in [(logging.DEBUG, "debug"), (logging.INFO, "info"), ("WARNING", "warn"),
                        (logging.ERROR, "error"), (logging.CRITICAL, None), (None, None), (1, "trace")]:
        fencelock.enable_logging(level)
        assert _native._event_level() == core, level


LATER_PROGRAM = textwrap.dedent("""
    import logging, os, sys, threading
    import fencelock
    names = []
    got_c = threading.Event()
    class Watch(logging.Handler):
        def emit(self, record):
            names.append((record.getMessage().split(" ")[0], getattr(record, "lock", None)))
            if getattr(record, "lock", None) == "c" and record.getMessage().startswith("release"):
                got_c.set()
    logging.getLogger("fencelock").addHandler(Watch())
    m = fencelock.LockManager(os.environ["URL"], server_timeout=0.5)
    assert fencelock._native._event_level() == "warn"  # the logger's default level then
    m.acquire("a", 5).release()  # the call sites are now known (as not wanted)
    fencelock.enable_logging(None)
    m.acquire("b", 5).release()  # nothing is produced
    logging.getLogger("fencelock").setLevel(logging.DEBUG)
    fencelock.enable_logging(logging.DEBUG)
    m.acquire("c", 5).release()
    assert got_c.wait(10), names
    # Events are delivered in order: had a or b produced any, they would be here by now.
    assert ("acquired", "c") in names, names
    assert not [n for n in names if n[1] in ("a", "b")], names
    print("ok")
""")


def test_raising_the_level_later_takes_effect_on_call_sites_already_used(server: RedisServer) -> None:
    # In a fresh interpreter: the core's call sites must not have been used before.
    env = dict(os.environ, URL=server.url)
    out = subprocess.run([sys.executable, "-c", LATER_PROGRAM], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr


def test_the_asyncio_manager_logs_too(caplog: pytest.LogCaptureFixture, server: RedisServer, name: str) -> None:
    caplog.set_level(logging.DEBUG, logger="fencelock")
    fencelock.enable_logging("DEBUG")

    async def main() -> None:
        async with fencelock.asyncio.LockManager(server.url, server_timeout=0.5) as m:
            async with m.lock(name, 5):
                pass

    asyncio.run(main())
    wait_until(lambda: records_for(caplog, name, "release"), what="a 'release' record")
    assert records_for(caplog, name, "acquired")


def test_bad_levels_are_refused() -> None:
    with pytest.raises(ValueError, match="not a logging level"):
        fencelock.enable_logging("loud")
    for bad in (1.5, True, [10]):
        with pytest.raises(TypeError, match="level"):
            fencelock.enable_logging(bad)  # type: ignore[arg-type]


PROGRAM = textwrap.dedent("""
    import logging, os, sys, threading
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    import fencelock
    m = fencelock.LockManager(os.environ["URL"], server_timeout=0.5)
    # The first manager took the level from the logger: DEBUG.
    assert fencelock._native._event_level() == "debug", fencelock._native._event_level()
    lock = m.acquire("exit-test", 0.3, auto_extend=True)
    # A daemon thread keeps producing events while the interpreter exits.
    def churn():
        while True:
            m.acquire("churn", 5).release()
    threading.Thread(target=churn, daemon=True).start()
    print("exiting", flush=True)
""")


def test_events_at_interpreter_exit_neither_crash_nor_hang(server: RedisServer) -> None:
    env = dict(os.environ, URL=server.url)
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "exiting" in out.stdout
    assert 'fencelock DEBUG acquired lock="exit-test"' in out.stderr, out.stderr


FORK_PROGRAM = textwrap.dedent("""
    import logging, os, sys, threading
    import fencelock
    seen = threading.Event()
    class Watch(logging.Handler):
        def emit(self, record):
            if getattr(record, "lock", None) == "child" and record.getMessage().startswith("acquired"):
                seen.set()
    logging.getLogger("fencelock").addHandler(Watch())
    logging.getLogger("fencelock").setLevel(logging.DEBUG)
    m = fencelock.LockManager(os.environ["URL"], server_timeout=0.5)
    m.acquire("parent", 5).release()
    pid = os.fork()
    if pid == 0:
        m.acquire("child", 5).release()
        os._exit(0 if seen.wait(10) else 3)
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_logs_its_own_events(server: RedisServer) -> None:
    env = dict(os.environ, URL=server.url)
    out = subprocess.run([sys.executable, "-c", FORK_PROGRAM], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "child exit 0" in out.stdout, out.stdout + out.stderr


def test_a_stuck_handler_never_blocks_the_locks_and_the_overflow_is_reported(
    caplog: pytest.LogCaptureFixture, manager: fencelock.LockManager, name: str
) -> None:
    import threading

    release_handler = threading.Event()
    entered = threading.Event()

    class Stuck(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            entered.set()
            release_handler.wait(60)

    stuck = Stuck()
    log = logging.getLogger("fencelock")
    log.addHandler(stuck)
    caplog.set_level(fencelock.TRACE, logger="fencelock")
    fencelock.enable_logging(fencelock.TRACE)
    try:
        manager.acquire(name, 5).release()
        assert entered.wait(10), "the logging thread reached the handler"
        # The logging thread is stuck in the handler; locks go on regardless, and the queue
        # (10 000 events) overflows: each cycle queues attempt, acquired and release.
        start = time.monotonic()
        for i in range(3500):
            manager.acquire(name, 5).release()
        assert time.monotonic() - start < 60
    finally:
        release_handler.set()
        log.removeHandler(stuck)
    wait_until(lambda: any("fencelock events were dropped" in r.getMessage() for r in caplog.records),
               timeout=30, what="the dropped-events warning")
