"""A cache rebuilt under a write lock while readers wait: a read-write lock across processes.

    FENCELOCK_URL=redis://127.0.0.1:6379 python cache_rebuild.py

``manager.rwlock(name)``: many readers share it, a writer excludes everyone. It is fair: once
a writer waits, new readers queue behind it, so a rebuild is never starved by a stream of
readers, and the readers that queued behind the writer all enter together when it is done.
"""

from __future__ import annotations

import os
import threading
import time

import fencelock


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    cache = {"version": 1}
    seen: list[int] = []
    with fencelock.LockManager(url, key_prefix="example:") as manager:
        rw = manager.rwlock("product-cache")
        first_readers = [rw.read(ttl=10.0) for _ in range(2)]
        print(f"readers holding it: {rw.state().readers}")

        def rebuild() -> None:
            with rw.writing(ttl=10.0) as w:
                print(f"rebuilding under the write lock (fencing token {w.fencing_token})")
                cache["version"] = 2

        def reader() -> None:
            with rw.reading(ttl=10.0):
                seen.append(cache["version"])

        writer = threading.Thread(target=rebuild)
        writer.start()
        while rw.state().waiters < 1:
            time.sleep(0.01)
        print(f"a writer waits: a new reader tries and gets {rw.try_read(ttl=10.0)}")
        late = [threading.Thread(target=reader) for _ in range(3)]
        for t in late:
            t.start()
        for share in first_readers:
            share.release()
        writer.join()
        for t in late:
            t.join()
        print(f"the readers that queued behind the writer saw versions {seen}")
        if seen != [2, 2, 2]:
            print("a reader saw the old cache: must not happen")


if __name__ == "__main__":
    main()
