"""A worker pool capped at N across machines: at most 2 jobs at once, however many workers.

    FENCELOCK_URL=redis://127.0.0.1:6379 python worker_pool.py

``manager.semaphore(name, limit)`` is a counting semaphore held on the Redis servers: every
process (and every language) using the name shares the same limit. ``with sem.lock():``
waits for a permit in line (first come, first served), keeps it alive while the block runs,
and gives it back at the end; a worker that crashes gives its permit back when its lease ends.
"""

from __future__ import annotations

import os
import threading
import time

import fencelock


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    with fencelock.LockManager(url, key_prefix="example:") as manager:
        api_calls = manager.semaphore("rate-limited-api", 2)
        inside, most = [0], [0]
        count = threading.Lock()

        def worker(i: int) -> None:
            with api_calls.lock(ttl=10.0) as permit:
                with count:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                print(f"worker {i}: calling the API (fencing token {permit.fencing_token})")
                time.sleep(0.1)
                with count:
                    inside[0] -= 1

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        print(f"6 workers ran, at most {most[0]} at once")
        if most[0] > 2:
            print("more than the limit at once: must not happen")
        print(f"after: {api_calls.state()}")


if __name__ == "__main__":
    main()
