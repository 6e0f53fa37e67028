#!/usr/bin/env python3
"""Where the client's instructions go in one uncontended lock cycle (issue 56 item 3), counted
with valgrind's callgrind, which repeats run to run where the wall clock does not.

For each implementation asked for, the Rust runner's `cycle` scenario runs twice under
callgrind against redis-servers this script starts on free loopback ports (and stops by PID):
a short run and a long one. The difference of the two, divided by the difference of their
cycles, leaves out what a run does once (start-up, connections, loading the scripts). It prints,
per cycle, the program's instructions and those of each function of interest with what it
calls (inclusive), and a JSON line.

Usage: callgrind.py --rust-bin PATH [--impls ours,floor] [--servers 1] [--short-ms 1500]
                    [--long-ms 6000]
(PATH: a release build of bench/rust, as ci/bench.sh makes.)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RedisServer  # noqa: E402

# Functions whose inclusive count is printed, as callgrind_annotate names them; a name
# missing from a profile (the floor has no fencelock functions) prints as "-".
FUNCTIONS = [
    "fencelock_bench::scenarios::cycle_once::{{closure}}",
    "tokio::runtime::blocking::pool::Inner::run",
    "<redis::aio::multiplexed_connection::MultiplexedConnection as "
    "redis::aio::ConnectionLike>::req_packed_command::{{closure}}",
    "fencelock::acquire::AcquireCall::lock_noting::{{closure}}",
    "fencelock::lock::Lock::release::{{closure}}",
    "fencelock::server::Server::eval::{{closure}}",
    "fencelock::acquire::AcquireCall::new",
    "fencelock::engine::Engine::target_of",
    "fencelock::measure::record",
    "fencelock::scripts::ScriptCall::acquire",
    "fencelock::scripts::ScriptCall::release_mode",
    "fencelock::lock::Lock::new",
    "fencelock::lock::Holding::mark_released",
    "fencelock_bench::impls::Floor::delete_all::{{closure}}",
]

LINE = re.compile(r"\s*([\d,]+) \([ \d.]+%\)\s+(?:[^:\s]+:)?(.+?) \[")


def profile(rust_bin: str, impl: str, urls: str, ms: int, out: Path) -> tuple[int, dict[str, int]]:
    """One run under callgrind: its cycles and each function's inclusive instructions."""
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
         rust_bin, "cycle", "--impl", impl, "--servers", urls, "--duration-ms", str(ms)],
        capture_output=True, text=True, check=True,
    )
    cycles = json.loads(run.stdout.strip().splitlines()[-1])["ops"]
    total = int(re.search(r"Collected : (\d+)", run.stderr).group(1))
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
        capture_output=True, text=True, check=True,
    ).stdout
    counts = {"(program)": total}
    for line in annotated.splitlines():
        m = LINE.match(line)
        if m and m.group(2) in FUNCTIONS:
            counts[m.group(2)] = int(m.group(1).replace(",", ""))
    return cycles, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rust-bin", required=True)
    ap.add_argument("--impls", default="ours,floor")
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--short-ms", type=int, default=1500)
    ap.add_argument("--long-ms", type=int, default=6000)
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            print(f"callgrind.py needs {tool} (Debian: apt install valgrind)", file=sys.stderr)
            return 2
    servers = [RedisServer() for _ in range(args.servers)]
    per_cycle: dict[str, dict[str, float]] = {}
    try:
        urls = ",".join(s.url for s in servers)
        with tempfile.TemporaryDirectory() as tmp:
            for impl in args.impls.split(","):
                short = profile(args.rust_bin, impl, urls, args.short_ms, Path(tmp, "short"))
                long = profile(args.rust_bin, impl, urls, args.long_ms, Path(tmp, "long"))
                cycles = long[0] - short[0]
                if cycles <= 0:
                    print(f"{impl}: the long run made no more cycles than the short one",
                          file=sys.stderr)
                    return 1
                per_cycle[impl] = {
                    name: (long[1].get(name, 0) - short[1].get(name, 0)) / cycles
                    for name in ["(program)", *FUNCTIONS]
                    if name in long[1]
                }
    finally:
        for s in servers:
            s.kill()
    impls = list(per_cycle)
    print(f"instructions per uncontended cycle, {args.servers} server(s), with what each calls")
    print(f"{'function':<72}" + "".join(f"{i:>14}" for i in impls))
    for name in ["(program)", *FUNCTIONS]:
        cells = [per_cycle[i].get(name) for i in impls]
        if all(c is None for c in cells):
            continue
        shown = name if len(name) <= 70 else name[:33] + "..." + name[-34:]
        print(f"{shown:<72}" + "".join(f"{'-' if c is None else round(c):>14}" for c in cells))
    print(json.dumps({"servers": args.servers, "per_cycle": per_cycle}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
