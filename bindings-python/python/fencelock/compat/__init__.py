"""Drop-in replacements for the locks of other Redis libraries, built on fencelock.

- :mod:`fencelock.compat.redis_py`: ``Lock`` and ``AsyncLock``, drop-ins for redis-py's
  ``redis.lock.Lock`` and ``redis.asyncio.lock.Lock``::

      from fencelock.compat.redis_py import Lock

      lock = r.lock("resource", timeout=10, lock_class=Lock)

  It needs redis-py (``pip install fencelock[redis]``); importing this package does not.

See docs/migrating.md for what changes when you migrate, and why.
"""

__all__: list[str] = []
