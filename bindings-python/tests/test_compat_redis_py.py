"""fencelock.compat.redis_py, the drop-in for redis-py's Lock: where it connects (the URL and
options made from a redis-py client's settings: credentials, TLS, Unix socket, Sentinel,
Cluster), that it excludes redis-py's own lock on the same key, its manager per client, token
and thread-local semantics, its lease for ``timeout=None``, its errors, and that the expected
failures of redis-py's suite (tests/redis_py_suite) are the ones docs/migrating.md explains.
redis-py's own lock tests run against it from tests/redis_py_suite/run.sh."""

from __future__ import annotations

import asyncio
import gc
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any, Iterator, List, Tuple

import pytest
import redis
import redis.asyncio
import redis.sentinel
from redis.exceptions import LockError, LockNotOwnedError

import fencelock
from fencelock.compat._redis_client import server_spec
from fencelock.compat.redis_py import AsyncLock, Lock, async_manager_for, manager_for
from helpers import wait_until
from redis_fixture import RedisClusterSetup, RedisServer, Sentinel
from test_tls import certs, tls_server  # noqa: F401  (the module-scoped certificate fixture)

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A password with every character a URL gives a meaning to.
HARD_PASSWORD = "p@ss:w/o?r#d&x=%41+ é"


def _reentrant_flag_exists(m: fencelock.LockManager) -> bool:
    """Whether the core has the ``reentrant`` acquire flag (issue 25 item 2) yet."""
    try:
        lock = m.try_acquire("probe-" + uuid.uuid4().hex, 5, reentrant=False)  # type: ignore[call-arg]
    except TypeError:
        return False
    if lock is not None:
        lock.release()
    return True


def _client(server: RedisServer, **kwargs: Any) -> "redis.Redis":
    return redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5, **kwargs)


# --- where it connects ------------------------------------------------------------------------


def test_the_url_is_made_from_host_port_db_and_percent_encoded_credentials(server: RedisServer, name: str) -> None:
    server.client().execute_command("ACL", "SETUSER", "locker", "on", f">{HARD_PASSWORD}", "~*", "&*", "+@all")
    r = _client(server, db=3, username="locker", password=HARD_PASSWORD)
    spec = server_spec(r)
    assert spec.url.startswith("redis://locker:") and spec.url.endswith(f"@127.0.0.1:{server.port}/3")
    assert spec.shown == f"redis://***@127.0.0.1:{server.port}/3"
    assert HARD_PASSWORD not in repr(spec) and "locker" not in repr(spec)
    # The encoding round-trips: the manager authenticates with the password as written.
    lock = r.lock(name, timeout=10, lock_class=Lock)
    assert lock.acquire(blocking=False)
    assert r.get(name) == lock.local.token
    assert server.client().get(name) is None, "db 3 was used, not db 0"
    lock.release()
    assert HARD_PASSWORD not in repr(lock) + repr(manager_for(r))


def _specs_of_clients_made_without_a_server(password: str) -> List[Tuple[Any, str, str]]:
    """(client, expected URL with ``PW`` for the encoded password, expected shown URL)."""
    import redis.asyncio.cluster
    import redis.asyncio.sentinel

    sentinels = [("127.0.0.1", 26379), ("::1", 26380)]
    return [
        (redis.Redis(unix_socket_path="/run/r.sock", username="u", password=password, db=1),
         "redis+unix:///run/r.sock?db=1&user=u&pass=PW", "redis+unix:///run/r.sock?db=1&user=***&pass=***"),
        (redis.Redis(host="::1", port=7000, password=password),
         "redis://:PW@[::1]:7000/0", "redis://***@[::1]:7000/0"),
        (redis.sentinel.Sentinel(sentinels, sentinel_kwargs={"password": password}, password=password)
         .master_for("mymaster", db=2),
         "redis+sentinel://:PW@127.0.0.1:26379,[::1]:26380/mymaster/2?sentinel_password=PW",
         "redis+sentinel://***@127.0.0.1:26379,[::1]:26380/mymaster/2?sentinel_password=***"),
        (redis.asyncio.sentinel.Sentinel(sentinels, sentinel_kwargs={"ssl": True, "ssl_cert_reqs": "none"},
                                         ssl=True, ssl_cert_reqs="none", username="u", password=password)
         .master_for("mymaster"),
         "rediss+sentinel://u:PW@127.0.0.1:26379,[::1]:26380/mymaster/0",
         "rediss+sentinel://***@127.0.0.1:26379,[::1]:26380/mymaster/0"),
        (redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=7001, password=password,
                                            ssl=True, ssl_cert_reqs="none"),
         "rediss+cluster://:PW@127.0.0.1:7001", "rediss+cluster://***@127.0.0.1:7001"),
    ]


def test_unix_sentinel_and_cluster_clients_make_urls_the_core_accepts_without_showing_passwords() -> None:
    from urllib.parse import quote

    password = HARD_PASSWORD + uuid.uuid4().hex
    for client, url, shown in _specs_of_clients_made_without_a_server(password):
        spec = server_spec(client)
        assert spec.url == url.replace("PW", quote(password, safe="")), spec.shown
        assert spec.shown == shown
        assert password not in repr(spec) and quote(password, safe="") not in repr(spec)
        # Building a manager never contacts a server: this proves the core parses the URL.
        manager = fencelock.LockManager(spec.url, **spec.options)
        assert password not in repr(manager) and quote(password, safe="") not in repr(manager)
        manager.close()


def test_a_wrong_password_is_a_connection_error_that_never_shows_it(server: RedisServer, name: str) -> None:
    server.client().config_set("requirepass", "right-" + uuid.uuid4().hex)
    wrong = "wrong-" + uuid.uuid4().hex
    r = redis.Redis(host="127.0.0.1", port=server.port, password=wrong)
    lock = r.lock(name, timeout=10, lock_class=Lock)
    with pytest.raises(redis.exceptions.ConnectionError) as info:
        lock.acquire(blocking=False)
    assert "authentication failed" in str(info.value), str(info.value)
    texts = [str(info.value), repr(info.value), str(info.value.__cause__), repr(info.value.__cause__),
             repr(lock), repr(manager_for(r)), repr(server_spec(r))]
    assert not [t for t in texts if wrong in t]


def test_a_credential_provider_is_asked_for_the_credentials(server: RedisServer, name: str) -> None:
    password = "cp-" + uuid.uuid4().hex
    server.client().config_set("requirepass", password)
    r = redis.Redis(host="127.0.0.1", port=server.port,
                    credential_provider=redis.UsernamePasswordCredentialProvider(password=password))
    with r.lock(name, timeout=10, lock_class=Lock) as lock:
        assert lock.owned()
    assert password not in repr(server_spec(r))


def test_tls_options_map_to_the_managers(certs: pathlib.Path, name: str) -> None:  # noqa: F811
    server, url = tls_server(certs, client_certs=True)
    try:
        tls_port = int(url.rsplit(":", 1)[1])
        r = redis.Redis(host="127.0.0.1", port=tls_port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"),
                        ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"))
        spec = server_spec(r)
        assert spec.url == f"rediss://127.0.0.1:{tls_port}/0"
        assert spec.options["tls_ca_file"] == str(certs / "ca.crt")
        assert spec.options["tls_client_cert"] == str(certs / "client.crt")
        assert spec.options["tls_client_key"] == str(certs / "client.key")
        with r.lock(name, timeout=10, lock_class=Lock) as lock:
            assert server.client().get(name) == lock.local.token
        # Without the client certificate the server refuses the handshake: a connection error.
        bare = redis.Redis(host="127.0.0.1", port=tls_port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"))
        with pytest.raises(redis.exceptions.ConnectionError):
            bare.lock(name, timeout=10, lock_class=Lock).acquire(blocking=False)
        # ssl_cert_reqs="none" is fencelock's insecure mode (no verification at all).
        insecure = redis.Redis(host="127.0.0.1", port=tls_port, ssl=True, ssl_cert_reqs="none",
                               ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"))
        assert server_spec(insecure).options["tls_insecure"] is True
        with insecure.lock(name, timeout=10, lock_class=Lock):
            pass
        # What fencelock cannot honour is refused, naming the setting and never its value.
        secret = "-----BEGIN CERTIFICATE-----secret"
        odd = redis.Redis(host="127.0.0.1", port=tls_port, ssl=True, ssl_ca_data=secret)
        with pytest.raises(ValueError, match="ssl_ca_data") as info:
            odd.lock(name, lock_class=Lock).acquire(blocking=False)
        assert not isinstance(info.value, LockError), "a settings error is not 'not acquired'"
        assert secret not in str(info.value)
    finally:
        server.close()


def test_a_unix_socket_client_locks_through_the_socket(name: str) -> None:
    d = tempfile.mkdtemp(prefix="fencelock-py-sock-")
    sock = os.path.join(d, "redis.sock")
    server = RedisServer(["--unixsocket", sock, "--unixsocketperm", "700"])
    try:
        r = redis.Redis(unix_socket_path=sock, db=2)
        assert server_spec(r).url == f"redis+unix://{sock}?db=2"
        with r.lock(name, timeout=10, lock_class=Lock) as lock:
            assert r.get(name) == lock.local.token
    finally:
        server.close()
        shutil.rmtree(d, ignore_errors=True)


def test_a_sentinel_master_client_locks_on_the_master(server: RedisServer, name: str) -> None:
    sentinel_server = Sentinel(server.port)
    try:
        sentinel = redis.sentinel.Sentinel([("127.0.0.1", sentinel_server.port)], socket_timeout=2)
        master = sentinel.master_for("mymaster", socket_timeout=2)
        spec = server_spec(master)
        assert spec.url == f"redis+sentinel://127.0.0.1:{sentinel_server.port}/mymaster/0"
        with master.lock(name, timeout=10, lock_class=Lock) as lock:
            assert server.client().get(name) == lock.local.token
        with pytest.raises(ValueError, match="master_for"):
            sentinel.slave_for("mymaster").lock(name, lock_class=Lock).acquire(blocking=False)
    finally:
        sentinel_server.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterSetup]:
    c = RedisClusterSetup()
    yield c
    c.close()


def test_a_cluster_client_locks_on_the_cluster_and_excludes_its_native_lock(cluster: RedisClusterSetup) -> None:
    r = cluster.client()
    name = "cl-" + uuid.uuid4().hex[:10]
    spec = server_spec(r)
    assert spec.url.startswith("redis+cluster://127.0.0.1:"), spec.shown
    assert f"127.0.0.1:{cluster.nodes[0].port}" in spec.url
    lock = r.lock(name, timeout=10, lock_class=Lock)
    assert lock.acquire(blocking=False)
    assert r.get(name) == lock.local.token
    native = r.lock(name, timeout=10)
    assert not native.acquire(blocking=False)
    assert lock.extend(10)
    assert 10_000 < r.pttl(name) <= 20_000
    lock.release()
    assert native.acquire(blocking=False)
    assert not lock.acquire(blocking=False)
    native.release()


def test_the_async_lock_reaches_the_async_clients_servers(server: RedisServer, name: str) -> None:
    password = "async-" + uuid.uuid4().hex
    server.client().config_set("requirepass", password)

    async def main() -> None:
        r = redis.asyncio.Redis(host="127.0.0.1", port=server.port, password=password)
        lock = r.lock(name, timeout=10, lock_class=AsyncLock)
        async with lock:
            assert await lock.owned() and await lock.locked()
            assert await r.get(name) == lock.local.token
            other = r.lock(name, timeout=10, lock_class=AsyncLock)
            assert not await other.acquire(blocking_timeout=0.2)
            assert await lock.extend(5)
            assert 10_000 < await r.pttl(name) <= 15_000
        assert not await lock.locked()
        assert async_manager_for(r) is async_manager_for(r)
        assert password not in repr(async_manager_for(r)) + repr(server_spec(r))
        await r.aclose()

    asyncio.run(main())


# --- exclusion with redis-py's own lock -------------------------------------------------------


def test_redis_py_native_lock_and_the_drop_in_exclude_each_other(server: RedisServer, name: str) -> None:
    r = _client(server)
    native = r.lock(name, timeout=10)
    drop_in = r.lock(name, timeout=10, lock_class=Lock)
    assert native.acquire(blocking=False)
    assert not drop_in.acquire(blocking=False)
    assert not drop_in.acquire(blocking_timeout=0.3)
    assert drop_in.locked() and not drop_in.owned()
    native.release()
    assert drop_in.acquire(blocking=False)
    assert not native.acquire(blocking=False)
    assert native.locked() and not native.owned()
    drop_in.release()
    assert native.acquire(blocking=False)
    native.release()


def test_a_waiter_gets_the_lock_when_the_native_holder_releases(server: RedisServer, name: str) -> None:
    r = _client(server)
    native = r.lock(name, timeout=10)
    assert native.acquire(blocking=False)
    got: List[bool] = []
    waiter = threading.Thread(target=lambda: got.append(
        r.lock(name, timeout=10, lock_class=Lock, thread_local=False).acquire(blocking_timeout=10)))
    waiter.start()
    native.release()
    waiter.join()
    assert got == [True]


def test_names_are_encoded_with_the_clients_encoding(server: RedisServer) -> None:
    r = _client(server, encoding="latin-1")
    native = r.lock("café", timeout=10)
    assert native.acquire(blocking=False)
    assert server.client().get("café".encode("latin-1")) is not None
    assert not r.lock("café", timeout=10, lock_class=Lock).acquire(blocking=False)
    native.release()


# --- one manager per client -------------------------------------------------------------------


def test_one_manager_per_client_reused_and_closed_with_it(server: RedisServer, name: str) -> None:
    r = _client(server)
    m = manager_for(r)
    assert manager_for(r) is m
    assert r.lock(name, lock_class=Lock).manager is m
    assert manager_for(_client(server)) is not m
    del r
    gc.collect()
    with pytest.raises(fencelock.LockError, match="closed"):
        m.is_locked(name)


# --- tokens, threads, leases ------------------------------------------------------------------


def test_a_callers_token_is_the_key_value_and_not_acquired_twice(server: RedisServer, name: str) -> None:
    r = _client(server)
    lock = r.lock(name, timeout=10, lock_class=Lock)
    assert lock.acquire(blocking=False, token="job-1")
    assert lock.local.token == b"job-1" and r.get(name) == b"job-1"
    if not _reentrant_flag_exists(manager_for(r)):
        lock.release()
        pytest.skip("the core has no acquire(..., reentrant=False) yet (issue 25 item 2): a caller's "
                    "token that already holds the name is still re-entered")
    # As redis-py: another acquisition with the same token is refused (SET NX).
    assert not r.lock(name, timeout=10, lock_class=Lock).acquire(blocking=False, token="job-1")
    assert not lock.acquire(blocking=False, token=b"job-1")
    lock.release()


def test_the_token_is_thread_local_unless_asked_otherwise(server: RedisServer, name: str) -> None:
    r = _client(server)
    local = r.lock(name, timeout=10, lock_class=Lock)
    shared = r.lock(name + "-shared", timeout=10, lock_class=Lock, thread_local=False)
    assert local.acquire(blocking=False) and shared.acquire(blocking=False)
    seen: List[Any] = []

    def other_thread() -> None:
        seen.append(local.local.token)
        seen.append(shared.local.token)
        try:
            local.release()
        except LockError as e:
            seen.append(type(e))
        shared.release()

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen[0] is None and seen[1] is not None and seen[2] is LockError
    assert not shared.locked()
    assert local.owned()
    local.release()


def test_a_lock_outlives_the_thread_and_the_object_that_acquired_it(server: RedisServer, name: str) -> None:
    r = _client(server)
    lock = r.lock(name, lock_class=Lock)  # timeout=None: an auto-extended lease
    t = threading.Thread(target=lock.acquire)
    t.start()
    t.join()
    assert lock.locked(), "a thread's end does not release the lock"
    assert not lock.owned(), "the token was in the acquiring thread's storage, as in redis-py"
    lock.local.token = r.get(name)
    lock.release()
    other = r.lock(name + "-gc", timeout=30, lock_class=Lock)
    assert other.acquire(blocking=False)
    del other
    gc.collect()
    assert r.pttl(name + "-gc") > 0, "a collected lock is not released: it expires after its TTL"


class ShortLease(Lock):
    lease_ttl = 0.6


def test_timeout_none_is_a_lease_extended_while_held(server: RedisServer, name: str) -> None:
    r = _client(server)
    lock = r.lock(name, lock_class=ShortLease)
    start = time.monotonic()
    assert lock.acquire(blocking=False)
    assert 0 < r.pttl(name) <= 600, "the key has a TTL: the lease"
    wait_until(lambda: time.monotonic() - start > 3 * ShortLease.lease_ttl, timeout=10,
               what="three leases' time")
    assert lock.owned() and 0 < r.pttl(name) <= 600, "extended in the background"
    with pytest.raises(LockError, match="no timeout"):
        lock.extend(1)
    lock.release()
    assert r.get(name) is None


def test_extend_adds_to_the_remaining_time_and_reacquire_resets_it(server: RedisServer, name: str) -> None:
    r = _client(server)
    lock = r.lock(name, timeout=10, lock_class=Lock)
    assert lock.acquire(blocking=False)
    r.pexpire(name, 3000)
    assert lock.extend(5)
    assert 5000 < r.pttl(name) <= 8000
    assert lock.extend(2, replace_ttl=True)
    assert 0 < r.pttl(name) <= 2000
    assert lock.reacquire()
    assert 8000 < r.pttl(name) <= 10_000
    # A token set by hand (not acquired through this object) extends and releases by token.
    other = r.lock(name, timeout=10, lock_class=Lock)
    other.local.token = lock.local.token
    assert other.owned()
    assert other.extend(10)
    assert 10_000 < r.pttl(name) <= 20_000
    other.release()
    assert r.get(name) is None
    with pytest.raises(LockNotOwnedError):
        lock.release()


# --- errors -----------------------------------------------------------------------------------


def test_fencelock_errors_become_redis_pys(server: RedisServer, name: str) -> None:
    r = _client(server)
    lock = r.lock(name, timeout=10, lock_class=Lock)
    assert lock.acquire(blocking=False)
    r.set(name, "someone else")
    with pytest.raises(LockNotOwnedError) as info:
        lock.extend(1)
    assert info.value.lock_name == name
    assert isinstance(info.value.__cause__, fencelock.LockLost)
    with pytest.raises(LockNotOwnedError):
        lock.release()
    assert lock.local.token is None
    # Names fencelock refuses are redis-py LockErrors (and ValueErrors, as LockError is).
    for bad in ("x" * 1025, "fencelock:{1}:fence"):
        with pytest.raises(LockError):
            r.lock(bad, timeout=1, lock_class=Lock).acquire(blocking=False)
    # A key of another type is redis-py's ResponseError.
    r.delete(name)
    listed = r.lock(name, timeout=10, lock_class=Lock)
    assert listed.acquire(blocking=False)
    r.delete(name)
    r.rpush(name, "a list")
    with pytest.raises(redis.exceptions.ResponseError):
        listed.release()
    r.delete(name)
    # No server: redis-py's ConnectionError.
    server.kill()
    with pytest.raises(redis.exceptions.ConnectionError):
        r.lock(name + "-2", timeout=1, lock_class=Lock).acquire(blocking=False)


def test_importing_without_redis_py_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "import fencelock.compat\n"
        "try:\n"
        "    import fencelock.compat.redis_py\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install fencelock[redis]" in out.stdout


# --- the expected failures of redis-py's suite ------------------------------------------------


def test_the_suites_expected_failures_are_those_migrating_md_explains() -> None:
    sys.path.insert(0, str(pathlib.Path(__file__).parent / "redis_py_suite"))
    try:
        from fencelock_suite import EXPECTED_FAILURES
    finally:
        sys.path.pop(0)
    text = (ROOT / "docs" / "migrating.md").read_text(encoding="utf-8")
    section = text.split("## Python: from redis-py's Lock", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(tests/[^`]+)` \|", section, re.MULTILINE))
    assert documented == set(EXPECTED_FAILURES)
    assert len(EXPECTED_FAILURES) <= 10, "kept few: a missing feature is fixed, not listed"
