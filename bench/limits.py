"""Limits measured in the run itself (issue 56 item 6), against which targets are stated.

The hand-off's limit: a bare PUBLISH-to-subscriber round trip between two processes
(``fencelock-bench rtt`` and ``rtt-echo``: RESP written by hand on one thread, no client
library). A hand-off crosses the same sockets: the releasing process's command to the servers,
a server's message to the waiting process, the waiting process's commands and a majority's
answers. What a lock adds to that is its scripts' work on the server and its client library's
work in both processes.

The servers' limit for an uncontended cycle is a runner of its own, ``floor-fenced`` in the
Rust runner's cycle (bench/rust/src/impls.rs): the cheapest scripts that keep a fencing counter
and check the queue, run beside ours.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from typing import Any


class LimitFailed(Exception):
    pass


def roundtrip(rust_bin: str, urls: str, rounds: int, timeout: float) -> dict[str, Any]:
    """One measurement: the echo process started first, the pinger's JSON back (`us`: the
    percentiles of `rounds` round trips, and min_us); the echo is stopped by the pinger's last
    message, or killed here when it is not."""
    echo = subprocess.Popen(
        [rust_bin, "rtt-echo", "--servers", urls], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        p = subprocess.run(
            [rust_bin, "rtt", "--servers", urls, "--rounds", str(rounds)],
            capture_output=True,
            timeout=timeout,
        )
        lines = p.stdout.decode(errors="replace").strip().splitlines()
        if p.returncode != 0 or not lines:
            raise LimitFailed(f"rtt: exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[-300:]}")
        result: dict[str, Any] = json.loads(lines[-1])
        echo.wait(timeout=10)
        return result
    except subprocess.TimeoutExpired:
        raise LimitFailed(f"rtt on {urls}: no answer in {timeout:.0f} s")
    finally:
        if echo.poll() is None:
            echo.kill()
            echo.wait()


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median over repeated measurements of each figure (the runner's nearest-rank
    percentiles, in µs)."""
    return {
        "p50_us": statistics.median(float(r["us"]["p50"]) for r in runs),
        "p99_us": statistics.median(float(r["us"]["p99"]) for r in runs),
        "min_us": statistics.median(float(r["min_us"]) for r in runs),
        "repeats": len(runs),
        "rounds": sum(int(r["rounds"]) for r in runs),
    }
