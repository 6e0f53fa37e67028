"""Fixtures: redis-server processes started per test, managers over them."""

from __future__ import annotations

import uuid
from typing import Iterator, List

import pytest

import fencelock
from redis_fixture import RedisServer


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for server in item.funcargs.get("_servers_started", []):
            report.sections.append((f"redis-server {server.port} log", server.log_text()))


@pytest.fixture
def _servers_started() -> Iterator[List[RedisServer]]:
    started: List[RedisServer] = []
    yield started
    for s in started:
        s.close()


@pytest.fixture
def server(_servers_started: List[RedisServer]) -> RedisServer:
    """One fresh redis-server."""
    s = RedisServer()
    _servers_started.append(s)
    return s


@pytest.fixture
def servers3(_servers_started: List[RedisServer]) -> List[RedisServer]:
    """Three independent redis-servers (Redlock)."""
    out = [RedisServer() for _ in range(3)]
    _servers_started.extend(out)
    return out


@pytest.fixture
def manager(server: RedisServer) -> Iterator[fencelock.LockManager]:
    """A synchronous manager over ``server``.

    With a fixed per-server timeout: the default (ttl/20, at least 10 ms) is only 30 ms for
    the sub-second TTLs some tests use, too tight on a loaded CI machine.
    """
    m = fencelock.LockManager(server.url, server_timeout=0.5)
    yield m
    m.close()


@pytest.fixture
def name() -> str:
    """A lock name no other test uses."""
    return "lock-" + uuid.uuid4().hex[:12]
