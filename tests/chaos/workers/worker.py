"""A worker in Python for the cross-language fault tests (tests/chaos/tests/mixed.rs,
mixed_faults.rs) and the demo (ci/demo.sh), using the installed `fencelock` wheel.

    python worker.py --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N
                     --holder ID [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N]
                     [--duration-ms N] [--lease semaphore:LIMIT:COUNT | --lease rw:N | --lease election]
    python worker.py hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
                     [--server-timeout-ms N] [--auto-extend]
                     [--store URL --resource R --value V]

Each round acquires the next name (round-robin, starting at a name chosen by the holder id),
holds it for --hold-ms, and prints one line per hold, in the format the history checker reads
(fencelock_chaos::history::Hold::parse_line):

    HOLD name=.. token=.. start_us=.. end_us=.. validity_us=.. holder=..

start_us is taken right after acquire returned and validity_us read after it; end_us is taken
before release: wall-clock microseconds, the clock every process on the machine shares.
Like any careful holder, it does the work only if the validity left covers it with room to
spare (--hold-ms plus 50 ms for a late wake-up on a busy machine); otherwise it releases the
lock unused and prints `SHORT name=.. validity_us=.. holder=..` (under latency near the TTL).
A failed acquisition prints `FAIL kind=K took_ms=N`, a failed release `RFAIL kind=K`, and the
worker ends with `DONE acquired=N failed=M`. It stops after --rounds rounds or when
--duration-ms (if given) has passed, whichever comes first. With --lease it takes COUNT
permits of a semaphore of LIMIT (`semaphore:LIMIT:COUNT`), or read shares of a read-write lock
with one write every N rounds (`rw:N`), and its HOLD lines end with the kind, as the checker
reads them (` kind=semaphore count=C limit=L`, ` kind=read`, ` kind=write`).

`hold` is the interactive mode of `chaos-worker hold` (fencelock_chaos::paused has the
protocol): it acquires one lock, prints `ACQUIRED token=T start_us=S validity_us=V pid=P`, then
obeys stdin: `WRITE` writes --value to --resource in the fenced store (the Lua check-and-set
of fencelock_chaos::store, byte for byte, with the lock's fencing token) and in the unfenced
one (a plain SET), both on the redis-server at --store, and prints `WROTE
fenced=accepted|rejected unfenced=written lost=BOOL end_us=E` (`lost`: the lock's own flag,
read before the writes); `RELEASE` prints `RELEASED result=ok|KIND end_us=E` and exits. A
failed acquire prints `ERROR kind=K message=...` and exits with 2. The store is spoken to
over a plain socket (RESP), so that the worker needs nothing but the wheel.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
import urllib.parse
import zlib
from pathlib import Path

import fencelock


# Room, past the hold, that the validity must leave before the worker uses a lock: a 1 ms
# sleep has ended 2.7 ms after it began on a loaded machine.
SLACK_MS = 50


def server_list(value: str) -> list[str]:
    """A comma separates URLs; a part that does not start a URL (host:port) continues the
    previous one (a cluster URL names several nodes)."""
    out: list[str] = []
    for part in value.split(","):
        if out and "://" not in part:
            out[-1] += "," + part
        else:
            out.append(part)
    return out


def release(lock: fencelock.Lock, out) -> None:
    try:
        lock.release()
    except fencelock.LockError as e:
        out.write(f"RFAIL kind={kind(e)}\n")
        out.flush()


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


# The fenced store's check-and-set, shared with tests/chaos/src/store.rs (the test checks its
# SHA1 on the store).
FENCED_WRITE = (Path(__file__).resolve().parent / "fenced_write.lua").read_bytes().decode()


def redis_call(url: str, *args: str) -> object:
    """Sends one command to the redis-server at `url` (redis://HOST:PORT) on a fresh
    connection and returns its reply: int, str (status or bulk) or None; raises
    RuntimeError on an error reply."""
    u = urllib.parse.urlsplit(url)
    if u.hostname is None or u.port is None:
        raise ValueError(f"store URL without host and port: {url}")
    request = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        b = arg.encode()
        request += [f"${len(b)}\r\n".encode(), b, b"\r\n"]
    with socket.create_connection((u.hostname, u.port), timeout=5) as sock:
        sock.sendall(b"".join(request))
        reply = sock.makefile("rb")
        line = reply.readline().decode().rstrip("\r\n")
        kind, rest = line[:1], line[1:]
        if kind == "+":
            return rest
        if kind == "-":
            raise RuntimeError(rest)
        if kind == ":":
            return int(rest)
        if kind == "$":
            n = int(rest)
            return None if n < 0 else reply.read(n + 2)[:n].decode()
        raise RuntimeError(f"unexpected reply {line!r}")


def store_error(e: BaseException) -> str:
    return "error:" + str(e).replace(" ", "_")


def hold(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="worker.py hold")
    p.add_argument("--servers", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--ttl-ms", type=int, default=1000)
    p.add_argument("--wait-ms", type=int, default=10000)
    p.add_argument("--server-timeout-ms", type=int)
    p.add_argument("--auto-extend", action="store_true")
    p.add_argument("--store")
    p.add_argument("--resource", default="resource")
    p.add_argument("--value", default="")
    a = p.parse_args(argv)
    options = {"retry_delay": 0.05}
    if a.server_timeout_ms is not None:
        options["server_timeout"] = a.server_timeout_ms / 1000
    manager = fencelock.LockManager(server_list(a.servers), **options)
    try:
        lock = manager.acquire(
            a.name, a.ttl_ms / 1000, wait=a.wait_ms / 1000, auto_extend=a.auto_extend
        )
    except (fencelock.LockError, ValueError, TypeError) as e:
        print(f"ERROR kind={kind(e)} message={e}", flush=True)
        return 2
    start_us = time.time_ns() // 1000
    validity_us = int(lock.validity * 1_000_000)
    print(
        f"ACQUIRED token={lock.fencing_token} start_us={start_us} "
        f"validity_us={validity_us} pid={os.getpid()}",
        flush=True,
    )
    for line in iter(sys.stdin.readline, ""):
        command = line.strip()
        if command == "WRITE":
            if a.store is None:
                p.error("WRITE needs --store")
            lost = "true" if lock.lost else "false"
            try:
                accepted = redis_call(
                    a.store,
                    "EVAL",
                    FENCED_WRITE,
                    "2",
                    f"fenced:{a.resource}:token",
                    f"fenced:{a.resource}:data",
                    str(lock.fencing_token),
                    a.value,
                )
                fenced = "accepted" if accepted == 1 else "rejected"
            except (OSError, RuntimeError) as e:
                fenced = store_error(e)
            try:
                redis_call(a.store, "SET", f"unfenced:{a.resource}", a.value)
                unfenced = "written"
            except (OSError, RuntimeError) as e:
                unfenced = store_error(e)
            end_us = time.time_ns() // 1000
            print(
                f"WROTE fenced={fenced} unfenced={unfenced} lost={lost} end_us={end_us}",
                flush=True,
            )
        elif command == "RELEASE":
            end_us = time.time_ns() // 1000
            try:
                lock.release()
                result = "ok"
            except fencelock.LockError as e:
                result = kind(e)
            print(f"RELEASED result={result} end_us={end_us}", flush=True)
            return 0
        else:
            print(f"worker.py: unknown command {command!r}", file=sys.stderr)
    return 0


def lease_for(manager: fencelock.LockManager, lease: str, name: str, rnd: int):
    """How round `rnd` acquires `name` under `--lease`: (acquire(ttl, wait), kind fields)."""
    if lease.startswith("semaphore:"):
        _, limit, count = lease.split(":")
        sem = manager.semaphore(name, int(limit))
        fields = f" kind=semaphore count={count} limit={limit}"
        return (lambda ttl, wait: sem.acquire(int(count), ttl, wait=wait)), fields
    if lease.startswith("rw:"):
        rw = manager.rwlock(name)
        if rnd % int(lease[3:]) == 0:
            return (lambda ttl, wait: rw.write(ttl, wait=wait)), " kind=write"
        return (lambda ttl, wait: rw.read(ttl, wait=wait)), " kind=read"
    if lease == "election":
        election = manager.election(name)
        value = f"python-{os.getpid()}"
        return (lambda ttl, wait: election.campaign(value, ttl, wait=wait).lock), ""
    return (lambda ttl, wait: manager.acquire(name, ttl, wait=wait)), ""


def gate(out) -> None:
    """With FENCELOCK_WORKER_GATE=1: says READY once the manager is built and waits for a
    line on stdin, so that the test starts every worker's run at the same moment."""
    if os.environ.get("FENCELOCK_WORKER_GATE") == "1":
        out.write("READY\n")
        out.flush()
        sys.stdin.readline()


def main() -> int:
    if sys.argv[1:2] == ["hold"]:
        return hold(sys.argv[2:])
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
    p.add_argument("--lease", default="")
    a = p.parse_args()
    names = a.names.split(",")
    out = sys.stdout
    manager = fencelock.LockManager(
        server_list(a.servers), retry_delay=0.05, server_timeout=a.server_timeout_ms / 1000
    )
    gate(out)
    deadline = time.monotonic() + a.duration_ms / 1000 if a.duration_ms > 0 else None
    first = zlib.crc32(a.holder.encode()) % len(names)
    acquired = failed = 0
    for r in range(a.rounds):
        if deadline is not None and time.monotonic() >= deadline:
            break
        name = names[(first + r) % len(names)]
        t0 = time.monotonic()
        acquire, kind_fields = lease_for(manager, a.lease, name, r)
        try:
            lock = acquire(a.ttl_ms / 1000, a.wait_ms / 1000)
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
        if validity_us < (a.hold_ms + SLACK_MS) * 1000:
            # Too little validity left for the work: give the lock back unused.
            out.write(f"SHORT name={name} validity_us={validity_us} holder={a.holder}\n")
            out.flush()
            release(lock, out)
            continue
        if a.hold_ms > 0:
            time.sleep(a.hold_ms / 1000)
        end_us = time.time_ns() // 1000
        out.write(
            f"HOLD name={name} token={fence} start_us={start_us} end_us={end_us} "
            f"validity_us={validity_us} holder={a.holder}{kind_fields}\n"
        )
        out.flush()
        acquired += 1
        release(lock, out)
    out.write(f"DONE acquired={acquired} failed={failed}\n")
    out.flush()
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
