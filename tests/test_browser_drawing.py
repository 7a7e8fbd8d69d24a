"""A chart grid draws only while it can be seen, in a real JupyterLab and headless Chromium.

A grid of one live chart (window of 5 points) under a cell, a tall output under the next
cell, and points sent from the kernel with ``grid.extend``. The grid's ``data-draws``
attribute counts its drawn updates; the chart's plotly data (``div.data``) is what it drew.

* while visible, each sent point is drawn, and a trace never holds more than the window;
  each drawn update is one draw, points that fit the axes are drawn without a full redraw,
  and points past them move the axes without one either (the chart's ``data-full-draws``,
  ``data-point-draws`` and ``data-axis-draws`` counts);
* hidden (the notebook's tab behind a Launcher, the grid scrolled out of view, the cell's
  output collapsed), the grid keeps taking points but draws nothing; shown again, it draws
  the latest window at once, in one update (not a replay of each missed point).
* grids fed points in turn, faster than the page's draw passes: they draw together in
  passes ``PASS_GAP`` ms apart while two draw (fewer frames for the page, each point still
  drawn within a pass or two), ``MAX_PASS_GAP`` ms apart once eight do (one frame a second
  for them all), and each ends showing its latest window;
* a grid about to scroll into the notebook's view (a margin under it) is told to the kernel,
  whose latest window is then in the page when it shows;
* a view that goes (its output cleared while hidden, its page reloaded) is forgotten by the
  kernel, which then counts only the views that live;
* the monitor's watermark chart with one time (a first batch without a watermark) has an axis
  of a minute around it, not of years whose every tick reads 00:00:00; a chart that fails to
  draw leaves the others of its grid drawing.

Not timed: the settling waits only give the page time to do something it must not do.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest

from .browser_support import JS_KERNEL_IDLE, JS_NO_CELL_RUNNING, LabServer, as_if_new, served, write_notebook
from .helpers import wait_for
from . import test_browser
from .test_browser import evidence_on_failure

pytestmark = pytest.mark.browser

NOTEBOOK = "drawing.ipynb"
WINDOW = 5
SPECS = ('[{"key": "rates", "layout": {"title": {"text": "rates"}, "height": 300},'
         ' "traces": [{"type": "scatter", "name": "input"}]}]')
GRID_CELL = f'from workbench.views.charts import ChartGrid\ngrid = ChartGrid({SPECS}, window={WINDOW})\ngrid'
#: The same grid in a workbench output, which publishes a picture beside the live view (as a
#: monitor, replay panel or comparison does).
REPUBLISHED = "republished.ipynb"
PUBLISHED_CELL = (f'from workbench.views.charts import ChartGrid\n'
                  f'from workbench.views.pictures import grid_picture\n'
                  f'from workbench.views.static_output import StaticOutput\n'
                  f'grid = ChartGrid({SPECS}, window={WINDOW})\n'
                  f'output = StaticOutput(grid, text=lambda: "a chart", picture=lambda: grid_picture(grid))\n'
                  f'output.watch_page(grid)\n'
                  f'output.display()')
#: Eight grids of a short chart under one cell, all on screen, fed in turn (the page's draw passes).
PASSES = "passes.ipynb"
GRIDS = 8
SHORT_SPECS = SPECS.replace('"height": 300', '"height": 100')
GRIDS_CELL = (f'import ipywidgets\nfrom workbench.views.charts import ChartGrid\n'
              f'grids = [ChartGrid({SHORT_SPECS}, window={WINDOW}) for _ in range({GRIDS})]\nipywidgets.VBox(grids)')
#: extensions/src/charts.ts: the least time between two of the page's draw passes (ms) while
#: one or two grids draw, and once eight or more do; the grids counted are those that drew in
#: the last ``RECENT_S`` seconds.
PASS_GAP, MAX_PASS_GAP, RECENT_S = 250, 1000, 2.0
#: The grid between two tall outputs: the notebook can scroll it to anywhere in its view.
BETWEEN = "between.ipynb"
#: The monitor's four charts in a grid (watermark first, rates last).
MONITOR = "monitor.ipynb"
MONITOR_CELL = ('from workbench.views.charts import ChartGrid\n'
                'from workbench.views.monitor_charts import chart_specs\n'
                f'grid = ChartGrid(chart_specs(), window={WINDOW})\ngrid')
SPACER_CELL = ('from IPython.display import HTML\n'
               'HTML(\'<div style="height: 4000px">spacer</div>\')')
#: Seconds given to the page to do what it must not (draw while hidden) before checking.
SETTLE = 2.0

#: The grid's drawn-update count and the x values its chart holds (null before plotly drew);
#: the grid is kept once found (a collapsed output takes it out of the document).
JS_DRAWN = """() => {
  const grid = window.drawingGrid = window.drawingGrid || document.querySelector('.workbench-chart-grid');
  const plot = grid && grid.querySelector('.js-plotly-plot');
  return {draws: grid ? Number(grid.dataset.draws) : -1,
          full: plot ? Number(plot.dataset.fullDraws || 0) : 0,
          points: plot ? Number(plot.dataset.pointDraws || 0) : 0,
          axis: plot ? Number(plot.dataset.axisDraws || 0) : 0,
          x: plot && plot.data ? plot.data.map(trace => Array.from(trace.x || [])) : null};
}"""

#: Run code on the notebook's kernel (the notebook need not be the current tab).
JS_KERNEL_RUN = """async (code) => {
  const kernel = window.drawingPanel.sessionContext.session.kernel;
  await kernel.requestExecute({code, silent: false, store_history: false}).done;
}"""

#: Run code on the notebook's kernel and return what it printed.
JS_KERNEL_PRINT = """async (code) => {
  const kernel = window.drawingPanel.sessionContext.session.kernel;
  let out = '';
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  future.onIOPub = msg => { if (msg.header.msg_type === 'stream') out += msg.content.text; };
  await future.done;
  return out.trim();
}"""
#: Counts, in the kernel, the grid's messages to the page by kind.
COUNT_SENT = ("import collections\nsent = collections.Counter()\n_send = grid.send\n"
              "grid.send = lambda content, buffers=None: (sent.update([content.get('kind')]), _send(content, buffers))")

#: Scroll the notebook to its last cell's end (true) or to its first cell (false).
JS_SCROLL = """(toEnd) => {
  const cells = window.drawingPanel.content.widgets;
  cells[toEnd ? cells.length - 1 : 0].node.scrollIntoView({block: toEnd ? 'end' : 'start'});
}"""
#: Where the grid is: its top and bottom against the window's height.
JS_WHERE = """() => {
  const box = window.drawingGrid.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, width: box.width, window: window.innerHeight};
}"""


#: Chromium on this module's ``lab``, as in tests/test_browser.py.
page = test_browser.page


@pytest.fixture(scope="module")
def served_lab(tmp_path_factory) -> Iterator[LabServer]:
    """One JupyterLab for the module's tests."""
    folder = tmp_path_factory.mktemp("drawing")
    write_notebook(folder / NOTEBOOK, GRID_CELL, SPACER_CELL)
    write_notebook(folder / REPUBLISHED, PUBLISHED_CELL)
    write_notebook(folder / PASSES, GRIDS_CELL)
    write_notebook(folder / MONITOR, MONITOR_CELL)
    write_notebook(folder / BETWEEN, SPACER_CELL, GRID_CELL, SPACER_CELL)
    with served(folder) as server:
        yield server


@pytest.fixture
def lab(served_lab: LabServer) -> Iterator[LabServer]:
    """The module's JupyterLab, as a server of the test's own would be (each notebook opens in a workspace of its own)."""
    with as_if_new(served_lab) as server:
        yield server


def _drawn(page: Any) -> dict[str, Any]:
    return page.evaluate(JS_DRAWN)


def _send(page: Any, first: int, last: int) -> None:
    """Send the points first..last (x = i, y = i % 3), one message each, as a monitor does per batch."""
    page.evaluate(JS_KERNEL_RUN,
                  f'for i in range({first}, {last + 1}):\n    grid.extend({{"rates": ([i], [[float(i % 3)]])}})')


def _wait_drawn(page: Any, last: int, what: str) -> dict[str, Any]:
    """Wait until the chart shows the window ending at point ``last``; what it drew."""
    expected = list(range(max(0, last - WINDOW + 1), last + 1))
    wait_for(lambda: (_drawn(page)["x"] or [None])[0] == expected, 60, 0.2,
             text=lambda: f"{what}: the chart drew {_drawn(page)}, expected x = {expected}")
    return _drawn(page)


def _open_and_run_all(page: Any, lab: LabServer, notebook: str) -> None:
    """Open ``notebook`` once its kernel is idle, and run all its cells."""
    page.goto(lab.notebook_url(notebook, workspace=Path(notebook).stem))
    page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
    page.evaluate("() => { window.drawingPanel = window.jupyterapp.shell.currentWidget; }")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_function(JS_NO_CELL_RUNNING, timeout=90_000, polling=250)


def _kernel(page: Any, code: str) -> str:
    return page.evaluate(JS_KERNEL_PRINT, code)


def _hidden_then_shown(page: Any, hide: str, show: str, first: int, what: str) -> int:
    """Hide the grid, send points, check nothing drew or was sent, show it: one update with the latest window."""
    page.evaluate(hide)
    # The page learns it is hidden (an IntersectionObserver callback) and tells the kernel.
    wait_for(lambda: _kernel(page, "print(grid.seen)") == "False", 10, 0.2,
             text=lambda: f"{what}: the kernel was not told the grid is hidden")
    _kernel(page, "sent.clear()")
    before = _drawn(page)
    last = first + 2 * WINDOW
    _send(page, first, last)
    time.sleep(SETTLE)
    hidden = _drawn(page)
    assert hidden == before, f"{what}: the hidden grid drew: {before} -> {hidden}; at {page.evaluate(JS_WHERE)}"
    assert _kernel(page, "print(dict(sent))") == "{}", f"{what}: the kernel sent points to a hidden grid"
    page.evaluate(show)
    after = _wait_drawn(page, last, what)
    # The kernel sent the whole window once, when the page said the grid shows again.
    assert _kernel(page, "print(grid.seen, dict(sent))") == "True {'data': 1}", what
    time.sleep(SETTLE)
    assert _drawn(page)["draws"] == after["draws"] == before["draws"] + 1, (
        f"{what}: shown again, the grid drew {_drawn(page)['draws'] - before['draws']} updates, not one")
    return last


def test_a_hidden_chart_grid_draws_nothing_and_catches_up_when_shown(lab: LabServer, page: Any) -> None:
    with evidence_on_failure(page, lab, "drawing"):
        _open_and_run_all(page, lab, NOTEBOOK)
        wait_for(lambda: _drawn(page)["draws"] >= 1, 60, 0.2, text=lambda: f"the grid never drew: {_drawn(page)}")
        _kernel(page, COUNT_SENT)

        # Visible: every point drawn, the trace kept within the window, one plotly call per
        # drawn update, mostly redrawing the trace alone.
        start = _drawn(page)
        for last in range(0, 3 * WINDOW):
            _send(page, last, last)
            drawn = _wait_drawn(page, last, "visible")
            assert all(len(x) <= WINDOW for x in drawn["x"]), f"a trace holds more than {WINDOW} points: {drawn}"
        calls = sum(drawn[kind] - start[kind] for kind in ("full", "points", "axis"))
        assert calls == drawn["draws"] - start["draws"], f"not one draw per drawn update: {start} -> {drawn}"
        assert drawn["points"] - start["points"] > drawn["full"] - start["full"], (
            f"points that fit the axes were redrawn in full: {start} -> {drawn}")
        # The window moves on every few points: the axes move without a full draw.
        assert drawn["axis"] > start["axis"], f"points past the axes were redrawn in full: {start} -> {drawn}"
        assert drawn["full"] - start["full"] < drawn["axis"] - start["axis"], (
            f"more full draws than axis moves: {start} -> {drawn}")

        # The notebook's tab behind a Launcher, then brought back.
        last = _hidden_then_shown(
            page, "() => window.jupyterapp.commands.execute('launcher:create')",
            "() => window.jupyterapp.shell.activateById(window.drawingPanel.id)", last + 1, "behind a Launcher")

        # Scrolled out of view (below a tall output), then back.
        last = _hidden_then_shown(page, f"() => ({JS_SCROLL})(true)", f"() => ({JS_SCROLL})(false)",
                                  last + 1, "scrolled out of view")

        # The grid cell's output collapsed, then expanded.
        select = "window.drawingPanel.content.activeCellIndex = 0;"
        last = _hidden_then_shown(
            page, f"() => {{ {select} window.jupyterapp.commands.execute('notebook:hide-cell-outputs'); }}",
            f"() => {{ {select} window.jupyterapp.commands.execute('notebook:show-cell-outputs'); }}",
            last + 1, "output collapsed")
        assert len(_drawn(page)["x"][0]) == WINDOW


#: The first cell's output: the mime types of its data, and the widget views its renderer holds.
JS_FIRST_OUTPUT = """() => {
  const area = window.drawingPanel.content.widgets[0].outputArea;
  const panel = area.widgets[0];
  const renderer = (panel.widgets || []).find(w => typeof w.renderModel === 'function') || panel;
  return {types: Object.keys(area.model.get(0).data).sort(), views: renderer.widgets ? renderer.widgets.length : -1};
}"""


def test_a_published_picture_leaves_the_live_view_as_it_is(lab: LabServer, page: Any) -> None:
    # A workbench output publishes a newer picture (a replay panel does after every cell that
    # moved it): the page's output data gains it, and the live view stays, neither drawn anew
    # nor kept twice (a second view of the same widget, the first left detached in the page).
    with evidence_on_failure(page, lab, "republished"):
        _open_and_run_all(page, lab, REPUBLISHED)
        _send(page, 0, 0)
        _wait_drawn(page, 0, "before the picture")
        page.evaluate("() => { window.drawingGrid.dataset.firstView = 'yes'; }")
        for key, last in ((1, 1), (2, 2)):
            _kernel(page, f"output.publish(key={key})")
            wait_for(lambda: "image/png" in page.evaluate(JS_FIRST_OUTPUT)["types"], 30, 0.2,
                     text=lambda: f"the output's data after publish {key}: {page.evaluate(JS_FIRST_OUTPUT)}")
            time.sleep(SETTLE)  # the page would draw a second view meanwhile
            grids = page.evaluate("() => [...document.querySelectorAll('.workbench-chart-grid')]"
                                  ".map(g => [g.dataset.firstView || 'new', g.isConnected])")
            assert grids == [["yes", True]], f"after publish {key}, the page shows the grids {grids}"
            assert page.evaluate(JS_FIRST_OUTPUT)["views"] == 1, "the output's renderer holds more than one view"
            _send(page, last, last)  # the live view goes on drawing
            _wait_drawn(page, last, f"after publish {key}")


#: From now on, note each draw of the page's grids: [ms the animation-frame callback that
#: drew it started, grid index, pass number] (``window.noted``, emptied by each call). The
#: observer's callback runs right after that callback returns, so its start is the pass's
#: start, whatever the drawing took.
JS_NOTE_DRAWS = """() => {
  window.noted = [];
  if (window.notingDraws) return;
  window.notingDraws = true;
  const grids = [...document.querySelectorAll('.workbench-chart-grid')];
  const frame = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = callback => frame(now => { window.frameStart = performance.now(); callback(now); });
  new MutationObserver(records => {
    for (const record of records) {
      window.noted.push([window.frameStart, grids.indexOf(record.target), Number(record.target.dataset.pass)]);
    }
  }).observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-pass']});
}"""
#: The x values each grid's chart holds.
JS_GRID_XS = """() => [...document.querySelectorAll('.workbench-chart-grid .js-plotly-plot')]
  .map(plot => plot.data ? Array.from(plot.data[0].x || []) : null)"""


def _passes_feeding(page: Any, grids: int, points: int, first: int) -> list[tuple[float, set[int]]]:
    """Feed grids 0..``grids``-1 a point each in turn every 40 ms, x = ``first`` + i for i < ``points``.

    Once each grid shows its latest window: the page's draw passes meanwhile, in order, as
    (start in ms, the grids drawn).
    """
    page.evaluate(JS_NOTE_DRAWS)
    page.evaluate(JS_KERNEL_RUN, f"import time\nfor i in range({points}):\n"
                  f"    grids[i % {grids}].extend({{'rates': ([{first} + i], [[float(i % 3)]])}})\n"
                  f"    time.sleep(0.04)")
    expected = [[first + i for i in range(points) if i % grids == g][-WINDOW:] for g in range(grids)]
    wait_for(lambda: page.evaluate(JS_GRID_XS)[:grids] == expected, 60, 0.2,
             text=lambda: f"the grids drew {page.evaluate(JS_GRID_XS)}, expected {expected}")
    passes: dict[int, tuple[float, set[int]]] = {}
    for at, grid, number in page.evaluate("() => window.noted"):
        passes.setdefault(number, (at, set()))[1].add(grid)
    return [passes[number] for number in sorted(passes)]


def _gaps(passes: list[tuple[float, set[int]]]) -> list[int]:
    return [round(b[0] - a[0]) for a, b in zip(passes, passes[1:])]


def test_grids_draw_together_in_passes_apart(lab: LabServer, page: Any) -> None:
    # Grids get a point each in turn every 40 ms: a page drawing each message in a frame of
    # its own would draw 25 frames a second. The page's passes take the grids' points
    # together: a quarter of a second apart while two grids draw, a second apart once eight do.
    with evidence_on_failure(page, lab, "passes"):
        _open_and_run_all(page, lab, PASSES)
        page.wait_for_function(f"() => [...document.querySelectorAll('.workbench-chart-grid')]"
                               f".filter(g => Number(g.dataset.draws) >= 1).length === {GRIDS}",
                               timeout=60_000, polling=200)
        # The page counts the grids that drew in its last RECENT_S seconds: all eight just did.
        time.sleep(RECENT_S + 0.5)
        points = 48
        two = _passes_feeding(page, 2, points, 0)
        gaps = _gaps(two)
        draws = [sum(1 for _, drawn in two if g in drawn) for g in (0, 1)]
        # Half a gap is room for a timer that fires early; a frame per message would be 40 ms.
        assert len(gaps) >= 2 and min(gaps) >= PASS_GAP / 2, f"passes closer than {PASS_GAP} ms: {gaps}"
        assert sorted(gaps)[len(gaps) // 2] < 2 * PASS_GAP, f"two grids' passes are not {PASS_GAP} ms apart: {gaps}"
        assert any(drawn == {0, 1} for _, drawn in two), f"no pass drew both grids: {two}"
        assert max(draws) <= points // 4, f"a grid drew {draws} times for {points // 2} points each"
        # All eight: once the page has seen them draw (two passes), a second between passes.
        eight = _passes_feeding(page, GRIDS, 12 * GRIDS, 1000)
        gaps = _gaps(eight)
        assert len(gaps) >= 4 and min(gaps[2:]) >= MAX_PASS_GAP / 2, \
            f"eight grids' passes closer than {MAX_PASS_GAP} ms: {gaps}"
        assert any(len(drawn) == GRIDS for _, drawn in eight), f"no pass drew all eight grids: {eight}"


#: Scroll the notebook so that the grid's top is the argument's pixels under the bottom of the
#: notebook's visible part (its scrolling box, not the window); where the grid and that are.
JS_PLACE = """(below) => {
  const grid = window.drawingGrid;
  let box = grid.parentElement;  // the first box round the grid that scrolls
  while (!['auto', 'scroll'].includes(getComputedStyle(box).overflowY) || box.scrollHeight <= box.clientHeight) {
    box = box.parentElement;
  }
  box.scrollTop += grid.getBoundingClientRect().top - (box.getBoundingClientRect().bottom + below);
  return {top: grid.getBoundingClientRect().top, visibleBottom: box.getBoundingClientRect().bottom};
}"""


def test_a_grid_about_to_scroll_into_view_has_its_points_before_it_shows(lab: LabServer, page: Any) -> None:
    # The notebook scrolls in a box of its own, inside the window, and JupyterLab skips the
    # content of a cell out of that box's view: a grid 100 px under it is told to the kernel,
    # which sends its latest window then, and the grid shows it as it scrolls in (not the
    # charts it had when it scrolled away, until the kernel has heard and answered).
    with evidence_on_failure(page, lab, "about-to-show"):
        _open_and_run_all(page, lab, BETWEEN)
        wait_for(lambda: _drawn(page)["draws"] >= 0, 60, 0.2, text="the grid never showed up in the page")
        _kernel(page, COUNT_SENT)
        page.evaluate(JS_PLACE, 2000)  # far under the notebook's view
        wait_for(lambda: _kernel(page, "print(grid.seen)") == "False", 10, 0.2,
                 text="the kernel was not told the grid is hidden")
        _send(page, 0, 2 * WINDOW)
        assert _kernel(page, "print(dict(sent))") == "{}", "the kernel sent points to a hidden grid"
        placed = page.evaluate(JS_PLACE, 100)
        assert placed["top"] > placed["visibleBottom"], f"the grid is in view: {placed}"
        wait_for(lambda: _kernel(page, "print(grid.seen, dict(sent))") == "True {'data': 1}", 10, 0.2,
                 text=lambda: f"a grid 100 px under the notebook's view: {_kernel(page, 'print(grid.seen, dict(sent))')}"
                              f" at {placed}")
        page.evaluate(JS_PLACE, -350)  # in view
        _wait_drawn(page, 2 * WINDOW, "scrolled into view")
        assert _kernel(page, "print(dict(sent))") == "{'data': 1}", "the kernel was asked again once the grid showed"


#: Each chart grid's views the kernel counts: what each last said (can it be seen?).
VIEWS = "print(sorted(grid._views.values()))"


def test_a_view_that_goes_is_forgotten_by_the_kernel(lab: LabServer, page: Any) -> None:
    # Each view says when it goes, whatever it said before: the kernel keeps no entry for a
    # view of a page reloaded (its page went) or of an output cleared while it was hidden.
    with evidence_on_failure(page, lab, "views-gone"):
        _open_and_run_all(page, lab, NOTEBOOK)
        wait_for(lambda: _drawn(page)["draws"] >= 1, 60, 0.2, text=lambda: f"the grid never drew: {_drawn(page)}")
        wait_for(lambda: _kernel(page, VIEWS) == "[True]", 10, 0.2,
                 text=lambda: f"the kernel's views of the shown grid: {_kernel(page, VIEWS)}")
        # The page reloads: its view goes with it, the new page's view is the only one.
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.drawingPanel.context.model.dirty", timeout=30_000, polling=200)
        page.reload()
        page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
        page.evaluate("() => { window.drawingPanel = window.jupyterapp.shell.currentWidget; }")
        wait_for(lambda: _drawn(page)["draws"] >= 1, 60, 0.2, text=lambda: f"the reloaded grid never drew: {_drawn(page)}")
        wait_for(lambda: _kernel(page, VIEWS) == "[True]", 10, 0.2,
                 text=lambda: f"the kernel's views after a reload: {_kernel(page, VIEWS)}")
        # Scrolled away, then its output cleared: the hidden view goes, and nobody sees the grid.
        page.evaluate(f"() => ({JS_SCROLL})(true)")
        wait_for(lambda: _kernel(page, VIEWS) == "[False]", 10, 0.2,
                 text=lambda: f"the kernel's views of the hidden grid: {_kernel(page, VIEWS)}")
        page.evaluate("() => window.drawingPanel.content.widgets[0].model.outputs.clear()")
        wait_for(lambda: _kernel(page, VIEWS + "\nprint(grid.seen)") == "[]\nFalse", 10, 0.2,
                 text=lambda: f"the kernel's views once the output is cleared: {_kernel(page, VIEWS)}")


#: Where chart ``key`` of the page's grid stands: its plotly x values, its y axis's range and
#: tick labels.
JS_CHART = """(key) => {
  const plot = document.querySelector(`.workbench-chart[data-chart="${key}"]`);
  const layout = plot && plot._fullLayout;
  return {x: plot && plot.data ? plot.data.map(trace => Array.from(trace.x || [])) : null,
          range: layout && layout.yaxis ? layout.yaxis.range : null,
          ticks: plot ? [...plot.querySelectorAll('.ytick text')].map(tick => tick.textContent) : []};
}"""


def test_a_date_axis_of_one_time_spans_a_minute_around_it(lab: LabServer, page: Any) -> None:
    # A first batch whose rows all had one event time, before any watermark: every time the
    # watermark chart holds is the same. Its axis spans a minute around that time, and its
    # ticks read the seconds around it (not years, every tick reading 00:00:00).
    with evidence_on_failure(page, lab, "one-time"):
        _open_and_run_all(page, lab, MONITOR)
        time_text = "2026-01-01 12:00:00.000000"
        page.evaluate(JS_KERNEL_RUN, f'grid.extend({{"watermark": ([0], [["{time_text}"], ["{time_text}"], '
                                     f'[None], [None]])}})')
        chart = wait_for(lambda: (lambda c: c if c["x"] and c["x"][0] == [0] and c["ticks"] else None)(
            page.evaluate(JS_CHART, "watermark")), 60, 0.2,
            text=lambda: f"the watermark chart drew {page.evaluate(JS_CHART, 'watermark')}")
        low, high = (datetime.fromisoformat(value) for value in chart["range"])
        assert timedelta(seconds=30) <= high - low <= timedelta(minutes=5), f"the time axis spans {chart['range']}"
        assert low < datetime(2026, 1, 1, 12) < high, f"the time axis {chart['range']} misses the time"
        assert "12:00:00" in chart["ticks"] and len(set(chart["ticks"])) == len(chart["ticks"]) > 1, (
            f"the time axis' ticks read {chart['ticks']}")


def test_a_chart_that_fails_to_draw_leaves_the_others_drawing(lab: LabServer, page: Any) -> None:
    # The grid's first chart gets a value it cannot draw (an object on its time axis): it
    # fails, says so in the browser's console, and the grid's other charts draw each point.
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    with evidence_on_failure(page, lab, "one-fails"):
        _open_and_run_all(page, lab, MONITOR)
        page.evaluate(JS_KERNEL_RUN, 'grid.extend({"watermark": ([0], [[{"not": "a time"}], [None], [None], [None]]), '
                                     '"rates": ([0], [[1.0], [2.0]])})')
        for last in range(0, WINDOW + 2):
            if last:
                page.evaluate(JS_KERNEL_RUN, f'grid.extend({{"rates": ([{last}], [[1.0], [{last}.0]])}})')
            expected = list(range(max(0, last - WINDOW + 1), last + 1))
            wait_for(lambda: page.evaluate(JS_CHART, "rates")["x"] == [expected, expected], 30, 0.2,
                     text=lambda: f"the rates chart drew {page.evaluate(JS_CHART, 'rates')}, expected x = {expected}")
        assert any("the chart watermark failed to draw" in line for line in console), console
