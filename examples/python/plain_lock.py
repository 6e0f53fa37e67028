"""The plain case: hold a lock while a block of code runs.

    FENCELOCK_URL=redis://127.0.0.1:6379 python plain_lock.py

``manager.lock(...)`` waits until the lock is free (Ctrl-C interrupts the wait), keeps it
alive while the block runs, releases it at the end, and raises ``fencelock.LockLost`` at the
end if it was lost meanwhile (so you know the work was not protected).
"""

from __future__ import annotations

import os

import fencelock


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    with fencelock.LockManager(url, key_prefix="example:") as manager:
        with manager.lock("monthly-report", ttl=10.0) as lock:
            print(f"holding {lock.name!r} (fencing token {lock.fencing_token}, "
                  f"valid for {lock.validity:.1f} s)")
            # ... the work that must not run twice at the same time ...
        print("released")


if __name__ == "__main__":
    main()
