"""Try once and skip: a job that many machines start at the same minute (cron), where only
one should run and the others should just go away.

    FENCELOCK_URL=redis://127.0.0.1:6379 python try_once.py
"""

from __future__ import annotations

import os

import fencelock


def run_job(manager: fencelock.LockManager, worker: str) -> bool:
    """Runs the job if no one else is running it; returns whether it ran."""
    lock = manager.try_acquire("nightly-cleanup", ttl=60.0, auto_extend=True)
    if lock is None:
        print(f"{worker}: another worker is on it, skipping")
        return False
    with lock:  # released at the end of the block
        print(f"{worker}: running the job (fencing token {lock.fencing_token})")
        # While we hold it, any other worker skips:
        assert manager.try_acquire("nightly-cleanup") is None
        print(f"{worker}: done")
    return True


def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    with fencelock.LockManager(url, key_prefix="example:") as manager:
        ran = run_job(manager, "worker-1")
        # A second worker arriving while the first holds it would skip; one arriving after
        # it finished runs the job again.
        ran_again = run_job(manager, "worker-2")
        print(f"worker-1 ran: {ran}, worker-2 ran: {ran_again}")


if __name__ == "__main__":
    main()
