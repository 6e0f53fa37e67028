#!/usr/bin/env python3
"""fencelock benchmark runner for Python (issue #8).

Runs ONE scenario for ONE implementation against Redis servers that are already running and
prints one JSON object as the last line of stdout (everything else goes to stderr).

    runner.py cycle   --impl IMPL --servers URL[,URL...] --duration-ms D [--ttl-ms 10000]
                      [--name NAME] [--samples]
    runner.py contend --impl IMPL --servers URLS --name NAME --hold-ms H --duration-ms D
                      --start-at-ms EPOCH_MS --worker ID [--ttl-ms 10000]
    runner.py scale   --impl IMPL --servers URL --tasks K --duration-ms D [--ttl-ms 10000]

IMPL: ours, ours-asyncio, redis-py, redis-py-asyncio, python-redis-lock,
python-redis-lock-dropin (the same code on fencelock.compat.python_redis_lock), pottery,
pottery-asyncio, floor, floor-asyncio. `scale` (K asyncio tasks in one event loop, each
cycling a name of its own) runs the asyncio impls; `hold` is Rust/Node only. Bad flags, an
unknown impl or an impl that cannot run the scenario (redis-py / python-redis-lock with
several servers, a sync impl in `scale`): exit 2.

Standard library plus the packages pinned in requirements.txt; CPython 3.11+.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import math
import os
import sys
import threading
import time
from typing import Any, Callable, Optional

LANG = "python"
SYNC_IMPLS = ("ours", "redis-py", "python-redis-lock", "python-redis-lock-dropin", "pottery", "floor")
ASYNC_IMPLS = ("ours-asyncio", "redis-py-asyncio", "pottery-asyncio", "floor-asyncio")
IMPLS = SYNC_IMPLS + ASYNC_IMPLS
SINGLE_SERVER_ONLY = ("redis-py", "redis-py-asyncio", "python-redis-lock", "python-redis-lock-dropin")
WARMUP_CYCLES = 50
# After a failed cycle, pause this long so that a dead server does not turn the loop into a
# hot spin on a shared machine (the failure still counts; the pause is not in its latency).
ERROR_PAUSE_S = 0.001
# The floor's retry interval while waiting in `contend`: redis-py Lock's default `sleep`.
FLOOR_RETRY_S = 0.1
# How long past the end of `contend` a worker keeps waiting for the lock before it gives up.
WAIT_PAST_END_S = 5.0

RELEASE_LUA = (
    'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) '
    "else return 0 end"
)


class UsageError(Exception):
    """Exit code 2 with this message on stderr."""


def log(msg: str) -> None:
    print(f"runner.py: {msg}", file=sys.stderr, flush=True)


def new_token() -> str:
    return os.urandom(16).hex()


def majority(n: int) -> int:
    return n // 2 + 1


# --------------------------------------------------------------------------------------------
# Implementations. Sync ones expose try_acquire(name) -> handle | None, acquire(name) -> handle
# (waiting without giving up) and release(handle) (raises when the lock was not released);
# the asyncio ones expose the same as coroutines. Every call may raise on connection errors.


class Ours:
    def __init__(self, servers: list[str], ttl_s: float) -> None:
        import fencelock

        self.ttl = ttl_s
        self.m = fencelock.LockManager(servers[0] if len(servers) == 1 else servers)

    def try_acquire(self, name: str) -> Any:
        return self.m.try_acquire(name, self.ttl)

    def acquire(self, name: str) -> Any:
        return self.m.acquire(name, self.ttl)  # wait=None: until acquired, default retries

    def release(self, lock: Any) -> None:
        lock.release()


class OursAsyncio:
    def __init__(self, servers: list[str], ttl_s: float) -> None:
        import fencelock.asyncio

        self.ttl = ttl_s
        self.m = fencelock.asyncio.LockManager(servers[0] if len(servers) == 1 else servers)

    async def try_acquire(self, name: str) -> Any:
        return await self.m.try_acquire(name, self.ttl)

    async def acquire(self, name: str) -> Any:
        return await self.m.acquire(name, self.ttl)

    async def release(self, lock: Any) -> None:
        await lock.release()


class RedisPy:
    """redis.lock.Lock through r.lock(name, timeout=ttl_s), as redis-py documents it."""

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        import redis

        self._use(redis.Redis.from_url(servers[0]), ttl_s)

    def _use(self, client: Any, ttl_s: float) -> None:
        self.r = client
        self.ttl = ttl_s
        self.locks: dict[str, Any] = {}

    def _lock(self, name: str) -> Any:
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = self.r.lock(name, timeout=self.ttl)
        return lock

    def try_acquire(self, name: str) -> Any:
        lock = self._lock(name)
        return lock if lock.acquire(blocking=False) else None

    def acquire(self, name: str) -> Any:
        lock = self._lock(name)
        if not lock.acquire():  # blocking, blocking_timeout=None: waits for ever (sleep 0.1)
            raise RuntimeError("redis-py Lock.acquire returned False")
        return lock

    def release(self, lock: Any) -> None:
        lock.release()


class _AsyncLockObjects:
    """The calls of a library whose asyncio lock objects have `acquire(blocking=)` and
    `release()`: one object per name, from the class's `_lock(name)`."""

    what = ""
    _lock: Callable[[str], Any]

    async def try_acquire(self, name: str) -> Any:
        lock = self._lock(name)
        return lock if await lock.acquire(blocking=False) else None

    async def acquire(self, name: str) -> Any:
        lock = self._lock(name)
        if not await lock.acquire():
            raise RuntimeError(f"{self.what}.acquire returned False")
        return lock

    async def release(self, lock: Any) -> None:
        await lock.release()


class RedisPyAsyncio(_AsyncLockObjects, RedisPy):
    """redis.asyncio.lock.Lock through r.lock(name, timeout=ttl_s), as redis-py documents it,
    over one redis.asyncio client (its connection pool: one connection per call in flight;
    the pool's default limit refuses the 256 tasks of `scale` with MaxConnectionsError, so
    it is raised above any task count the benchmark uses)."""

    what = "redis-py asyncio Lock"

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        from redis.asyncio import Redis

        self._use(Redis.from_url(servers[0], max_connections=4096), ttl_s)


class PythonRedisLock:
    """redis_lock.Lock(conn, name, expire=s). `expire` is whole seconds in this library."""

    module = "redis_lock"

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        import redis

        self.r = redis.Redis.from_url(servers[0])
        self.expire = max(1, round(ttl_s))
        self.locks: dict[str, Any] = {}
        # It logs a WARNING for every failed non-blocking acquire; keep stderr readable.
        logging.getLogger("redis_lock").setLevel(logging.ERROR)

    def _lock(self, name: str) -> Any:
        lock = self.locks.get(name)
        if lock is None:
            redis_lock = importlib.import_module(self.module)
            lock = self.locks[name] = redis_lock.Lock(self.r, name, expire=self.expire)
        return lock

    def try_acquire(self, name: str) -> Any:
        lock = self._lock(name)
        return lock if lock.acquire(blocking=False) else None

    def acquire(self, name: str) -> Any:
        lock = self._lock(name)
        if not lock.acquire(blocking=True):  # timeout=None: BLPOP on the release signal
            raise RuntimeError("redis_lock.Lock.acquire returned False")
        return lock

    def release(self, lock: Any) -> None:
        lock.release()


class PythonRedisLockDropIn(PythonRedisLock):
    """The same code on fencelock's drop-in (issue 55 item 4): only the import differs."""

    module = "fencelock.compat.python_redis_lock"


def _quiet_pottery() -> None:
    # pottery logs every Redis error of a master with logger.exception (a traceback each):
    # with a killed server that floods stderr. Errors are still counted by the runner.
    logging.getLogger("pottery").setLevel(logging.CRITICAL)


class _PotteryLocks:
    """One pottery lock object per name (pottery keeps the lock's token in the object)."""

    def __init__(self, masters: set[Any], ttl_s: float, make: Any) -> None:
        _quiet_pottery()
        self.masters = masters
        self.ttl = ttl_s
        self.make = make
        self.locks: dict[str, Any] = {}

    def _lock(self, name: str) -> Any:
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = self.make(
                key=name, masters=self.masters, auto_release_time=self.ttl
            )
        return lock


class Pottery(_PotteryLocks):
    """pottery.Redlock(key=name, masters={redis.Redis...}, auto_release_time=ttl_s)."""

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        import redis
        from pottery import Redlock

        super().__init__({redis.Redis.from_url(u) for u in servers}, ttl_s, Redlock)

    def try_acquire(self, name: str) -> Any:
        lock = self._lock(name)
        return lock if lock.acquire(blocking=False) else None

    def acquire(self, name: str) -> Any:
        lock = self._lock(name)
        if not lock.acquire():  # blocking=True, timeout=-1: for ever
            raise RuntimeError("pottery Redlock.acquire returned False")
        return lock

    def release(self, lock: Any) -> None:
        lock.release()


class PotteryAsyncio(_PotteryLocks, _AsyncLockObjects):
    """pottery.AIORedlock with redis.asyncio clients."""

    what = "pottery AIORedlock"

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        from pottery import AIORedlock
        from redis.asyncio import Redis as AIORedis

        super().__init__({AIORedis.from_url(u) for u in servers}, ttl_s, AIORedlock)


def _floor_clients(servers: list[str], asyncio_flavour: bool) -> list[Any]:
    # The floor is the bare cost of SET NX PX + EVALSHA: no client-side retries (redis-py's
    # default client retries a failed command 10 times with backoff up to 1 s, which would
    # make a dead server cost seconds per cycle and measure the retry policy, not the floor).
    if asyncio_flavour:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
    else:
        from redis import Redis
        from redis.retry import Retry
    from redis.backoff import NoBackoff

    return [Redis.from_url(u, retry=Retry(NoBackoff(), 0)) for u in servers]


class Floor:
    """redis-py (hiredis parser) SET key token NX PX ttl, then EVALSHA compare-and-delete;
    with several servers, each step goes to the servers one after the other; success when a
    majority answered OK."""

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        import redis

        if not redis.utils.HIREDIS_AVAILABLE:
            log("warning: hiredis is not installed; the floor uses the pure-Python parser")
        self.clients = _floor_clients(servers, False)
        self.scripts = [c.register_script(RELEASE_LUA) for c in self.clients]  # EVALSHA
        self.px = max(1, round(ttl_s * 1000))
        self.need = majority(len(servers))

    def _set_all(self, name: str, token: str) -> int:
        ok = 0
        for c in self.clients:
            try:
                ok += bool(c.set(name, token, nx=True, px=self.px))
            except Exception:
                pass
        return ok

    def _del_all(self, name: str, token: str) -> int:
        ok = 0
        for s in self.scripts:
            try:
                ok += s(keys=[name], args=[token]) == 1
            except Exception:
                pass
        return ok

    def try_acquire(self, name: str) -> Any:
        token = new_token()
        if self._set_all(name, token) >= self.need:
            return (name, token)
        self._del_all(name, token)  # undo the minority it won
        return None

    def acquire(self, name: str) -> Any:
        while True:
            handle = self.try_acquire(name)
            if handle is not None:
                return handle
            time.sleep(FLOOR_RETRY_S)

    def release(self, handle: Any) -> None:
        if self._del_all(*handle) < self.need:
            raise RuntimeError("floor release: no majority deleted the key")


class FloorAsyncio:
    """redis.asyncio (hiredis parser): the parallel floor, each step sent to every server at
    once with asyncio.gather; success when a majority answered OK."""

    def __init__(self, servers: list[str], ttl_s: float) -> None:
        self.clients = _floor_clients(servers, True)
        self.scripts = [c.register_script(RELEASE_LUA) for c in self.clients]
        self.px = max(1, round(ttl_s * 1000))
        self.need = majority(len(servers))

    async def _set_all(self, name: str, token: str) -> int:
        res = await asyncio.gather(
            *(c.set(name, token, nx=True, px=self.px) for c in self.clients),
            return_exceptions=True,
        )
        return sum(1 for r in res if r is True)

    async def _del_all(self, name: str, token: str) -> int:
        res = await asyncio.gather(
            *(s(keys=[name], args=[token]) for s in self.scripts), return_exceptions=True
        )
        return sum(1 for r in res if r == 1)

    async def try_acquire(self, name: str) -> Any:
        token = new_token()
        if await self._set_all(name, token) >= self.need:
            return (name, token)
        await self._del_all(name, token)
        return None

    async def acquire(self, name: str) -> Any:
        while True:
            handle = await self.try_acquire(name)
            if handle is not None:
                return handle
            await asyncio.sleep(FLOOR_RETRY_S)

    async def release(self, handle: Any) -> None:
        if await self._del_all(*handle) < self.need:
            raise RuntimeError("floor release: no majority deleted the key")


FACTORIES: dict[str, Callable[[list[str], float], Any]] = {
    "ours": Ours,
    "ours-asyncio": OursAsyncio,
    "redis-py": RedisPy,
    "redis-py-asyncio": RedisPyAsyncio,
    "python-redis-lock": PythonRedisLock,
    "python-redis-lock-dropin": PythonRedisLockDropIn,
    "pottery": Pottery,
    "pottery-asyncio": PotteryAsyncio,
    "floor": Floor,
    "floor-asyncio": FloorAsyncio,
}


# --------------------------------------------------------------------------------------------
# Scenarios


def percentiles(lat: list[float]) -> dict[str, Optional[float]]:
    if not lat:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    s = sorted(lat)

    def rank(p: float) -> float:  # nearest rank
        return round(s[max(0, math.ceil(p * len(s)) - 1)], 1)

    return {"p50": rank(0.50), "p90": rank(0.90), "p99": rank(0.99), "max": round(s[-1], 1)}


class CycleStats:
    def __init__(self, want_samples: bool) -> None:
        self.ok = 0
        self.errors = 0
        self.lat: list[float] = []  # successful cycles only
        self.samples: Optional[list[list[Any]]] = [] if want_samples else None
        self.t0 = 0
        self.loop_start_ms = 0.0  # wall clock when the timed loop began

    def add(self, start_ns: int, end_ns: int, ok: bool) -> None:
        lat_us = (end_ns - start_ns) / 1000
        if ok:
            self.ok += 1
            self.lat.append(lat_us)
        else:
            self.errors += 1
        if self.samples is not None:
            self.samples.append(
                [round((start_ns - self.t0) / 1e6, 3), round(lat_us, 1), 1 if ok else 0]
            )

    def result(self, impl: str, n: int, elapsed_s: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scenario": "cycle",
            "impl": impl,
            "lang": LANG,
            "servers": n,
            "ops": self.ok,
            "errors": self.errors,
            "elapsed_s": round(elapsed_s, 6),
            "ops_per_s": round(self.ok / elapsed_s, 3) if elapsed_s > 0 else 0.0,
            "lat_us": percentiles(self.lat),
            "loop_start_ms": self.loop_start_ms,
        }
        if self.samples is not None:
            out["samples"] = self.samples
        return out


def _cycle_once_sync(impl: Any, name: str) -> bool:
    try:
        lock = impl.try_acquire(name)
    except Exception as e:  # connection errors and the like: counted, never fatal
        _note(e)
        return False
    if lock is None:
        return False
    try:
        impl.release(lock)
        return True
    except Exception as e:
        _note(e)
        return False


async def _cycle_once_async(impl: Any, name: str) -> bool:
    try:
        lock = await impl.try_acquire(name)
    except Exception as e:
        _note(e)
        return False
    if lock is None:
        return False
    try:
        await impl.release(lock)
        return True
    except Exception as e:
        _note(e)
        return False


_seen_errors: set[str] = set()


def _note(e: BaseException) -> None:
    """Log each distinct kind of error once on stderr."""
    key = type(e).__name__
    if key not in _seen_errors:
        _seen_errors.add(key)
        log(f"error (first of its kind): {key}: {e}")


def cycle_sync(args: argparse.Namespace, impl: Any, n: int) -> dict[str, Any]:
    for _ in range(WARMUP_CYCLES):
        _cycle_once_sync(impl, args.name)
    st = CycleStats(args.samples)
    clock = time.perf_counter_ns
    st.loop_start_ms = time.time_ns() / 1e6
    print("LOOP-START", file=sys.stderr, flush=True)  # the orchestrator times a kill from here
    st.t0 = t0 = clock()
    end = t0 + args.duration_ms * 1_000_000
    now = t0
    while now < end:
        ok = _cycle_once_sync(impl, args.name)
        after = clock()
        st.add(now, after, ok)
        if not ok:
            time.sleep(ERROR_PAUSE_S)
            after = clock()
        now = after
    return st.result(args.impl, n, (now - t0) / 1e9)


async def cycle_async(args: argparse.Namespace, impl: Any, n: int) -> dict[str, Any]:
    for _ in range(WARMUP_CYCLES):
        await _cycle_once_async(impl, args.name)
    st = CycleStats(args.samples)
    clock = time.perf_counter_ns
    st.loop_start_ms = time.time_ns() / 1e6
    print("LOOP-START", file=sys.stderr, flush=True)  # the orchestrator times a kill from here
    st.t0 = t0 = clock()
    end = t0 + args.duration_ms * 1_000_000
    now = t0
    while now < end:
        ok = await _cycle_once_async(impl, args.name)
        after = clock()
        st.add(now, after, ok)
        if not ok:
            await asyncio.sleep(ERROR_PAUSE_S)
            after = clock()
        now = after
    return st.result(args.impl, n, (now - t0) / 1e9)


def _wall_us() -> int:
    return time.time_ns() // 1000


class _Contention:
    """One worker's holds and errors in `contend`, and its watchdog.

    A wait still going on WAIT_PAST_END_S after the end is abandoned (a peer that livelocks must
    not hang the run), as the Rust and Node runners do. The peers' blocking acquires cannot be
    interrupted, so a timer thread does it: it writes the result so far, with
    `unfinished_wait`, and ends the process. No cost per acquire: one timer per run.
    """

    def __init__(self, args: argparse.Namespace, n: int, deadline_us: int) -> None:
        self.args = args
        self.n = n
        self.errors = 0
        self.holds: list[list[int]] = []
        self._lock = threading.Lock()
        self._done = False
        late_s = (deadline_us - _wall_us()) / 1e6 + WAIT_PAST_END_S
        self._timer = threading.Timer(max(0.0, late_s), self._abandon)
        self._timer.daemon = True
        self._timer.start()

    def result(self, unfinished_wait: bool) -> dict[str, Any]:
        return {
            "scenario": "contend",
            "impl": self.args.impl,
            "lang": LANG,
            "worker": self.args.worker,
            "servers": self.n,
            "errors": self.errors,
            "holds": list(self.holds),
            "unfinished_wait": unfinished_wait,
        }

    def finish(self) -> dict[str, Any]:
        """The result of a run whose last wait ended (the watchdog stands down)."""
        with self._lock:
            self._done = True
        self._timer.cancel()
        return self.result(False)

    def _abandon(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            log(f"worker {self.args.worker}: still waiting {WAIT_PAST_END_S:.0f} s after the end; abandoned")
            _emit(self.result(True))
            sys.stderr.flush()
            os._exit(0)


def _warmup_name(args: argparse.Namespace) -> str:
    return f"{args.name}-warmup-{args.worker}"


def contend_sync(args: argparse.Namespace, impl: Any, n: int) -> dict[str, Any]:
    for _ in range(WARMUP_CYCLES):
        _cycle_once_sync(impl, _warmup_name(args))
    start_s = args.start_at_ms / 1000
    delay = start_s - time.time()
    if delay > 0:
        time.sleep(delay)
    else:
        log(f"warning: start time already passed {-delay:.3f} s ago")
    deadline_us = (args.start_at_ms + args.duration_ms) * 1000
    hold_s = args.hold_ms / 1000
    run = _Contention(args, n, deadline_us)
    while _wall_us() < deadline_us:
        req = _wall_us()
        try:
            lock = impl.acquire(args.name)
        except Exception as e:
            _note(e)
            run.errors += 1
            time.sleep(ERROR_PAUSE_S)
            continue
        acq = _wall_us()
        time.sleep(hold_s)
        rel_start = _wall_us()
        try:
            impl.release(lock)
        except Exception as e:
            _note(e)
            run.errors += 1
        run.holds.append([req, acq, rel_start, _wall_us()])
    return run.finish()


async def contend_async(args: argparse.Namespace, impl: Any, n: int) -> dict[str, Any]:
    for _ in range(WARMUP_CYCLES):
        await _cycle_once_async(impl, _warmup_name(args))
    delay = args.start_at_ms / 1000 - time.time()
    if delay > 0:
        await asyncio.sleep(delay)
    else:
        log(f"warning: start time already passed {-delay:.3f} s ago")
    deadline_us = (args.start_at_ms + args.duration_ms) * 1000
    hold_s = args.hold_ms / 1000
    run = _Contention(args, n, deadline_us)
    while _wall_us() < deadline_us:
        req = _wall_us()
        try:
            lock = await impl.acquire(args.name)
        except Exception as e:
            _note(e)
            run.errors += 1
            await asyncio.sleep(ERROR_PAUSE_S)
            continue
        acq = _wall_us()
        await asyncio.sleep(hold_s)
        rel_start = _wall_us()
        try:
            await impl.release(lock)
        except Exception as e:
            _note(e)
            run.errors += 1
        run.holds.append([req, acq, rel_start, _wall_us()])
    return run.finish()


# --------------------------------------------------------------------------------------------
# Command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return v


def _nonneg_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="runner.py", description="fencelock benchmark runner (Python)")
    sub = p.add_subparsers(dest="scenario", required=True, parser_class=_Parser)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--impl", required=True)
        sp.add_argument("--servers", required=True, help="URL[,URL...]")
        sp.add_argument("--duration-ms", type=_positive_int, required=True)
        sp.add_argument("--ttl-ms", type=_positive_int, default=10000)

    c = sub.add_parser("cycle", help="uncontended try-acquire + release")
    common(c)
    c.add_argument("--name", default="bench")
    c.add_argument("--samples", action="store_true")

    k = sub.add_parser("contend", help="one worker of a contention run")
    common(k)
    k.add_argument("--name", default="bench")
    k.add_argument("--hold-ms", type=_nonneg_int, required=True)
    k.add_argument("--start-at-ms", type=_nonneg_int, required=True)
    k.add_argument("--worker", required=True)

    sc = sub.add_parser("scale", help="K asyncio tasks, each cycling a name of its own")
    common(sc)
    sc.add_argument("--tasks", type=_positive_int, required=True)

    return p


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] == "hold":
            raise UsageError("scenario 'hold' is not implemented in Python (Rust and Node only)")
        args = build_parser().parse_args(argv)
        if args.impl not in FACTORIES:
            raise UsageError(f"unknown impl {args.impl!r} (one of: {', '.join(IMPLS)})")
        # A comma separates URLs; one that does not start a URL (host:port) continues the
        # previous one (a cluster URL names several nodes).
        servers: list[str] = []
        for part in (s.strip() for s in args.servers.split(",") if s.strip()):
            if servers and "://" not in part:
                servers[-1] += "," + part
            else:
                servers.append(part)
        if not servers:
            raise UsageError("--servers: no URL given")
        if args.scenario == "scale" and args.impl not in ASYNC_IMPLS:
            raise UsageError(f"scale runs the asyncio impls ({', '.join(ASYNC_IMPLS)}), not {args.impl!r}")
        if args.impl in SINGLE_SERVER_ONLY and len(servers) != 1:
            raise UsageError(f"impl {args.impl!r} works with one server only, got {len(servers)}")
        try:
            worker = args.worker
            args.worker = int(worker) if worker.isdigit() else worker
        except AttributeError:
            pass
    except UsageError as e:
        print(f"runner.py: {e}", file=sys.stderr)
        return 2

    ttl_s = args.ttl_ms / 1000
    n = len(servers)
    is_async = args.impl in ASYNC_IMPLS
    if args.scenario == "scale":
        from scale import scale_async

        async def run(args: argparse.Namespace, impl: Any, n: int) -> dict[str, Any]:
            return await scale_async(args, impl, n, _cycle_once_async)

    elif args.scenario == "cycle":
        run = cycle_async if is_async else cycle_sync
    else:
        run = contend_async if is_async else contend_sync

    if is_async:

        async def go() -> dict[str, Any]:
            impl = FACTORIES[args.impl](servers, ttl_s)
            return await run(args, impl, n)

        result = asyncio.run(go())
    else:
        impl = FACTORIES[args.impl](servers, ttl_s)
        result = run(args, impl, n)
    _emit(result)
    return 0


def _emit(result: dict[str, Any]) -> None:
    """Writes the result: one JSON object, the last line of stdout."""
    sys.stdout.write(json.dumps(result, separators=(",", ":")) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
