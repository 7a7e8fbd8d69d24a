"""Spark's Python workers import this environment's pyspark, not the second copy in pyspark's zip.

Spark starts every Python process it needs (Python UDF workers, a Python data source's
reader such as :class:`~workbench.testing.MemoryStream`'s, transformWithState's driver)
with ``SPARK_HOME/python/lib/pyspark.zip`` first on ``PYTHONPATH``. With pip's pyspark,
``SPARK_HOME`` is the installed package and the zip a second copy of it; Python keeps no
compiled bytecode for modules imported from a zip, so each such process compiled
pyspark's modules from source again: about 0.5 s of CPU per process on two cores (importing
a streaming source's runner took 0.8 s against 0.25 s from the installed package).

:func:`use_for_workers` points ``PYSPARK_PYTHON`` at a small shell script next to the
workbench's class archives that drops the zip from ``PYTHONPATH`` (Spark gives a data
source's lookup workers a second copy of the entry further on) and runs this interpreter,
so workers import the installed pyspark with its cached bytecode. There is one script per
interpreter and pyspark; writing one removes those of interpreters that are gone. Only
when that is the same pyspark (``SPARK_HOME`` unset or pip's package, the zip of the same
version), only for Spark that runs on this machine (local masters and a local Spark
Connect server: a cluster's executors could not run a script of this machine), and never
over a ``PYSPARK_PYTHON`` the user set; ``WORKBENCH_PYTHON_WORKERS=0`` turns it off.
Measured side by side in ``bench/bench_python_workers.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import sys
import zipfile
from pathlib import Path
from typing import MutableMapping

from .._class_archive import cache_root, installed_pyspark

__all__ = ["use_for_workers", "worker_python", "WORKERS_FOLDER"]

log = logging.getLogger(__name__)

#: Where the scripts live, under the workbench's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``).
WORKERS_FOLDER = Path("spark-streaming-workbench") / "python-workers"


def _installed_pyspark() -> tuple[Path, str] | None:
    """The installed pyspark's folder and version, found without importing it."""
    home = installed_pyspark()
    if home is None or not (home / "version.py").is_file():
        return None
    version = _version_in((home / "version.py").read_text(encoding="utf-8"))
    return (home, version) if version else None


def _folder(environ: MutableMapping[str, str]) -> Path:
    return cache_root(environ) / WORKERS_FOLDER


def _version_in(text: str) -> str | None:
    """``__version__`` of a pyspark ``version.py``.

    >>> _version_in('__version__: str = "4.1.0"\\n')
    '4.1.0'
    >>> _version_in("nothing here") is None
    True
    """
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    return None


def _zip_version(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            return _version_in(archive.read("pyspark/version.py").decode("utf-8"))
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def script_text(zip_path: str, python: str) -> str:
    """The script: drop every ``zip_path`` entry from ``PYTHONPATH``, then run ``python``.

    Spark puts the zip first, and some workers (a data source's lookup) get it a second
    time further on; the other entries keep their order.

    Examples
    --------
    >>> print(script_text("/s/python/lib/pyspark.zip", "/v/bin/python3").splitlines()[-1])
    exec /v/bin/python3 "$@"
    """
    entry = shlex.quote(zip_path)
    return "\n".join([
        "#!/bin/sh",
        "# Made by the Spark Streaming Workbench (workbench/spark/python_workers.py): Spark's Python",
        "# workers import the installed pyspark, whose bytecode Python keeps, rather than compile",
        "# the same modules from pyspark's zip in every process.",
        f'case ":$PYTHONPATH:" in *:{entry}:*)',
        "  set -f; kept=; IFS=:",
        '  for part in $PYTHONPATH; do',
        f'    [ "$part" = {entry} ] || kept=${{kept:+$kept:}}$part',
        "  done",
        "  unset IFS; set +f",
        '  if [ -n "$kept" ]; then PYTHONPATH=$kept; export PYTHONPATH; else unset PYTHONPATH; fi ;;',
        "esac",
        f'exec {shlex.quote(python)} "$@"',
        "",
    ])


def worker_python(environ: MutableMapping[str, str] | None = None, python: str | None = None) -> str:
    """The executable Spark's local Python workers should start: the script, or ``python`` itself.

    Parameters
    ----------
    environ : mapping, optional
        Where ``SPARK_HOME`` and ``XDG_CACHE_HOME`` are read (this process's environment by default).
    python : str, optional
        The interpreter the workers run (this one by default).

    Returns
    -------
    str
        The script's path when Spark's zip is a copy of the installed pyspark and the script
        could be written; ``python`` otherwise (nothing to gain, nowhere to write, a cache
        mounted noexec, or ``WORKBENCH_PYTHON_WORKERS=0``).

    Examples
    --------
    >>> worker_python()                                   # doctest: +SKIP
    '/home/me/.cache/spark-streaming-workbench/python-workers/python-3f1c2a9e07d4b8a1.sh'
    """
    environ = os.environ if environ is None else environ
    python = python or sys.executable
    if os.name != "posix" or environ.get("WORKBENCH_PYTHON_WORKERS") == "0":
        return python
    installed = _installed_pyspark()
    if installed is None:
        return python
    home, version = installed
    spark_home = environ.get("SPARK_HOME")
    if spark_home and Path(spark_home).resolve() != home:
        return python  # Spark's own installation: its zip is what its workers should import
    zip_path = home / "python" / "lib" / "pyspark.zip"
    if _zip_version(zip_path) != version:
        return python
    text = script_text(str(zip_path), python)
    script = _folder(environ) / f"python-{hashlib.sha256(text.encode()).hexdigest()[:16]}.sh"
    try:
        if _no_exec(script.parent):
            return python  # a cache on a file system mounted noexec: no script would start
        if not (script.is_file() and os.access(script, os.X_OK) and script.read_text() == text):
            script.parent.mkdir(parents=True, exist_ok=True)
            temporary = script.with_name(f".{script.name}.{os.getpid()}")
            temporary.write_text(text)
            temporary.chmod(0o755)
            os.replace(temporary, script)
            _remove_orphans(script.parent)
    except OSError as exc:
        log.info("Python workers start %s as they are (the script could not be written: %s)", python, exc)
        return python
    return str(script)


def _remove_orphans(folder: Path) -> None:
    """Remove the scripts of interpreters that are gone (a deleted virtualenv); the others may be in use."""
    for other in folder.glob("python-*.sh"):
        try:
            last = other.read_text().strip().splitlines()[-1]
            words = shlex.split(last)
            if words[:1] == ["exec"] and len(words) > 1 and not os.path.exists(words[1]):
                other.unlink()
        except (OSError, ValueError, IndexError):
            continue


def _no_exec(folder: Path) -> bool:
    """Whether ``folder`` (or the nearest folder above it that exists) is on a file system mounted noexec."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return bool(os.statvfs(folder).f_flag & getattr(os, "ST_NOEXEC", 0))


def _ours(value: str, environ: MutableMapping[str, str]) -> bool:
    return value == sys.executable or Path(value).parent == _folder(environ)


def use_for_workers(local: bool, environ: MutableMapping[str, str] | None = None) -> str:
    """Set ``PYSPARK_PYTHON`` for the next Spark this process starts, unless the user set it.

    Parameters
    ----------
    local : bool
        Whether that Spark's Python workers run on this machine (a local master or a local
        Spark Connect server): then :func:`worker_python`, otherwise this interpreter.
    environ : mapping, optional
        The environment to set (this process's by default).

    Returns
    -------
    str
        ``PYSPARK_PYTHON`` as it now is.

    Examples
    --------
    >>> use_for_workers(False, {"PYSPARK_PYTHON": "/opt/python3.11"})
    '/opt/python3.11'
    >>> use_for_workers(False, {}) == sys.executable
    True
    """
    environ = os.environ if environ is None else environ
    current = environ.get("PYSPARK_PYTHON")
    if current and not _ours(current, environ):
        return current  # the user's choice
    environ["PYSPARK_PYTHON"] = worker_python(environ) if local else sys.executable
    return environ["PYSPARK_PYTHON"]
