"""Small helpers shared by the tests."""

from __future__ import annotations

import threading
import time

import pytest


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1, message=None, *, text=None):
    """Poll ``predicate`` until it is true (returning its value) or fail the test after ``timeout`` seconds.

    The failure says "timed out ... waiting for ``message``", or ``text`` as it stands; ``text``
    may be a callable, called at the timeout so that it can say what was seen last.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            break
        time.sleep(interval)
    if text is not None:
        pytest.fail(f"{text() if callable(text) else text} (waited {timeout:.0f} s)")
    pytest.fail(f"timed out after {timeout}s waiting for {message or 'condition'}")


def live_threads(prefix: str = "workbench-") -> list[threading.Thread]:
    """Workbench threads still alive (pollers and monitors name theirs with this prefix)."""
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]
