"""Chromium for the browser tests: where it is found, and installing it with apt-get as root.

``workbench test`` looks for it only when its run can select browser tests
(``docs/development.md``); ``workbench doctor`` shows the one it finds.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping

__all__ = ["CHROMIUM_HINT", "SYSTEM_CHROMIUM", "CHROMIUM_NAMES", "ChromiumMissing", "find_chromium", "ensure_chromium"]

# Playwright's command with this Python (a virtualenv's `python` is not on PATH unless activated).
CHROMIUM_HINT = (f"install it (sudo apt-get install chromium, or {shlex.quote(sys.executable)} -m playwright install "
                 "chromium) or set WORKBENCH_CHROMIUM=/path/to/chromium")
#: Where Debian's package puts Chromium (looked at first), and its names on ``PATH`` (Debian, Ubuntu, Google).
SYSTEM_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class ChromiumMissing(Exception):
    """No usable Chromium, and none could be installed here; its message is one line saying how to fix it."""


def is_root() -> bool:
    """Whether this process runs as root (and so may install packages)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_chromium(environ: Mapping[str, str] | None = None) -> str | None:
    """The Chromium the browser tests use, or None.

    ``WORKBENCH_CHROMIUM`` wins when set (made absolute; None if it is not an executable
    file); otherwise :data:`SYSTEM_CHROMIUM`, one of :data:`CHROMIUM_NAMES` on ``PATH``, or
    the newest Chromium ``python -m playwright install chromium`` downloaded.

    Examples
    --------
    >>> find_chromium({"WORKBENCH_CHROMIUM": "/nonexistent/chromium"}) is None
    True
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("WORKBENCH_CHROMIUM")
    if configured:
        return os.path.abspath(configured) if is_executable(configured) else None
    if is_executable(SYSTEM_CHROMIUM):
        return SYSTEM_CHROMIUM
    on_path = (shutil.which(name, path=environ.get("PATH", os.defpath)) for name in CHROMIUM_NAMES)
    return next((found for found in on_path if found), None) or _playwright_chromium(environ)


def _playwright_chromium(environ: Mapping[str, str]) -> str | None:
    """The newest Chromium in Playwright's browser folder (Linux), or None."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.join(cache, "ms-playwright"))
    found = [str(path) for path in folder.glob("chromium-*/chrome-linux*/chrome") if is_executable(str(path))]
    return max(found, key=lambda path: (len(path), path), default=None)  # the newest revision


def ensure_chromium(
    environ: Mapping[str, str] | None = None,
    *,
    as_root: bool | None = None,
    apt_get: str | None = None,
    run: Callable[..., subprocess.CompletedProcess] | None = None,
) -> str:
    """Return the Chromium for the browser tests, installing it with apt-get when root.

    Parameters
    ----------
    environ : mapping, optional
        Environment to read ``WORKBENCH_CHROMIUM`` and ``PATH`` from; ``os.environ`` by default.
    as_root : bool, optional
        Whether this process may install packages; detected when left out.
    apt_get : str, optional
        Path of ``apt-get``; looked up on ``PATH`` when left out.
    run : callable, optional
        Runs the apt-get commands as ``subprocess.run`` does (replaced in tests); by default
        a Ctrl-C waits for apt-get to end, so that dpkg is not killed halfway through.

    Returns
    -------
    str
        Path of the Chromium executable.

    Raises
    ------
    ChromiumMissing
        When ``WORKBENCH_CHROMIUM`` is not executable, or Chromium is missing and cannot be
        installed here; one line saying how to fix it.
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("WORKBENCH_CHROMIUM")
    if configured and not is_executable(configured):
        raise ChromiumMissing(
            f"workbench: WORKBENCH_CHROMIUM is set to {configured}, which is not an executable "
            "file; point it at a Chromium binary or unset it."
        )
    found = find_chromium(environ)
    if found:
        return found
    as_root = is_root() if as_root is None else as_root
    apt_get = apt_get or shutil.which("apt-get", path=environ.get("PATH", os.defpath))
    if not (as_root and apt_get):
        raise ChromiumMissing(f"workbench: the browser tests need Chromium, which was not found; {CHROMIUM_HINT}.")
    print("workbench: Chromium (for the browser tests) is missing; installing it with apt-get install chromium", flush=True)
    apt_env = {**environ, "DEBIAN_FRONTEND": "noninteractive"}
    if run is None:
        from ._class_archive import run_to_end as run
    for step in ([apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", "chromium"]):
        done = run(step, env=apt_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr or "")
            raise ChromiumMissing(f"workbench: `{' '.join(step)}` failed (exit {done.returncode}); {CHROMIUM_HINT}.")
    found = find_chromium(environ)
    if not found:
        raise ChromiumMissing(f"workbench: apt-get installed chromium but no chromium executable was found; {CHROMIUM_HINT}.")
    return found
