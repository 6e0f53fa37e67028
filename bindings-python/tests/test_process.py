"""Process-level behaviour: Ctrl-C, the GIL, fork."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import List

import pytest

import fencelock
from helpers import wait_until
from redis_fixture import RedisServer

# SIGINT is set to raise KeyboardInterrupt first: a shell without job control starts a
# background command (`cmd &`) with SIGINT ignored, and Python then leaves it ignored.
CTRL_C_CHILD = r"""
import signal, sys, time, fencelock
signal.signal(signal.SIGINT, signal.default_int_handler)
m = fencelock.LockManager(sys.argv[1])
print("waiting", flush=True)
try:
    m.acquire(sys.argv[2], 30)   # no wait limit: blocks until Ctrl-C
except KeyboardInterrupt:
    print("KeyboardInterrupt at", time.monotonic(), flush=True)
    sys.exit(42)
print("acquired?!", flush=True)
"""


def _waiters(server: RedisServer, name: str) -> int:
    """Wake-up channels of the lock with a subscriber (one per waiting manager): a waiter inside
    acquire."""
    return len(server.client().pubsub_channels(f"fencelock:{{*}}:released:{name}|*"))


def test_ctrl_c_interrupts_a_blocking_acquire_promptly(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    holder = manager.acquire(name, 30)
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, server.url, name],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "waiting"
        # Inside acquire for sure: it has subscribed to the release channel.
        wait_until(lambda: _waiters(server, name) > 0, timeout=10, what="the child to wait")
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 42, (out, err)
    # The child withdrew its place in line before its interpreter exited (issue 51 item 4:
    # the exit waits for the background withdrawal), so nothing is left in the queue now.
    assert server.client().keys(f"fencelock:{{*}}:queue:{name}") == []
    interrupted_at = float(out.split("KeyboardInterrupt at")[1])
    # CLOCK_MONOTONIC is system-wide on Linux, so the two processes' readings compare.
    assert interrupted_at - sent < 1.0, f"KeyboardInterrupt {interrupted_at - sent:.3f} s after SIGINT"
    # The child left nothing: the key is still the holder's, and free once it releases.
    assert server.client().get(name) == holder.token.encode()
    holder.release()
    assert server.client().get(name) is None
    assert _waiters(server, name) == 0


def test_ctrl_c_mid_attempt_releases_the_votes_already_won(servers3: List[RedisServer], name: str) -> None:
    """As the asyncio cancellation test, with SIGINT to this process while it blocks."""
    a, b, c = servers3
    m = fencelock.LockManager([s.url for s in servers3], server_timeout=5.0)
    b.client().set(name, "someone-else", px=60000)
    c.stop()
    main = threading.get_ident()
    interrupted_after: List[float] = []

    def interrupter() -> None:
        wait_until(lambda: a.client().get(name) is not None, what="a vote on A")
        interrupted_after.append(time.monotonic())
        signal.pthread_kill(main, signal.SIGINT)

    t = threading.Thread(target=interrupter)
    # Whatever this process was started with (see CTRL_C_CHILD).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t.start()
        with pytest.raises(KeyboardInterrupt):
            m.acquire(name, 60)
        assert time.monotonic() - interrupted_after[0] < 1.0
        wait_until(lambda: a.client().get(name) is None, timeout=3, what="the vote on A to be released")
    finally:
        signal.signal(signal.SIGINT, previous)
        t.join(10)
        c.cont()


def test_other_threads_run_while_one_waits_in_acquire(manager: fencelock.LockManager, name: str) -> None:
    holder = manager.acquire(name, 30)
    progress = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal progress
        while not stop.is_set():
            progress += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        # Baseline: how far the spinner gets in 0.2 s sharing the GIL with a sleeping thread.
        start = progress
        time.sleep(0.2)
        baseline = progress - start
        start = progress
        with pytest.raises(fencelock.NotAcquired):
            manager.acquire(name, 5, wait=0.5)
        during = progress - start
    finally:
        stop.set()
        t.join()
    holder.release()
    # Holding the GIL for the whole 0.5 s wait would leave the spinner at ~0.
    assert during > baseline, (baseline, during)


FORK_CHILD_EXIT_OK = 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_manager_made_before_fork_works_in_the_child(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    import asyncio
    import fencelock.asyncio as fa

    # Use them first, so the parent's runtime threads and connections exist.
    held = manager.acquire(name + "-parent", 30)
    amanager = fa.LockManager(server.url)

    async def use_async(suffix: str) -> str:
        lk = await amanager.acquire(name + suffix, 5)
        await lk.release()
        return "async ok"

    assert asyncio.run(use_async("-async-parent")) == "async ok"
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(read_fd)
            msgs = []
            lock = manager.acquire(name + "-child", 10, wait=5)
            msgs.append(f"acquired {lock.fencing_token}")
            with manager.lock(name + "-scoped", 5, wait=5):
                msgs.append("scoped")
            lock.release()
            try:
                held.release()
            except fencelock.LockError as e:
                msgs.append("parent lock refused: " + str(e))
            msgs.append(f"held by parent: {manager.try_acquire(name + '-parent', 5) is None}")
            msgs.append(asyncio.run(use_async("-async-child")))
            os.write(write_fd, "\n".join(msgs).encode())
            code = 0
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            os.write(write_fd, f"child failed: {e!r}".encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + 30
    while True:
        ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            chunks.append(b"child hung (killed after 30 s)")
            break
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    report = b"".join(chunks).decode()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, report
    lines = report.splitlines()
    assert lines[0].startswith("acquired ")
    assert "scoped" in lines
    assert any("parent lock refused" in l and "fork" in l for l in lines), report
    assert "held by parent: True" in lines
    assert "async ok" in lines
    # The parent is unaffected: its lock and manager still work.
    held.extend(30)
    held.release()
    with manager.lock(name, 5):
        pass
    assert asyncio.run(use_async("-async-parent")) == "async ok"


DAEMON_CHILD = r"""
import sys, threading, time, fencelock
m = fencelock.LockManager(sys.argv[1])
holder = m.acquire(sys.argv[2], 30)
started = threading.Event()

def wait_forever():
    started.set()
    m.acquire(sys.argv[2], 30)  # held by `holder`: waits until the process ends

threading.Thread(target=wait_forever, daemon=True).start()
started.wait()
time.sleep(0.3)
print("exiting", flush=True)
"""


def test_the_process_exits_cleanly_while_a_daemon_thread_waits_in_acquire(server: RedisServer, name: str) -> None:
    out = subprocess.run([sys.executable, "-c", DAEMON_CHILD, server.url, name],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    assert out.stdout.strip() == "exiting"


ASYNC_EXIT_CHILD = r"""
import asyncio, sys, fencelock.asyncio as fa

async def main():
    m = fa.LockManager(sys.argv[1])
    for i in range(5):
        async with m.lock(sys.argv[2] + str(i)):
            pass
    # The program ends right after the last release's result reaches the loop.

asyncio.run(main())
"""


def test_asyncio_programs_exit_cleanly_right_after_a_result(server: RedisServer, name: str) -> None:
    """A runtime thread may still be handing a result to the loop when the loop's program
    ends; finalization must not start under it (that aborted the process before the fix)."""
    procs = [subprocess.Popen([sys.executable, "-c", ASYNC_EXIT_CHILD, server.url, f"{name}-{i}-"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(32)]
    results = [(p.wait(60), p.communicate()) for p in procs]
    assert [r for r, _ in results] == [0] * 32, results
