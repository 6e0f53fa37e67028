"""A write guarded by its fencing token.

A lock can expire while its holder is paused (GC pause, VM migration, a slow disk): the
holder wakes up believing it still holds it, while another client has taken it. The lock
alone cannot stop the late write; the storage can, if each write carries the lock's
fencing token and the storage refuses tokens older than the newest it has seen.

    FENCELOCK_URL=redis://127.0.0.1:6379 python fencing.py
"""

from __future__ import annotations

import os
import threading
import time
from typing import Dict, Tuple

import fencelock


class StaleWrite(Exception):
    """A write carried a fencing token older than one the storage has already seen."""


class FencedStorage:
    """A toy storage that remembers the largest fencing token per resource."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._data: Dict[str, Tuple[int, str]] = {}

    def write(self, resource: str, value: str, fencing_token: int) -> None:
        """Stores ``value`` unless a write with a newer token came first."""
        with self._guard:
            newest, _ = self._data.get(resource, (0, ""))
            if fencing_token < newest:
                raise StaleWrite(f"token {fencing_token} < {newest} already seen")
            self._data[resource] = (fencing_token, value)

    def read(self, resource: str) -> str:
        """The stored value."""
        return self._data[resource][1]


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    storage = FencedStorage()
    # The demo uses sub-second TTLs; a fixed per-server timeout keeps it steady on a busy
    # machine (the default is ttl/20, within [0.01, 1] s).
    with fencelock.LockManager(url, key_prefix="example:", server_timeout=0.5) as manager:
        # Client 1 takes the lock, then "pauses" past its TTL (no auto-extension).
        slow = manager.acquire("account-42", ttl=0.3)
        print(f"client 1 holds the lock with fencing token {slow.fencing_token}, then pauses")
        time.sleep(0.5)

        # Client 2 takes the expired lock and writes.
        with manager.lock("account-42", ttl=5.0) as fast:
            print(f"client 2 holds the lock with fencing token {fast.fencing_token}")
            storage.write("account-42", "balance=100 (client 2)", fast.fencing_token)

        # Client 1 wakes up and writes with its old token: refused.
        try:
            storage.write("account-42", "balance=0 (client 1)", slow.fencing_token)
            print("client 1's late write went through: this must not happen")
        except StaleWrite as e:
            print(f"client 1's late write was refused: {e}")
        print(f"stored: {storage.read('account-42')}")
        print(f"client 1's lock lost: {slow.lost}")


if __name__ == "__main__":
    main()
