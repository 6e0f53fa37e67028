"""fencelock: a distributed lock on Redis, with fencing tokens.

One Redis server gives the single-server lock; several independent servers give Redlock
(quorum N/2+1). Every acquisition carries a fencing token that grows with every acquisition
on the server set, so the storage you protect can refuse the late write of a holder whose
lock expired while it was paused.

    import fencelock

    manager = fencelock.LockManager("redis://127.0.0.1:6379")
    with manager.lock("invoices") as lock:
        ...  # auto-extended while the block runs; LockLost at exit if it was lost

The asyncio flavour is :mod:`fencelock.asyncio`. Times are in seconds; names and tokens are
``str`` or ``bytes``. fencelock's events (acquired, released, lock lost, ...) go to the
``logging`` logger ``"fencelock"``: see :func:`enable_logging`. See docs/python.md for the
whole guide.
"""

import atexit as _atexit
import os as _os

from fencelock import _logging, _native
from fencelock._election import Election, Leader, Term
from fencelock._family import RwLock, RwLockState, Semaphore, SemaphoreState
from fencelock._holder import Holder
from fencelock._logging import TRACE, enable_logging
from fencelock._native import (
    Lock,
    LockError,
    Observer,
    LockLost,
    LockManager,
    LockScope,
    NotAcquired,
    ServerError,
    ServerReport,
    Unavailable,
    WrongKind,
    __version__,
)

# Before the interpreter finalizes, stop threads from re-entering Python through fencelock
# (on CPython < 3.14 that would abort the process); after fork, forget the parent's threads.
_atexit.register(_native._at_exit)
# Runs before the hook above (atexit is last in, first out) and before logging's own
# shutdown (registered when logging was imported): log the events still queued.
_atexit.register(_logging._flush_at_exit)


def _after_fork_in_child() -> None:
    _native._after_fork_in_child()
    _logging._after_fork_in_child()


if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_after_fork_in_child)

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
    "ServerReport",
    "TRACE",
    "Term",
    "Unavailable",
    "WrongKind",
    "__version__",
    "enable_logging",
]
