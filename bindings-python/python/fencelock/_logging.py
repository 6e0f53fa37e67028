"""fencelock's events in the standard ``logging`` module, under the logger ``"fencelock"``.

The Rust core reports what it does (``acquired``, ``acquire failed``, ``extend``, ``release``,
``lock lost``, and at trace level every ``acquire attempt``). The native module queues those
events (never taking the GIL on the thread that emitted them) and a daemon thread started
here logs them. Nothing is forwarded, and the core's events cost nothing, below the chosen
level. The same thread turns the core's span records into OpenTelemetry spans while a tracer
is attached (``fencelock.metrics.instrument_opentelemetry``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from fencelock import _native

#: The level of fencelock's trace events (every acquire attempt), below ``logging.DEBUG``.
TRACE = 5

logger = logging.getLogger("fencelock")

_LEVELS = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}

# LogRecord attributes a field must not overwrite (logging raises KeyError for them).
_RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}

_thread: Optional[threading.Thread] = None
_thread_lock = threading.Lock()
#: Makes spans of the core's span records on this thread: set by the tracer that asked for
#: them (``fencelock.metrics``), which imports this module, never the other way.
_span_handler: Optional[Callable[[Sequence[Any]], None]] = None


def _core_level(level: Optional[int]) -> Optional[str]:
    """The most verbose core level whose events ``level`` lets through."""
    if level is None:
        return None
    for name, value in _LEVELS.items():  # most verbose first
        if value >= level:
            return name
    return None


def enable_logging(level: Optional[Union[int, str]] = logging.DEBUG) -> None:
    """Sends fencelock's events at ``level`` or more severe to the logger ``"fencelock"``.

    ``level`` is a ``logging`` level (``logging.DEBUG``, ``"INFO"``, ``fencelock.TRACE`` for
    every acquire attempt as well) or ``None`` to send none. Without a call, the first
    ``LockManager`` created picks the level the ``"fencelock"`` logger has at that moment
    (by default ``WARNING``: only ``lock lost``). This sets which events fencelock produces; the
    logger's own level and handlers still decide what is shown (``logging.basicConfig``).

    Records are logged from a daemon thread named ``fencelock-logging``, shortly after the
    event; each record's message is the event line (``acquired lock="jobs" attempts=1
    elapsed_ms=2 fencing_token=7``) and its fields are also record attributes
    (``record.lock``, ``record.attempts``, ...; whole numbers as ``int``). Tokens and
    passwords never appear.
    """
    if isinstance(level, bool) or not (level is None or isinstance(level, (int, str))):
        raise TypeError(f"level must be a logging level (int or str) or None, got {type(level).__name__}")
    if isinstance(level, str):
        resolved = logging.getLevelName(level.upper())
        if not isinstance(resolved, int):
            raise ValueError(f"level {level!r} is not a logging level name")
        level = resolved
    core = _core_level(level)
    if core is not None:
        _start_thread()
    _native._set_event_level(core)


def _on_first_manager() -> None:
    """Called by the first ``LockManager`` (of either flavour) unless ``enable_logging`` was."""
    enable_logging(logger.getEffectiveLevel())


def _value(text: str) -> Union[int, str]:
    if text.isdigit():
        return int(text)
    if len(text) >= 2 and text[0] == text[-1] == '"':  # lock names are quoted by the core
        return text[1:-1]
    return text


def _emit(events: List[Tuple[str, str, List[Tuple[str, str]]]], dropped: int, spans: Sequence[Any] = ()) -> None:
    if dropped:
        logger.warning("%d fencelock events were dropped (the fencelock thread fell behind; span records count among them)", dropped)
    handler = _span_handler  # the tracer that asked for them (fencelock.metrics)
    if spans and handler is not None:
        handler(spans)
    for level_name, line, fields in events:
        level = _LEVELS.get(level_name, logging.INFO)
        if not logger.isEnabledFor(level):
            continue
        extra: Dict[str, object] = {"fencelock_fields": dict(fields)}
        for key, text in fields:
            if key not in _RESERVED:
                extra[key] = _value(text)
        logger.log(level, "%s", line, extra=extra)


def _drain() -> None:
    while True:
        batch = _native._next_events()
        if batch is None:  # the interpreter is closing
            return
        try:
            _emit(*batch)
        except Exception:  # a broken handler must not stop the thread
            pass


def _spans_wanted() -> bool:
    return _span_handler is not None


def _start_thread() -> None:
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_drain, name="fencelock-logging", daemon=True)
            _thread.start()


def _flush() -> None:
    """Logs what is queued now, on the calling thread (the ``atexit`` hook, tests)."""
    _emit(*_native._take_events())


def _flush_at_exit() -> None:
    try:
        _flush()
    except Exception:
        pass


def _after_fork_in_child() -> None:
    """The parent's logging thread does not exist in a child: start one if events flow.
    (Called by the package's fork hook, after the native module's.)"""
    global _thread, _thread_lock
    _thread = None
    _thread_lock = threading.Lock()
    if _native._event_level() is not None or _spans_wanted():
        try:
            _start_thread()
        except RuntimeError:  # no threads in this child: events stay queued
            pass

