"""Drop-in replacements for the locks of other Redis libraries, built on fencelock.

- :mod:`fencelock.compat.redis_py`: ``Lock`` and ``AsyncLock``, drop-ins for redis-py's
  ``redis.lock.Lock`` and ``redis.asyncio.lock.Lock``::

      from fencelock.compat.redis_py import Lock

      lock = r.lock("resource", timeout=10, lock_class=Lock)

- :mod:`fencelock.compat.python_redis_lock`: python-redis-lock's ``redis_lock`` module
  (``Lock``, ``reset_all``, its exceptions)::

      from fencelock.compat import python_redis_lock as redis_lock

  They need redis-py (``pip install fencelock[redis]``); importing this package does not.

See docs/migrating.md for what changes when you migrate, and why.
"""

__all__: list[str] = []
