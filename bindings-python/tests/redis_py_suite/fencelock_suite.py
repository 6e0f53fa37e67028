"""pytest plugin for redis-py's own lock tests, run against fencelock.compat.redis_py.

Loaded with ``-p fencelock_suite`` by run.sh. It starts one real redis-server on a free
loopback port (tests/redis_fixture.py: never 6379, stopped by its PID) and points redis-py's
fixtures at it (their ``--redis-url``), and marks the deliberate differences as strict
expected failures: each must fail (an unexpected pass fails the run), each is explained in
docs/migrating.md ("Python: from redis-py's Lock"), and a test there checks both lists agree.
"""

from __future__ import annotations

from typing import Dict, List

import pytest

from redis_fixture import RedisServer

TTL_ALWAYS = (
    "timeout=None is a lease extended in the background, so the key has a TTL "
    "(Lock.lease_ttl, 30 s) and r.ttl(name) is not -1: a holder that dies frees the lock"
)
NO_POLLING = (
    "a waiting acquire is woken by the holder's release (or gives up at blocking_timeout) "
    "instead of sleeping `sleep` seconds between tries: the test counts the sleeps of "
    "redis-py's polling loop through a patched clock, and there are none"
)

# Test (node id without parameters) -> why it fails on purpose. Kept few: a test failing for
# want of a feature is a bug of the drop-in, not an entry here.
EXPECTED_FAILURES: Dict[str, str] = {
    "tests/test_lock.py::TestLock::test_lock": TTL_ALWAYS,
    "tests/test_lock.py::TestLock::test_lock_token": TTL_ALWAYS,
    "tests/test_lock.py::TestLock::test_lock_token_thread_local_false": TTL_ALWAYS,
    "tests/test_lock.py::TestLock::test_blocking_timeout": NO_POLLING,
    "tests/test_lock.py::TestLock::test_context_manager_blocking_timeout": NO_POLLING,
    "tests/test_asyncio/test_lock.py::TestLock::test_lock": TTL_ALWAYS,
    "tests/test_asyncio/test_lock.py::TestLock::test_lock_token": TTL_ALWAYS,
    "tests/test_asyncio/test_lock.py::TestLock::test_lock_token_thread_local_false": TTL_ALWAYS,
    "tests/test_asyncio/test_lock.py::TestLock::test_blocking_timeout": NO_POLLING,
}

_servers: List[RedisServer] = []


def pytest_configure(config: pytest.Config) -> None:
    server = RedisServer()
    _servers.append(server)
    # redis-py's conftest reads these in pytest_sessionstart and in its client fixtures.
    config.option.redis_url = f"{server.url}/0"
    config.option.redis_mod_url = f"{server.url}/0"


def pytest_unconfigure(config: pytest.Config) -> None:
    while _servers:
        _servers.pop().close()


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: List[pytest.Item]
) -> None:
    seen = set()
    files = {item.nodeid.split("::", 1)[0] for item in items}
    for item in items:
        test = item.nodeid.split("[", 1)[0]
        reason = EXPECTED_FAILURES.get(test)
        if reason is not None:
            seen.add(test)
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    # An entry of a collected file that names no test: the table is out of date.
    stale = sorted(t for t in set(EXPECTED_FAILURES) - seen if t.split("::", 1)[0] in files)
    if stale:
        raise pytest.UsageError(f"expected failures that name no collected test: {stale}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for server in _servers:
            report.sections.append((f"redis-server {server.port} log", server.log_text()))
