"""Leader election in Python (issue 54): ``manager.election(name)``, sync and asyncio; a term
is a lock of the name whose fencing token is the term number; observers are pushed each
change and end on ``close()`` from another thread or on the manager's close."""

from __future__ import annotations

import asyncio
import datetime
import queue
import threading
import time
from typing import List, Optional

import pytest

import fencelock
import fencelock.asyncio as fa
from redis_fixture import RedisServer

# Longer than any wait below: a change reported in time was pushed, not found by a timer at
# the term's end.
TERM = 60.0


def test_a_term_leads_proclaims_and_resigns(manager: fencelock.LockManager, name: str) -> None:
    election = manager.election(name)
    assert election.name == name and election.leader() is None
    with election.campaign("host-a:8080", TERM) as term:
        assert isinstance(term, fencelock.Term) and term.value == "host-a:8080"
        assert term.lock.name == name and not term.lost
        leader = election.leader()
        assert leader is not None
        assert (leader.value, leader.fencing_token) == ("host-a:8080", term.fencing_token)
        assert 0 < leader.remaining <= TERM
        since = datetime.datetime.now(datetime.timezone.utc) - leader.since
        assert abs(since) < datetime.timedelta(seconds=30)
        assert election.try_campaign("other", TERM) is None, "one leader at a time"
        term.proclaim("host-a:9090")
        assert term.value == "host-a:9090"
        now = election.leader()
        assert now is not None
        assert (now.value, now.fencing_token, now.since) == ("host-a:9090", leader.fencing_token, leader.since), "same term"
        first = term.fencing_token
    assert election.leader() is None, "the end of the block resigned"
    term2 = election.try_campaign("b", TERM)
    assert term2 is not None and term2.fencing_token > first, "terms grow"
    term2.resign()


def test_candidates_lead_in_turn_and_an_observer_follows_from_another_thread(
    manager: fencelock.LockManager, name: str
) -> None:
    election = manager.election(name)
    observer = election.observe()
    reports: List[Optional[fencelock.Leader]] = []
    seen = threading.Condition()

    def follow() -> None:
        for leader in observer:
            with seen:
                reports.append(leader)
                seen.notify_all()

    follower = threading.Thread(target=follow)
    follower.start()

    def wait_for(value: Optional[str]) -> None:
        def last_is() -> bool:
            return bool(reports) and (reports[-1].value if reports[-1] else None) == value

        with seen:
            assert seen.wait_for(last_is, timeout=10), f"never reported {value!r}: {reports}"

    wait_for(None)
    first = election.campaign("a", TERM)
    wait_for("a")
    first.proclaim("a2")
    wait_for("a2")
    got: List[fencelock.Term] = []
    second = threading.Thread(target=lambda: got.append(election.campaign("b", TERM)))
    second.start()
    first.resign()
    second.join(10)
    assert got and got[0].value == "b" and got[0].fencing_token > first.fencing_token
    wait_for("b")
    got[0].resign()
    wait_for(None)
    observer.close()
    follower.join(10)
    assert not follower.is_alive(), "close() from another thread ended the iteration"
    terms = [r.fencing_token for r in reports if r is not None]
    assert terms == sorted(terms), "never an older term after a newer one"


def test_closing_the_manager_ends_an_observer(server: RedisServer, name: str) -> None:
    m = fencelock.LockManager(server.url)
    observer = m.election(name).observe()
    assert next(observer) is None
    threading.Timer(0.2, m.close).start()
    assert list(observer) == [], "the blocked iteration ended with the manager"


def test_on_leader_calls_back_at_each_change_until_closed(
    manager: fencelock.LockManager, name: str
) -> None:
    election = manager.election(name)
    seen: "queue.Queue[Optional[fencelock.Leader]]" = queue.Queue()
    observer = election.on_leader(seen.put)
    assert seen.get(timeout=10) is None, "nobody leads yet"
    with election.campaign("a", TERM) as term:
        got = seen.get(timeout=10)
        assert got is not None and (got.value, got.fencing_token) == ("a", term.fencing_token)
        term.proclaim("b")
        got = seen.get(timeout=10)
        assert got is not None and got.value == "b"
    assert seen.get(timeout=10) is None, "resigned: nobody"
    observer.close()
    with election.campaign("c", TERM):
        with pytest.raises(queue.Empty):
            seen.get(timeout=0.5)  # closed: no more calls


def test_on_leader_stops_when_the_callback_raises(
    manager: fencelock.LockManager, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    calls: List[Optional[fencelock.Leader]] = []
    done = threading.Event()

    def fail(leader: Optional[fencelock.Leader]) -> None:
        calls.append(leader)
        done.set()
        raise RuntimeError("a broken callback")

    with caplog.at_level("ERROR", logger="fencelock"):
        observer = manager.election(name).on_leader(fail)
        assert done.wait(10)
        for _ in range(100):
            if "no longer following" in caplog.text:
                break
            time.sleep(0.05)
    assert calls == [None] and "no longer following" in caplog.text
    assert list(observer) == [], "the observer was closed"


def test_run_leads_while_fn_runs(manager: fencelock.LockManager, name: str) -> None:
    election = manager.election(name)

    def lead(term: fencelock.Term) -> int:
        leader = election.leader()
        assert leader is not None and leader.value == "runner"
        return term.fencing_token

    token = election.run(lead, "runner", TERM)
    assert token > 0 and election.leader() is None


def test_bad_arguments_and_kinds(manager: fencelock.LockManager, name: str) -> None:
    nowhere = fencelock.LockManager("redis://127.0.0.1:1")
    with pytest.raises(ValueError):
        nowhere.election("")
    with pytest.raises(ValueError, match="at most 16384 bytes"):
        nowhere.election("x").campaign("v" * 16385, 10)
    with pytest.raises(ValueError):
        nowhere.election("x").campaign("v", 0)
    with pytest.raises(TypeError):
        nowhere.election("x").campaign(b"bytes are not a value", 10)  # type: ignore[arg-type]
    sem = manager.semaphore(name, 2)
    with sem.acquire(1, 10, wait=0):
        with pytest.raises(fencelock.WrongKind):
            manager.election(name).campaign("x", 10, wait=0)
    lock = manager.acquire(name + "-lock", 10, wait=0)
    assert manager.election(name + "-lock").leader() is None, "a plain lock is no leader"
    with pytest.raises(ValueError, match="not an election's term"):
        lock._proclaim("x")  # type: ignore[attr-defined]
    lock.release()


def test_asyncio_election(server: RedisServer, name: str) -> None:
    async def main() -> None:
        m = fa.LockManager(server.url, server_timeout=0.5)
        election = m.election(name)
        assert isinstance(election, fa.Election) and await election.leader() is None
        observer = election.observe()
        assert await observer.__anext__() is None
        async with await election.campaign("x", TERM) as term:
            assert isinstance(term, fa.Term)
            report = await asyncio.wait_for(observer.__anext__(), 10)
            assert report is not None and (report.value, report.fencing_token) == ("x", term.fencing_token)
            await term.proclaim("y")
            report = await asyncio.wait_for(observer.__anext__(), 10)
            assert report is not None and report.value == "y"
        assert await asyncio.wait_for(observer.__anext__(), 10) is None
        observer.close()
        assert [r async for r in observer] == []

        async def lead(term: fa.Term) -> str:
            return term.value

        assert await election.run(lead, "runner", TERM) == "runner"

        # on_leader: a task calling back (awaiting what the callback returns) at each change.
        reports: "asyncio.Queue[Optional[fencelock.Leader]]" = asyncio.Queue()
        follower = election.on_leader(reports.put)
        assert await asyncio.wait_for(reports.get(), 10) is None
        async with await election.campaign("z", TERM):
            got = await asyncio.wait_for(reports.get(), 10)
            assert got is not None and got.value == "z"
        assert await asyncio.wait_for(reports.get(), 10) is None
        follower.cancel()
        with pytest.raises(asyncio.CancelledError):
            await follower

        # A term lost while run's task works: the task is cancelled, LockLost raised.
        cancelled = asyncio.Event()

        async def lose(term: fa.Term) -> str:
            server.client().delete(name)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "never"

        with pytest.raises(fencelock.LockLost):
            await asyncio.wait_for(election.run(lose, "doomed", 0.6), 10)
        assert cancelled.is_set()
        m.close()

    asyncio.run(main())
