"""Helpers for the real-browser tests: a private JupyterLab server and headless Chromium.

:class:`LabServer` starts ``jupyter lab`` (the command ``workbench lab`` runs) on 127.0.0.1
with a random free port and a random token (authentication stays on), serving a temporary
copy of a notebook folder. Every Jupyter and IPython folder (config, data, runtime,
settings, workspaces, IPython profile) and every temporary folder of the server, its kernels
and their Spark JVMs (``TMPDIR``, ``java.io.tmpdir``; the workbench keeps Spark's own scratch
folder inside it) points into the
same private folder, so a run leaves the user's home and ``/tmp`` alone. The only kernel is
this interpreter with the repository importable. :meth:`LabServer.stop` shuts the kernels
down through the REST API (so the workbench stops its streams and Spark exits cleanly),
then the server, then kills anything the server started that is still alive, removes the
private folder, and returns what it had to clean up by force.

:func:`served` is the tests' fixture body: a started server that must shut down cleanly.

:func:`chromium_context` starts the Chromium ``workbench test`` uses (``WORKBENCH_CHROMIUM``,
``/usr/bin/chromium`` or ``chromium`` on ``PATH``) through Playwright, with its profile in a
given folder; Playwright's own browser download is never used.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import psutil

from workbench._chromium import CHROMIUM_HINT, find_chromium
from workbench.cli import lab_command

from .cluster_support import free_port
from .helpers import wait_for

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO_ROOT / "test-artifacts"

#: Chromium flags for a headless run in a container with no network but loopback.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

#: JupyterLab settings: start the notebook's kernel without asking, record each cell's
#: execution times in its metadata (evidence when a run is slow), fetch no news.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "autoStartDefaultKernel": True, "recordTiming": True,
    },
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False,
    },
}


#: Seconds the server gives a kernel to exit on shut-down or restart before killing it.
KERNEL_EXIT_WAIT = 20


def chromium_executable() -> str:
    """The Chromium to drive, found as ``workbench test`` finds it.

    Raises
    ------
    FileNotFoundError
        Saying how to install Chromium or point ``WORKBENCH_CHROMIUM`` at one.
    """
    path = find_chromium()
    if path is None:
        configured = os.environ.get("WORKBENCH_CHROMIUM")
        where = f"WORKBENCH_CHROMIUM={configured} is not executable" if configured else "no Chromium found"
        raise FileNotFoundError(f"{where}: {CHROMIUM_HINT} (`workbench test` installs it when run as root)")
    return path


class LabServer:
    """A private JupyterLab server on 127.0.0.1 serving a copy of ``notebooks``.

    Parameters
    ----------
    notebooks : Path
        The folder to copy; the server's root is the copy.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:<port>``.
    token : str
    root : Path
        The private folder (server root ``root / "notebooks"``, temporary files
        ``root / "tmp"``, server log ``root / "jupyter.log"``), removed by :meth:`stop`.

    Examples
    --------
    >>> with LabServer(Path("notebooks")) as lab:            # doctest: +SKIP
    ...     page.goto(lab.notebook_url("00-quickstart.ipynb"))
    """

    def __init__(self, notebooks: Path) -> None:
        self.source = Path(notebooks)
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.root = Path(tempfile.mkdtemp(prefix="workbench-lab-"))
        self.server_root = self.root / "notebooks"
        self.temp = self.root / "tmp"
        self.log_path = self.root / "jupyter.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    # -- set-up --------------------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        folders = {
            "JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data", "JUPYTER_RUNTIME_DIR": "runtime",
            "IPYTHONDIR": "ipython", "JUPYTERLAB_SETTINGS_DIR": "settings",
            "JUPYTERLAB_WORKSPACES_DIR": "workspaces", "TMPDIR": "tmp",
        }
        # Without pytest's variable, as for a user: under it ipykernel would not forward what
        # the kernel's child processes (the Spark JVM) write to stderr.
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
        for variable, name in folders.items():
            folder = self.root / name
            folder.mkdir(parents=True, exist_ok=True)
            env[variable] = str(folder)
        # The Spark JVM ignores TMPDIR; the launcher passes SPARK_SUBMIT_OPTS to it.
        env["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [
            os.environ.get("SPARK_SUBMIT_OPTS"), f"-Djava.io.tmpdir={self.temp}",
        ]))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        env.pop("JUPYTER_TOKEN", None)
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        return env

    def _write_settings(self, env: dict[str, str]) -> None:
        settings = Path(env["JUPYTERLAB_SETTINGS_DIR"])
        for relative, values in LAB_SETTINGS.items():
            target = settings / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values), encoding="utf-8")
        kernel = Path(env["JUPYTER_DATA_DIR"]) / "kernels" / "python3"
        kernel.mkdir(parents=True, exist_ok=True)
        (kernel / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (ipykernel)", "language": "python",
            "env": {"PYTHONPATH": env["PYTHONPATH"]},
        }), encoding="utf-8")

    def start(self, timeout: float = 60.0) -> LabServer:
        """Copy the notebooks, start the server and wait until its API answers."""
        shutil.copytree(self.source, self.server_root)
        env = self._environment()
        self._write_settings(env)
        command = lab_command([
            "--no-browser", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            # A kernel gets 5 s to exit by default, then its process group (Spark's JVM too)
            # is killed and leaves its files behind; a loaded machine can need longer.
            f"--KernelManager.shutdown_wait_time={KERNEL_EXIT_WAIT}",
        ], root_dir=self.server_root, as_root=hasattr(os, "geteuid") and os.geteuid() == 0)
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            command, cwd=self.server_root, env=env, stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_end_with_parent,
        )
        try:
            wait_for(self._ready, timeout, 0.2, text=f"JupyterLab did not answer on {self.url}")
        except BaseException:
            log = self.log_text()
            self.stop()
            raise RuntimeError(f"JupyterLab did not start; its log ends:\n{log[-3000:]}") from None
        return self

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {self.process.returncode}")
        try:
            self.api("GET", "/api/status")
            return True
        except (OSError, urllib.error.URLError):
            return False

    # -- use -------------------------------------------------------------------------------------

    def api(self, method: str, path: str, timeout: float = 10.0) -> Any:
        """Call the server's REST API with the token; the decoded JSON (None when empty)."""
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def notebook_url(self, name: str, workspace: str | None = None) -> str:
        """The URL that opens notebook ``name`` in JupyterLab (token included), in ``workspace`` if given.

        A workspace of its own shows the notebook alone, whatever other pages opened before.
        """
        where = f"workspaces/{workspace}/" if workspace else ""
        return f"{self.url}/lab/{where}tree/{name}?token={self.token}"

    def log_text(self) -> str:
        """What the server (and its kernels) wrote so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    # -- shut-down -------------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Shut down kernels, then the server; clean up; say what needed cleaning by force.

        Returns
        -------
        list of str
            One line per process that outlived the shut-down and was killed, and per
            file the server, its kernels or their JVMs left in the temporary folder.
            Empty after a clean shut-down. Everything is removed either way.
        """
        problems: list[str] = []
        process, self.process = self.process, None
        if process is not None:
            descendants = _descendants(process.pid)
            if process.poll() is None:
                try:  # a clean kernel shutdown runs the workbench's exit hooks (streams, Spark)
                    for kernel in self.api("GET", "/api/kernels") or []:
                        self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=30.0)
                except (OSError, urllib.error.URLError, ValueError) as exc:
                    problems.append(f"shutting the kernels down failed: {exc}")
                descendants += _descendants(process.pid)
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    problems.append(f"the JupyterLab server (pid {process.pid}) ignored SIGTERM")
                    _signal_group(process.pid, signal.SIGKILL)
                    process.wait(10)
            _, alive = psutil.wait_procs(_unique(descendants), timeout=15)
            for leftover in alive:
                try:
                    problems.append(f"killed leftover process {leftover.pid}: {' '.join(leftover.cmdline())[:120]}")
                    leftover.kill()
                except psutil.NoSuchProcess:
                    pass
            psutil.wait_procs(alive, timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.temp.is_dir():
            # A kernel hands its folders to a detached `rm` on the way out: give it a moment.
            deadline = time.monotonic() + 15.0
            while any(self.temp.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.2)
            problems += [f"left in the temporary folder: {p.name}" for p in sorted(self.temp.iterdir())]
        shutil.rmtree(self.root, ignore_errors=True)
        return problems

    def __enter__(self) -> LabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_notebook(path: Path, *sources: str) -> Path:
    """Write a notebook of code cells (no outputs, the python3 kernel) at ``path``."""
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {},
                   "outputs": [], "source": source} for i, source in enumerate(sources)],
        "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


@contextmanager
def served(notebooks: Path, server: type[LabServer] | None = None) -> Iterator[LabServer]:
    """A started :class:`LabServer` (or ``server``, a subclass) for ``notebooks``, stopped on exit, which must be clean.

    Raises
    ------
    AssertionError
        On exit, when the shut-down had to kill processes or found files left in the
        temporary folder (not when the body raised: its error is the one that counts).

    Examples
    --------
    >>> @pytest.fixture                                      # doctest: +SKIP
    ... def lab(tmp_path):
    ...     with served(tmp_path) as server:
    ...         yield server
    """
    started = (server or LabServer)(notebooks).start()
    try:
        yield started
    finally:
        problems = started.stop()
    assert not problems, "JupyterLab did not shut down cleanly: " + "; ".join(problems)


@contextmanager
def as_if_new(lab: LabServer) -> Iterator[LabServer]:
    """``lab`` for one test of a module that shares it: afterwards, no kernel runs and its notebooks are as before.

    The test's sessions are shut down (their kernels with them) and the notebooks it changed
    (a saved run) written back, so that the next test finds the server as a server of its
    own would be; a test that opens each notebook in a workspace of its own
    (:meth:`LabServer.notebook_url`) sees no page of an earlier one either.

    Examples
    --------
    >>> @pytest.fixture                                      # doctest: +SKIP
    ... def lab(served_lab):
    ...     with as_if_new(served_lab) as server:
    ...         yield server
    """
    notebooks = {path: path.read_bytes() for path in lab.server_root.glob("*.ipynb")}
    yield lab
    for session in lab.api("GET", "/api/sessions") or []:
        lab.api("DELETE", f"/api/sessions/{session['id']}", timeout=30.0)
    wait_for(lambda: not lab.api("GET", "/api/kernels"), 30, 0.2,
             text=lambda: f"kernels still running after the test: {lab.api('GET', '/api/kernels')}")
    for path, content in notebooks.items():
        path.write_bytes(content)


def _end_with_parent() -> None:
    """In the server's process before exec: on Linux, get SIGTERM when the test process dies.

    The server runs in its own process group (so :meth:`LabServer.stop` can signal all of
    it); without this a killed test run would leave it, its kernels and Spark running.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: stop() is the only clean-up
        pass


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _unique(processes: list[psutil.Process]) -> list[psutil.Process]:
    seen: dict[int, psutil.Process] = {}
    for process in processes:
        seen.setdefault(process.pid, process)
    return list(seen.values())


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def scroll_into_view(locator: Any, timeout: float = 60.0) -> None:
    """Scroll ``locator``'s element into view, again when the page replaced it meanwhile.

    A widget's output (the console sink's, a monitor) can be rendered anew while Playwright
    scrolls to it (seen on JupyterLab 4.0 without the extension), which fails with "Element
    is not attached to the DOM"; the next try finds the new element.
    """
    from playwright.sync_api import Error as PlaywrightError

    def scrolled() -> bool:
        try:
            locator.scroll_into_view_if_needed(timeout=5_000)
        except PlaywrightError:
            return False
        return True

    wait_for(scrolled, timeout, 0.25, message=f"{locator} in view")


@contextmanager
def chromium_context(playwright: Any, profile: Path, **context: Any) -> Iterator[Any]:
    """Headless Chromium, the one ``workbench test`` found (the system's first), as a browser context.

    The profile lives in ``profile`` (inside the caller's temporary folder); ``context``
    takes ``new_context`` options such as ``viewport``. Chromium ends on exit.
    """
    opened = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=chromium_executable(), headless=True, args=CHROMIUM_ARGS, **context,
    )
    try:
        yield opened
    finally:
        opened.close()


def first_page(context: Any) -> Any:
    """The page a persistent context opened with, or a new one."""
    return context.pages[0] if context.pages else context.new_page()


@contextmanager
def page_context(browser: Any, width: int = 1700, height: int = 1200) -> Iterator[Any]:
    """A fresh context of ``browser`` (its own pages and storage) with a ``width`` x ``height`` viewport, closed after use."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield context
    finally:
        context.close()


def set_device_ratio(page: Any, cdp: Any, ratio: float) -> None:
    """Put ``page`` at device-pixel ratio ``ratio`` (a HiDPI screen, or a zoomed browser), its
    viewport kept, through its DevTools session ``cdp`` (CDP's device-metrics override)."""
    size = page.viewport_size
    cdp.send("Emulation.setDeviceMetricsOverride", {"width": size["width"], "height": size["height"],
                                                    "deviceScaleFactor": ratio, "mobile": False})
    assert page.evaluate("() => window.devicePixelRatio") == ratio, f"the page's device-pixel ratio is not {ratio}"


# -- JupyterLab page helpers (JavaScript run through page.evaluate) --------------------------

#: True once the current notebook panel's kernel is connected and idle.
JS_KERNEL_IDLE = """() => {
  const app = window.jupyterapp;
  const widget = app && app.shell.currentWidget;
  const kernel = widget && widget.sessionContext && widget.sessionContext.session
      && widget.sessionContext.session.kernel;
  return !!kernel && kernel.status === 'idle';
}"""

#: True when no code cell of the current notebook is running or queued (prompt ``[*]``).
#: The kernel's own status is no use here: widget messages flip it to busy and back.
JS_NO_CELL_RUNNING = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(cell => cell.model.type === 'code')
  .every(cell => cell.model.executionState !== 'running'
    && !((cell.node.querySelector('.jp-InputPrompt') || {}).textContent || '').includes('*'))"""

#: What a chart grid's caption (``.workbench-chart-caption``, the element evaluated) reads: the
#: text of its picture (the canvas's accessible name, extensions/src/caption.ts) or its HTML's.
JS_CAPTION_TEXT = """caption => {
  const picture = caption.querySelector('canvas.workbench-caption-picture');
  return picture ? picture.getAttribute('aria-label') || '' : caption.textContent || '';
}"""

#: Errors in the current notebook's outputs: [{cell, ename, evalue}].
JS_ERRORS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const errors = [];
  panel.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') return;
    for (const output of cell.model.outputs.toJSON()) {
      if (output.output_type === 'error') errors.push({cell: index, ename: output.ename, evalue: output.evalue});
    }
  });
  return errors;
}"""

#: The code cells of the current notebook: [{index, source (first line), count, execution}],
#: ``count`` being the execution count and ``execution`` the recorded timings.
JS_CODE_CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .map((cell, index) => ({cell, index})).filter(({cell}) => cell.model.type === 'code')
  .map(({cell, index}) => ({index, source: cell.model.sharedModel.getSource().split('\\n')[0],
    count: cell.model.executionCount, execution: cell.model.getMetadata('execution') || null}))"""

#: Activate the first code cell whose source contains the argument; its index or -1.
JS_ACTIVATE_CELL = """(needle) => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const index = notebook.widgets.findIndex(
    c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(needle));
  if (index >= 0) notebook.activeCellIndex = index;
  return index;
}"""

#: Index of the first code cell whose source contains the argument.
JS_CELL_INDEX = """(needle) => window.jupyterapp.shell.currentWidget.content.widgets
  .findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(needle))"""

#: Indexes of the cells whose output area contains the argument.
JS_CELLS_SHOWING = """(needle) => window.jupyterapp.shell.currentWidget.content.widgets
  .map((cell, index) => [index, (cell.node.querySelector('.jp-Cell-outputArea') || {}).textContent || ''])
  .filter(([, text]) => text.includes(needle)).map(([index]) => index)"""

#: Run code on the notebook's kernel without a cell; what it printed to stdout.
JS_KERNEL_PRINT = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let text = '';
  future.onIOPub = msg => {
    if (msg.header.msg_type === 'stream' && msg.content.name === 'stdout') text += msg.content.text;
    if (msg.header.msg_type === 'error') text += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return text.trim();
}"""


def save_screenshot(page: Any, name: str) -> Path | None:
    """Save a full-page screenshot as ``test-artifacts/<name>``; the path, or None if it failed."""
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / name
    try:
        page.screenshot(path=str(target), full_page=True, timeout=15_000)
    except Exception:  # the page or browser is already gone: nothing to capture
        return None
    return target
