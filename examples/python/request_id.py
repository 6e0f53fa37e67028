"""The request-id lock of the Java write-ups (Jedis), on fencelock, across two processes.

The seed pattern:

    boolean tryGetDistributedLock(Jedis jedis, String lockKey, String requestId, int expireTime)
        -> jedis.set(lockKey, requestId, "NX", "PX", expireTime) == "OK"
    boolean releaseDistributedLock(Jedis jedis, String lockKey, String requestId)
        -> EVAL "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del',
           KEYS[1]) else return 0 end"

Here the request id is the lock's token: ``try_get_lock`` writes it as the key's value with
one try (a Jedis client using the same key excludes us and we it), ``detach()`` keeps only the
id, as the Java code does, and ``release_lock`` deletes the key only if it still holds that
id, from any process. What fencelock adds: the same calls over several servers (Redlock), a
fencing token per acquisition, and typed errors for unreachable servers instead of ``false``.
This script acquires in one process and releases from a second one, by request id.

    FENCELOCK_URL=redis://127.0.0.1:6379 python request_id.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import fencelock


def try_get_lock(manager: fencelock.LockManager, lock_key: str, request_id: str, expire_ms: int) -> bool:
    """``SET lockKey requestId NX PX expireTime`` as one try: whether it was acquired."""
    lock = manager.try_acquire(lock_key, expire_ms / 1000, token=request_id)
    if lock is None:
        return False
    lock.detach()  # keep only the request id: held until released by id or expired
    return True


def release_lock(manager: fencelock.LockManager, lock_key: str, request_id: str) -> bool:
    """Deletes ``lockKey`` only if it still holds ``requestId``: whether it did."""
    try:
        manager.release(lock_key, request_id)
        return True
    except fencelock.LockLost:  # expired, or held under another request id
        return False


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    with fencelock.LockManager(url, key_prefix="example:") as manager:
        if sys.argv[1:2] == ["--release"]:  # the second process
            key, request_id = sys.argv[2], sys.argv[3]
            print(f"process 2: release_lock({key!r}, {request_id!r}) -> {release_lock(manager, key, request_id)}")
            return

        key = "order:42"
        request_id = str(uuid.uuid4())
        print(f"process 1: try_get_lock({key!r}, request id, 30000) -> {try_get_lock(manager, key, request_id, 30_000)}")
        other = str(uuid.uuid4())
        print(f"another request: try_get_lock -> {try_get_lock(manager, key, other, 30_000)}")
        print(f"another request: release_lock with its own id -> {release_lock(manager, key, other)}")
        print(f"is it still locked? {manager.is_locked(key)}")

        # Hand the lock over: a second process releases it by request id.
        subprocess.run([sys.executable, __file__, "--release", key, request_id], check=True, env=os.environ)
        print(f"after process 2: locked={manager.is_locked(key)}")
        print(f"process 1 releasing again -> {release_lock(manager, key, request_id)}")


if __name__ == "__main__":
    main()
