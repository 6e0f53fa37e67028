"""The Redlock validity computation of the C# write-up, shown on fencelock's ``validity``.

The seed (a RedLock.net-style ``Lock`` method over several masters):

    var startTime = DateTime.Now;
    foreach (var redis in redisMasterDictionary)
        if (LockInstance(redis.Value, resource, val, ttl)) n++;
    var drift = Convert.ToInt32((ttl.TotalMilliseconds * ClockDriveFactor) + 2);
    var validity_time = ttl - (DateTime.Now - startTime) - new TimeSpan(0, 0, 0, 0, drift);
    if (n >= Quorum && validity_time.TotalMilliseconds > 0) { /* locked */ }
    else { foreach (var redis in redisMasterDictionary) UnlockInstance(redis.Value, resource, val); }

fencelock runs that rule inside ``acquire`` (the servers in parallel, a monotonic clock
instead of ``DateTime.Now``, undo on every server that may hold the token) and gives
``lock.validity``, which keeps counting down. This script measures the acquire from
outside, applies the C# formula to that measurement and prints both: the C# figure can only
be smaller, since the outside measurement spans more time. With one of three masters down it
runs the same (two make the quorum, the C# ``n >= Quorum``).

    FENCELOCK_URLS=redis://h1:6379,redis://h2:6379,redis://h3:6379 python redlock_validity.py
"""

from __future__ import annotations

import os
import time
from typing import List, Tuple

import fencelock

CLOCK_DRIFT_FACTOR = 0.01  # fencelock's default drift_factor, the C# ClockDriveFactor


def csharp_validity(urls: List[str], name: str, ttl_ms: int) -> Tuple[float, float]:
    """(the C# validity_time, fencelock's validity), both in ms, for one acquisition."""
    with fencelock.LockManager(urls) as manager:
        start = time.monotonic()
        lock = manager.acquire(name, ttl_ms / 1000, wait=5)
        validity = lock.validity
        elapsed_ms = (time.monotonic() - start) * 1000
        lock.release()
    drift = int(ttl_ms * CLOCK_DRIFT_FACTOR + 2)
    return ttl_ms - elapsed_ms - drift, validity * 1000


def main() -> None:
    urls = os.environ.get("FENCELOCK_URLS", "").split(",")
    if len(urls) < 3:
        raise SystemExit("set FENCELOCK_URLS to three or more independent masters, comma-separated")
    ttl_ms = 10_000
    print(f"servers {len(urls)}, quorum {len(urls) // 2 + 1}, ttl {ttl_ms} ms, drift {int(ttl_ms * CLOCK_DRIFT_FACTOR + 2)} ms")
    cs, fl = csharp_validity(urls, "redlock-validity", ttl_ms)
    print(f"C# validity_time = ttl - elapsed - drift = {cs:.3f} ms")
    print(f"fencelock lock.validity = {fl:.3f} ms")
    print(f"C# figure <= fencelock's <= ttl - drift: {cs <= fl + 1e-6 and fl <= ttl_ms - int(ttl_ms * CLOCK_DRIFT_FACTOR + 2)}")


if __name__ == "__main__":
    main()
