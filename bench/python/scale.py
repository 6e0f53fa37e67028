"""The ``scale`` scenario of runner.py (issue 37 item 5): K asyncio tasks in one event loop,
each cycling (try-acquire, release) a name of its own for the duration, after one warm-up
cycle per name (connections open, scripts loaded). The figure is cycles per second over all
tasks, as the Rust and Node runners' ``scale`` gives it."""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
from typing import Any, Awaitable, Callable

ERROR_PAUSE_S = 0.001


async def scale_async(
    args: argparse.Namespace,
    impl: Any,
    n: int,
    cycle_once: Callable[[Any, str], Awaitable[bool]],
) -> dict[str, Any]:
    names = [f"scale-{i}" for i in range(args.tasks)]
    await asyncio.gather(*(cycle_once(impl, name) for name in names))
    ok = errors = 0
    t0 = time.perf_counter()
    end = t0 + args.duration_ms / 1000

    async def task(name: str) -> None:
        nonlocal ok, errors
        while time.perf_counter() < end:
            if await cycle_once(impl, name):
                ok += 1
            else:
                errors += 1
                await asyncio.sleep(ERROR_PAUSE_S)

    await asyncio.gather(*(task(name) for name in names))
    elapsed = time.perf_counter() - t0
    return {
        "scenario": "scale",
        "impl": args.impl,
        "lang": "python",
        "servers": n,
        "tasks": args.tasks,
        "ops": ok,
        "errors": errors,
        "elapsed_s": elapsed,
        "ops_per_s": ok / elapsed,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
