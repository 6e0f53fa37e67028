"""Small helpers shared by the tests."""

from __future__ import annotations

import time
from typing import Callable


def wait_until(condition: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Polls ``condition`` until it holds; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)
