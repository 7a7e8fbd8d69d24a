"""The workbench in a widget front end without its JupyterLab extension, in headless Chromium.

What VS Code, Colab and other front ends get: the ipywidgets manager and anywidget's front
end, but not the workbench's extension. The stand-in is a private JupyterLab whose
``labconfig/page_config.json`` disables ``spark-streaming-workbench``. There the quickstart
must work as in ``tests/test_browser.py`` (charts drawn and growing while no cell runs,
console table, Stop), with:

* no error box anywhere (no "Click to show javascript error", no "could not load");
* plotly.js reaching the page once, over the kernel websocket (the extension's static files
  are not loaded), and never from anywhere else;
* the kernel websocket's bytes within budget: the first monitor of the page <= 5 MB in all
  (plotly.js included), a further monitor <= 300 KB, each batch's update <= 20 KB;
* the monitor's "Spark UI" button disabled, its tooltip saying where it works; its result
  table, Pause button and "why no output?" note there as with the extension;
* a replay panel's monitor and a ``workbench.compare`` chart drawn from the same code, with
  plotly.js still sent once;
* no "Exception opening new comm" or "No version of module" in the browser's console.

Then, in the same page (one quickstart run for both tests), the cells added above are
removed, the final stop cell runs and the notebook is saved, reopened once its kernel is gone
and exported to HTML: the checks of ``tests/saved_pages.py``, where the saved file holds the
pictures and texts without the widgets' views.

Notebook 7 (``jupyter notebook``) with the extension, as a second front end: the quickstart's
monitor draws its four charts there too, with no error box.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterator
from unittest import mock

import pytest

from workbench._labext import LABEXTENSION_NAME
from workbench.cli import lab_command

from . import browser_support, test_browser
from .browser_support import (
    JS_ACTIVATE_CELL, JS_CAPTION_TEXT, JS_CODE_CELLS, JS_ERRORS, JS_KERNEL_IDLE, JS_KERNEL_PRINT, REPO_ROOT,
    LabServer, scroll_into_view, served,
)
from .helpers import wait_for
from .test_browser import (
    CHART_TITLES, MONITOR_CELL, NOTEBOOK, STOP_CELL, _cell, _chromium_page, _plotly_chunk, _run_above, _run_quickstart,
    evidence_on_failure,
)

pytestmark = pytest.mark.browser

FIRST_MONITOR_BUDGET = 5_000_000  # the first monitor of a page, plotly.js included
FURTHER_MONITOR_BUDGET = 300_000
BATCH_BUDGET = 20_000
#: A frame this large can only be the chart code with plotly.js.
CODE_FRAME = 1_000_000
WIDGET_ERRORS = ("javascript error", "could not load", "Error displaying widget")

#: Add a code cell at the end of the notebook and run it; resolves to its index.
JS_APPEND_AND_RUN = """async (source) => {
  const app = window.jupyterapp;
  const notebook = app.shell.currentWidget.content;
  notebook.activeCellIndex = notebook.widgets.length - 1;
  await app.commands.execute('notebook:insert-cell-below');
  notebook.activeCell.model.sharedModel.setSource(source);
  const index = notebook.activeCellIndex;
  app.commands.execute('notebook:run-cell');
  return index;
}"""

#: Remove the current notebook's cells from the given index on (the ones a test added).
JS_REMOVE_CELLS_FROM = """(start) => {
  const model = window.jupyterapp.shell.currentWidget.content.model;
  if (model.cells.length > start) model.sharedModel.deleteCellRange(start, model.cells.length);
}"""

#: What the browser's console says when a widget's front-end code is missing.
CONSOLE_ERRORS = ("Exception opening new comm", "No version of module")

#: A stream with nothing to output yet (its first 1-hour window is far from closed): its
#: monitor says why.
HOURLY_STREAM = '''%%stream hourly --trigger "1 second"
from pyspark.sql import functions as F
events.withWatermark("timestamp", "10 seconds").groupBy(F.window("timestamp", "1 hour")).count()'''

REPLAY_PANEL = "p = workbench.replay_panel(workbench.scenarios.guide_word_count())\np.step()\np"
COMPARISON = ('q = workbench.replay_panel(workbench.scenarios.guide_word_count(watermark="20 minutes"), '
              'name="delay20")\nq.step()\nworkbench.compare(p, q, labels=["10 minutes", "20 minutes"])')

#: The points in the plotly charts under a node (their traces' x values).
JS_CHART_POINTS = """node => [...node.querySelectorAll('.js-plotly-plot')].map(
    chart => (chart.data || []).reduce((n, trace) => n + (trace.x ? trace.x.length : 0), 0))"""

#: The draws of the plotly charts under a node that were drawn as pictures in a canvas over them.
JS_CANVAS_DRAWS = """node => [...node.querySelectorAll('.js-plotly-plot')].reduce(
    (n, chart) => n + Number(chart.dataset.canvasDraws || 0), 0)"""

EXTRA_STREAM = '''%%stream extra --trigger "1 second" --rows 3
events.selectExpr("value", "timestamp")'''


class WithoutExtension(LabServer):
    """A private JupyterLab whose page config disables the workbench's extension."""

    def _write_settings(self, env: dict[str, str]) -> None:
        super()._write_settings(env)
        labconfig = self.root / "config" / "labconfig"
        labconfig.mkdir(parents=True, exist_ok=True)
        (labconfig / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {LABEXTENSION_NAME: True}}), encoding="utf-8")


class Frames:
    """The kernel websocket's received frames (sizes), and every URL the page fetched."""

    def __init__(self, page: Any) -> None:
        self.sizes: list[int] = []
        self.urls: list[str] = []
        page.on("websocket", self._socket)
        page.on("request", lambda request: self.urls.append(request.url))

    def _socket(self, socket: Any) -> None:
        if "/api/kernels/" in socket.url:
            socket.on("framereceived", lambda payload: self.sizes.append(len(payload)))

    @property
    def total(self) -> int:
        return sum(self.sizes)


class Notebook7(LabServer):
    """The same private server, running Notebook 7 (``jupyter notebook``) instead of JupyterLab."""

    def start(self, timeout: float = 60.0) -> LabServer:
        def notebook_command(extra: list[str], **options: Any) -> list[str]:
            command = lab_command(
                [arg.replace("--LabApp.", "--JupyterNotebookApp.") for arg in extra if "news_url" not in arg],
                **options)
            return [*command[:3], "notebook", *command[4:]]

        with mock.patch.object(browser_support, "lab_command", notebook_command):
            return super().start(timeout)

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/notebooks/{name}?token={self.token}"


@pytest.fixture
def lab(request) -> Iterator[LabServer]:
    """The server the test names with ``@pytest.mark.parametrize("lab", [cls], indirect=True)``."""
    with served(REPO_ROOT / "notebooks", request.param) as server:
        yield server


#: Chromium on this server's page, as in tests/test_browser.py (it takes this module's ``lab``).
page = test_browser.page


class Quickstart:
    """The quickstart run without the extension in a page up to its stop cell, with the live checks
    of ``_run_quickstart``; what the page received and the console's complaints counted from its start."""

    def __init__(self, lab: LabServer, page: Any) -> None:
        self.lab, self.page = lab, page
        self.frames = Frames(page)
        self.console_errors = _console_errors(page)
        with evidence_on_failure(page, lab, "no-extension"):
            _run_quickstart(page, lab)  # charts drawn and growing, console table, Stop
        self.first = self.frames.total


@pytest.fixture(scope="module")
def quickstart(playwright: Any) -> Iterator[Quickstart]:
    """One quickstart run for this module's two tests on it, in file order: the live page's
    checks, then its stop cell, save, reopening and export. Either test alone runs it too."""
    with served(REPO_ROOT / "notebooks", WithoutExtension) as server, _chromium_page(playwright, server) as opened:
        yield Quickstart(server, opened)


def _append_and_run(page: Any, source: str, timeout: float = 120) -> int:
    index = page.evaluate(JS_APPEND_AND_RUN, source)
    wait_for(lambda: any(c["index"] == index and c["count"] is not None for c in page.evaluate(JS_CODE_CELLS)),
             timeout, 0.25, text=f"the appended cell {source.splitlines()[0]!r} did not finish")
    return index


def _monitor_charts(page: Any, index: int) -> list[str]:
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    return cell.locator(".workbench-monitor .js-plotly-plot .gtitle").all_text_contents()


def _charts_with_points(node: Any) -> list[int]:
    """The point counts of the plotly charts under ``node`` that hold points."""
    return [n for n in node.evaluate(JS_CHART_POINTS) if n > 0]


def _kernel_int(page: Any, expression: str) -> int:
    return int(page.evaluate(JS_KERNEL_PRINT, f"print({expression})").strip())


def _console_errors(page: Any) -> list[str]:
    """The browser console's messages (and uncaught errors) that say widget code is missing, as they come."""
    seen: list[str] = []

    def take(text: str) -> None:
        if any(error in text for error in CONSOLE_ERRORS):
            seen.append(text)

    page.on("console", lambda message: take(message.text))
    page.on("pageerror", lambda error: take(str(error)))
    return seen


@pytest.mark.parametrize("lab", [Notebook7], indirect=True)
def test_quickstart_in_notebook_7(lab: LabServer, page: Any) -> None:
    with evidence_on_failure(page, lab, "notebook7"):
        page.goto(lab.notebook_url("00-quickstart.ipynb"))
        wait_for(lambda: page.evaluate(JS_KERNEL_IDLE), 90, 0.5, text="the Notebook 7 kernel did not start")
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        _run_above(page, page.evaluate(JS_ACTIVATE_CELL, STOP_CELL), timeout=120)
        assert page.evaluate(JS_ERRORS) == []
        monitor = _cell(page, MONITOR_CELL).locator(".workbench-monitor")
        scroll_into_view(monitor)  # out of view, charts keep their points undrawn
        wait_for(lambda: len(monitor.locator(".js-plotly-plot .gtitle").all_text_contents()) == len(CHART_TITLES),
                 60, 0.25, text=lambda: f"Notebook 7 drew {monitor.locator('.js-plotly-plot .gtitle').all_text_contents()}")
        text = page.locator(".jp-Notebook").text_content() or ""
        assert not [e for e in WIDGET_ERRORS if e in text], f"error boxes on the page: {text[:2000]!r}"
        # With the extension the Spark UI button opens its tab (enabled while Spark runs).
        assert monitor.locator(".jp-workbench-SparkUIButton button").is_enabled()
        page.evaluate(JS_KERNEL_PRINT, "workbench.stop_all()")


def test_quickstart_without_the_extension(quickstart: Quickstart) -> None:
    lab, page, frames, console_errors = quickstart.lab, quickstart.page, quickstart.frames, quickstart.console_errors
    with evidence_on_failure(page, lab, "no-extension"):
        text = page.locator(".jp-Notebook").text_content() or ""
        assert not [e for e in WIDGET_ERRORS if e in text], f"error boxes on the page: {text[:2000]!r}"
        assert not page.evaluate("() => document.querySelectorAll('.jp-Notebook .widget-error').length")

        # The disabled extension offered no code (JupyterLab still fetches its entry point, but
        # activates none of its plugins) and its plotly.js was never fetched: what drew the
        # charts came from the kernel.
        assert page.evaluate("() => window[Symbol.for('spark-streaming-workbench.widgets')] === undefined")
        assert not [u for u in frames.urls if _plotly_chunk() in u]
        outside = [u for u in frames.urls if not u.startswith((lab.url, f"blob:{lab.url}", "data:"))]
        assert not outside, f"the page fetched from elsewhere: {outside}"
        code_frames = [size for size in frames.sizes if size > CODE_FRAME]
        assert len(code_frames) == 1, f"frames over 1 MB (chart code with plotly.js): {code_frames}"
        first = quickstart.first
        assert first <= FIRST_MONITOR_BUDGET, f"the quickstart's first monitor took {first} bytes"

        # The monitor's Spark UI button says where it works instead of failing.
        button = page.locator(".workbench-monitor .jp-workbench-SparkUIButton button").first
        assert button.is_disabled()
        assert "JupyterLab" in (button.get_attribute("title") or "")

        # A further monitor: its charts drawn from the code the page already has.
        before = frames.total
        index = _append_and_run(page, EXTRA_STREAM)
        scroll_into_view(page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".workbench-monitor"))
        wait_for(lambda: len(_monitor_charts(page, index)) == len(CHART_TITLES), 60, 0.25,
                 text=lambda: f"the second monitor drew {_monitor_charts(page, index)}")
        wait_for(lambda: _kernel_int(page, "workbench.stream('extra').progress.total") >= 2, 60, 0.5,
                 text="the extra stream ran no batch")
        further = frames.total - before
        assert further <= FURTHER_MONITOR_BUDGET, f"a further monitor took {further} bytes"
        assert len([size for size in frames.sizes if size > CODE_FRAME]) == 1, "the chart code was sent twice"

        # Each batch's update, while no cell runs.
        start_batches, start_bytes = _kernel_int(page, "workbench.stream('extra').progress.total"), frames.total
        time.sleep(6)
        batches = _kernel_int(page, "workbench.stream('extra').progress.total") - start_batches
        per_batch = (frames.total - start_bytes) / max(1, batches)
        assert batches >= 2, f"only {batches} batches in 6 s"
        assert per_batch <= BATCH_BUDGET, f"{per_batch:.0f} bytes per batch"
        assert page.evaluate(JS_ERRORS) == []
        # Its new points drawn as pictures, as with the extension: the kernel-sent code drew
        # them into canvases.
        extra = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".workbench-monitor")
        wait_for(lambda: extra.evaluate(JS_CANVAS_DRAWS) > 0, 30, 0.25,
                 text="no batch of the second monitor was drawn into a canvas")

        # The rest of the monitor is plain ipywidgets: the result table, Pause.
        monitor = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".workbench-monitor")
        wait_for(lambda: monitor.locator("table").count() > 0, 30, 0.25, text="the second monitor shows no result table")
        monitor.locator(".widget-toggle-button", has_text="Pause updates").click()
        wait_for(lambda: monitor.locator(".widget-toggle-button", has_text="Resume updates").count() == 1, 30, 0.25,
                 text="Pause did not turn into Resume")
        page.evaluate(JS_KERNEL_PRINT, "workbench.stop_all()")

        # "Why no output?": the quickstart's streams output every batch, so a stream that
        # cannot yet (append mode, its first window far from closed) says why.
        hourly = page.locator(".jp-Notebook .jp-Cell").nth(_append_and_run(page, HOURLY_STREAM)).locator(
            ".workbench-monitor")
        scroll_into_view(hourly)  # out of view, the kernel does not update it
        wait_for(lambda: "earliest open window" in (hourly.text_content() or ""), 60, 0.25,
                 text=lambda: f"the hourly stream's monitor shows {hourly.text_content()!r}")
        assert "Why no output?" in (hourly.text_content() or "")
        page.evaluate(JS_KERNEL_PRINT, "workbench.stop_all()")

        # A replay panel (its monitor) and workbench.compare (one overlaid chart) draw from the
        # code the page already has.
        panel = page.locator(".jp-Notebook .jp-Cell").nth(_append_and_run(page, REPLAY_PANEL)).locator(
            ".workbench-replay-panel .workbench-monitor")
        scroll_into_view(panel)
        wait_for(lambda: len(_charts_with_points(panel)) == len(CHART_TITLES), 60, 0.25,
                 text=lambda: f"the replay panel's monitor drew charts with points {_charts_with_points(panel)}")
        # Its counters are the line over its charts, drawn with the step's points.
        caption = panel.locator(".workbench-chart-caption")
        wait_for(lambda: caption.evaluate(JS_CAPTION_TEXT).startswith(
                     "batch 0 (1 data batches) · watermark none yet → 2024-01-01 11:58:00 · rows in 2"), 60, 0.25,
                 text=lambda: f"the replay panel's caption reads {caption.evaluate(JS_CAPTION_TEXT)!r}")
        comparison = page.locator(".jp-Notebook .jp-Cell").nth(_append_and_run(page, COMPARISON)).locator(
            ".workbench-charts")
        scroll_into_view(comparison)
        wait_for(lambda: len(_charts_with_points(comparison)) == 1, 60, 0.25,
                 text=lambda: f"the comparison drew charts with points {_charts_with_points(comparison)}")
        assert "watermark" in (comparison.text_content() or "")  # its legend names the runs' lines
        page.evaluate(JS_KERNEL_PRINT, "p.close(); q.close()")

        text = page.locator(".jp-Notebook").text_content() or ""
        assert not [e for e in WIDGET_ERRORS if e in text], f"error boxes on the page: {text[:2000]!r}"
        assert page.evaluate(JS_ERRORS) == []
        code_frames = [size for size in frames.sizes if size > CODE_FRAME]
        assert len(code_frames) == 1, f"frames over 1 MB (chart code with plotly.js): {code_frames}"
        assert not console_errors, f"the browser's console says widget code is missing: {console_errors}"
        print(f"bytes: first monitor (whole quickstart) {first}, further monitor {further}, "
              f"per batch {per_batch:.0f}")


def test_quickstart_without_the_extension_saved_reopened_and_exported(quickstart: Quickstart, tmp_path: Path) -> None:
    """Without the extension, the live quickstart's page (the cells the test above added
    removed) runs its stop cell and saves the notebook; reopened once its kernel is gone (with
    a new kernel, and with none) and exported to HTML, it shows the monitor's picture and the
    console's tables, kept in the file without the widgets' views (``tests/saved_pages.py``)."""
    from . import saved_pages

    lab, page = quickstart.lab, quickstart.page
    cells = len(json.loads((REPO_ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))["cells"])
    page.evaluate(JS_REMOVE_CELLS_FROM, cells)
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets.length") == cells
    notebook = saved_pages.stop_and_save(lab, page)
    saved_pages.reopened_and_exported(lab, page.context, notebook, tmp_path, extension=False)
