"""The ``RedisLock`` class of the Python write-ups, re-expressed on fencelock.

The seed class (redis-py underneath):

    class RedisLock:
        def __init__(self, redis_client, lock_name): ...          # identifier = uuid4()
        def acquire(self, acquire_timeout=10, lock_timeout=10):    # SET NX EX in a loop with
            ...                                                    # sleep(0.001); identifier or False
        def release(self): ...                                     # Lua GET == identifier -> DEL

Same constructor and methods here, so calling code does not change; the client argument is a
``fencelock.LockManager`` (one server, a Sentinel or Cluster URL, or several servers for
Redlock). What fencelock adds: waiting without polling (a release wakes the next waiter, in
the order they came, instead of a SET every millisecond), the validity rule (a lock granted
too late to be safe is not handed out), a fencing token, and ``release()`` that says whether
the lock was still held instead of failing silently.

    FENCELOCK_URL=redis://127.0.0.1:6379 python redis_lock_class.py
"""

from __future__ import annotations

import os
from typing import Optional, Union

import fencelock


class RedisLock:
    """A lock named ``lock_name`` taken through ``manager``, as the seed's class."""

    def __init__(self, manager: fencelock.LockManager, lock_name: str) -> None:
        self.manager = manager
        self.lock_name = f"lock:{lock_name}"
        self._lock: Optional[fencelock.Lock] = None

    @property
    def identifier(self) -> Optional[str]:
        """The token of the current hold (the seed's ``identifier``), or None."""
        token = self._lock.token if self._lock is not None else None
        return token if isinstance(token, str) else None

    @property
    def fencing_token(self) -> Optional[int]:
        """What fencelock adds: hand it to the storage, which refuses smaller ones."""
        return self._lock.fencing_token if self._lock is not None else None

    def acquire(self, acquire_timeout: float = 10, lock_timeout: float = 10) -> Union[str, bool]:
        """Waits up to ``acquire_timeout`` seconds for the lock, held for ``lock_timeout``
        seconds: the identifier, or False if another holder kept it all that time."""
        try:
            self._lock = self.manager.acquire(self.lock_name, lock_timeout, wait=acquire_timeout)
        except fencelock.NotAcquired:
            return False
        return self.identifier or False

    def release(self) -> bool:
        """Releases the lock if this object still holds it: whether it did (False when it
        expired meanwhile or another holder has it now)."""
        lock, self._lock = self._lock, None
        if lock is None:
            return False
        try:
            lock.release()
            return True
        except fencelock.LockLost:
            return False


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    with fencelock.LockManager(url, key_prefix="example:") as manager:
        first = RedisLock(manager, "inventory")
        second = RedisLock(manager, "inventory")
        print(f"first acquires: {bool(first.acquire(acquire_timeout=1, lock_timeout=0.5))}")
        print(f"second, waiting 0.1 s: {second.acquire(acquire_timeout=0.1, lock_timeout=5)}")
        # The first holder stalls past its lock_timeout; the second gets the lock then.
        print(f"second, waiting 3 s: {bool(second.acquire(acquire_timeout=3, lock_timeout=5))}")
        print(f"fencing tokens grow: {second.fencing_token is not None and first.fencing_token is not None and second.fencing_token > first.fencing_token}")
        print(f"the stale first holder's release: {first.release()}")
        print(f"the second still holds it: {manager.is_locked('lock:inventory')}")
        print(f"second releases: {second.release()}")


if __name__ == "__main__":
    main()
