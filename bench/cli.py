"""The command line's benchmark (issue 35 item 9): ``fencelock run NAME -- true``, from start
to exit, against ``flock FILE true`` (one host's lock, no server) and against the shell pair
people write around ``redis-cli`` (``SET key token NX PX`` then ``true`` then ``DEL key``, three
processes), on one redis-server started here on a free loopback port and stopped by PID.

    python bench/cli.py --fencelock PATH [--quick | --smoke] [--out-dir DIR]

Writes ``CLI.md`` and ``results/cli-latest.json`` under the out dir: the median and p90 of each
way, and the target as a row (fencelock within 2 x the redis-cli pair). No timing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RedisServer  # noqa: E402  (the suite's server, stopped by PID)

BENCH = Path(__file__).resolve().parent
MODES = {"full": (5, 100), "quick": (3, 40), "smoke": (1, 3)}  # rounds, runs per way per round


def timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def check(args: List[str]) -> None:
    out = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {out.returncode}: {out.stderr[-500:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fencelock", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out-dir", default=str(BENCH))
    a = ap.parse_args()
    mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    rounds, runs = MODES[mode]
    server = RedisServer()
    times: Dict[str, List[float]] = {"fencelock run": [], "flock": [], "redis-cli pair": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            lockfile = str(Path(tmp) / "f")
            port = str(server.port)

            def pair() -> None:
                check(["redis-cli", "-p", port, "SET", "bench-cli-pair", "token", "NX", "PX", "30000"])
                check(["true"])
                check(["redis-cli", "-p", port, "DEL", "bench-cli-pair"])

            ways: Dict[str, Callable[[], None]] = {
                "fencelock run": lambda: check([a.fencelock, "run", "bench-cli", "--server", server.url,
                                                "-q", "--", "true"]),
                "flock": lambda: check(["flock", lockfile, "true"]),
                "redis-cli pair": pair,
            }
            for fn in ways.values():  # warm the page cache
                fn()
            for _ in range(rounds):
                for name, fn in ways.items():
                    times[name] += [timed(fn) for _ in range(runs)]
    finally:
        server.kill()
    results = {"mode": mode, "ms": times}
    out_dir = Path(a.out_dir)
    (out_dir / "results").mkdir(parents=True, exist_ok=True)
    (out_dir / "results" / "cli-latest.json").write_text(json.dumps(results, indent=1))
    (out_dir / "CLI.md").write_text(report(results))
    print(report(results))
    return 0


def report(results: Dict[str, object]) -> str:
    ms: Dict[str, List[float]] = results["ms"]  # type: ignore[assignment]
    def p90(xs: List[float]) -> float:
        return sorted(xs)[int(0.9 * (len(xs) - 1))]
    med = {k: statistics.median(v) for k, v in ms.items()}
    lines = [f"# The command line against flock and redis-cli ({results['mode']} run)", "",
             "Start to exit of one locked `true`, in ms, on one redis-server on loopback.", "",
             "| way | median ms | p90 ms | runs |", "|---|---|---|---|"]
    for k, v in ms.items():
        lines.append(f"| {k} | {med[k]:.2f} | {p90(v):.2f} | {len(v)} |")
    ratio = med["fencelock run"] / med["redis-cli pair"]
    lines += ["", "| target | met | measured |", "|---|---|---|",
              f"| `fencelock run` within 2 x the redis-cli pair | {'yes' if ratio <= 2 else 'NO'} | {ratio:.2f} x |",
              "", "flock is one host's lock (no server): the floor of a process that locks and runs `true`.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
