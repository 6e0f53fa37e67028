"""docs/observability/: the Prometheus alert rules and the Grafana dashboard are loaded and
validated: every expression parses as PromQL (the Rust promql-parser's Python package), and
names only series fencelock exports, with labels they have (docs/observability.md's table, as
the core defines it: ``fencelock.metrics.MEASURES``); every series they name is in a scrape
of the collector after real locks."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Set, Tuple

import pytest

import fencelock
from fencelock.metrics import MEASURES, register_prometheus
from helpers import wait_until
from redis_fixture import RedisServer

promql = pytest.importorskip("promql_parser")
yaml = pytest.importorskip("yaml")
prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

DOCS = Path(os.environ.get("FENCELOCK_ROOT", Path(__file__).resolve().parents[2])) / "docs" / "observability"
#: Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"instance", "job"}


def series_labels() -> Dict[str, Set[str]]:
    """Every series name fencelock exports, and the labels it has."""
    out: Dict[str, Set[str]] = {}
    for m in MEASURES:
        labels = set(m.labels) | TARGET_LABELS
        if m.instrument == "histogram":
            out[m.name + "_bucket"] = labels | {"le"}
            out[m.name + "_sum"] = labels
            out[m.name + "_count"] = labels
        else:
            out[m.name] = labels
    return out


def walk(node: Any) -> Iterator[Any]:
    """Every node of a parsed PromQL expression."""
    yield node
    for attr in ("lhs", "rhs", "expr", "vector_selector", "param"):
        child = getattr(node, attr, None)
        if child is not None and not isinstance(child, (int, float, str)):
            yield from walk(child)
    for arg in getattr(node, "args", None) or []:
        yield from walk(arg)


def check(expr: str) -> Set[str]:
    """Parses `expr` and checks its series and labels; returns the series it names."""
    tree = promql.parse(expr.replace("$__rate_interval", "5m"))
    known = series_labels()
    named: Set[str] = set()
    grouped: Set[str] = set()
    for node in walk(tree):
        if type(node).__name__ == "VectorSelector":
            assert node.name in known, f"{node.name} is not a series fencelock exports ({expr})"
            named.add(node.name)
            for m in node.matchers.matchers:
                assert m.name in known[node.name], f"{node.name} has no label {m.name} ({expr})"
        modifier = getattr(node, "modifier", None)
        if type(node).__name__ == "AggregateExpr" and modifier is not None:
            grouped.update(modifier.labels)
    allowed = set().union(*(known[n] for n in named)) if named else set()
    assert grouped <= allowed, f"grouped by {grouped - allowed}, which no series has ({expr})"
    return named


def rules() -> List[Dict[str, Any]]:
    doc = yaml.safe_load((DOCS / "alerts.yml").read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def dashboard_targets() -> List[Tuple[str, str]]:
    dash = json.loads((DOCS / "grafana-dashboard.json").read_text())
    return [(p["title"], t["expr"]) for p in dash["panels"] for t in p["targets"]]


def test_the_alert_rules_load_and_name_only_what_fencelock_exports() -> None:
    found = rules()
    assert {r["alert"] for r in found} >= {
        "FencelockAcquireWaitHigh", "FencelockHoldLongerThanUsual", "FencelockHoldsNotEnding", "FencelockLocksLost",
    }
    for r in found:
        assert set(r) <= {"alert", "expr", "for", "labels", "annotations"}, r["alert"]
        assert r["labels"]["severity"] in {"warning", "critical"}
        assert r["annotations"]["summary"]
        assert check(r["expr"]), r["alert"]


def test_the_dashboard_loads_and_its_panels_query_what_fencelock_exports() -> None:
    dash = json.loads((DOCS / "grafana-dashboard.json").read_text())
    assert dash["uid"] == "fencelock" and dash["templating"]["list"][0]["type"] == "datasource"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        assert p["datasource"]["uid"] == "${datasource}" and p["targets"], p["title"]
    named = set().union(*(check(expr) for _, expr in dashboard_targets()))
    # Every measure is on the dashboard.
    for m in MEASURES:
        assert any(n.startswith(m.name) for n in named), m.name


def test_every_series_the_files_name_is_in_a_scrape(server: RedisServer, name: str) -> None:
    registry = prometheus_client.CollectorRegistry()
    register_prometheus(registry)
    client = server.client()
    with fencelock.LockManager(server.url, metric_names=[name]) as m:
        lock = m.acquire(name, 10)
        lock.extend(10)
        assert m.try_acquire(name, 10) is None
        # A waiter handed the lock by the release.
        got: List[fencelock.Lock] = []
        waiter = threading.Thread(target=lambda: got.append(m.acquire(name, 10, wait=30)))
        waiter.start()
        # In line and listening: a waiter takes its place at its first refusal and subscribes
        # after it, and a release passes over a waiter that does not listen yet.
        wait_until(lambda: sum(int(client.zcard(k)) for k in client.keys("fencelock:{*}:queue:" + name)) == 1
                   and len(client.pubsub_channels("fencelock:{*}:released:" + name + "|*")) == 1,
                   10, "the waiter in line, listening")
        lock.release()
        waiter.join(30)
        # Taken from its holder: lost.
        client.set(name, "someone-else")
        with pytest.raises(fencelock.LockLost):
            got[0].extend(10)
        with pytest.raises(fencelock.LockLost):
            got[0].release()
    text = prometheus_client.generate_latest(registry).decode()
    scraped = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    named = set().union(*(check(r["expr"]) for r in rules()), *(check(e) for _, e in dashboard_targets()))
    # Server errors need a failing server: every other series is there.
    missing = named - scraped - {"fencelock_server_errors_total"}
    assert not missing, missing
