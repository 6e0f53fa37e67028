"""A job that outlives its TTL, kept alive by auto-extension.

A short TTL means a crashed worker's lock frees itself quickly; auto-extension (on by default
in ``manager.lock(...)``) extends it every ttl/3 for as long as the job runs. If the lock is
lost anyway (Redis flushed, network partition longer than the TTL), ``lock.lost`` turns true
so the job can stop early, and leaving the block raises ``LockLost``.

    FENCELOCK_URL=redis://127.0.0.1:6379 python long_job.py
"""

from __future__ import annotations

import os
import time

import fencelock


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    ttl = 1.0
    # The demo uses sub-second TTLs; a fixed per-server timeout keeps it steady on a busy
    # machine (the default is ttl/20, within [0.01, 1] s).
    with fencelock.LockManager(url, key_prefix="example:", server_timeout=0.5) as manager:
        with manager.lock("reindex", ttl=ttl) as lock:
            for step in range(5):
                if lock.lost:
                    print("lock lost: stopping before doing unprotected work")
                    break
                time.sleep(0.5)  # one step of the job: 2.5 s in all, well past the TTL
                print(f"step {step + 1}/5 done, lock still valid for {lock.validity:.2f} s")
            # Another worker cannot take it meanwhile:
            assert manager.try_acquire("reindex") is None
        print(f"job finished after {5 * 0.5:.1f} s with a {ttl:.1f} s TTL; lock released")
        # Without auto-extension the lock would have expired after one second:
        plain = manager.acquire("reindex-no-extension", ttl=0.3)
        time.sleep(0.5)
        print(f"without auto-extension: lost={plain.lost}")
        try:
            plain.release()
        except fencelock.LockLost as e:
            print(f"release reports it: LockLost: {e}")


if __name__ == "__main__":
    main()
