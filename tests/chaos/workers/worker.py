"""A contend worker in Python for the cross-language fault tests (tests/chaos/tests/mixed.rs)
and the demo (ci/demo.sh), using the installed `fencelock` wheel.

    python worker.py --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N
                     --holder ID [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N]
                     [--duration-ms N]

Each round acquires the next name (round-robin, starting at a name chosen by the holder id),
holds it for --hold-ms, and prints one line per hold, in the format the history checker reads
(fencelock_chaos::history::Hold::parse_line):

    HOLD name=.. token=.. start_us=.. end_us=.. validity_us=.. holder=..

start_us is taken right after acquire returned and validity_us read after it; end_us is taken
before release: wall-clock microseconds, the clock every process on the machine shares.
A failed acquisition prints `FAIL kind=K took_ms=N`, a failed release `RFAIL kind=K`, and the
worker ends with `DONE acquired=N failed=M`. It stops after --rounds rounds or when
--duration-ms (if given) has passed, whichever comes first.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib

import fencelock


def kind(e: BaseException) -> str:
    if isinstance(e, fencelock.NotAcquired):
        return "not_acquired"
    if isinstance(e, fencelock.Unavailable):
        return "unavailable"
    if isinstance(e, fencelock.LockLost):
        return "not_held"
    if isinstance(e, fencelock.ServerError):
        return "redis_error"
    if isinstance(e, (ValueError, TypeError)):
        return "invalid_argument"
    return "error:" + type(e).__name__


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--servers", required=True)
    p.add_argument("--names", required=True)
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--hold-ms", type=float, required=True)
    p.add_argument("--holder", required=True)
    p.add_argument("--ttl-ms", type=int, default=1000)
    p.add_argument("--wait-ms", type=int, default=10000)
    p.add_argument("--server-timeout-ms", type=int, default=100)
    p.add_argument("--duration-ms", type=int, default=0)
    a = p.parse_args()
    names = a.names.split(",")
    out = sys.stdout
    manager = fencelock.LockManager(
        a.servers.split(","), retry_delay=0.05, server_timeout=a.server_timeout_ms / 1000
    )
    deadline = time.monotonic() + a.duration_ms / 1000 if a.duration_ms > 0 else None
    first = zlib.crc32(a.holder.encode()) % len(names)
    acquired = failed = 0
    for r in range(a.rounds):
        if deadline is not None and time.monotonic() >= deadline:
            break
        name = names[(first + r) % len(names)]
        t0 = time.monotonic()
        try:
            lock = manager.acquire(name, a.ttl_ms / 1000, wait=a.wait_ms / 1000)
        except (fencelock.LockError, ValueError, TypeError) as e:
            failed += 1
            took = int((time.monotonic() - t0) * 1000)
            out.write(f"FAIL kind={kind(e)} took_ms={took}\n")
            out.flush()
            time.sleep(0.005)  # do not spin when servers refuse at once
            continue
        start_us = time.time_ns() // 1000
        validity_us = int(lock.validity * 1_000_000)
        fence = lock.fencing_token
        if a.hold_ms > 0:
            time.sleep(a.hold_ms / 1000)
        end_us = time.time_ns() // 1000
        out.write(
            f"HOLD name={name} token={fence} start_us={start_us} end_us={end_us} "
            f"validity_us={validity_us} holder={a.holder}\n"
        )
        out.flush()
        acquired += 1
        try:
            lock.release()
        except fencelock.LockError as e:
            out.write(f"RFAIL kind={kind(e)}\n")
            out.flush()
    out.write(f"DONE acquired={acquired} failed={failed}\n")
    out.flush()
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
