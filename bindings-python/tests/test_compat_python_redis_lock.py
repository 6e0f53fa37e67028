"""fencelock.compat.python_redis_lock, the drop-in for python-redis-lock's ``redis_lock``: its
arguments and their errors (checked before any server call), acquire and release, blocking
with and without a timeout, extend, auto-renewal, locked/get_owner_id/reset/reset_all, the
context manager, the key and value python-redis-lock uses, and a rolling migration: the drop-in
and python-redis-lock itself (4.0.1, when installed: stage 20 installs it) exclude each other
on one name, and a waiter of either is woken by a release of the other."""

from __future__ import annotations

import gc
import threading
import time
import warnings
from typing import Any, Iterator, List

import pytest
import redis

from fencelock.compat import python_redis_lock as redis_lock
from redis_fixture import RedisServer


@pytest.fixture
def conn(server: RedisServer) -> Iterator["redis.Redis"]:
    client = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
    yield client
    client.close()


def test_bad_arguments_raise_the_librarys_errors_before_any_call(conn: "redis.Redis", name: str) -> None:
    with pytest.raises(ValueError, match="auto_renewal"):
        redis_lock.Lock(conn, name, auto_renewal=True)
    with pytest.raises(ValueError, match="negative expire"):
        redis_lock.Lock(conn, name, expire=-1)
    with pytest.raises(TypeError, match="Incorrect type for `id`"):
        redis_lock.Lock(conn, name, id=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="StrictRedis"):
        redis_lock.Lock(object(), name)
    # strict=False: nothing is asked of the client when the lock is made.
    assert redis_lock.Lock(object(), name, expire="12", strict=False)._expire == 12
    lock = redis_lock.Lock(conn, name, expire=5)
    with pytest.raises(redis_lock.TimeoutNotUsable):
        lock.acquire(blocking=False, timeout=1)
    with pytest.raises(redis_lock.InvalidTimeout):
        lock.acquire(timeout=-1)
    with pytest.raises(redis_lock.TimeoutTooLarge):
        lock.acquire(timeout=10)
    with pytest.raises(TypeError, match="expire"):
        redis_lock.Lock(conn, name).extend()
    assert not lock.locked()


def test_the_key_is_lock_name_holding_the_id_and_the_lock_excludes(conn: "redis.Redis", name: str) -> None:
    a = redis_lock.Lock(conn, name, expire=10, id="first")
    assert a.acquire()
    assert conn.get("lock:" + name) == b"first"
    assert a.get_owner_id() == "first" and a.locked()
    assert 0 < conn.ttl("lock:" + name) <= 10
    assert a.fencing_token is not None and a.fencing_token > 0
    with pytest.raises(redis_lock.AlreadyAcquired):
        a.acquire()
    b = redis_lock.Lock(conn, name, expire=10)
    assert not b.acquire(blocking=False)
    started = time.monotonic()
    assert not b.acquire(timeout=1)
    assert time.monotonic() - started >= 0.9
    a.release()
    assert not a.locked() and a.get_owner_id() is None
    # python-redis-lock's wake-up signal, expiring after signal_expire (1000 ms).
    assert conn.llen("lock-signal:" + name) == 1
    assert 0 < conn.pttl("lock-signal:" + name) <= 1000
    with pytest.raises(redis_lock.NotAcquired):
        a.release()
    assert b.acquire(blocking=False)
    b.release()


def test_a_waiter_is_woken_by_the_release(conn: "redis.Redis", name: str) -> None:
    holder = redis_lock.Lock(conn, name, expire=10)
    assert holder.acquire()
    got: List[float] = []

    def wait() -> None:
        waiter = redis_lock.Lock(conn, name, expire=10)
        assert waiter.acquire()
        got.append(time.monotonic())
        waiter.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    assert not got
    released = time.monotonic()
    holder.release()
    t.join(10)
    assert got and got[0] - released < 2.0


def test_default_ids_share_their_first_16_characters_so_waiters_share_one_subscription(
    conn: "redis.Redis", name: str
) -> None:
    ids = [redis_lock.Lock(conn, name).id for _ in range(50)]
    assert len(set(ids)) == 50 and {len(i) for i in ids} == {24}
    assert len({i[:16] for i in ids}) == 1

    def subscribes() -> int:
        return int(conn.info("commandstats").get("cmdstat_subscribe", {}).get("calls", 0))

    before = subscribes()
    holder = redis_lock.Lock(conn, name, expire=10)
    assert holder.acquire()
    # Six locks wait in turn: each but the first is refused, waits in line and is woken by
    # the release before it.
    def take() -> None:
        lock = redis_lock.Lock(conn, name, expire=10)
        assert lock.acquire(timeout=8)
        lock.release()

    threads = [threading.Thread(target=take) for _ in range(6)]
    for t in threads:
        t.start()
    def in_line() -> int:
        return sum(int(conn.zcard(k)) for k in conn.keys(f"lock:fencelock:*:queue:{name}"))

    deadline = time.monotonic() + 5
    while in_line() < 6:
        assert time.monotonic() < deadline, f"{in_line()} of 6 locks in line"
        time.sleep(0.01)
    holder.release()
    for t in threads:
        t.join(10)
    sent = subscribes() - before
    assert 1 <= sent <= 2, f"{sent} SUBSCRIBE for 6 waiting locks"


def test_extend_and_auto_renewal(conn: "redis.Redis", name: str) -> None:
    lock = redis_lock.Lock(conn, name, expire=2)
    assert lock.acquire()
    lock.extend(expire=30)
    assert conn.ttl("lock:" + name) > 20
    lock.release()
    with pytest.raises(redis_lock.NotAcquired):
        lock.extend()
    renewed = redis_lock.Lock(conn, name, expire=1, auto_renewal=True)
    with renewed:
        time.sleep(2.5)  # longer than expire: still held, renewed in the background
        assert renewed.get_owner_id() == renewed.id
    assert not renewed.locked()


def test_expire_none_is_a_lease_kept_while_held(conn: "redis.Redis", name: str) -> None:
    lock = redis_lock.Lock(conn, name)
    assert lock.acquire()
    assert 0 < conn.pttl("lock:" + name) <= redis_lock.Lock.lease_ttl * 1000
    with pytest.raises(redis_lock.NotExpirable):
        lock.extend(expire=1000)  # a lock without expiry, as python-redis-lock says
    lock.release()


def test_a_lock_released_elsewhere_by_its_id(conn: "redis.Redis", name: str) -> None:
    lock = redis_lock.Lock(conn, name, expire=10, id=b"job-7")
    assert lock.acquire()
    redis_lock.Lock(conn, name, id="job-7").release()
    assert not lock.locked()


def test_context_manager_reset_and_reset_all(conn: "redis.Redis", name: str) -> None:
    with redis_lock.Lock(conn, name, expire=10) as held:
        assert held.locked()
        blocked = redis_lock.Lock(conn, name, expire=10, blocking=False)
        with pytest.raises(redis_lock.NotAcquired):
            with blocked:
                pass
    assert not held.locked()
    held = redis_lock.Lock(conn, name, expire=10)
    assert held.acquire()
    redis_lock.Lock(conn, name).reset()
    assert not held.locked()
    with pytest.raises(redis_lock.NotAcquired):
        held.release()  # reset under it
    others = [redis_lock.Lock(conn, f"{name}-{i}", expire=10) for i in range(3)]
    for other in others:
        assert other.acquire()
    conn.set("lock:left-by-a-crash", "x")  # an old library's lock whose holder died
    own_keys = conn.keys("lock:fencelock:*")
    assert own_keys  # the fencing counter, at least
    redis_lock.reset_all(conn)
    assert not any(other.locked() for other in others)
    assert conn.get("lock:left-by-a-crash") is None
    assert conn.exists(*own_keys) > 0  # fencelock's own keys are not touched


def test_rolling_migration_with_python_redis_lock_itself(conn: "redis.Redis", name: str) -> None:
    original: Any = pytest.importorskip("redis_lock")
    old = original.Lock(conn, name, expire=10)
    assert old.acquire(blocking=False)
    new = redis_lock.Lock(conn, name, expire=10)
    assert not new.acquire(blocking=False)
    old.release()
    assert new.acquire(blocking=False)
    assert not original.Lock(conn, name, expire=10).acquire(blocking=False)
    # An old waiter blocks on the signal list: the drop-in's release pushes it.
    woke: List[bool] = []

    def old_waiter() -> None:
        waiter = original.Lock(conn, name, expire=10)
        woke.append(waiter.acquire(timeout=8))
        waiter.release()

    t = threading.Thread(target=old_waiter)
    t.start()
    time.sleep(0.3)
    released = time.monotonic()
    new.release()
    t.join(10)
    assert woke == [True] and time.monotonic() - released < 5
    # A drop-in waiter behind an old holder: the old release publishes nothing, so the
    # drop-in's waiter notices at its next retry of the key (within a second or two).
    old = original.Lock(conn, name, expire=10)
    assert old.acquire(blocking=False)
    got: List[float] = []

    def new_waiter() -> None:
        waiter = redis_lock.Lock(conn, name, expire=10)
        assert waiter.acquire(timeout=8)
        got.append(time.monotonic())
        waiter.release()

    t = threading.Thread(target=new_waiter)
    t.start()
    time.sleep(0.3)
    released = time.monotonic()
    old.release()
    t.join(10)
    assert got, "the drop-in's waiter never got the lock the old library released"
    print(f"drop-in waiter behind python-redis-lock: got it {got[0] - released:.2f} s after the release")


def test_the_manager_is_one_per_client_under_the_lock_prefix(conn: "redis.Redis", name: str) -> None:
    m = redis_lock.manager_for(conn)
    assert m is redis_lock.manager_for(conn)
    lock = redis_lock.Lock(conn, name, expire=10)
    assert lock.acquire()
    assert m.is_locked(name)
    remaining = m.remaining(name)
    assert remaining is not None and 0 < remaining <= 10
    lock.release()
    assert not m.is_locked(name)


def test_a_lock_dropped_while_held_expires_silently(conn: "redis.Redis", name: str) -> None:
    lock = redis_lock.Lock(conn, name, expire=1, auto_renewal=True)
    assert lock.acquire()
    gc.collect()  # what earlier tests left
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fencelock's own drop warning would fail here
        del lock
        gc.collect()
    other = redis_lock.Lock(conn, name, expire=5)
    started = time.monotonic()
    assert other.acquire(timeout=5)  # its renewal stopped: the key expires after its TTL
    assert time.monotonic() - started < 4
    other.release()


def test_the_suites_expected_failures_are_the_ones_docs_migrating_explains() -> None:
    import pathlib
    import re
    import sys

    here = pathlib.Path(__file__).resolve().parent
    sys.path.insert(0, str(here / "python_redis_lock_suite"))
    try:
        import fencelock_prl_suite
    finally:
        sys.path.pop(0)
    doc = (here.parents[1] / "docs" / "migrating.md").read_text()
    section = doc.split("### python-redis-lock's own tests", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(tests/[^`]+)` \|", section, re.M))
    assert listed == set(fencelock_prl_suite.EXPECTED_FAILURES), (listed, fencelock_prl_suite.EXPECTED_FAILURES)
