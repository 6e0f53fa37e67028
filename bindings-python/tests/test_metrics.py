"""fencelock.metrics: the core's measurements read back from what real exporters export (a
prometheus_client HTTP server scraped over HTTP, OpenTelemetry's in-memory reader), against a
real redis-server; and the metric_names option.

The totals are the process's: each test lets only its own lock name into the ``name`` label
and reads the series of that name (the gauges, which carry no name, by their change)."""

from __future__ import annotations

import sys
import threading
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

import fencelock
from fencelock.metrics import MEASURES, instrument_opentelemetry, register_prometheus
from helpers import wait_until
from redis_fixture import RedisServer, free_port

prometheus_client = pytest.importorskip("prometheus_client")
otel_sdk = pytest.importorskip("opentelemetry.sdk.metrics")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402

PASSWORD = "pw-in-url-0xC0FFEE"


@pytest.fixture
def url(server: RedisServer) -> str:
    """A URL with a password (an ACL user), which must show in no label."""
    server.client().execute_command("ACL", "SETUSER", "locker", "on", ">" + PASSWORD, "~*", "&*", "+@all")
    return f"redis://locker:{PASSWORD}@127.0.0.1:{server.port}"


@pytest.fixture
def scrape() -> Iterator[Any]:
    """A registry with fencelock's collector, served over HTTP; yields a function that scrapes
    it: (raw text, {(sample name, sorted labels): value})."""
    registry = prometheus_client.CollectorRegistry()
    register_prometheus(registry)
    port = free_port()
    httpd, thread = prometheus_client.start_http_server(port, addr="127.0.0.1", registry=registry)

    def get() -> Tuple[str, Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return text, samples

    yield get
    httpd.shutdown()
    thread.join(10)


def labels(**kv: str) -> Tuple[Tuple[str, str], ...]:
    return tuple(sorted(kv.items()))


def test_a_scrape_over_http_shows_waits_holds_and_hand_offs_by_outcome(
    url: str, name: str, scrape: Any
) -> None:
    _, before = scrape()
    held_before = before.get(("fencelock_locks_held", labels(kind="mutex")), 0.0)
    with fencelock.LockManager(url, metric_names=[name], server_timeout=0.5) as m:
        lock = m.acquire(name, 10)
        token = str(lock.token)
        _, during = scrape()
        assert during[("fencelock_locks_held", labels(kind="mutex"))] == held_before + 1
        assert m.try_acquire(name, 10) is None
        with pytest.raises(fencelock.NotAcquired):
            m.acquire(name, 10, wait=0.2)
        got: List[fencelock.Lock] = []
        waiter = threading.Thread(target=lambda: got.append(m.acquire(name, 10, wait=30)))
        waiter.start()
        client = _plain(url)
        # In line and listening: a release passes over a waiter that does not listen yet.
        wait_until(lambda: _queued(client, name) == 1 and _listening(client, name), 10,
                   "the waiter in line, listening")
        lock.release()
        waiter.join(30)
        got[0].release()
    text, after = scrape()
    wait = "fencelock_acquire_wait_seconds"
    mine = dict(kind="mutex", name=name)
    assert after[(wait + "_count", labels(outcome="acquired", **mine))] == 2
    assert after[(wait + "_count", labels(outcome="not_acquired", **mine))] == 1
    assert after[(wait + "_count", labels(outcome="wait_limit", **mine))] == 1
    assert after[(wait + "_sum", labels(outcome="wait_limit", **mine))] >= 0.2
    inf = after[(wait + "_bucket", labels(outcome="acquired", le="+Inf", **mine))]
    assert inf == 2
    assert after[(wait + "_bucket", labels(outcome="wait_limit", le="0.1", **mine))] == 0
    assert after[("fencelock_handoffs_total", labels(**mine))] == 1
    assert after[("fencelock_hold_seconds_count", labels(outcome="released", **mine))] == 2
    assert after[("fencelock_locks_held", labels(kind="mutex"))] == held_before
    # Every measure is exported, with its documented buckets.
    families = {f.name for f in text_string_to_metric_families(text)}
    for measure in MEASURES:
        assert measure.name.removesuffix("_total") in families, measure.name
    bounds = sorted(float(dict(k[1])["le"]) for k in after if k[0] == wait + "_bucket"
                    and dict(k[1]).get("name") == name and dict(k[1])["outcome"] == "acquired")
    assert bounds[:-1] == list(MEASURES[0].buckets)
    assert PASSWORD not in text and token not in text


def test_opentelemetry_instruments_export_the_same_measurements(url: str, name: str) -> None:
    from opentelemetry.sdk.metrics import MeterProvider

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument_opentelemetry(provider, traces=False)
    with fencelock.LockManager(url, metric_names=lambda n: "mapped-" + n if n == name else None) as m:
        lock = m.acquire(name, 10)
        assert lock.extend(10) is None
        lock.release()
        m.acquire("other-" + name, 10).release()
    reader.get_metrics_data()  # the first collection records the observations made so far
    points = _points(reader)
    mine = {"kind": "mutex", "name": "mapped-" + name}
    waits = points["fencelock_acquire_wait_seconds"]
    assert [p.count for p in waits if p.attributes == {**mine, "outcome": "acquired"}] == [1]
    holds = points["fencelock_hold_seconds"]
    assert [p.count for p in holds if p.attributes == {**mine, "outcome": "released"}] == [1]
    ext = points["fencelock_extensions_total"]
    assert [p.value for p in ext if p.attributes == {**mine, "result": "ok"}] == [1]
    held = points["fencelock_locks_held"]
    assert all(p.value >= 0 for p in held)
    for p in (q for pts in points.values() for q in pts):
        assert PASSWORD not in str(p.attributes)


def _points(reader: Any) -> Dict[str, List[Any]]:
    out: Dict[str, List[Any]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            if sm.scope.name != "fencelock":
                continue
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


@pytest.mark.parametrize("bad", ["orders", b"orders", 42, [1], [None]])
def test_metric_names_refuses_what_is_neither_names_nor_a_function(server: RedisServer, bad: Any) -> None:
    with pytest.raises(TypeError, match="metric_names"):
        fencelock.LockManager(server.url, metric_names=bad)


def test_a_name_function_that_raises_leaves_the_label_empty(server: RedisServer, name: str) -> None:
    registry = prometheus_client.CollectorRegistry()
    register_prometheus(registry)

    def boom(n: str) -> str:
        raise RuntimeError("no")

    with fencelock.LockManager(server.url, metric_names=boom) as m:
        m.acquire(name, 10).release()
    text = prometheus_client.generate_latest(registry).decode()
    assert f'name="{name}"' not in text
    assert 'name=""' in text


def _queued(client: Any, name: str) -> int:
    """Places in the wait queue of ``name`` (``fencelock:{SLOT-TAG}:queue:NAME``)."""
    return sum(int(client.zcard(k)) for k in client.keys("fencelock:{*}:queue:" + name))


def _listening(client: Any, name: str) -> bool:
    """Whether a waiter for ``name`` listens: a subscriber on one of its wake-up channels
    (``fencelock:{SLOT-TAG}:released:NAME|WAKE-ID``). A waiter takes its place at its first
    refusal and subscribes after it."""
    return len(client.pubsub_channels("fencelock:{*}:released:" + name + "|*")) > 0


def _plain(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url)


@pytest.mark.parametrize(
    "module, extra, call",
    [
        ("prometheus_client", "prometheus", lambda: register_prometheus()),
        ("opentelemetry", "opentelemetry", lambda: instrument_opentelemetry()),
    ],
)
def test_a_missing_extra_is_named_with_its_pip_install(monkeypatch: pytest.MonkeyPatch, module: str, extra: str,
                                                        call: Callable[[], object]) -> None:
    """Issue 57 item 5: only one extra installed, the other's exporter says what to install
    (it was a bare ModuleNotFoundError)."""
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ModuleNotFoundError, match=f'pip install "fencelock\\[{extra}\\]"') as e:
        call()
    assert e.value.name == module
