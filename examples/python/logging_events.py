"""fencelock's events in the standard logging module: what a lock did, and a lost lock as a
warning. Also the production options: a password or ACL user in the URL, TLS files and
timeouts (commented: they need a server set up for them).

    FENCELOCK_URL=redis://127.0.0.1:6379 python logging_events.py
"""

from __future__ import annotations

import logging
import os
import sys
import time

import fencelock


def main() -> None:
    # Configure logging first: the first LockManager takes its level from the "fencelock"
    # logger (here DEBUG: acquired, acquire failed, extend, release, lock lost).
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("fencelock").setLevel(logging.DEBUG)
    # Or, at any time: fencelock.enable_logging(logging.DEBUG) (fencelock.TRACE: every attempt).

    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    # In production, for example:
    #   fencelock.LockManager("rediss://locker:PASSWORD@redis.internal:6380",
    #                         tls_ca_file="/etc/ssl/redis-ca.pem", connect_timeout=1.0)
    with fencelock.LockManager(url, key_prefix="example:", connect_timeout=1.0) as manager:
        with manager.lock("report", ttl=10):
            print("working under the lock")

        # A lock lost behind our back (another client deleted the key): a WARNING record.
        lock = manager.acquire("fragile", ttl=0.5, auto_extend=True)
        manager.release("fragile", lock.token)  # as if someone else had removed it
        deadline = time.monotonic() + 5
        while not lock.lost and time.monotonic() < deadline:
            time.sleep(0.01)
        print(f"lock lost: {lock.lost}")
    # Records are written by a background thread; those still queued at exit are flushed.


if __name__ == "__main__":
    main()
