#!/usr/bin/env python3
"""What waking a waiter costs the redis-server itself (issue 21): the server's own CPU time
(INFO cpu, user + system) per command, one command at a time from one connection (each waits
for its reply, as the contended path's calls do), on a redis-server this script starts on a
free loopback port and stops by PID.

A contended critical section of fencelock hands the lock over in the release script and wakes
the next waiter with a PUBLISH to the channel its process subscribes to; the polling peers wake
nobody (their waiters sleep and retry). Candidates, taking turns round by round:

- ping: PING, the price of a round trip alone;
- publish-none: PUBLISH to a channel nobody subscribes to (the command without a delivery);
- publish-one: PUBLISH to a channel that one other process subscribes to, blocked in recv()
  as a waiting client is: the delivery writes to that process's socket and wakes it.

publish-one minus publish-none is what the server pays to wake one waiter in another process.

Usage: wakeup_cost.py [--commands N] [--rounds R]. Prints a table and a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from run import RespClient  # noqa: E402
from server.script_cost import measured_server, subscriber  # noqa: E402

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commands", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with measured_server() as (server, c):
        subscriber(server.port, ["wake-1"])
        cands = {
            "ping": RespClient.encode("PING"),
            "publish-none": RespClient.encode("PUBLISH", "nobody", "x" * 60),
            "publish-one": RespClient.encode("PUBLISH", "wake-1", "x" * 60),
        }
        # Each candidate's reply tells it ran as meant: PUBLISH answers how many received it.
        expect = {"ping": "PONG", "publish-none": 0, "publish-one": 1}
        per: dict[str, list[float]] = {k: [] for k in cands}
        for r in range(args.rounds):
            order = list(cands)
            order = order[r % len(order):] + order[: r % len(order)]
            for name in order:
                cmd = cands[name]
                for _ in range(200):  # warm up
                    c.sock.sendall(cmd)
                    c.reply()
                cpu0 = server.cpu_us()
                for _ in range(args.commands):
                    c.sock.sendall(cmd)
                    got = c.reply()
                cpu1 = server.cpu_us()
                if got != expect[name]:
                    raise RuntimeError(f"{name}: reply {got!r}, expected {expect[name]!r}")
                per[name].append((cpu1 - cpu0) / args.commands)
        print(f"{'candidate':<14} {'server CPU µs/command (median, min, max)':>42}")
        out = {}
        for name, v in per.items():
            out[name] = {"cpu_us_median": round(statistics.median(v), 2), "cpu_us_min": round(min(v), 2),
                         "cpu_us_max": round(max(v), 2)}
            print(f"{name:<14} {statistics.median(v):>26.2f} {min(v):>7.2f} {max(v):>7.2f}")
        wake = [one - none for one, none in zip(per["publish-one"], per["publish-none"])]
        out["wakeup"] = {"cpu_us_median": round(statistics.median(wake), 2)}
        print(f"{'wake-up':<14} {statistics.median(wake):>26.2f}   (publish-one - publish-none, round by round)")
        print(json.dumps({"commands": args.commands, "rounds": args.rounds, "pid": os.getpid(),
                          "at": time.strftime("%Y-%m-%dT%H:%M:%S"), "results": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
