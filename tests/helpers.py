"""Small helpers shared by the tests."""

from __future__ import annotations

import threading
import time

import pytest


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1, message: str = "condition"):
    """Poll ``predicate`` until it is true or fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {message}")


def live_threads(prefix: str = "workbench-") -> list[threading.Thread]:
    """Workbench threads still alive (pollers and monitors name theirs with this prefix)."""
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]
