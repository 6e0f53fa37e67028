"""fencelock's measurements in Python's own metrics libraries (docs/observability.md).

The Rust core measures every lock (acquire wait by outcome, attempts, hold time, hand-offs,
extensions, losses, server errors, locks held and callers waiting) and keeps running totals;
nothing here takes the GIL when a lock is measured. Attach an exporter:

- ``register_prometheus()``: a ``prometheus_client`` collector (install
  ``fencelock[prometheus]``) that reads the totals at each scrape;
- ``instrument_opentelemetry()``: OpenTelemetry instruments (install
  ``fencelock[opentelemetry]``): observable counters and up-down counters read from the totals,
  and histograms that record the observations made since the last collection, at each
  collection (an observation shows in the export that follows it).

Lock names appear in the ``name`` label only when a manager lets them through
(``LockManager(..., metric_names=["orders"])`` or a function of the name); otherwise the label
is empty. No label holds a token, a password or a server's address.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from fencelock import _native

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry


class Measure(NamedTuple):
    """One measurement, as the core defines it."""

    name: str
    instrument: str
    """``"counter"``, ``"histogram"`` or ``"gauge"`` (reported as +1/-1 changes)."""
    unit: str
    """``"seconds"``, or ``"1"`` for a count."""
    labels: Tuple[str, ...]
    buckets: Tuple[float, ...]
    """Histogram bucket upper bounds (empty for the others)."""
    help: str


#: Every measure, in the order of docs/observability.md's table.
MEASURES: Tuple[Measure, ...] = tuple(
    Measure(name, instrument, unit, tuple(labels), tuple(buckets), help)
    for name, instrument, unit, labels, buckets, help in _native._metric_measures()
)


def _totals() -> Dict[str, List[Tuple[List[str], Any]]]:
    by_name: Dict[str, List[Tuple[List[str], Any]]] = {m.name: [] for m in MEASURES}
    for name, labels, value in _native._metric_totals():
        by_name[name].append((labels, value))
    return by_name


class PrometheusCollector:
    """A ``prometheus_client`` collector of fencelock's measurements: registered with a
    registry, it reads the core's running totals at each scrape (counters, gauges, and
    histograms with the buckets of ``MEASURES``)."""

    def __init__(self) -> None:
        _needs("prometheus_client", "prometheus", "fencelock.metrics.PrometheusCollector")
        _native._metric_start(False)

    def collect(self) -> Iterator["Metric"]:
        """The metric families, one per measure (with no sample until it was measured)."""
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        totals = _totals()
        for m in MEASURES:
            labels = list(m.labels)
            series = totals[m.name]
            if m.instrument == "counter":
                counter = CounterMetricFamily(m.name, m.help, labels=labels)
                for values, total in series:
                    counter.add_metric(values, float(total))
                yield counter
            elif m.instrument == "gauge":
                gauge = GaugeMetricFamily(m.name, m.help, labels=labels)
                for values, total in series:
                    gauge.add_metric(values, float(total))
                yield gauge
            else:
                histogram = HistogramMetricFamily(m.name, m.help, labels=labels)
                for values, (buckets, count, total_sum) in series:
                    bounds = [(_bound(b), float(n)) for b, n in zip(m.buckets, buckets)]
                    bounds.append(("+Inf", float(count)))
                    histogram.add_metric(values, bounds, float(total_sum))
                yield histogram

    def describe(self) -> Iterable["Metric"]:
        """Nothing up front: the families are those of ``collect``."""
        return []


def _bound(b: float) -> str:
    return repr(float(b))


def _needs(module: str, extra: str, what: str) -> None:
    """Imports ``module``, or says which extra to install (a bare ``ModuleNotFoundError``
    would not)."""
    import importlib

    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f'{what} needs the {module} package: pip install "fencelock[{extra}]"', name=e.name
        ) from e


def register_prometheus(registry: Optional["CollectorRegistry"] = None) -> PrometheusCollector:
    """Registers a ``PrometheusCollector`` with ``registry`` (default: prometheus_client's
    global ``REGISTRY``, which ``start_http_server`` serves) and returns it
    (``registry.unregister(collector)`` removes it)."""
    _needs("prometheus_client", "prometheus", "fencelock.metrics.register_prometheus")
    from prometheus_client import REGISTRY

    collector = PrometheusCollector()
    (registry if registry is not None else REGISTRY).register(collector)
    return collector


class OpenTelemetryMetrics:
    """The OpenTelemetry instruments of ``instrument_opentelemetry``."""

    def __init__(self, meter_provider: Any = None) -> None:
        _needs("opentelemetry", "opentelemetry", "fencelock.metrics.instrument_opentelemetry")
        from opentelemetry import metrics
        from opentelemetry.metrics import CallbackOptions, Observation

        version: str = _native.__version__
        meter = (
            meter_provider.get_meter("fencelock", version)
            if meter_provider is not None
            else metrics.get_meter("fencelock", version)
        )
        _native._metric_start(True)
        self._lock = threading.Lock()
        self._histograms: Dict[str, Any] = {}
        self._labels = {m.name: m.labels for m in MEASURES}

        def observe(name: str) -> Any:
            def callback(options: CallbackOptions) -> Iterable[Observation]:
                self._record_histograms()
                return [
                    Observation(float(total), dict(zip(self._labels[name], values)))
                    for values, total in _totals()[name]
                ]

            return callback

        for m in MEASURES:
            unit = "s" if m.unit == "seconds" else "1"
            if m.instrument == "histogram":
                self._histograms[m.name] = meter.create_histogram(
                    m.name, unit=unit, description=m.help
                )
            elif m.instrument == "counter":
                meter.create_observable_counter(
                    m.name, callbacks=[observe(m.name)], unit=unit, description=m.help
                )
            else:
                meter.create_observable_up_down_counter(
                    m.name, callbacks=[observe(m.name)], unit=unit, description=m.help
                )

    def _record_histograms(self) -> None:
        # The first callback of a collection records what was observed since the last one.
        with self._lock:
            for name, values, value in _native._metric_observations():
                self._histograms[name].record(value, dict(zip(self._labels[name], values)))


class OpenTelemetryTracing:
    """The spans of ``instrument_opentelemetry``: ``fencelock.acquire`` for every acquire call
    and ``fencelock.hold`` from each grant to its end, children of the OpenTelemetry context
    the call was made in (the current span of the calling thread, or of the asyncio task),
    with the attributes of docs/observability.md."""

    def __init__(self, tracer_provider: Any = None) -> None:
        _needs("opentelemetry", "opentelemetry", "fencelock.metrics.instrument_opentelemetry")
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        version: str = _native.__version__
        self._tracer = (
            tracer_provider.get_tracer("fencelock", version)
            if tracer_provider is not None
            else trace.get_tracer("fencelock", version)
        )
        self._kind = SpanKind.INTERNAL
        self._error = {
            "error": Status(StatusCode.ERROR, "the acquire call failed"),
            "lost": Status(StatusCode.ERROR, "the lock was lost while held"),
        }
        global _tracing
        _tracing = self
        _native._set_span_capture(context.get_current)
        from fencelock import _logging

        _logging._span_handler = _emit_spans
        _logging._start_thread()

    def _emit(self, records: Iterable[Tuple[str, Any, int, int, Dict[str, Any]]]) -> None:
        for name, parent, start_ns, end_ns, attributes in records:
            span = self._tracer.start_span(
                name, context=parent, kind=self._kind, attributes=attributes, start_time=start_ns
            )
            status = self._error.get(attributes.get("outcome", ""))
            if status is not None:
                span.set_status(status)
            span.end(end_time=end_ns)

    def close(self) -> None:
        """Stops making spans (the calls already under way make none either)."""
        global _tracing
        if _tracing is self:
            from fencelock import _logging

            _native._set_span_capture(None)
            _logging._span_handler = None
            _tracing = None


#: The tracer attached by ``instrument_opentelemetry`` (one per process), or None.
_tracing: Optional[OpenTelemetryTracing] = None


def _emit_spans(records: Iterable[Tuple[str, Any, int, int, Dict[str, Any]]]) -> None:
    """Called on the fencelock thread with the core's span records."""
    tracing = _tracing
    if tracing is not None:
        tracing._emit(records)


class OpenTelemetry(NamedTuple):
    """What ``instrument_opentelemetry`` attached."""

    metrics: Optional[OpenTelemetryMetrics]
    tracing: Optional[OpenTelemetryTracing]


def instrument_opentelemetry(
    meter_provider: Any = None,
    tracer_provider: Any = None,
    *,
    metrics: bool = True,
    traces: bool = True,
) -> OpenTelemetry:
    """Reports fencelock to OpenTelemetry (install ``fencelock[opentelemetry]``).

    - Metrics (``metrics=True``): fencelock's instruments on ``meter_provider``'s meter
      "fencelock" (default: the global provider's): an observable counter per counter, an
      observable up-down counter per gauge, a histogram per histogram (named as in
      ``MEASURES``, unit ``s`` or ``1``). Call it once per provider.
    - Traces (``traces=True``): spans ``fencelock.acquire`` and ``fencelock.hold`` on
      ``tracer_provider``'s tracer "fencelock" (default: the global provider's), each a child
      of the context its acquire call was made in, in threads and in asyncio tasks alike.
      Spans are made on fencelock's own thread shortly after they end (with their real start
      and end times), never on the thread that waits for a lock. One tracer per process: a
      later call replaces it; ``.tracing.close()`` stops it.
    """
    return OpenTelemetry(
        OpenTelemetryMetrics(meter_provider) if metrics else None,
        OpenTelemetryTracing(tracer_provider) if traces else None,
    )


__all__ = [
    "MEASURES",
    "Measure",
    "OpenTelemetry",
    "OpenTelemetryMetrics",
    "OpenTelemetryTracing",
    "PrometheusCollector",
    "instrument_opentelemetry",
    "register_prometheus",
]
