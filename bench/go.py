"""The Go binding's benchmark (issue 52 item 9): the Go binding against redsync (v4, on
go-redis v9) and bsm/redislock (on go-redis v9) in one run, on redis-servers started here on
free loopback ports and stopped by PID, through one runner (bench/go: the three ways behind
one interface):

- uncontended acquire + release cycles on one name, on 1 server and on 5 (redislock takes one
  server only);
- 8 goroutines contending for one name, each holding it 1 ms: every worker's share of the
  holds, the worst 99th percentile of the waits, the hand-off time (release to next grant)
  at the median;
- 256 goroutines each cycling on a name of its own;
- the floor of the uncontended cycle on 1 server (issue 56 item 2): the same two commands a
  plain Go lock sends (``SET NX PX``, then the compare-and-delete script), from Go over a plain
  socket, against which the binding's completion path (cgo, the C interface) is held.

    python bench/go.py --runner PATH [--quick | --smoke] [--out-dir DIR]

The order of the ways rotates every round. Writes ``GO.md`` and ``results/go-latest.json``
under the out dir, with the targets as rows (uncontended at least 0.9 x redsync on 1 server,
every worker's share within 1 point of equal, hand-off median under 1 ms, at least 0.9 x the
floor one call at a time). No timing is
asserted: the targets are reported, met or not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RedisServer  # noqa: E402  (the suite's server, stopped by PID)

BENCH = Path(__file__).resolve().parent
MODES = {"full": (5, 3.0), "quick": (2, 1.5), "smoke": (1, 0.3)}  # rounds, seconds per run
WAYS = ["ours", "redsync", "redislock", "floor"]
WORKERS, HOLD_MS, TASKS = 8, 1, 256
TARGET_SPEED, TARGET_SHARE_POINTS, TARGET_HANDOFF_MS, TARGET_FLOOR = 0.9, 1.0, 1.0, 0.9


def run(runner: str, *args: str, seconds: float) -> Dict[str, Any]:
    p = subprocess.run([runner, *args], capture_output=True, text=True, timeout=120 + 4 * seconds)
    if p.returncode != 0:
        raise RuntimeError(f"bench-go {' '.join(args)} exited {p.returncode}: {p.stderr[-1000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out-dir", default=str(BENCH))
    a = ap.parse_args()
    mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    rounds, seconds = MODES[mode]
    servers = [RedisServer() for _ in range(5)]
    one, five = servers[0].url, ",".join(s.url for s in servers)
    runs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {
        s: {w: [] for w in WAYS} for s in ("cycle-1", "cycle-5", "contend", "scale")
    }
    s = str(seconds)
    try:
        for r in range(rounds):
            order = WAYS[r % len(WAYS):] + WAYS[: r % len(WAYS)]
            for way in order:
                tag = f"bench-go-{r}-{way}"
                runs["cycle-1"][way].append(run(a.runner, "cycle", way, one, s, tag, seconds=seconds))
                if way == "floor":
                    continue  # the floor's cycle on one server only
                if way != "redislock":
                    runs["cycle-5"][way].append(run(a.runner, "cycle", way, five, s, tag + "-5", seconds=seconds))
                runs["contend"][way].append(run(a.runner, "contend", way, one, s, tag + "-c", str(WORKERS),
                                                str(HOLD_MS), seconds=seconds))
                runs["scale"][way].append(run(a.runner, "scale", way, one, s, str(TASKS), seconds=seconds))
                print(f"go.py: round {r + 1} {way} done", file=sys.stderr)
    finally:
        for server in servers:
            server.kill()
    results = {"mode": mode, "seconds_per_run": seconds, "runs": runs}
    out_dir = Path(a.out_dir)
    (out_dir / "results").mkdir(parents=True, exist_ok=True)
    (out_dir / "results" / "go-latest.json").write_text(json.dumps(results, indent=1) + "\n")
    text = report(results)
    (out_dir / "GO.md").write_text(text)
    print(text)
    return 0


def per_s(runs: List[Dict[str, Any]]) -> float:
    return statistics.median(r["cycles"] / r["seconds"] for r in runs) if runs else 0.0


def worst_share_points(runs: List[Dict[str, Any]]) -> float:
    """How far the least and most served workers are from an equal share, in points."""
    worst = 0.0
    for r in runs:
        total = sum(r["counts"]) or 1
        equal = 100.0 / len(r["counts"])
        worst = max(worst, *(abs(100.0 * c / total - equal) for c in r["counts"]))
    return worst


def report(results: Dict[str, Any]) -> str:
    runs = results["runs"]
    lines = [
        f"# The Go binding against redsync and redislock ({results['mode']} run)", "",
        f"{results['seconds_per_run']} s per run, the order of the ways rotating every round; "
        "one runner (bench/go) behind one interface.", "",
        "| way | cycles/s, 1 server | cycles/s, 5 servers | 8 contending: worst share gap (points) "
        "| worst p99 wait (ms) | hand-off median (ms) | 256 names: cycles/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in WAYS:
        if w == "floor":
            lines.append(f"| floor (two commands over a plain socket) | {per_s(runs['cycle-1'][w]):.0f} | "
                         "n/a | n/a | n/a | n/a | n/a |")
            continue
        c = runs["contend"][w]
        five = f"{per_s(runs['cycle-5'][w]):.0f}" if runs["cycle-5"][w] else "n/a (one server only)"
        p99 = max(r["wait_p99_ms"] for r in c)
        handoff = statistics.median(r["handoff_median_ms"] for r in c)
        lines.append(f"| {w} | {per_s(runs['cycle-1'][w]):.0f} | {five} | {worst_share_points(c):.1f} | "
                     f"{p99:.1f} | {handoff:.2f} | {per_s(runs['scale'][w]):.0f} |")
    speed = per_s(runs["cycle-1"]["ours"]) / (per_s(runs["cycle-1"]["redsync"]) or 1)
    floor = per_s(runs["cycle-1"]["ours"]) / (per_s(runs["cycle-1"]["floor"]) or 1)
    share = worst_share_points(runs["contend"]["ours"])
    handoff = statistics.median(r["handoff_median_ms"] for r in runs["contend"]["ours"])
    yes = lambda ok: "yes" if ok else "NO"  # noqa: E731
    lines += [
        "", "| target | met | measured |", "|---|---|---|",
        f"| uncontended at least {TARGET_SPEED} x redsync on 1 server | {yes(speed >= TARGET_SPEED)} | {speed:.2f} x |",
        f"| every worker's share within {TARGET_SHARE_POINTS:.0f} point of equal (8 contending) | "
        f"{yes(share <= TARGET_SHARE_POINTS)} | {share:.1f} points |",
        f"| hand-off median under {TARGET_HANDOFF_MS:.0f} ms | {yes(handoff < TARGET_HANDOFF_MS)} | {handoff:.2f} ms |",
        f"| uncontended at least {TARGET_FLOOR} x the floor (the two commands from Go over a plain socket), "
        f"1 server | {yes(floor >= TARGET_FLOOR)} | {floor:.2f} x |",
        "",
        "The floor's cycle is two plain round trips with neither fencing nor a queue; ours is two",
        "script calls through the C interface (cgo).",
        "redsync and redislock poll (redsync every 50-250 ms, redislock as its retry strategy says);",
        "ours waits in a queue and is handed the lock by the release. Debug builds in a smoke run.", "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
