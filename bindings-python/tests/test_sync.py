"""The synchronous API: every public method of LockManager and Lock, on a real redis-server."""

from __future__ import annotations

import itertools
import re
import time

import pytest

import fencelock
import fencelock.asyncio
from helpers import wait_until
from redis_fixture import RedisServer


def test_acquire_returns_a_lock_whose_key_holds_its_token(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 10)
    assert isinstance(lock, fencelock.Lock)
    assert lock.name == name
    assert isinstance(lock.token, str) and re.fullmatch(r"[0-9a-f]{16}\.[0-9a-f-]{36}", lock.token)
    assert server.client().get(name) == lock.token.encode()
    assert isinstance(lock.fencing_token, int) and lock.fencing_token >= 1
    assert 9.0 < lock.validity <= 10.0
    assert 9000 < server.client().pttl(name) <= 10000
    assert lock.lost is False
    lock.release()
    assert server.client().get(name) is None
    assert lock.validity == 0.0 and lock.lost is False


def test_default_ttl_is_30_seconds(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    with manager.acquire(name):
        assert 29000 < server.client().pttl(name) <= 30000
    with manager.acquire(name, 5, wait=float("inf")):  # inf is no limit, like None
        pass


def test_fencing_tokens_grow_with_every_acquisition(manager: fencelock.LockManager, name: str) -> None:
    tokens = []
    for i in range(5):
        lock = manager.acquire(name, 5)
        tokens.append(lock.fencing_token)
        lock.release()
    assert tokens == sorted(tokens) and len(set(tokens)) == 5


def test_try_acquire_returns_none_while_held_and_a_lock_after_release(manager: fencelock.LockManager, name: str) -> None:
    holder = manager.acquire(name, 10)
    start = time.monotonic()
    assert manager.try_acquire(name, 10) is None
    assert time.monotonic() - start < 2.0
    holder.release()
    lock = manager.try_acquire(name, 10)
    assert lock is not None
    lock.release()


def test_acquire_with_a_wait_limit_raises_not_acquired(manager: fencelock.LockManager, name: str) -> None:
    holder = manager.acquire(name, 10)
    start = time.monotonic()
    with pytest.raises(fencelock.NotAcquired) as info:
        manager.acquire(name, 10, wait=0.3)
    elapsed = time.monotonic() - start
    assert 0.25 < elapsed < 3.0
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, fencelock.LockError)
    assert name in str(info.value)
    with pytest.raises(fencelock.NotAcquired):
        manager.acquire(name, 10, wait=0)
    holder.release()


def test_a_waiter_gets_the_lock_when_the_holder_releases(manager: fencelock.LockManager, name: str) -> None:
    import threading

    holder = manager.acquire(name, 30)
    got = []
    t = threading.Thread(target=lambda: got.append(manager.acquire(name, 5, wait=10)))
    t.start()
    time.sleep(0.2)  # let it start waiting; the test holds either way
    released_at = time.monotonic()
    holder.release()
    t.join(10)
    assert got, "the waiter did not get the lock"
    # Woken by the release notification, not by polling the 30 s TTL.
    assert time.monotonic() - released_at < 2.0
    got[0].release()


def test_names_and_tokens_come_back_as_the_type_given(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name.encode() + b"\xff\x00", 5, token=b"\x01tok")
    assert lock.name == name.encode() + b"\xff\x00"
    assert lock.token == b"\x01tok"
    assert server.client().get(name.encode() + b"\xff\x00") == b"\x01tok"
    lock.release()
    lock = manager.acquire(name, 5, token="my-token")
    assert lock.token == "my-token" and lock.name == name
    lock.release()
    lock = manager.acquire(bytearray(name.encode()), 5)
    assert lock.name == name.encode() and isinstance(lock.token, str)
    lock.release()


def test_a_caller_token_is_exclusive_unless_reentrant(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    first = manager.acquire(name, 2, token="same")
    # Another acquisition with the same token (another process given the same job id) is
    # refused, as SET NX with a request id is.
    with pytest.raises(fencelock.NotAcquired, match="reentrant") as refused:
        manager.acquire(name, 10, token="same", wait=0)
    assert [r.outcome for r in refused.value.servers] == ["held"]
    assert "this token" in refused.value.servers[0].detail
    assert manager.try_acquire(name, 10, token=b"same") is None
    assert server.client().pttl(name) <= 2000
    second = manager.acquire(name, 10, token="same", wait=0, reentrant=True)
    assert server.client().pttl(name) > 5000
    assert second.fencing_token > first.fencing_token
    second.release()
    with pytest.raises(fencelock.LockLost):
        first.release()


def test_a_failed_acquire_says_what_each_server_answered(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    server.client().set(name, "another-owner", px=60_000)
    with pytest.raises(fencelock.NotAcquired) as e:
        manager.acquire(name, 5, wait=0)
    (report,) = e.value.servers
    assert isinstance(report, fencelock.ServerReport)
    assert report.outcome == "held" and str(server.port) in report.server
    assert "another owner" in report.detail and "ServerReport(" in repr(report)
    with pytest.raises(ValueError):
        manager.acquire("", 5)
    assert fencelock.LockError("x").servers == ()


def test_key_prefix_goes_in_front_of_the_name(server: RedisServer, name: str) -> None:
    with fencelock.LockManager(server.url, key_prefix="app:") as m:
        with m.acquire(name, 5) as lock:
            assert server.client().get("app:" + name) == lock.token.encode()
            assert server.client().get(name) is None
    with fencelock.LockManager([server.url], key_prefix=b"b:", retry_delay=0.05, retry_jitter=0.0,
                               drift_factor=0.0, server_timeout=0.5) as m:
        with m.acquire(name, 5):
            assert server.client().exists(b"b:" + name.encode())


def test_extend_pushes_the_expiry_and_validity(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 1)
    lock.extend(20)
    assert server.client().pttl(name) > 15000
    assert lock.validity > 15
    lock.release()


def test_release_and_extend_of_a_released_lock_raise_lock_error(manager: fencelock.LockManager, name: str) -> None:
    lock = manager.acquire(name, 5)
    lock.release()
    with pytest.raises(fencelock.LockError, match="already released") as info:
        lock.release()
    assert type(info.value) is fencelock.LockError
    with pytest.raises(fencelock.LockError, match="already released"):
        lock.extend(5)
    # __exit__ after an explicit release is a no-op.
    with lock:
        pass


def test_lock_as_context_manager_releases_at_exit(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    with manager.acquire(name, 5) as lock:
        assert server.client().get(name) == lock.token.encode()
    assert server.client().get(name) is None
    with manager.acquire(name, 5) as lock:
        lock.release()
    assert server.client().get(name) is None


def test_release_by_name_and_token(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 10)
    with pytest.raises(fencelock.LockLost):
        manager.release(name, "not-the-token")
    assert server.client().get(name) == lock.token.encode()
    manager.release(name, lock.token)
    assert server.client().get(name) is None
    with pytest.raises(fencelock.LockLost):
        manager.release(name, lock.token)


def test_lock_scope_holds_auto_extends_and_releases(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    with manager.lock(name, 0.6) as lock:
        assert isinstance(lock, fencelock.Lock)
        token = lock.token.encode()
        # Well past the TTL: only auto-extension keeps it.
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert server.client().get(name) == token
            time.sleep(0.05)
        assert not lock.lost
    assert server.client().get(name) is None
    assert lock.validity == 0.0


def test_lock_scope_waits_and_can_give_up(manager: fencelock.LockManager, name: str) -> None:
    holder = manager.acquire(name, 10)
    with pytest.raises(fencelock.NotAcquired):
        with manager.lock(name, 5, wait=0.2):
            pytest.fail("entered a held lock")
    holder.release()
    scope = manager.lock(name, 5, wait=1)
    with scope:
        with pytest.raises(fencelock.LockError, match="already entered"):
            with scope:
                pass
    with scope:  # reusable once exited
        pass


def test_lock_scope_exception_in_block_propagates_and_releases(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    with pytest.raises(ZeroDivisionError):
        with manager.lock(name, 5):
            1 / 0
    assert server.client().get(name) is None


def test_locked_decorator_runs_the_function_under_the_lock(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    seen = []

    @manager.locked(name, 5, wait=2)
    def work(x: int) -> int:
        """Doc."""
        seen.append(server.client().get(name))
        return x * 2

    assert work(21) == 42
    assert seen[0] is not None
    assert work.__name__ == "work" and work.__doc__ == "Doc."
    assert server.client().get(name) is None

    async def coro() -> None:
        pass

    with pytest.raises(TypeError, match="fencelock.asyncio"):
        manager.locked(name)(coro)


def test_lock_lost_when_the_key_expires(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 0.2)
    wait_until(lambda: server.client().get(name) is None, what="the key to expire")
    assert lock.lost
    assert lock.validity == 0.0
    with pytest.raises(fencelock.LockLost):
        lock.extend(5)
    with pytest.raises(fencelock.LockLost):
        lock.release()


def test_lock_lost_when_the_key_is_deleted_behind_a_held_lock(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 10)
    server.client().delete(name)
    assert not lock.lost  # nobody has looked yet
    with pytest.raises(fencelock.LockLost):
        lock.extend(10)
    assert lock.lost
    with pytest.raises(fencelock.LockLost):
        lock.release()


def test_lock_scope_raises_lock_lost_at_exit_when_the_key_was_deleted(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    with pytest.raises(fencelock.LockLost):
        with manager.lock(name, 0.6) as lock:
            server.client().delete(name)
            wait_until(lambda: lock.lost, what="auto-extension to notice the loss")
    with pytest.raises(fencelock.LockLost):
        with manager.acquire(name, 10) as lock:
            server.client().set(name, "someone-else")
    assert server.client().get(name) == b"someone-else"


def test_lock_lost_during_a_failing_block_does_not_hide_its_exception(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    with pytest.raises(KeyError):
        with manager.lock(name, 5):
            server.client().delete(name)
            raise KeyError("the block's own error")


def test_auto_extend_on_acquire_keeps_the_lock(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 0.5, auto_extend=True)
    time.sleep(1.2)
    assert server.client().get(name) == lock.token.encode()
    assert not lock.lost
    lock.release()
    other = manager.try_acquire(name, 0.5, auto_extend=True)
    assert other is not None
    other.release()


def test_server_error_for_a_key_of_the_wrong_type(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    server.client().rpush(name, "x")
    with pytest.raises(fencelock.ServerError):
        manager.acquire(name, 5, wait=0.2)


def test_unavailable_when_the_server_is_down(server: RedisServer, name: str) -> None:
    m = fencelock.LockManager(server.url, server_timeout=0.2)
    server.kill()
    with pytest.raises(fencelock.Unavailable) as info:
        m.try_acquire(name, 5)
    assert isinstance(info.value, ConnectionError)
    assert str(server.port) in str(info.value)


def test_manager_close_and_context_manager(server: RedisServer, name: str) -> None:
    with fencelock.LockManager(server.url) as m:
        lock = m.acquire(name, 5)
    assert "closed" in repr(m)
    with pytest.raises(fencelock.LockError, match="closed"):
        m.acquire(name)
    with pytest.raises(fencelock.LockError, match="closed"):
        m.release(name, "t")
    # Locks acquired before close stay usable.
    lock.extend(5)
    lock.release()
    m.close()  # twice is fine


def test_reprs_are_readable_and_never_show_the_token_or_a_password(server: RedisServer, name: str) -> None:
    m = fencelock.LockManager(f"redis://:hunter2@127.0.0.1:{server.port}", key_prefix="p:")
    assert repr(m) == f"<fencelock.LockManager servers=['127.0.0.1:{server.port}'] key_prefix='p:'>"
    # Wrong password: the server has none, so AUTH fails; nothing leaks either way.
    try:
        m.try_acquire(name, 5)
    except fencelock.LockError as e:
        assert "hunter2" not in str(e)
    m2 = fencelock.LockManager(server.url)
    lock = m2.acquire(name, 5)
    r = repr(lock)
    assert r.startswith(f"<fencelock.Lock name='{name}' fencing_token={lock.fencing_token} validity=")
    assert lock.token not in r
    assert repr(m2.lock(name)).startswith("<fencelock.LockScope")
    lock.release()
    assert repr(lock).endswith("released>")


def test_bad_arguments_raise_value_or_type_errors_naming_the_argument(manager: fencelock.LockManager, server: RedisServer) -> None:
    cases = [
        (lambda: manager.acquire(""), ValueError, "name"),
        (lambda: manager.acquire("x" * 1025), ValueError, "name"),
        (lambda: manager.acquire("fencelock:{1}:fence"), ValueError, "reserved"),
        (lambda: manager.acquire(3), TypeError, "name"),  # type: ignore[arg-type]
        (lambda: manager.acquire("x", ttl=0), ValueError, "ttl"),
        (lambda: manager.acquire("x", ttl=-1), ValueError, "ttl"),
        (lambda: manager.acquire("x", ttl=float("nan")), ValueError, "ttl"),
        (lambda: manager.acquire("x", ttl=0.0001), ValueError, "ttl"),
        (lambda: manager.acquire("x", ttl=1e13), ValueError, "ttl"),  # over about 285,000 years
        (lambda: manager.acquire("x", ttl="1"), TypeError, "ttl"),  # type: ignore[arg-type]
        (lambda: manager.acquire("x", ttl=True), TypeError, "ttl"),
        (lambda: manager.acquire("x", wait=True), TypeError, "wait"),
        (lambda: manager.acquire("a\ud800b"), ValueError, "name: .*lone surrogate"),
        (lambda: manager.acquire("x", token="t\udfff"), ValueError, "token: .*lone surrogate"),
        (lambda: manager.acquire("x", wait=-1), ValueError, "wait"),
        (lambda: manager.acquire("x", wait="1"), TypeError, "wait"),  # type: ignore[arg-type]
        (lambda: manager.acquire("x", token=""), ValueError, "token"),
        (lambda: manager.acquire("x", token="t" * 513), ValueError, "token"),
        (lambda: manager.acquire("x", token=5), TypeError, "token"),  # type: ignore[arg-type]
        (lambda: manager.try_acquire(None), TypeError, "name"),  # type: ignore[arg-type]
        (lambda: manager.lock("x", ttl=-1), ValueError, "ttl"),
        (lambda: manager.locked("x", wait=-2), ValueError, "wait"),
        (lambda: manager.release("x", None), TypeError, "token"),  # type: ignore[arg-type]
        (lambda: manager.release("x", ""), ValueError, "token"),
        (lambda: fencelock.LockManager([]), ValueError, "server"),
        (lambda: fencelock.LockManager(5), TypeError, "servers"),  # type: ignore[arg-type]
        (lambda: fencelock.LockManager([server.url, 5]), TypeError, "servers[1]"),  # type: ignore[list-item]
        (lambda: fencelock.LockManager(itertools.repeat(server.url)), ValueError, "limit is 64"),
        (lambda: fencelock.LockManager("localhost:6379"), ValueError, "redis://"),
        (lambda: fencelock.LockManager([server.url, server.url]), ValueError, "twice"),
        (lambda: fencelock.LockManager(server.url, key_prefix=1), TypeError, "key_prefix"),  # type: ignore[arg-type]
        (lambda: fencelock.LockManager(server.url, retry_delay=0), ValueError, "retry_delay"),
        (lambda: fencelock.LockManager(server.url, retry_jitter=-1), ValueError, "retry_jitter"),
        (lambda: fencelock.LockManager(server.url, retry_jitter=1), ValueError, "retry_jitter"),
        (lambda: fencelock.LockManager(server.url, drift_factor=0.5), ValueError, "drift_factor"),
        (lambda: fencelock.LockManager(server.url, drift_factor="x"), TypeError, "drift_factor"),  # type: ignore[arg-type]
        (lambda: fencelock.LockManager(server.url, server_timeout=0), ValueError, "server_timeout"),
        (lambda: fencelock.LockManager(server.url, retry_dely=0.1), TypeError, "retry_dely.*retry_delay"),  # type: ignore[call-arg]
        (lambda: fencelock.asyncio.LockManager(server.url, tls_insecur=True), TypeError, "tls_insecur"),  # type: ignore[call-arg]
    ]
    for call, exc, word in cases:
        with pytest.raises(exc, match=word.replace("[", r"\[").replace("]", r"\]")):
            call()
    lock = manager.acquire("valid", 5)
    with pytest.raises(ValueError, match="ttl"):
        lock.extend(0)
    with pytest.raises(TypeError, match="ttl"):
        lock.extend("5")  # type: ignore[arg-type]
    lock.release()


def test_lost_stays_true_after_a_release_found_the_lock_lost(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 30)
    server.client().delete(name)
    with pytest.raises(fencelock.LockLost):
        lock.release()
    assert lock.lost is True
    assert "lost" in repr(lock)
    with pytest.raises(fencelock.LockLost):
        with manager.lock(name, 30) as scoped:
            server.client().delete(name)
    assert scoped.lost is True


def test_a_garbage_collected_lock_is_not_released(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    # The cron pattern: the lock object is dropped right after the test, the job runs on.
    import gc
    import warnings

    gc.collect()  # earlier tests' garbage first (a client they left open warns as it goes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a lock that was not auto-extended
        assert manager.try_acquire(name, 30) is not None
        gc.collect()
    assert manager.is_locked(name), "still held while the job runs"
    assert manager.try_acquire(name, 30) is None, "a second host does not run it too"
    assert 0 < server.client().pttl(name) <= 30_000, "it expires after its TTL"


def test_a_collected_auto_extended_lock_warns_and_stops_extending(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    import gc

    with pytest.warns(ResourceWarning, match=f'fencelock lock "{name}" .* garbage-collected while held and auto-extended'):
        # Extended every third of its TTL while it lived: a TTL long enough that a busy
        # machine's collection cannot outlast it, short enough to see it expire.
        manager.acquire(name, 2, auto_extend=True)
        gc.collect()
    assert manager.is_locked(name), "not released"
    wait_until(lambda: server.client().get(name) is None, timeout=15, what="the key to expire, no longer extended")


def test_a_lock_held_by_a_thread_that_ends_stays_held(manager: fencelock.LockManager, name: str) -> None:
    import threading

    def job() -> None:
        local = threading.local()
        local.lock = manager.acquire(name, 30)

    t = threading.Thread(target=job)
    t.start()
    t.join()
    import gc

    gc.collect()
    assert manager.is_locked(name)


def test_version_matches_the_workspace() -> None:
    import pathlib
    import re

    cargo = pathlib.Path(__file__).resolve().parents[2] / "Cargo.toml"
    if cargo.exists():
        m = re.search(r'^\[workspace\.package\][^\[]*?^version = "([^"]+)"', cargo.read_text(), re.M | re.S)
        assert m is not None
        assert fencelock.__version__ == m.group(1)
    else:
        assert re.fullmatch(r"\d+\.\d+\.\d+.*", fencelock.__version__)


def test_a_sentinel_entry_follows_a_forced_failover_from_python() -> None:
    from redis_fixture import SentinelSetup

    setup = SentinelSetup()
    try:
        m = fencelock.LockManager(setup.url)
        lock = m.acquire("failover", 5, wait=5)
        assert setup.master.client().get("failover") == lock.token.encode()
        lock.release()
        setup.failover()
        lock = m.acquire("failover", 5, wait=10)
        assert setup.replica.client().get("failover") == lock.token.encode(), "written to the new master"
        lock.release()
        m.close()
    finally:
        setup.close()



def test_a_wait_limit_holds_on_a_hung_server(server: RedisServer) -> None:
    """Issue 20, item 3: wait limit plus one server timeout, not three of them in a row."""
    m = fencelock.LockManager(server.url, server_timeout=2)
    m.acquire("warm", 5).release()  # connect first: what hangs below is the server
    server.stop()
    try:
        started = time.monotonic()
        with pytest.raises(fencelock.Unavailable):
            m.acquire("hung", 60, wait=0.3)
        took = time.monotonic() - started
    finally:
        server.cont()
        m.close()
    assert took < 0.3 + 2 + 1.5, f"returned after {took:.1f} s"


def test_detach_keeps_the_lock_held_for_a_release_by_token(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = manager.acquire(name, 10.0, auto_extend=True)
    lock.detach()
    assert server.client().get(name) == lock.token.encode()
    assert lock.lost is False and lock.validity == 0.0
    with pytest.raises(fencelock.LockError, match="already released"):
        lock.detach()
    with pytest.raises(fencelock.LockError, match="already released"):
        lock.release()
    del lock  # a detached lock's collection releases nothing
    import gc

    gc.collect()
    assert manager.is_locked(name)


def test_asyncio_detach(server: RedisServer, name: str) -> None:
    import asyncio

    import fencelock.asyncio as fa

    async def main() -> None:
        async with fa.LockManager(server.url) as m:
            lock = await m.acquire(name, 10.0)
            token = lock.token
            lock.detach()
            assert await m.is_locked(name)
            with pytest.raises(fencelock.LockError):
                await lock.release()
            await m.release(name, token)
            assert not await m.is_locked(name)

    asyncio.run(main())
