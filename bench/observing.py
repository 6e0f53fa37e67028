"""What observing costs (issue 38 item 8), way by way: the Rust runner's uncontended cycles
per second with nothing attached (``ours``) against ``ours-observed`` with each way of
``FENCELOCK_BENCH_OBSERVE`` (bench/rust/src/impls.rs ``observe``), one call at a time and at
256 concurrent tasks on distinct names, on one redis-server started here on a free loopback
port and stopped by PID.

    python bench/observing.py --bin target/.../release/fencelock-bench [--rounds 6]
        [--seconds 3] [--ways metrics+spans,metrics,spans,fmt,metrics+fmt]

Every round runs each way once, the order rotating; a way's ratio is the median of its ratios
to ``off`` round by round (a slow spell of the machine weighs on both sides). Prints a table
(the figures of bench/notes.md and docs/observability.md "What it costs"); asserts nothing.
The benchmark's own row (``ci/bench.sh``, the report) is ``metrics+spans``, the default way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RedisServer  # noqa: E402  (the suite's server, stopped by PID)

WAYS = ["metrics+spans", "metrics", "spans", "fmt", "metrics+fmt"]
SCENARIOS = {"one at a time": ["cycle"], "256 tasks": ["scale", "--tasks", "256"]}


def run_once(binary: str, server: RedisServer, way: str, scenario: List[str],
             seconds: float, name: str) -> float:
    impl, observe = ("ours", "") if way == "off" else ("ours-observed", way)
    if observe == "metrics+spans":
        observe = ""  # the runner's default: a Prometheus recorder and the spans kept
    argv = [binary, scenario[0], "--impl", impl, "--servers", server.url,
            "--duration-ms", str(int(seconds * 1000)), *scenario[1:]]
    if scenario[0] == "cycle":
        argv += ["--name", name]
    env = dict(os.environ, FENCELOCK_BENCH_OBSERVE=observe)
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{way} {scenario[0]}: exit {out.returncode}: {out.stderr[-500:]}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["ops_per_s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the release fencelock-bench")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--ways", default=",".join(WAYS))
    args = ap.parse_args()
    ways = ["off"] + [w for w in args.ways.split(",") if w]
    unknown = [w for w in ways[1:] if w not in WAYS]
    if unknown:
        ap.error(f"unknown ways {unknown}: expected some of {WAYS}")
    rates: Dict[Tuple[str, str], List[float]] = {(w, s): [] for w in ways for s in SCENARIOS}
    server = RedisServer()
    try:
        for r in range(args.rounds):
            for way in ways[r % len(ways):] + ways[:r % len(ways)]:
                for label, scenario in SCENARIOS.items():
                    rate = run_once(args.bin, server, way, scenario, args.seconds,
                                    f"observing-{r}-{way}")
                    rates[(way, label)].append(rate)
            server.flush()
    finally:
        server.kill()
    print("| attached | " + " | ".join(SCENARIOS) + " |")
    print("|---|" + "---|" * len(SCENARIOS))
    for way in ways:
        cells = []
        for label in SCENARIOS:
            mine, off = rates[(way, label)], rates[("off", label)]
            ratio = statistics.median(m / o for m, o in zip(mine, off))
            cells.append(f"{ratio:.3f} x ({statistics.median(mine):,.0f}/s)")
        print(f"| {way} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
