"""fencelock.metrics.instrument_opentelemetry's spans, read back from OpenTelemetry's
in-memory span exporter, against a real redis-server: ``fencelock.acquire`` and
``fencelock.hold`` as children of the span current where the call was made (a thread's, an
asyncio task's), with the documented attributes and times, and no password or token.

The tracer is the process's: each test attaches its own and closes it at the end."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Iterator, List

import pytest

import fencelock
import fencelock.asyncio
from fencelock import _logging
from fencelock.metrics import instrument_opentelemetry
from helpers import wait_until
from redis_fixture import RedisServer

otel_sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

PASSWORD = "pw-in-url-0xBADC0DE"


@pytest.fixture
def url(server: RedisServer) -> str:
    server.client().execute_command("ACL", "SETUSER", "locker", "on", ">" + PASSWORD, "~*", "&*", "+@all")
    return f"redis://locker:{PASSWORD}@127.0.0.1:{server.port}"


class Traced:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def spans(self, name: str, count: int) -> List[ReadableSpan]:
        """The finished spans called ``name`` once there are ``count`` (they are made on
        fencelock's thread shortly after they end)."""
        found: List[ReadableSpan] = []

        def enough() -> bool:
            found[:] = [s for s in self.exporter.get_finished_spans() if s.name == name]
            return len(found) >= count

        wait_until(enough, timeout=10, what=f"{count} {name} span(s)")
        assert len(found) == count, found
        return found


@pytest.fixture
def traced() -> Iterator[Traced]:
    t = Traced()
    attached = instrument_opentelemetry(tracer_provider=t.provider, metrics=False)
    assert attached.metrics is None and attached.tracing is not None
    yield t
    attached.tracing.close()


def _no_secrets(spans: List[ReadableSpan], token: str) -> None:
    for s in spans:
        text = repr(dict(s.attributes or {}))
        assert PASSWORD not in text and token not in text, text


def test_spans_are_children_of_the_callers_span_in_sync_code(url: str, name: str, traced: Traced) -> None:
    with fencelock.LockManager(url) as m:
        with traced.tracer.start_as_current_span("request") as request:
            with m.lock(name, 10) as lock:
                token = lock.token
                fencing = lock.fencing_token
                time.sleep(0.05)
        [acquire] = traced.spans("fencelock.acquire", 1)
        [hold] = traced.spans("fencelock.hold", 1)
        parent = request.get_span_context()
        for s in (acquire, hold):
            assert s.parent is not None and s.parent.span_id == parent.span_id, s
            assert s.context.trace_id == parent.trace_id
            assert s.start_time is not None and s.end_time is not None and s.end_time >= s.start_time
        a, h = dict(acquire.attributes or {}), dict(hold.attributes or {})
        assert a == {"lock": name, "kind": "mutex", "servers": 1, "quorum": 1, "outcome": "acquired",
                     "attempts": 1, "handed_over": False, "waited_ms": a["waited_ms"], "fencing_token": fencing}
        assert h == {"lock": name, "kind": "mutex", "fencing_token": fencing, "outcome": "released",
                     "held_ms": h["held_ms"]}
        assert h["held_ms"] >= 50 and hold.start_time >= acquire.start_time
        assert acquire.status.status_code == StatusCode.UNSET
        # A single try refused: its own span, not an error; no hold.
        with m.lock(name, 10):
            with traced.tracer.start_as_current_span("second"):
                with pytest.raises(fencelock.NotAcquired):
                    m.acquire(name, 10, wait=0)
        refused = [s for s in traced.spans("fencelock.acquire", 3) if s.attributes["outcome"] == "not_acquired"]
        assert len(refused) == 1 and "fencing_token" not in refused[0].attributes
        assert refused[0].status.status_code == StatusCode.UNSET
        _no_secrets(traced.exporter.get_finished_spans(), token)


def test_a_lost_hold_is_an_error_span(url: str, server: RedisServer, name: str, traced: Traced) -> None:
    with fencelock.LockManager(url) as m:
        lock = m.acquire(name, 10)
        server.client().delete(name)
        with pytest.raises(fencelock.LockLost):
            lock.extend(10)
        with pytest.raises(fencelock.LockLost):
            lock.release()
    [hold] = traced.spans("fencelock.hold", 1)
    assert hold.attributes["outcome"] == "lost"
    assert hold.status.status_code == StatusCode.ERROR


def test_spans_follow_each_asyncio_task(url: str, name: str, traced: Traced) -> None:
    async def job(m: Any, task: str) -> int:
        with traced.tracer.start_as_current_span(task) as span:
            async with m.lock(f"{name}-{task}", 10):
                await asyncio.sleep(0.02)
            return span.get_span_context().span_id

    async def main() -> List[int]:
        m = fencelock.asyncio.LockManager(url)
        try:
            return list(await asyncio.gather(*(job(m, f"task{i}") for i in range(4))))
        finally:
            await m.close()

    ids = asyncio.run(main())
    for kind in ("fencelock.acquire", "fencelock.hold"):
        spans = traced.spans(kind, 4)
        by_lock = {s.attributes["lock"]: s.parent.span_id for s in spans if s.parent is not None}
        assert by_lock == {f"{name}-task{i}": ids[i] for i in range(4)}, kind


def test_no_spans_once_closed_or_without_a_tracer(url: str, name: str) -> None:
    t = Traced()
    attached = instrument_opentelemetry(tracer_provider=t.provider, metrics=False)
    assert attached.tracing is not None
    attached.tracing.close()
    with fencelock.LockManager(url) as m:
        with t.tracer.start_as_current_span("request"):
            m.acquire(name, 10).release()
    _logging._flush()  # whatever is queued, emitted now
    assert [s.name for s in t.exporter.get_finished_spans()] == ["request"]
