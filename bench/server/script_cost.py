#!/usr/bin/env python3
"""What one uncontended acquire + release costs the redis-server itself, per candidate design
(issue 21): the server's own CPU time (INFO cpu, user + system) and its command count (INFO
commandstats, script internals included) over many cycles, on a redis-server this script starts
on a free loopback port and stops by PID.

Each candidate is a pair of calls, sent one after the other from one connection, as a client
does: the acquire (on a free name) and the release. Candidates:

- ours: the scripts fencelock runs (core/src/scripts, put together as scripts.rs does:
  acquire.lua + queue.lua + acquire_queued.lua, release.lua + queue.lua + release_queued.lua,
  with the ARGV that scripts.rs packs);
- ours@REV (with --baseline REV): the same scripts as they were at git revision REV, to compare
  a change of the scripts with what it replaces in the same runs;
- floor: SET NX PX, then the classic compare-and-delete script (what rslock and node-redlock
  send);
- lean-eval: the same guarantees as ours on the uncontended path in small scripts (the queue's
  existence checked, SET NX PX, INCR of the counter; release: the queue checked, GET, DEL),
  with the rest of ours only when someone waits;
- lean-fcall: the lean scripts as Redis 7 functions (FCALL), whose helpers are defined once at
  load instead of on every call;
- multi: MULTI / EXISTS queue / SET NX PX / INCR / EXEC pipelined in one write, then the
  compare-and-delete script;
- noop: EVALSHA of `return 1` twice: the price of a script call alone;
- permits and rs-semaphore: a semaphore's uncontended permit cycle (limit 4, one permit) with
  our permit scripts (as scripts/permits.rs puts them together), against redis-semaphore
  5.8.0's (its acquire script, then a plain ZREM); permits-contended: a semaphore of 1 under
  contention, as ours-contended below for a lock;
- ours-contended and floor-contended: a "cycle" is one critical section under contention
  instead (see `contended`): ours' release that hands over plus the refused attempt that takes
  a place, against the least a polling lock sends (release, the winner's SET NX PX, the
  loser's).

Usage: script_cost.py [--cycles N] [--rounds R] [--baseline REV]. Prints a table and a JSON
line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from run import RedisServer, RespClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "core" / "src" / "scripts"

CAD = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"

# redis-semaphore 5.8.0's acquire (lib/semaphore/acquire/lua.js); its release is a ZREM.
RS_SEMAPHORE_ACQUIRE = """
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local identifier = ARGV[2]
local lockTimeout = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local expiredTimestamp = now - lockTimeout
redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)
if redis.call('zcard', key) < limit then
  redis.call('zadd', key, now, identifier)
  redis.call('pexpire', key, lockTimeout)
  return 1
else
  return 0
end
"""

LEAN_ACQUIRE = """
if redis.call('EXISTS', KEYS[3]) == 0 and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
return {0}
"""
LEAN_RELEASE = """
if redis.call('EXISTS', KEYS[3]) == 0 then
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('DEL', KEYS[1])
    return 1
  end
end
return 0
"""
LIBRARY = """#!lua name=fencelock_bench
local function acquire(keys, args)
  if redis.call('EXISTS', keys[3]) == 0 and redis.call('SET', keys[1], args[1], 'NX', 'PX', args[2]) then
    return {1, redis.call('INCR', keys[2])}
  end
  return {0}
end
local function release(keys, args)
  if redis.call('EXISTS', keys[3]) == 0 then
    if redis.call('GET', keys[1]) == args[1] then
      redis.call('DEL', keys[1])
      return 1
    end
  end
  return 0
end
redis.register_function('fl_bench_acquire', acquire)
redis.register_function('fl_bench_release', release)
"""


resp = RespClient.encode

# A waiting client's subscription, in a process of its own: SUBSCRIBE to the channels of
# argv[2:], say so, then read and drop every message until the socket closes.
SUBSCRIBER = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
names = [n.encode() for n in sys.argv[2:]]
s.sendall(b"*%d\r\n$9\r\nSUBSCRIBE\r\n" % (len(names) + 1)
          + b"".join(b"$%d\r\n%s\r\n" % (len(n), n) for n in names))
got = b""
while got.count(b"\r\n") < 6 * len(names):  # each confirmation: *3, $9 subscribe, $N name, :K
    got += s.recv(4096)
print("subscribed", flush=True)
while s.recv(65536):
    pass
"""

# The subscriber processes started here, stopped by main() by PID.
CHILDREN: list[subprocess.Popen[str]] = []


def subscriber(port: int, channels: list[str]) -> subprocess.Popen[str]:
    """A process subscribed to `channels` on the server at `port`, reading every message."""
    proc = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, str(port), *channels],
                            stdout=subprocess.PIPE, text=True)
    CHILDREN.append(proc)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "subscribed":
        raise RuntimeError("the subscriber did not subscribe")
    return proc


@contextlib.contextmanager
def measured_server() -> Iterator[tuple[RedisServer, RespClient]]:
    """A redis-server on a free loopback port and a connection to it; on the way out the
    connection is closed and the server and the subscriber processes started here are stopped
    by PID."""
    server = RedisServer()
    try:
        c = RespClient(server.port)
        try:
            yield server, c
        finally:
            c.close()
    finally:
        while CHILDREN:
            proc = CHILDREN.pop()
            proc.kill()
            proc.wait()
        server.kill()


def commands(server: RedisServer) -> int:
    """Commands the server has run (INFO commandstats, script internals included), the INFO
    calls that read its figures left out."""
    return sum(n for name, n in server.command_stats().items() if name != "info")


def sources(rev: str | None) -> tuple[str, str]:
    """The acquire and release scripts as scripts.rs puts them together (head, holder.lua,
    queue.lua, the queued part), from the work tree or (`rev`) from a git revision; before the
    uncontended path came first (issue 21), each was queue.lua + acquire.lua or release.lua."""
    def read(name: str) -> str | None:
        if rev is None:
            path = SCRIPTS / name
            return path.read_text() if path.exists() else None
        r = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:core/src/scripts/{name}"],
                           capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    queue = read("queue.lua")
    assert queue is not None, f"no queue.lua at {rev or 'the work tree'}"
    # holder.lua (issue 34: the kind a name is held as) comes between the head and the queue's
    # helpers; revisions before it have none.
    holder = read("holder.lua") or ""
    out = []
    for step in ("acquire", "release"):
        queued = read(f"{step}_queued.lua")
        head = read(f"{step}.lua")
        assert head is not None, f"no {step}.lua at {rev or 'the work tree'}"
        out.append(head + holder + queue + queued if queued is not None else queue + head)
    return out[0], out[1]


# A candidate's cycle: the commands it sends for name n, each with a check of its reply.
Check = Callable[[Any], bool]
Cycle = Callable[[int], list[tuple[bytes, Check]]]


def candidates(c: RespClient, baseline: str | None, extra: list[str]) -> dict[str, Cycle]:
    """Each candidate: one acquire + release of name `n`, as commands and reply checks."""
    load = lambda src: c.call("SCRIPT", "LOAD", src).decode()  # noqa: E731
    ours_acq, ours_rel = (load(src) for src in sources(None))
    cad = load(CAD)
    lean_acq, lean_rel = load(LEAN_ACQUIRE), load(LEAN_RELEASE)
    noop = load("return 1")
    c.call("FUNCTION", "LOAD", "REPLACE", LIBRARY)
    token = "0123456789abcdef.6f1c2a1e-4c1b-4b8e-9d55-0c7b2b7f3a10"
    channel = "fencelock:{1}:released:bench"
    granted: Check = lambda r: isinstance(r, list) and r[0] == 1  # noqa: E731
    one: Check = lambda r: r == 1  # noqa: E731
    ok: Check = lambda r: r == "OK"  # noqa: E731
    anything: Check = lambda r: True  # noqa: E731

    def keys(n: int) -> list[str]:
        return [f"bench-{n}", "fencelock:{1}:fence", f"fencelock:{{1}}:queue:bench-{n}",
                f"fencelock:{{1}}:deadlines:bench-{n}", f"fencelock:{{1}}:ttls:bench-{n}"]

    def pair(acq: str, rel: str) -> Cycle:
        def run(n: int) -> list[tuple[bytes, Check]]:
            k = keys(n)
            return [(resp("EVALSHA", acq, "5", *k, token, f"PUBLISH 30000 16 0 0 1 {channel}"), granted),
                    (resp("EVALSHA", rel, "5", *k, token, f"PUBLISH 1 16 {channel}"), one)]
        return run

    cands: dict[str, Cycle] = {"ours": pair(ours_acq, ours_rel)}
    if baseline:
        old_acq, old_rel = (load(src) for src in sources(baseline))
        cands[f"ours@{baseline}"] = pair(old_acq, old_rel)
    for path in extra:
        # --candidate ACQUIRE.lua,RELEASE.lua: whole scripts, called as ours are.
        a, r = path.split(",")
        cands[f"{Path(a).stem}"] = pair(load(Path(a).read_text()), load(Path(r).read_text()))
    cands["floor"] = lambda n: [(resp("SET", keys(n)[0], token, "NX", "PX", "30000"), ok),
                                (resp("EVALSHA", cad, "1", keys(n)[0], token), one)]
    cands["lean-eval"] = lambda n: [(resp("EVALSHA", lean_acq, "3", *keys(n)[:3], token, "30000"), granted),
                                    (resp("EVALSHA", lean_rel, "3", *keys(n)[:3], token), one)]
    cands["lean-fcall"] = lambda n: [
        (resp("FCALL", "fl_bench_acquire", "3", *keys(n)[:3], token, "30000"), granted),
        (resp("FCALL", "fl_bench_release", "3", *keys(n)[:3], token), one)]
    cands["multi"] = lambda n: [
        (resp("MULTI"), ok), (resp("EXISTS", keys(n)[2]), anything),
        (resp("SET", keys(n)[0], token, "NX", "PX", "30000"), anything),
        (resp("INCR", keys(n)[1]), anything), (resp("EXEC"), lambda r: r[1] == "OK"),
        (resp("EVALSHA", cad, "1", keys(n)[0], token), one)]
    cands["noop"] = lambda n: [(resp("EVALSHA", noop, "0"), one), (resp("EVALSHA", noop, "0"), one)]
    cands.update(contended(c, ours_acq, ours_rel, cad, keys, channel))
    cands.update(permits(c, token, channel))
    return cands


def permit_sources() -> tuple[str, str]:
    """The permit acquire and release scripts as scripts/permits.rs puts them together."""
    def read(*names: str) -> str:
        return "".join((SCRIPTS / n).read_text() for n in names)
    return (read("permits_acquire_lean.lua", "queue.lua", "permits.lua", "permits_acquire.lua"),
            read("permits_release_lean.lua", "queue.lua", "permits.lua", "permits_release.lua"))


def permits(c: RespClient, token: str, channel: str) -> dict[str, Cycle]:
    """A semaphore's uncontended permit cycle (limit 4, one permit), ours against
    redis-semaphore's (its acquire script, then its release: a plain ZREM)."""
    acq, rel = (c.call("SCRIPT", "LOAD", src).decode() for src in permit_sources())
    rs_acq = c.call("SCRIPT", "LOAD", RS_SEMAPHORE_ACQUIRE).decode()
    granted: Check = lambda r: isinstance(r, list) and r[0] == 1  # noqa: E731
    one: Check = lambda r: r == 1  # noqa: E731

    def keys(n: int) -> list[str]:
        return [f"sem-{n}", f"fencelock:{{1}}:holders:sem-{n}", "fencelock:{1}:fence",
                f"fencelock:{{1}}:queue:sem-{n}", f"fencelock:{{1}}:deadlines:sem-{n}",
                f"fencelock:{{1}}:ttls:sem-{n}"]

    def ours(n: int) -> list[tuple[bytes, Check]]:
        k = keys(n)
        return [(resp("EVALSHA", acq, "6", *k, token, f"PUBLISH 30000 16 0 0 1 s 4 1 {channel}"), granted),
                (resp("EVALSHA", rel, "6", *k, token, f"PUBLISH 1 16 {channel}"), one)]

    def theirs(n: int) -> list[tuple[bytes, Check]]:
        now = str(int(time.time() * 1000))
        return [(resp("EVALSHA", rs_acq, "1", f"semaphore:sem-{n}", "4", token, "30000", now), one),
                (resp("ZREM", f"semaphore:sem-{n}", token), one)]

    return {"permits": ours, "rs-semaphore": theirs, "permits-contended": contended_permits(c, acq, rel, channel)}


def contended_permits(c: RespClient, acq: str, rel: str, channel: str) -> Cycle:
    """A semaphore of 1 under contention, as `contended` for a lock: the holder's release
    hands the permit to the waiter in line (and publishes its wake-up), then the holder's next
    attempt is refused and takes a place in line."""
    tokens = ("cccccccccccccccc.1f1c2a1e-4c1b-4b8e-9d55-0c7b2b7f3a10",
              "dddddddddddddddd.2f1c2a1e-4c1b-4b8e-9d55-0c7b2b7f3a10")
    k = ["sem-c", "fencelock:{1}:holders:sem-c", "fencelock:{1}:fence", "fencelock:{1}:queue:sem-c",
         "fencelock:{1}:deadlines:sem-c", "fencelock:{1}:ttls:sem-c"]
    return taking_turns(c, (acq, rel), k, tokens, channel, " s 1 1")


def taking_turns(c: RespClient, scripts: tuple[str, str], keys: list[str], tokens: tuple[str, str],
                 channel: str, kind: str = "") -> Cycle:
    """Our scripts (`scripts`: the acquire's and the release's SHA) in the steady state of two
    clients taking turns on one name (`keys`, as the scripts take them; `kind`: what a permit
    call adds to the packed argument, " KIND LIMIT WEIGHT"): both listen, the first holds, the
    second waits in line; a cycle is the holder's release, which hands over to the waiter,
    then the holder's next attempt, refused, which takes a place in line."""
    acq, rel = scripts
    ttl = lasts = "30000"

    def attempt(token: str, arrival: int, lasts: str = lasts) -> list[str]:
        return ["EVALSHA", acq, str(len(keys)), *keys, token,
                f"PUBLISH {ttl} 16 {arrival} {lasts} 1{kind} {channel}"]

    # Both waiters listen (a release hands over only to a waiter whose process listens).
    subscriber(c.sock.getpeername()[1], [f"{channel}|{t[:16]}" for t in tokens])
    assert c.call(*attempt(tokens[0], 0, "0"))[0] == 1
    assert c.call(*attempt(tokens[1], 1))[0] == 0
    refused: Check = lambda r: isinstance(r, list) and r[0] == 0  # noqa: E731
    one: Check = lambda r: r == 1  # noqa: E731

    def cycle(n: int) -> list[tuple[bytes, Check]]:
        # Turns alternate: an even number of cycles (every run here) ends where it began.
        holder = tokens[n % 2]
        return [(resp("EVALSHA", rel, str(len(keys)), *keys, holder, f"PUBLISH 1 16 {channel}"), one),
                (resp(*attempt(holder, 2 + n)), refused)]
    return cycle


def contended(c: RespClient, acq: str, rel: str, cad: str, keys: Callable[[int], list[str]],
              channel: str) -> dict[str, Cycle]:
    """Two candidates whose "cycle" is one contended critical section, in the steady state of
    two clients taking turns on one name (the benchmark's contention scenario, with one
    waiter): the holder's release, then its next attempt, refused because the lock went to
    the other.

    - ours-contended: the release hands the lock to the waiter in line (and publishes its
      wake-up), the refused attempt takes a place in line: the two calls of a critical section
      under contention;
    - floor-contended: what a polling lock (rslock, node-redlock, redis-py) sends at the very
      least: the compare-and-delete release, the other client's SET NX PX that wins, the
      holder's that is refused.
    """
    tokens = ("aaaaaaaaaaaaaaaa.1f1c2a1e-4c1b-4b8e-9d55-0c7b2b7f3a10",
              "bbbbbbbbbbbbbbbb.2f1c2a1e-4c1b-4b8e-9d55-0c7b2b7f3a10")
    ours_k, floor_k = keys(-1), keys(-2)
    ttl = "30000"
    ours = taking_turns(c, (acq, rel), ours_k, tokens, channel)
    assert c.call("SET", floor_k[0], tokens[0], "NX", "PX", ttl) == "OK"
    one: Check = lambda r: r == 1  # noqa: E731

    def floor(n: int) -> list[tuple[bytes, Check]]:
        holder, other = tokens[n % 2], tokens[1 - n % 2]
        return [(resp("EVALSHA", cad, "1", floor_k[0], holder), one),
                (resp("SET", floor_k[0], other, "NX", "PX", ttl), lambda r: r == "OK"),
                (resp("SET", floor_k[0], holder, "NX", "PX", ttl), lambda r: r is None)]

    return {"ours-contended": ours, "floor-contended": floor}


def run_cycles(c: RespClient, cycle: Cycle, first: int, count: int, pipeline: int) -> None:
    """Runs `count` cycles from name `first` on, `pipeline` cycles per write (1: each command
    waits for its reply, as a client does), checking every reply."""
    n = first
    while n < first + count:
        batch = [cmd for m in range(n, min(n + pipeline, first + count)) for cmd in cycle(m)]
        n += pipeline
        c.sock.sendall(b"".join(b for b, _ in batch))
        for b, check in batch:
            r = c.reply()
            assert check(r), (b, r)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", metavar="REV", help="also run the scripts of git revision REV")
    ap.add_argument("--candidate", action="append", default=[], metavar="ACQ.lua,REL.lua",
                    help="also run these two whole scripts (called with ours' keys and ARGV)")
    ap.add_argument("--pipeline", type=int, default=1, metavar="K",
                    help="send K cycles per write: the server's socket work per command drops, "
                         "and what is left is mostly the commands' own work (default 1: each "
                         "command waits for its reply)")
    args = ap.parse_args()
    if args.cycles % 2:
        ap.error("--cycles must be even: the contended candidates take turns between two clients")
    with measured_server() as (server, c):
        cands = candidates(c, args.baseline, args.candidate)
        per: dict[str, dict[str, list[float]]] = {k: {"cpu_us": [], "cmds": []} for k in cands}
        for r in range(args.rounds):
            order = list(cands)
            order = order[r % len(order):] + order[: r % len(order)]
            for name in order:
                run = cands[name]
                run_cycles(c, run, 0, 200, args.pipeline)  # warm up
                cpu0, cmd0 = server.cpu_us(), commands(server)
                run_cycles(c, run, 0, args.cycles, args.pipeline)
                cpu1, cmd1 = server.cpu_us(), commands(server)
                per[name]["cpu_us"].append((cpu1 - cpu0) / args.cycles)
                # The INFO calls that read the figures are left out (commands()); the rest
                # is the candidate's.
                per[name]["cmds"].append((cmd1 - cmd0) / args.cycles)
        print(f"{'candidate':<16} {'server CPU µs/cycle (median, min)':>32} {'server commands/cycle':>22}")
        out: dict[str, Any] = {}
        for name, v in per.items():
            med, lo = statistics.median(v["cpu_us"]), min(v["cpu_us"])
            cmds = statistics.median(v["cmds"])
            out[name] = {"cpu_us_median": round(med, 2), "cpu_us_min": round(lo, 2), "commands": round(cmds, 2)}
            print(f"{name:<16} {med:>24.2f} {lo:>7.2f} {cmds:>22.2f}")
        print(json.dumps({"cycles": args.cycles, "rounds": args.rounds, "pipeline": args.pipeline, "pid": os.getpid(),
                          "at": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
