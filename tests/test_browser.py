"""The workbench in a real JupyterLab, driven by headless Chromium.

Opens ``notebooks/00-quickstart.ipynb`` in a private JupyterLab server (127.0.0.1, random
port and token), runs every cell above the final ``%stream stop --all`` from the page, and
checks what a user sees:

* the cells ran without errors, and the final stop cell did not run (the streams are live);
* the live monitor under the ``%%stream numbers`` cell renders its four plotly charts, which
  fit their grid cells, and they keep gaining points, with the batch number in the caption over them
  advancing, while no cell runs;
* the console-sink cell shows its ``Batch:`` table inside its own output area and under no
  other cell;
* the monitor's Stop button stops the stream: the header says ``stopped``, the button is
  disabled, no more points arrive, and the kernel reports the stream stopped and no query
  active;
* the page stays light: plotly.js arrives once, as the workbench extension's static file,
  never over the kernel's websocket; no websocket frame is larger than a monitor's first-draw
  budget, and the whole run stays within a small byte budget (it was 20.6 MB when each chart
  shipped its own plotly.js); the saved notebook stays under 1 MB.

Then, in the same page (one quickstart run for both tests), the final stop cell runs and the
notebook is saved, reopened once its kernel is gone and exported to HTML: the checks of
``tests/saved_pages.py``, which ``tests/test_browser_without_extension.py`` runs without the
extension.

A screenshot of the live monitor is written to ``test-artifacts/monitor.png`` (the README's
picture comes from it). On failure a full-page screenshot, the server log and the cells'
execution times go to ``test-artifacts/quickstart-*``. The server, kernel, Spark and
Chromium must shut down cleanly and leave no temporary files (checked when the fixtures
tear down).

The page is 1700 px wide with the file browser closed (the monitor shows its charts two by
two); at the end the window shrinks to 1280 px with the file browser open, and every chart
must still fit in its grid cell (the grid wraps to one column).
"""

from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from .helpers import wait_for
from .browser_support import (
    ARTIFACTS, JS_ACTIVATE_CELL, JS_CAPTION_TEXT, JS_CELL_INDEX, JS_CELLS_SHOWING, JS_CODE_CELLS, JS_ERRORS,
    JS_KERNEL_IDLE, JS_KERNEL_PRINT, JS_NO_CELL_RUNNING, REPO_ROOT, LabServer, chromium_context, first_page,
    save_screenshot, scroll_into_view, served,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "00-quickstart.ipynb"
#: The cell that ends the quickstart; everything above it runs, so the streams stay live.
STOP_CELL = "%stream stop --all"
MONITOR_CELL = "%%stream numbers"
CONSOLE_CELL = "%%stream squares"
CHART_TITLES = ("Watermark and event time", "State rows", "Batch duration", "Rows per second")
#: The points in a monitor's charts, counted in their plotly data (markers come and go with a
#: line's length, so the drawn marker nodes are no count of points).
JS_POINTS = """monitor => [...monitor.querySelectorAll('.js-plotly-plot')].reduce(
    (n, chart) => n + (chart.data || []).reduce((m, trace) => m + (trace.x ? trace.x.length : 0), 0), 0)"""
#: The monitor charts the newest 60 batches: beyond that the point count stops growing.
MONITOR_WINDOW = 60
VIEWPORT = {"width": 1700, "height": 1200}
#: Byte budgets of the kernel websocket (what the page receives): one frame at most a
#: monitor's first draw, the whole quickstart run at most this much.
FRAME_BUDGET = 300_000
RUN_BUDGET = 2_000_000
SAVED_BUDGET = 1_000_000
NARROW_WIDTH = 1280
#: A window too narrow for the monitor's status line and its buttons side by side (and for two
#: charts): the buttons go under the line rather than past the output's edge.
NARROWER_WIDTH = 800

#: Right edge of each monitor chart as drawn (its SVG) and of the output area showing it.
JS_CHART_EDGES = """(monitor) => [...monitor.querySelectorAll('.js-plotly-plot')].map(plot => ({
  drawn: Math.round(plot.querySelector('.main-svg').getBoundingClientRect().right),
  visible: Math.round(Math.min(plot.getBoundingClientRect().right,
                               plot.closest('.jp-OutputArea-output').getBoundingClientRect().right))}))"""


@contextmanager
def _chromium_page(playwright: Any, lab: LabServer) -> Iterator[Any]:
    """A page of headless Chromium (``playwright``: the module's), its profile in ``lab``'s folder; it ends on exit."""
    with chromium_context(playwright, lab.root / "chromium", viewport=VIEWPORT) as context:
        yield first_page(context)


@pytest.fixture
def page(playwright: Any, lab: LabServer) -> Iterator[Any]:
    """A Chromium page for the requesting module's ``lab`` (tests/test_browser_*.py take it)."""
    with _chromium_page(playwright, lab) as opened:
        yield opened


@pytest.fixture(scope="module")
def quickstart(playwright: Any) -> Iterator[tuple[LabServer, Any, Traffic]]:
    """The quickstart run in a page up to its stop cell, with its live checks (``_run_quickstart``).

    One run for this module's two tests, in file order: the live page's checks, then its
    stop cell, save, reopening and export. Either test alone runs it too.
    """
    with served(REPO_ROOT / "notebooks") as lab, _chromium_page(playwright, lab) as opened:
        traffic = Traffic(opened)
        with evidence_on_failure(opened, lab, "quickstart"):
            _run_quickstart(opened, lab)
        yield lab, opened, traffic


def _plotly_chunk() -> str:
    """The file name of the extension's plotly.js chunk: its only static file over 1 MB."""
    from workbench._labext import installed_dirs

    dirs = installed_dirs()
    assert dirs, "the workbench's JupyterLab extension is not installed"
    big = [f.name for f in (dirs[0] / "static").glob("*.js") if f.stat().st_size > 1_000_000]
    assert len(big) == 1, f"expected one plotly.js chunk in {dirs[0] / 'static'}, found {big}"
    return big[0]


class Traffic:
    """What the page receives: kernel websocket frames, and the plotly.js files it fetches."""

    def __init__(self, page: Any) -> None:
        self.frames: list[int] = []
        self.plotly_files: list[str] = []
        self.plotly_chunk = _plotly_chunk()
        page.on("websocket", self._socket)
        page.on("response", self._response)

    def _socket(self, socket: Any) -> None:
        if "/api/kernels/" in socket.url:
            socket.on("framereceived", lambda payload: self.frames.append(len(payload)))

    def _response(self, response: Any) -> None:
        if response.url.split("?", 1)[0].rsplit("/", 1)[-1] == self.plotly_chunk:
            self.plotly_files.append(response.url)


def test_quickstart_in_jupyterlab(quickstart: tuple[LabServer, Any, Traffic]) -> None:
    lab, page, traffic = quickstart
    with evidence_on_failure(page, lab, "quickstart"):
        clipped = _charts_clipped_when_narrow(page)
        assert not clipped, f"at {NARROW_WIDTH} px with the file browser open the monitor clips its charts: {clipped}"
        cut = _buttons_cut_off_when_narrower(page)
        assert not cut, f"at {NARROWER_WIDTH} px with the file browser open the monitor cuts off its buttons: {cut}"

        # plotly.js reached the page once, as the extension's static file, not per chart.
        assert len(traffic.plotly_files) == 1 and "/spark-streaming-workbench/" in traffic.plotly_files[0], (
            f"plotly.js files fetched: {traffic.plotly_files}")
        largest, total = max(traffic.frames), sum(traffic.frames)
        assert largest <= FRAME_BUDGET, f"a websocket frame of {largest} bytes: plotly.js sent over the kernel socket?"
        assert total <= RUN_BUDGET, f"the quickstart moved {total} bytes over the kernel websocket (budget {RUN_BUDGET})"

        # Saved with its outputs, the notebook stays small (no widget state, no plotly.js).
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        saved = lab.server_root / NOTEBOOK
        wait_for(lambda: "outputs" in saved.read_text() and '"execution_count": 1' in saved.read_text(), 30, 0.2,
                 text="the notebook was not saved with its outputs")
        assert saved.stat().st_size <= SAVED_BUDGET, f"saved notebook is {saved.stat().st_size} bytes"
        # No red stderr box anywhere, the first cell's Spark start included.
        cells = json.loads(saved.read_text())["cells"]
        stderr = [(index, output.get("text", "")[:300]) for index, cell in enumerate(cells)
                  for output in cell.get("outputs", []) if output.get("name") == "stderr"]
        assert not stderr, f"the executed quickstart shows stderr output: {stderr}"


def test_quickstart_saved_reopened_and_exported(quickstart: tuple[LabServer, Any, Traffic], tmp_path: Path) -> None:
    """The live quickstart's page runs its stop cell and saves the notebook; reopened once its
    kernel is gone (with a new kernel, and with none) and exported to HTML, it shows the
    monitor's picture and the console's tables (``tests/saved_pages.py``; the same without the
    extension in ``tests/test_browser_without_extension.py``)."""
    from . import saved_pages

    lab, page, _ = quickstart
    notebook = saved_pages.stop_and_save(lab, page)
    saved_pages.reopened_and_exported(lab, page.context, notebook, tmp_path, extension=True)


@contextmanager
def evidence_on_failure(page: Any, lab: LabServer, name: str) -> Iterator[None]:
    """On failure, keep in test-artifacts/: screenshots (the page as it was, then scrolled to
    the monitor), the server log, the cells' execution times and the browser's console errors."""
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}")
            if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: console.append(f"page error: {error}"))
    try:
        yield
    except (Exception, pytest.fail.Exception):  # a failed wait_for raises pytest's Failed
        save_screenshot(page, f"{name}-failure.png")
        (ARTIFACTS / f"{name}-jupyter.log").write_text(lab.log_text(), encoding="utf-8")
        (ARTIFACTS / f"{name}-console.txt").write_text("\n".join(console) + "\n", encoding="utf-8")
        try:
            cells: Any = page.evaluate(JS_CODE_CELLS)
        except Exception as exc:  # the page is gone
            cells = f"unavailable: {exc}"
        (ARTIFACTS / f"{name}-cells.json").write_text(json.dumps(cells, indent=1), encoding="utf-8")
        try:
            page.locator(".workbench-monitor").first.scroll_into_view_if_needed(timeout=5_000)
            save_screenshot(page, f"{name}-failure-monitor.png")
        except Exception:  # no monitor on the page: the first screenshot is all there is
            pass
        raise


def _wait_js(page: Any, script: str, timeout: float, message: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, timeout=timeout * 1000, polling=250)
    except PlaywrightTimeout:
        raise TimeoutError(f"{message} (waited {timeout:.0f} s)") from None


def _cell(page: Any, needle: str) -> Any:
    index = page.evaluate(JS_CELL_INDEX, needle)
    assert index >= 0, f"no code cell containing {needle!r} in {NOTEBOOK}"
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def _run_above(page: Any, stop_index: int, timeout: float) -> None:
    """Run every cell above ``stop_index`` from the page; wait until all have finished."""
    # Not awaited: evaluate() has no time limit, and a cell that hangs must fail the test.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-above'); }")

    def finished() -> bool:
        cells = [c for c in page.evaluate(JS_CODE_CELLS) if c["index"] < stop_index]
        return all(c["count"] is not None for c in cells) and page.evaluate(JS_NO_CELL_RUNNING)

    def pending() -> str:
        waiting = [c["source"] for c in page.evaluate(JS_CODE_CELLS)
                   if c["index"] < stop_index and c["count"] is None]
        return f"the quickstart's cells did not finish running; not finished: {waiting}"

    wait_for(finished, timeout, 0.5, text=pending)


def _run_quickstart(page: Any, lab: LabServer) -> None:
    page.goto(lab.notebook_url(NOTEBOOK))
    _wait_js(page, JS_KERNEL_IDLE, 90, f"the kernel of {NOTEBOOK} did not start")
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    # Start from a clean page: no stored outputs or execution counts.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    stored = [c["source"] for c in page.evaluate(JS_CODE_CELLS) if c["count"] is not None]
    assert not stored, f"clearing the outputs left execution counts on {stored}"

    # Run everything above the final stop cell, so the streams stay live.
    stop_index = page.evaluate(JS_ACTIVATE_CELL, STOP_CELL)
    assert stop_index > 0, f"no {STOP_CELL!r} cell in {NOTEBOOK}"
    _run_above(page, stop_index, timeout=120)
    errors = page.evaluate(JS_ERRORS)
    assert errors == [], f"cells of {NOTEBOOK} raised errors: {errors}"
    ran_too_far = [c["source"] for c in page.evaluate(JS_CODE_CELLS) if c["index"] >= stop_index and c["count"]]
    assert not ran_too_far, f"cells from the stop cell on ran too: {ran_too_far}"

    # The monitor's four charts render under the cell that started the stream.
    monitor = _cell(page, MONITOR_CELL).locator(".workbench-monitor")
    # Watched as a user would, on screen: a monitor out of view keeps its points undrawn.
    scroll_into_view(monitor)

    def titles() -> list[str]:
        return monitor.locator(".js-plotly-plot .gtitle").all_text_contents()

    def all_charts_drawn() -> bool:
        return len(titles()) == len(CHART_TITLES) and all(any(t.startswith(w) for t in titles()) for w in CHART_TITLES)

    wait_for(all_charts_drawn, 30, 0.2,
             text=lambda: f"the monitor under the %%stream numbers cell did not draw its {len(CHART_TITLES)} charts; "
                          f"chart titles shown: {titles()}")

    # ...and keep gaining points while no cell runs (one batch a second, 4 points a batch).
    header = monitor.locator(".widget-html").first
    caption = monitor.locator(".workbench-chart-caption")  # the newest batch, drawn with the points

    def batch() -> int:
        found = re.search(r"batch (\d+)", caption.evaluate(JS_CAPTION_TEXT))
        return int(found.group(1)) if found else -1

    def points() -> int:
        return monitor.evaluate(JS_POINTS)

    assert page.evaluate(JS_NO_CELL_RUNNING), "a cell is still running"
    first_batch, first_points = batch(), points()
    assert "active" in header.text_content(), f"monitor header: {header.text_content()!r}"
    assert 0 <= first_batch < MONITOR_WINDOW - 10, (
        f"the charts' caption shows batch {first_batch}: too early or too late to watch its charts grow"
    )
    wait_for(lambda: batch() >= first_batch + 2 and points() >= first_points + 6, 20, 0.2,
             text=lambda: f"the monitor did not keep updating while idle: batch {first_batch} -> {batch()}, "
                          f"points {first_points} -> {points()}")
    # While batches come, the caption (text alone) is a picture whose accessible name is its
    # text; no text of it is laid out in the page. (One left alone for 3 s becomes text: the
    # next batch's is a picture again.)
    picture = caption.locator("canvas.workbench-caption-picture")
    wait_for(lambda: picture.count() == 1 and picture.get_attribute("role") == "img", 20, 0.1,
             text=lambda: f"the monitor's caption is not a picture: {caption.inner_html()!r}")
    assert caption.text_content() == "", f"the caption's text is laid out too: {caption.text_content()!r}"
    assert page.evaluate(JS_NO_CELL_RUNNING), "a cell was running while the charts grew"

    # The picture of the live monitor for the README; it must show whole charts.
    edges = monitor.evaluate(JS_CHART_EDGES)
    assert all(e["drawn"] <= e["visible"] + 1 for e in edges), f"charts clipped at {VIEWPORT['width']} px: {edges}"
    monitor.evaluate("node => node.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    ARTIFACTS.mkdir(exist_ok=True)
    monitor.screenshot(path=str(ARTIFACTS / "monitor.png"))

    # The console-sink cell shows its Batch: table inside its own output area only.
    console_index = page.evaluate(JS_CELL_INDEX, CONSOLE_CELL)
    console_output = _cell(page, CONSOLE_CELL).locator(".jp-Cell-outputArea")
    wait_for(lambda: "Batch: 0" in console_output.text_content(), 30, 0.2,
             text=lambda: f"no 'Batch: 0' under the console-sink cell; it shows {console_output.text_content()!r}")
    text = console_output.text_content()
    assert all(w in text for w in ("value", "square", "only showing top 3 rows")), f"console-sink output: {text!r}"
    holders = page.evaluate(JS_CELLS_SHOWING, "Batch:")
    assert holders == [console_index], (
        f"'Batch:' tables under cells {holders}; expected only under the console-sink cell {console_index}"
    )

    # Stop: the header says stopped, the button is disabled, and the charts stop growing.
    stop_button = monitor.locator(".widget-button", has_text="Stop")
    stop_button.click()
    wait_for(lambda: "stopped" in (header.text_content() or ""), 30, 0.2,
             text=lambda: f"after Stop the monitor header says {header.text_content()!r}")
    assert stop_button.is_disabled(), "the Stop button is still enabled after the stream stopped"
    # The last batch's record may reach the page just after the header says stopped: settled
    # means the same batch and points in two looks a second apart.
    seen: list[tuple[int, int]] = []

    def settled() -> bool:
        seen.append((batch(), points()))
        return len(seen) > 1 and seen[-1] == seen[-2]

    wait_for(settled, 10, 1.0, text=lambda: f"the monitor still drew after Stop: {seen}")
    settled_batch, settled_points = seen[-1]
    time.sleep(2.5)  # two and a half trigger intervals
    assert (batch(), points()) == (settled_batch, settled_points), (
        f"the monitor kept growing after Stop: batch {settled_batch} -> {batch()}, "
        f"points {settled_points} -> {points()}"
    )
    reported = page.evaluate(JS_KERNEL_PRINT, "import workbench\nprint(workbench.stream('numbers').status, "
                                              "[q.name for q in workbench.session().streams.active])")
    assert reported == "stopped []", f"the kernel reports: {reported!r}"


def _charts_clipped_when_narrow(page: Any) -> list[dict[str, int]]:
    """The charts whose right edge is cut off in a common laptop window, or [] when all fit."""
    page.set_viewport_size({"width": NARROW_WIDTH, "height": VIEWPORT["height"]})
    page.evaluate("() => window.jupyterapp.shell.expandLeft()")
    time.sleep(1.0)  # relayout
    edges = _cell(page, MONITOR_CELL).locator(".workbench-monitor").evaluate(JS_CHART_EDGES)
    return [e for e in edges if e["drawn"] > e["visible"] + 1]


def _buttons_cut_off_when_narrower(page: Any) -> list[str]:
    """The monitor's buttons past its output's right edge at :data:`NARROWER_WIDTH`, or []; the
    window is put back at :data:`NARROW_WIDTH`."""
    page.set_viewport_size({"width": NARROWER_WIDTH, "height": VIEWPORT["height"]})
    try:
        time.sleep(1.0)  # relayout
        return _cell(page, MONITOR_CELL).locator(".workbench-monitor").evaluate(
            """monitor => { const edge = monitor.closest('.jp-OutputArea-output').getBoundingClientRect().right;
                return [...monitor.querySelectorAll(':scope > .widget-hbox button')]
                    .filter(b => b.getBoundingClientRect().right > edge + 1).map(b => b.textContent.trim()); }""")
    finally:
        page.set_viewport_size({"width": NARROW_WIDTH, "height": VIEWPORT["height"]})
