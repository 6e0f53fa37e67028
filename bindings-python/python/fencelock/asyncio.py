"""fencelock for asyncio: the same API as :mod:`fencelock`, with ``async`` methods.

    import fencelock.asyncio

    manager = fencelock.asyncio.LockManager("redis://127.0.0.1:6379")
    async with manager.lock("invoices") as lock:
        ...  # auto-extended while the block runs; LockLost at exit if it was lost

The waits run on the manager's own runtime thread, never blocking the event loop.
Cancelling a task that waits in ``acquire`` (``asyncio.wait_for``, ``task.cancel()``, Ctrl-C
under ``asyncio.run``) abandons the acquisition cleanly: ``asyncio.CancelledError``
propagates and nothing stays locked.
"""

from fencelock._election import AsyncElection as Election
from fencelock._election import AsyncTerm as Term
from fencelock._election import Leader
from fencelock._family import AsyncRwLock as RwLock
from fencelock._family import AsyncSemaphore as Semaphore
from fencelock._family import RwLockState, SemaphoreState
from fencelock._holder import Holder
from fencelock._native import (
    AsyncLock as Lock,
    AsyncLockManager as LockManager,
    AsyncLockScope as LockScope,
    AsyncObserver as Observer,
    LockError,
    LockLost,
    NotAcquired,
    ServerError,
    Unavailable,
    WrongKind,
)

__all__ = [
    "Election",
    "Holder",
    "Lock",
    "LockError",
    "LockLost",
    "LockManager",
    "LockScope",
    "Leader",
    "NotAcquired",
    "Observer",
    "RwLock",
    "RwLockState",
    "Semaphore",
    "SemaphoreState",
    "ServerError",
    "Term",
    "Unavailable",
    "WrongKind",
]
