#!/usr/bin/env python3
"""What one uncontended acquire + release costs the redis-server itself, per candidate design
(issue 21): the server's own CPU time (INFO cpu, user + system) and its command count (INFO
commandstats, script internals included) over many cycles, on a redis-server this script starts
on a free loopback port and stops by PID.

Each candidate is a pair of calls, sent one after the other from one connection, as a client
does: the acquire (on a free name) and the release. Candidates:

- ours: the scripts fencelock runs today (core/src/scripts: queue.lua + acquire.lua, queue.lua
  + release.lua, with the ARGV that scripts.rs packs);
- floor: SET NX PX, then the classic compare-and-delete script (what rslock and node-redlock
  send);
- lean-eval: the same guarantees as ours on the uncontended path in small scripts (the queue's
  existence checked, SET NX PX, INCR of the counter; release: the queue checked, GET, DEL),
  with the rest of ours only when someone waits;
- lean-fcall: the lean scripts as Redis 7 functions (FCALL), whose helpers are defined once at
  load instead of on every call;
- multi: MULTI / EXISTS queue / SET NX PX / INCR / EXEC pipelined in one write, then the
  compare-and-delete script;
- noop: EVALSHA of `return 1` twice: the price of a script call alone.

Usage: script_cost.py [--cycles N] [--rounds R]. Prints a table and a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from run import RedisServer, RespClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "core" / "src" / "scripts"

CAD = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"

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


def resp(*args: str | bytes) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def info(c: RespClient, section: str) -> dict[str, str]:
    text = c.call("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def cpu_us(c: RespClient) -> float:
    i = info(c, "cpu")
    return (float(i["used_cpu_sys"]) + float(i["used_cpu_user"])) * 1e6


def commands(c: RespClient) -> int:
    total = 0
    for name, fields in info(c, "commandstats").items():
        if name.startswith("cmdstat_") and name not in ("cmdstat_info",):
            total += int(fields.split(",")[0].split("=")[1])
    return total


def candidates(c: RespClient) -> dict[str, Callable[[int], None]]:
    """Each candidate: one acquire + release of name `n`."""
    load = lambda src: c.call("SCRIPT", "LOAD", src).decode()  # noqa: E731
    queue = (SCRIPTS / "queue.lua").read_text()
    ours_acq = load(queue + (SCRIPTS / "acquire.lua").read_text())
    ours_rel = load(queue + (SCRIPTS / "release.lua").read_text())
    cad = load(CAD)
    lean_acq, lean_rel = load(LEAN_ACQUIRE), load(LEAN_RELEASE)
    noop = load("return 1")
    c.call("FUNCTION", "LOAD", "REPLACE", LIBRARY)
    token = "0123456789abcdef.6f1c2a1e-4c1b-4b8e-9d55-0c7b2b7f3a10"
    channel = "fencelock:{1}:released:bench"

    def keys(n: int) -> list[str]:
        return [f"bench-{n}", "fencelock:{1}:fence", f"fencelock:{{1}}:queue:bench-{n}",
                f"fencelock:{{1}}:deadlines:bench-{n}", f"fencelock:{{1}}:ttls:bench-{n}"]

    def ours(n: int) -> None:
        k = keys(n)
        r = c.call("EVALSHA", ours_acq, "5", *k, token, f"PUBLISH 30000 16 0 0 1 {channel}")
        assert r[0] == 1, r
        assert c.call("EVALSHA", ours_rel, "5", *k, token, f"PUBLISH 1 16 {channel}") == 1

    def floor(n: int) -> None:
        k = keys(n)
        assert c.call("SET", k[0], token, "NX", "PX", "30000") == "OK"
        assert c.call("EVALSHA", cad, "1", k[0], token) == 1

    def lean_eval(n: int) -> None:
        k = keys(n)
        assert c.call("EVALSHA", lean_acq, "3", *k[:3], token, "30000")[0] == 1
        assert c.call("EVALSHA", lean_rel, "3", *k[:3], token) == 1

    def lean_fcall(n: int) -> None:
        k = keys(n)
        assert c.call("FCALL", "fl_bench_acquire", "3", *k[:3], token, "30000")[0] == 1
        assert c.call("FCALL", "fl_bench_release", "3", *k[:3], token) == 1

    def multi(n: int) -> None:
        k = keys(n)
        c.sock.sendall(resp("MULTI") + resp("EXISTS", k[2]) + resp("SET", k[0], token, "NX", "PX", "30000")
                       + resp("INCR", k[1]) + resp("EXEC"))
        replies = [c._reply() for _ in range(5)]
        assert replies[4][1] == "OK", replies
        assert c.call("EVALSHA", cad, "1", k[0], token) == 1

    def noop_pair(n: int) -> None:
        c.call("EVALSHA", noop, "0")
        c.call("EVALSHA", noop, "0")

    return {"ours": ours, "floor": floor, "lean-eval": lean_eval, "lean-fcall": lean_fcall,
            "multi": multi, "noop": noop_pair}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    server = RedisServer()
    try:
        c = RespClient(server.port)
        cands = candidates(c)
        per: dict[str, dict[str, list[float]]] = {k: {"cpu_us": [], "cmds": []} for k in cands}
        for r in range(args.rounds):
            order = list(cands)
            order = order[r % len(order):] + order[: r % len(order)]
            for name in order:
                run = cands[name]
                for n in range(200):  # warm up
                    run(n)
                cpu0, cmd0 = cpu_us(c), commands(c)
                for n in range(args.cycles):
                    run(n)
                cpu1, cmd1 = cpu_us(c), commands(c)
                per[name]["cpu_us"].append((cpu1 - cpu0) / args.cycles)
                # INFO cpu itself and the two INFO commands are not counted (commandstats
                # excluded INFO); the rest is the candidate's.
                per[name]["cmds"].append((cmd1 - cmd0) / args.cycles)
        print(f"{'candidate':<12} {'server CPU µs/cycle (median, min)':>36} {'server commands/cycle':>22}")
        out: dict[str, Any] = {}
        for name, v in per.items():
            med, lo = statistics.median(v["cpu_us"]), min(v["cpu_us"])
            cmds = statistics.median(v["cmds"])
            out[name] = {"cpu_us_median": round(med, 2), "cpu_us_min": round(lo, 2), "commands": round(cmds, 2)}
            print(f"{name:<12} {med:>28.2f} {lo:>7.2f} {cmds:>22.2f}")
        print(json.dumps({"cycles": args.cycles, "rounds": args.rounds, "pid": os.getpid(),
                          "at": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": out}))
        c.close()
    finally:
        server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
