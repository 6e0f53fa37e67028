"""The Java binding's benchmark (issue 39 item 7): uncontended acquire + release cycles per
second, one at a time on one name, on one redis-server started here on a free loopback port
and stopped by PID:

- ``java ours``: the Java binding (``manager.acquire(name, ttl)`` in try-with-resources), through
  JNA into libfencelock;
- ``c``: the Rust core through the same C interface with nothing in between
  (``bench/c/cycle.c``: ``fl_lock_acquire``, ``fl_lock_release``, ``fl_lock_free``);
- ``java floor``: the least a Java lock sends for the cycle, ``SET NX PX`` then the
  compare-and-delete script by ``EVALSHA``, over a plain socket in ``bench/java/Cycle.java``;
- ``c floor``: the same two commands from C over a plain blocking socket (``bench/c/cycle.c
  floor``).

    python bench/java.py --c-bin PATH --java-classpath CP [--quick | --smoke] [--out-dir DIR]

The order of the three rotates every round. Writes ``JAVA.md`` and ``results/java-latest.json``
under the out dir, with the targets as rows (issue 39: the binding at least 0.9 x the core
through the C interface; issue 56 item 2: Java and C each at least 0.9 x its plain-socket
floor). No timing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RedisServer  # noqa: E402  (the suite's server, stopped by PID)

BENCH = Path(__file__).resolve().parent
MODES = {"full": (5, 5.0), "quick": (3, 2.0), "smoke": (1, 0.3)}  # rounds, seconds per run
WARMUP_CYCLES = 2000  # what each runner does before it counts (bench/c/cycle.c, Cycle.java)
WAYS = ["java ours", "c", "java floor", "c floor"]
TARGET = 0.9


def run_once(argv: List[str], server: RedisServer, seconds: float) -> Dict[str, float]:
    before = server.cpu_us()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120 + 4 * seconds)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr[-1000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    server_us = server.cpu_us() - before
    return {
        "per_s": out["cycles"] / out["seconds"],
        "cycles": out["cycles"],
        # The server served this runner only: its CPU over the warm-up and the counted cycles.
        "server_us_per_cycle": server_us / (out["cycles"] + WARMUP_CYCLES),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c-bin", required=True)
    ap.add_argument("--java-classpath", required=True)
    ap.add_argument("--java", default="java")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out-dir", default=str(BENCH))
    a = ap.parse_args()
    mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    rounds, seconds = MODES[mode]
    java = [a.java, "-cp", a.java_classpath, "Cycle"]
    runs: Dict[str, List[Dict[str, float]]] = {w: [] for w in WAYS}
    server = RedisServer()
    try:
        for r in range(rounds):
            order = WAYS[r % len(WAYS):] + WAYS[: r % len(WAYS)]
            for way in order:
                name = f"bench-java-{r}-{way.replace(' ', '-')}"
                args = [server.url, str(seconds), name]
                lang, kind = (way.split() + ["ours"])[:2]
                argv = [a.c_bin, kind, *args] if lang == "c" else [*java, kind, *args]
                runs[way].append(run_once(argv, server, seconds))
                print(f"java.py: round {r + 1} {way}: {runs[way][-1]['per_s']:.0f} cycles/s", file=sys.stderr)
    finally:
        server.kill()
    results = {"mode": mode, "seconds_per_run": seconds, "runs": runs}
    out_dir = Path(a.out_dir)
    (out_dir / "results").mkdir(parents=True, exist_ok=True)
    (out_dir / "results" / "java-latest.json").write_text(json.dumps(results, indent=1) + "\n")
    text = report(results)
    (out_dir / "JAVA.md").write_text(text)
    print(text)
    return 0


def report(results: Dict[str, object]) -> str:
    runs: Dict[str, List[Dict[str, float]]] = results["runs"]  # type: ignore[assignment]
    med = {w: statistics.median(r["per_s"] for r in runs[w]) for w in WAYS}
    lines = [
        f"# The Java binding against the core through the C interface ({results['mode']} run)", "",
        "Uncontended acquire + release, one at a time on one name, on one redis-server on loopback;",
        f"{results['seconds_per_run']} s per run after 2,000 cycles of warm-up, the order rotating every round.", "",
        "| way | median cycles/s | min | max | µs per cycle | server CPU µs per cycle | runs |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in WAYS:
        per_s = [r["per_s"] for r in runs[w]]
        cpu = statistics.median(r["server_us_per_cycle"] for r in runs[w])
        lines.append(f"| {w} | {med[w]:.0f} | {min(per_s):.0f} | {max(per_s):.0f} | "
                     f"{1e6 / med[w]:.1f} | {cpu:.1f} | {len(per_s)} |")
    rows = [
        ("the Java binding at least {t} x the core through the C interface", med["java ours"] / med["c"]),
        ("the Java binding at least {t} x its floor (the two commands from Java over a plain socket)",
         med["java ours"] / med["java floor"]),
        ("C through the interface at least {t} x its floor (the two commands from C over a plain "
         "blocking socket)", med["c"] / med["c floor"]),
    ]
    lines += ["", "| target | met | measured |", "|---|---|---|"]
    lines += [f"| {what.format(t=TARGET)} | {'yes' if x >= TARGET else 'NO'} | {x:.2f} x |" for what, x in rows]
    lines += [
        "",
        "The floor's cycle is two plain round trips with neither fencing nor a queue; ours is two",
        "script calls (bench/notes.md, the lean path). One call at a time on this machine mostly",
        "measures how fast an idle core wakes up; what that means for these rows: bench/notes.md,",
        "\"Issue 39: the Java binding against the C interface\".", "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
