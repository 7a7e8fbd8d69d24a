"""Small helpers shared by the tests."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import psutil
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


def family_of(pid: int) -> dict[int, str]:
    """Every live process that ``pid`` started, directly or not, by id, with its name.

    A short-lived child (a Python worker ending its task) may exit between the listing and the
    name read: it is gone already, so it cannot be left behind, and it is not counted.
    """
    family = {}
    for child in psutil.Process(pid).children(recursive=True):
        try:
            family[child.pid] = child.name()
        except psutil.NoSuchProcess:
            pass
    return family


def jvms_of(pid: int) -> list[int]:
    """The ids of the Java processes (Spark's JVMs) that ``pid`` started, directly or not."""
    return [child for child, name in family_of(pid).items() if name == "java"]


def kill_jvm_after(handle: Any, batches: int = 2, timeout: float = 120) -> None:
    """In a script with a Spark of its own: once ``handle`` has run ``batches``, kill this process's JVM.

    Returns once the JVM has ended (as the user finds it when they next look).
    """
    deadline = time.monotonic() + timeout
    while handle.progress.total < batches and time.monotonic() < deadline:
        time.sleep(0.05)
    [jvm] = [psutil.Process(pid) for pid in jvms_of(os.getpid())]
    jvm.kill()
    jvm.wait(10)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
