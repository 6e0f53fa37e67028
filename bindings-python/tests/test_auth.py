"""Authentication and ACLs against a real redis-server: the minimal ACL rule of
docs/SECURITY.md is enough; a wrong password is Unavailable saying "authentication failed",
never showing the password; Sentinel URLs are accepted by the constructor."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import threading
import uuid

import pytest

import fencelock
import fencelock.asyncio
from helpers import wait_until
from redis_fixture import REDIS_SERVER, RedisServer, free_port

PREFIX = "app:"


def minimal_acl(server: RedisServer, user: str, password: str, prefix: str = PREFIX) -> None:
    """The rule of docs/SECURITY.md ("The minimal ACL rule"), for key prefix ``prefix``."""
    rule = (f"on >{password} resetkeys ~{prefix}* resetchannels &{prefix}fencelock:{{*}}:released:* -@all "
            "+evalsha +script|load +get +set +incr +pttl +pexpire +time +zadd +zrem +zrange +zrangebyscore +hset +hget +hdel +del +publish +pubsub|numsub +subscribe "
            "+unsubscribe +ping")
    assert server.client().execute_command("ACL", "SETUSER", user, *rule.split()) == b"OK"


def test_a_user_with_the_minimal_acl_can_do_everything(server: RedisServer, name: str) -> None:
    password = "pw-" + uuid.uuid4().hex
    minimal_acl(server, "locker", password)
    url = f"redis://locker:{password}@127.0.0.1:{server.port}"
    with fencelock.LockManager(url, key_prefix=PREFIX, server_timeout=1) as m:
        lock = m.acquire(name, 10)
        assert server.client().get(PREFIX + name) == str(lock.token).encode()
        lock.extend(10)
        # A waiter woken by the release notification (needs subscribe on the channel).
        got = []
        waiter = threading.Thread(target=lambda: got.append(m.acquire(name, 10, wait=10)))
        waiter.start()
        lock.release()
        waiter.join(15)
        assert got, "the waiter acquired"
        m.release(name, got[0].token)
        assert server.client().get(PREFIX + name) is None
        assert password not in repr(m)

    async def main() -> None:
        async with fencelock.asyncio.LockManager(url, key_prefix=PREFIX, server_timeout=1) as am:
            async with am.lock(name, 10):
                assert server.client().exists(PREFIX + name)
            assert password not in repr(am)

    asyncio.run(main())


def test_a_password_only_url_works(server: RedisServer, name: str) -> None:
    password = "pw-" + uuid.uuid4().hex
    server.client().config_set("requirepass", password)
    with fencelock.LockManager(f"redis://:{password}@127.0.0.1:{server.port}", server_timeout=1) as m:
        m.acquire(name, 10).release()


def test_the_password_option_serves_urls_without_one(server: RedisServer, name: str) -> None:
    password = "pw-" + uuid.uuid4().hex
    minimal_acl(server, "locker", password)
    url = f"redis://locker@127.0.0.1:{server.port}"
    with fencelock.LockManager(url, key_prefix=PREFIX, server_timeout=1, password=password) as m:
        m.acquire(name, 10).release()
        assert password not in repr(m) + str(m)

    async def main() -> None:
        async with fencelock.asyncio.LockManager(url, key_prefix=PREFIX, password=password) as am:
            await (await am.acquire(name, 10)).release()

    asyncio.run(main())
    # It is what the server is asked with: a wrong one fails, unseen. A wrong type or an empty
    # one is refused before any call.
    wrong = "wrong-" + uuid.uuid4().hex
    with fencelock.LockManager(url, key_prefix=PREFIX, server_timeout=1, password=wrong) as m:
        with pytest.raises(fencelock.Unavailable, match="authentication failed") as info:
            m.acquire(name, 10, wait=0)
        assert wrong not in str(info.value) + repr(info.value) + repr(m)
    with pytest.raises(TypeError, match="password must be a str, got bytes"):
        fencelock.LockManager(url, password=password.encode())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="password is empty"):
        fencelock.LockManager(url, password="")


@pytest.mark.parametrize("user", ["locker", "nobody"])
def test_a_wrong_password_is_unavailable_and_never_shown(server: RedisServer, name: str, user: str) -> None:
    password = "pw-" + uuid.uuid4().hex
    wrong = "wrong-" + uuid.uuid4().hex
    minimal_acl(server, "locker", password)
    m = fencelock.LockManager(f"redis://{user}:{wrong}@127.0.0.1:{server.port}", key_prefix=PREFIX, server_timeout=1)
    with pytest.raises(fencelock.Unavailable) as info:
        m.acquire(name, 10, wait=0)
    text = str(info.value)
    assert "authentication failed" in text, text
    assert f"127.0.0.1:{server.port}" in text, text
    for shown in (text, repr(info.value), repr(m), str(info.value.args)):
        assert wrong not in shown and password not in shown, shown
    # A permanent failure: acquire with a wait limit does not retry it until the limit.
    with pytest.raises(fencelock.Unavailable):
        m.acquire(name, 10, wait=30)
    m.close()

    async def main() -> None:
        am = fencelock.asyncio.LockManager(f"redis://{user}:{wrong}@127.0.0.1:{server.port}", server_timeout=1)
        with pytest.raises(fencelock.Unavailable) as ainfo:
            await am.acquire(name, 10, wait=0)
        assert "authentication failed" in str(ainfo.value)
        assert wrong not in str(ainfo.value) + repr(ainfo.value) + repr(am)
        await am.close()

    asyncio.run(main())


def test_a_missing_permission_is_a_clear_unavailable(server: RedisServer, name: str) -> None:
    password = "pw-" + uuid.uuid4().hex
    minimal_acl(server, "locker", password, prefix="other:")  # does not cover PREFIX
    m = fencelock.LockManager(f"redis://locker:{password}@127.0.0.1:{server.port}", key_prefix=PREFIX, server_timeout=1)
    with pytest.raises(fencelock.Unavailable) as info:
        m.acquire(name, 10, wait=0)
    assert "permission denied" in str(info.value), str(info.value)
    assert password not in str(info.value) + repr(info.value) + repr(m)
    m.close()


def test_sentinel_urls_are_accepted(name: str) -> None:
    password = "pw-" + uuid.uuid4().hex
    dead = [free_port(), free_port()]
    url = f"redis+sentinel://locker:{password}@127.0.0.1:{dead[0]},127.0.0.1:{dead[1]}/mymaster"
    for cls in (fencelock.LockManager, fencelock.asyncio.LockManager):
        m = cls([url, "redis+sentinel://127.0.0.1/other/2"], connect_timeout=0.2)
        assert "sentinel:mymaster" in repr(m) and password not in repr(m), repr(m)
    # No sentinel answers: Unavailable, naming the master and not the password.
    m = fencelock.LockManager(url, connect_timeout=0.2, server_timeout=0.2)
    with pytest.raises(fencelock.Unavailable) as info:
        m.acquire(name, 5, wait=0)
    assert "mymaster" in str(info.value) and password not in str(info.value) + repr(info.value)
    with pytest.raises(ValueError, match="master"):
        fencelock.LockManager("redis+sentinel://127.0.0.1:26379/")
    m.close()


def test_a_restarted_server_is_used_again_without_a_new_manager(manager: fencelock.LockManager, server: RedisServer, name: str) -> None:
    manager.acquire(name, 5).release()
    server.kill()
    with pytest.raises(fencelock.Unavailable):
        manager.acquire(name, 5, wait=0)
    server.start()
    # The very next acquire reconnects by itself (the core retries a broken cached
    # connection once on a fresh one).
    manager.acquire(name, 5, wait=0).release()


def test_a_sentinel_entry_finds_its_master(server: RedisServer, name: str) -> None:
    """One real sentinel watching ``server`` (the failover itself is tested in the core)."""
    import redis

    port = free_port()
    d = tempfile.mkdtemp(prefix="fencelock-py-sentinel-")
    conf = os.path.join(d, "sentinel.conf")
    with open(conf, "w") as f:
        f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\nlogfile {d}/sentinel.log\n"
                f"sentinel monitor mymaster 127.0.0.1 {server.port} 1\n")
    proc = subprocess.Popen([REDIS_SERVER, conf, "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sentinel = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)

        def answers() -> bool:
            try:
                return sentinel.execute_command("SENTINEL", "get-master-addr-by-name", "mymaster") is not None
            except redis.exceptions.ConnectionError:
                return False

        wait_until(answers, timeout=10, what="the sentinel")
        with fencelock.LockManager(f"redis+sentinel://127.0.0.1:{port}/mymaster", server_timeout=1) as m:
            lock = m.acquire(name, 10, wait=5)
            assert server.client().get(name) == str(lock.token).encode()
            lock.release()
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def test_a_command_missing_from_the_acl_fails_the_first_call_naming_it(server: RedisServer, name: str) -> None:
    """Issue 20, item 4: zadd runs only when an acquire is refused; without the check when a
    connection opens, an uncontended first call would pass and production fail under load."""
    password = "pw-" + uuid.uuid4().hex
    minimal_acl(server, "locker", password)
    assert server.client().execute_command("ACL", "SETUSER", "locker", "-zadd") == b"OK"
    url = f"redis://locker:{password}@127.0.0.1:{server.port}"
    with fencelock.LockManager(url, key_prefix=PREFIX) as m:
        with pytest.raises(fencelock.Unavailable, match="permission denied.*'zadd'"):
            m.acquire(name, 5, wait=10)


def test_a_wait_on_an_address_nobody_listens_at_gives_up(name: str) -> None:
    """Issue 57 item 3: every server refusing the connection ends a wait without limit after
    ``refused_attempts`` attempts in a row (default 10), with ``Unavailable`` saying so."""
    url = f"redis://127.0.0.1:{free_port()}"
    with fencelock.LockManager(url) as m:
        with pytest.raises(fencelock.Unavailable, match="refused the connection on 10 attempts in a row"):
            m.acquire(name, 5)
    with fencelock.LockManager(url, refused_attempts=2) as m:
        with pytest.raises(fencelock.Unavailable, match="on 2 attempts in a row") as info:
            m.acquire(name, 5)
        assert "refused_attempts" in str(info.value)

    async def main() -> None:
        async with fencelock.asyncio.LockManager(url, refused_attempts=3) as am:
            with pytest.raises(fencelock.Unavailable, match="on 3 attempts in a row"):
                await am.acquire(name, 5)

    asyncio.run(main())
    # 0: waited through until the wait limit.
    with fencelock.LockManager(url, refused_attempts=0) as m:
        with pytest.raises(fencelock.Unavailable) as info:
            m.acquire(name, 5, wait=1)
        assert "in a row" not in str(info.value) and "gave up after" in str(info.value)


@pytest.mark.parametrize("bad,error", [(-1, ValueError), (True, TypeError), ("3", TypeError), (2**32, ValueError)])
def test_refused_attempts_is_checked(bad: object, error: type) -> None:
    for cls in (fencelock.LockManager, fencelock.asyncio.LockManager):
        with pytest.raises(error, match="refused_attempts"):
            cls("redis://127.0.0.1:1", refused_attempts=bad)
