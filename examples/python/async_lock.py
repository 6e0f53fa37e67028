"""The asyncio flavour: ``async with``, a decorator, and a task that gives up waiting.

    FENCELOCK_URL=redis://127.0.0.1:6379 python async_lock.py
"""

from __future__ import annotations

import asyncio
import os

import fencelock.asyncio


async def main() -> None:
    url = os.environ.get("FENCELOCK_URL", "redis://127.0.0.1:6379")
    async with fencelock.asyncio.LockManager(url, key_prefix="example:") as manager:

        @manager.locked("inventory", ttl=5.0)
        async def reserve(item: str) -> str:
            await asyncio.sleep(0.05)  # one at a time, across every process using the lock
            return f"reserved {item}"

        print(await asyncio.gather(reserve("a"), reserve("b"), reserve("c")))

        async with manager.lock("inventory") as lock:
            print(f"holding {lock.name!r}, fencing token {lock.fencing_token}")
            # Another task waiting for it gives up after 0.2 s (the wait is cancelled cleanly).
            try:
                await asyncio.wait_for(manager.acquire("inventory"), timeout=0.2)
            except asyncio.TimeoutError:
                print("the other task gave up waiting")


if __name__ == "__main__":
    asyncio.run(main())
