"""The workbench's private temporary folders, and those left behind by processes that were killed.

Every temporary folder the workbench makes (checkpoints, Spark's scratch files, a stream
test's or a memory stream's files) is private (mode 0700) and removed when its process ends
normally. A process that is killed (``kill -9``, the out-of-memory killer, a test harness
ending kernels at once) removes nothing, and a scratch folder holding state stores can be
hundreds of MB. So each folder names its owner in a small ``.owner`` file (the process id and
its start time, and the machine's name), and the first session of every process removes, in the background, the
folders whose owner is gone. Folders without an ``.owner`` file (made by someone else, or by
an older release) are never touched.

A folder removed while its JVM lives can come back: the state store's maintenance thread
(every ``spark.sql.streaming.stateStore.maintenanceInterval``, 60 s by default) writes a
stopped query's last RocksDB snapshot into its checkpoint until it unloads that store. So
:func:`remove_folder` remembers what it removed, and :func:`sweep_removed` removes it again:
at every later removal, once the JVM has ended, and when the process exits.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

__all__ = ["PREFIX", "private_folder", "remove_folder", "came_back", "sweep_removed", "sweep_orphans"]

log = logging.getLogger(__name__)

#: What every workbench temporary folder's name starts with.
PREFIX = "workbench-"
OWNER = ".owner"
_swept = threading.Event()
_removed: set[str] = set()
_removed_lock = threading.Lock()


def private_folder(kind: str = "") -> Path:
    """A new private temporary folder (``workbench-KIND...``, mode 0700) that names its owner.

    Examples
    --------
    >>> folder = private_folder("spark-")
    >>> folder.name.startswith("workbench-spark-"), oct(folder.stat().st_mode & 0o777)
    (True, '0o700')
    >>> shutil.rmtree(folder)
    """
    folder = Path(tempfile.mkdtemp(prefix=PREFIX + kind))
    (folder / OWNER).write_text(f"{socket.gethostname()} {_identity(os.getpid()) or os.getpid()}\n")
    return folder


def remove_folder(folder: str | os.PathLike[str]) -> None:
    """Remove a private folder now, and again whenever :func:`sweep_removed` runs.

    For folders a live JVM may still write into (checkpoints holding state stores); folders
    removed earlier that came back are removed here too.

    Examples
    --------
    >>> folder = private_folder("doc-")
    >>> remove_folder(folder)
    >>> (folder / "state").mkdir(parents=True)   # as a state store's maintenance would
    >>> sweep_removed() >= 1, folder.exists()
    (True, False)
    """
    path = os.fspath(folder)
    shutil.rmtree(path, ignore_errors=True)
    with _removed_lock:
        _removed.add(path)
    sweep_removed()


def came_back(*, jvm_ended: bool = False) -> list[str]:
    """The folders :func:`remove_folder` removed that exist again.

    With ``jvm_ended`` nothing can write into them any more: they are forgotten (the caller
    removes what it is given).
    """
    with _removed_lock:
        back = [folder for folder in _removed if os.path.lexists(folder)]
        if jvm_ended:
            _removed.clear()
    return back


def sweep_removed() -> int:
    """Remove again the folders :func:`remove_folder` removed that came back; how many did.

    >>> sweep_removed() >= 0
    True
    """
    back = came_back()
    for folder in back:
        shutil.rmtree(folder, ignore_errors=True)
    if back:
        log.debug("removed %d folders again that a state store's maintenance wrote into", len(back))
    return len(back)


atexit.register(sweep_removed)


def sweep_orphans(root: str | os.PathLike[str] | None = None, *, background: bool = True) -> list[Path]:
    """Remove the workbench folders in ``root`` (the temporary folder) whose owner process is gone.

    Runs once per process (later calls return at once) on a daemon thread unless
    ``background`` is False; returns the folders it removed (nothing when in the background).
    """
    if _swept.is_set() and root is None:
        return []
    _swept.set()
    if background:
        threading.Thread(target=_sweep, args=(root,), name="workbench-sweep", daemon=True).start()
        return []
    return _sweep(root)


def _sweep(root: str | os.PathLike[str] | None) -> list[Path]:
    removed = []
    base = Path(root or tempfile.gettempdir())
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX) and p.is_dir()]
    except OSError:
        return removed
    for folder in candidates:
        try:
            owner = (folder / OWNER).read_text().strip()
        except OSError:
            continue  # not ours to judge (no owner file), or removed meanwhile
        host, _, process = owner.partition(" ")
        if host != socket.gethostname() or _owner_alive(process):
            continue  # another machine's (a shared folder), or alive
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    if removed:
        log.info("removed %d temporary folders of workbench processes that were killed", len(removed))
    return removed


def _identity(pid: int) -> str | None:
    """``pid:start`` where ``/proc`` tells the process's start time (pids are reused), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return f"{pid}:{fields[19]}"  # starttime, field 22 of proc(5)
    except (OSError, IndexError):
        return None


def _owner_alive(owner: str) -> bool:
    pid_text, _, start = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return True  # unreadable: leave it
    if start:
        return _identity(pid) == owner
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, another user's
    return True
