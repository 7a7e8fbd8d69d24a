"""A private JupyterLab on the notebooks and headless Chromium, for the browser benches.

The server is ``tests/browser_support.py``'s :class:`~tests.browser_support.LabServer` (a
copy of ``notebooks/``, its own token, port and folders); Chromium is the one the browser
tests use, with their flags.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser_support import CHROMIUM_ARGS, LabServer, chromium_executable  # noqa: E402


@contextmanager
def lab_and_browser(*chromium_args: str) -> Iterator[tuple[LabServer, Any]]:
    """Yield a started JupyterLab and a launched Chromium (``chromium_args`` after the tests' own flags).

    On exit the browser closes and the server stops; what its shut-down found (processes it
    had to kill, files left) is printed, not raised, so that a bench's figures still print.
    """
    from playwright.sync_api import sync_playwright

    lab = LabServer(ROOT / "notebooks")
    lab.start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_executable(), headless=True,
                                                 args=[*CHROMIUM_ARGS, *chromium_args])
            try:
                yield lab, browser
            finally:
                browser.close()
    finally:
        problems = lab.stop()
        shutil.rmtree(lab.root, ignore_errors=True)
        if problems:
            print("clean-up:", "; ".join(problems))
