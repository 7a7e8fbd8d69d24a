"""New points drawn without plotly look as plotly draws them, in JupyterLab.

The monitor's four charts (watermark band, markers and steps; state lines on two axes that meet
inside a row of pixels; stacked duration bars, one trace of them outlined, and a line; rates over a
single bar trace) in a chart grid under a cell, fed one batch at a time from the kernel. Points that
fit the axes are drawn without a plotly call (``extensions/src/patch.ts``; the chart's
``data-patched-draws`` count): as a picture in a canvas over the chart
(``extensions/src/canvas.ts``; ``data-canvas-draws``), the SVG plotly drew left untouched, or, on a
page that asks for it, written into that SVG. Then the pointer enters each chart: plotly redraws it
from its data (its hover reads its own), and the picture must be the one the patches drew, pixel for
pixel but for anti-aliasing, with the same points in the chart's data. A pointer resting on a chart
costs no plotly draw per batch (the batch is patched into its SVG, under plotly's hover label),
nor does a batch that passes the axes under it (plotly moves the axes alone, the points are patched
into the SVG over them); plotly catches up once when the pointer moves, and its hover shows the new
batch. Once the window is full and
moves on, a patched batch changes no SVG shape (canvas), or only a few shapes per trace (the browser
repaints only those): the newest and oldest part of each line, the shape of the batch that left
reused for the new one, not every point's. When the points pass the axes' room, plotly moves the
axes alone and the points are patched over them (``data-axis-draws``): no chart draws in full once
its window is full, the axes move on again and the newest points stay inside them, and the pictures
compared are of charts whose axes moved so. Under a canvas, plotly's move redraws the live lines'
hidden SVG through their two ends only (the canvas shows every point). The grid's caption names each
batch only once every chart shows it (the pictures and the caption in one frame); a caption of text
alone is drawn as a picture, and left alone it becomes text that looks the same; under the
pointer it is text (to select), and a caption sent while the reader's selection holds the line
waits until the selection is cleared. Then the page
becomes a HiDPI one (two device pixels to a CSS pixel) and the next batch's pictures must again look
as plotly draws them, in device pixels. Last, drawing a picture starts to fail: the canvases go and
each chart's SVG must show the batch's points at once, as plotly draws them, and the next batch's
too.
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any, Iterator

import pytest
from PIL import Image, ImageChops

from .browser_support import (ARTIFACTS, JS_KERNEL_IDLE, JS_NO_CELL_RUNNING, LabServer, as_if_new, served,
                              set_device_ratio, write_notebook)
from .helpers import wait_for
from . import test_browser
from .test_browser import evidence_on_failure

pytestmark = pytest.mark.browser

NOTEBOOK = "patched.ipynb"
GRID_CELL = """from workbench.views.charts import ChartGrid
from workbench.views.monitor_charts import chart_specs, operator_traces
specs = chart_specs()
specs[1]["traces"] = operator_traces(["stateStoreSave"])
# The state chart's upper subplot ends inside a pixel (at 154.8 px, 309.6 on a HiDPI page): the
# flat line along its bottom shows the share of the edge pixels plotly's clip path covers.
specs[1]["layout"]["yaxis"]["domain"] = [0.37608, 1.0]
# The lower subplot meets it there: the two subplots share that row of pixels, each drawing
# its share of it (the upper one most).
specs[1]["layout"]["yaxis2"]["domain"] = [0.0, 0.37608]
# A note of the user's inside one plot: plotly draws it over the traces, so that chart's
# canvas stays under plotly's upper layers (the others lie over them).
specs[2]["layout"]["annotations"] = [{"text": "a note", "xref": "paper", "yref": "paper", "x": 0.2, "y": 0.9,
                                      "showarrow": False, "bgcolor": "#ffffff"}]
# Outlined bars (a line round each): drawn one by one, where two meet both outlines show.
specs[2]["traces"][0]["marker"] = {"line": {"width": 1, "color": "#333333"}}
# A single bar trace (batch sizes) under the rates' lines: plotly draws it anti-aliased, at its
# bars' exact edges (only a stack of bar traces is drawn crisp).
specs[3]["layout"]["barmode"] = "stack"
specs[3]["traces"].append({"type": "bar", "name": "rows", "marker": {"color": "#bcbddc"}})
grid = ChartGrid(specs, window=60)
grid"""

#: One batch's points for each chart, as the monitor sends them (x = batch id).
SEND = """import datetime
def send(batch):
    at = datetime.datetime(2026, 1, 1, 10, 0) + datetime.timedelta(seconds=batch)
    text = lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")
    grid.extend({
        # No event times for the first batches (a stream's first batch reads no rows), nor for
        # a no-data batch now and then (Spark runs one when the watermark moves): the band
        # goes on over those.
        "watermark": ([batch], [[text(at) if batch >= 25 and batch % 6 != 4 else None],
                                [text(at + datetime.timedelta(seconds=4)) if batch >= 25 and batch % 6 != 4 else None],
                                [text(at - datetime.timedelta(seconds=10)) if batch else None], [10 + batch % 3]]),
        "state": ([batch], [[batch % 5 + 2], [batch % 3], [batch % 2], [0], [4000 + 100 * (batch % 4)]]),
        "latency": ([batch], [[300 + 40 * (batch % 5)], [2], [5], [20 + batch % 7], [30], [15], [400 + 40 * (batch % 5)]]),
        "rates": ([batch], [[50.0], [40.0 + 10 * (batch % 3)], [20.0 + 3 * (batch % 4)]]),
    }, caption=f"batch <b>{batch}</b>")
"""

#: Each chart's draw counts and the batch ids its plotly data holds.
JS_CHARTS = """() => Object.fromEntries([...document.querySelectorAll('.workbench-chart')].map(div => [
  div.dataset.chart,
  {full: Number(div.dataset.fullDraws || 0), points: Number(div.dataset.pointDraws || 0),
   patched: Number(div.dataset.patchedDraws || 0), axis: Number(div.dataset.axisDraws || 0),
   pointer: Number(div.dataset.pointerDraws || 0), canvas: Number(div.dataset.canvasDraws || 0),
   x: div.data ? div.data.map(trace => Array.from(trace.x || [])) : []}]))"""

JS_KERNEL_RUN = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  await kernel.requestExecute({code, silent: false, store_history: false}).done;
}"""

#: Where the newest point of a chart's first trace is, from the chart's top left corner.
JS_NEWEST_POINT = """(key) => {
  const gd = document.querySelector(`.workbench-chart[data-chart="${key}"]`);
  const layout = gd._fullLayout, trace = gd.data[0], last = trace.x.length - 1;
  return [layout.xaxis._offset + layout.xaxis.c2p(trace.x[last]),
          layout.yaxis._offset + layout.yaxis.c2p(trace.y[last])];
}"""

#: A batch past the batch axis's second move once the window (60) is full: its range has room
#: for a quarter window more, so it moves on at batches 75 and 91.
PAST_TWO_MOVES = 110

#: The newest point of each chart's traces that lies outside its axes' ranges (none should).
JS_OUTSIDE = """() => {
  const outside = [];
  for (const gd of document.querySelectorAll('.workbench-chart')) {
    for (const trace of gd._fullData) {
      const data = gd.data[trace.index], last = (data.x || []).length - 1;
      if (trace.visible !== true || last < 0) continue;
      for (const [letter, values] of [['x', data.x], ['y', data.y]]) {
        const axis = gd._fullLayout[`${letter}axis${trace[letter + 'axis'].slice(1)}`];
        const value = values[last];
        if (value === null || value === undefined) continue;
        const at = axis.d2c(value), [low, high] = axis.range.map(end => axis.r2c(end));
        if (!(at >= Math.min(low, high) && at <= Math.max(low, high))) {
          outside.push(`${gd.dataset.chart}: ${trace.name} ${letter} = ${value} outside ${axis.range}`);
        }
      }
    }
  }
  return outside;
}"""

#: The points of each line plotly drew in a chart's SVG (its `d`'s moves and straight segments).
JS_SVG_LINE_POINTS = """(key) => [...document.querySelectorAll(
  `.workbench-chart[data-chart="${key}"] .scatterlayer g.trace path.js-line`)].map(
  path => (path.getAttribute('d').match(/[ML]/g) || []).length)"""

#: Where each chart's canvas lies among plotly's layers: "over" them all (the container's
#: last child), "under" the upper ones (right after the plot's SVG), or None (no canvas).
JS_CANVAS_PLACES = """() => Object.fromEntries([...document.querySelectorAll('.workbench-chart')].map(div => {
  const canvas = div.querySelector('canvas.workbench-trace-canvas');
  if (!canvas) return [div.dataset.chart, null];
  const box = canvas.parentElement, plot = box.querySelector(':scope > svg.main-svg');
  return [div.dataset.chart, box.lastElementChild === canvas ? 'over'
          : canvas.previousElementSibling === plot ? 'under' : 'elsewhere'];
}))"""

#: Whether a chart's live traces show as plotly's SVG (its canvas cleared), not under a picture.
JS_SVG_SHOWN = """(key) => [...document.querySelectorAll(`.workbench-chart[data-chart="${key}"] g.trace`)]
  .every(group => group.style.visibility !== 'hidden')"""

#: Count, per chart, the shapes whose `d` or `transform` changes and the shapes added.
JS_WATCH_SHAPES = """() => {
  window.patchChanges = {};
  for (const div of document.querySelectorAll('.workbench-chart')) {
    const changed = window.patchChanges[div.dataset.chart] = new Set();
    new MutationObserver(records => records.forEach(record => {
      if (record.type === 'attributes') changed.add(record.target);
      record.addedNodes.forEach(node => changed.add(node));
    })).observe(div.querySelector('.cartesianlayer'), {subtree: true, childList: true, attributes: true,
                                              attributeFilter: ['d', 'transform']});
  }
}"""
#: The number of shapes changed per chart since the last call (the counts start again).
JS_SHAPES_CHANGED = """() => Object.fromEntries(Object.entries(window.patchChanges).map(([key, changed]) => {
  const count = changed.size; changed.clear(); return [key, count];
}))"""
#: Record, each time the grid's caption changes, the batch it names and what each chart shows
#: then: the newest batch in its data and whether its canvas holds every picture asked of it.
JS_WATCH_CAPTION = """() => {
  window.captionSeen = [];
  const caption = document.querySelector('.workbench-chart-caption');
  new MutationObserver(() => window.captionSeen.push({
    caption: caption.textContent,
    charts: Object.fromEntries([...document.querySelectorAll('.workbench-chart')].map(div => [
      div.dataset.chart,
      {newest: div.data[0].x[div.data[0].x.length - 1],
       pictures: Number(div.dataset.canvasDraws || 0),
       asked: Number(div.dataset.patchedDraws || 0) - Number(div.dataset.pointerDraws || 0)
              + Number(div.dataset.axisDraws || 0)}]))
  })).observe(caption, {subtree: true, childList: true, characterData: true});
}"""

#: Live traces per chart, and the shapes a trace may change per patched batch (two line
#: parts, a marker or bar moved to the new batch).
LIVE_TRACES = {"watermark": 4, "state": 5, "latency": 7, "rates": 3}
SHAPES_PER_TRACE = 3

#: A pixel differs when a channel differs by more than this (a faint band shifted by a pixel does).
CHANNEL = 16
#: Share of a chart's pixels allowed to differ (edges of shapes rounded differently).
SHARE = 0.001


page = test_browser.page


@pytest.fixture(scope="module")
def served_lab(tmp_path_factory) -> Iterator[LabServer]:
    """One JupyterLab for both ways of drawing."""
    folder = tmp_path_factory.mktemp("patched")
    write_notebook(folder / NOTEBOOK, GRID_CELL)
    with served(folder) as server:
        yield server


@pytest.fixture
def lab(served_lab: LabServer) -> Iterator[LabServer]:
    """The module's JupyterLab, as a server of the test's own would be."""
    with as_if_new(served_lab) as server:
        yield server


def _charts(page: Any) -> dict[str, Any]:
    return page.evaluate(JS_CHARTS)


def _wait_for_pictures(page: Any) -> None:
    """Wait until every chart's canvas holds the pictures its patched batches (but those under
    the pointer, written into the SVG) and axis moves asked for."""
    wait_for(lambda: all(c["canvas"] == c["patched"] - c["pointer"] + c["axis"] for c in _charts(page).values()),
             10, 0.05,
             text=lambda: f"pictures asked for did not reach the canvases: {_charts(page)}")


def _pictures_in(page: Any, draw: str) -> None:
    """With the canvas, wait for the batch's pictures too: the next batch's pass, a frame
    after it arrives, would otherwise drop those still on their way (a newer picture wins)."""
    if draw == "canvas":
        _wait_for_pictures(page)


def _send(page: Any, batch: int, draw: str) -> None:
    """Send ``batch`` from the kernel and wait until every chart shows it as its newest (its pictures in too)."""
    page.evaluate(JS_KERNEL_RUN, f"send({batch})")
    wait_for(lambda: all(c["x"] and c["x"][0][-1] == batch for c in _charts(page).values()), 30, 0.05,
             text=lambda: f"batch {batch} not drawn: {_charts(page)}")
    _pictures_in(page, draw)


def _differing(before: bytes, after: bytes) -> float:
    """The share of pixels that differ by more than :data:`CHANNEL` in some channel."""
    a, b = (Image.open(io.BytesIO(shot)).convert("RGB") for shot in (before, after))
    assert a.size == b.size, f"the chart changed size: {a.size} -> {b.size}"
    mask = ImageChops.difference(a, b).point(lambda value: 255 if value > CHANNEL else 0).convert("L")
    return sum(mask.histogram()[1:]) / (a.size[0] * a.size[1])


def _look_as_plotly_draws(page: Any, drawn: dict[str, Any], name: str, cdp: Any = None) -> None:
    """Each chart of ``drawn`` (its patched picture) against plotly's own drawing of it: the
    share of differing pixels at most :data:`SHARE`; on failure both pictures go to
    test-artifacts/ as ``{name}-{chart}-by-patch.png`` and ``-by-plotly.png``. ``cdp``: the
    page's DevTools session when it set the page's device-pixel ratio (Playwright's own
    screenshots would not keep it), which then takes the pictures in device pixels."""
    for key, chart in drawn.items():
        div = page.locator(f'.workbench-chart[data-chart="{key}"]')
        div.scroll_into_view_if_needed()
        shot = div.screenshot if cdp is None else lambda: _device_shot(cdp, div)
        patched = shot()
        # Plotly redraws from its data when the pointer enters (as for a hover).
        div.dispatch_event("pointerenter")
        wait_for(lambda: _charts(page)[key]["full"] == chart["full"] + 1, 10, 0.05,
                 text=lambda: f"{key}: plotly did not redraw when the pointer entered: {_charts(page)[key]}")
        page.wait_for_timeout(200)
        redrawn = shot()
        share = _differing(patched, redrawn)
        if share > SHARE:
            (ARTIFACTS / f"{name}-{key}-by-patch.png").write_bytes(patched)
            (ARTIFACTS / f"{name}-{key}-by-plotly.png").write_bytes(redrawn)
        assert share <= SHARE, (f"{name} {key}: {share:.2%} of the patched chart's pixels differ from plotly's "
                                f"own drawing (at most {SHARE:.2%}; both pictures in {ARTIFACTS})")
        assert _charts(page)[key]["x"] == chart["x"], f"{key}: plotly's redraw holds other points"
        div.dispatch_event("pointerleave")


def _device_shot(cdp: Any, div: Any) -> bytes:
    """A PNG of ``div`` (in the viewport) in the page's device pixels, taken through ``cdp``:
    the smallest box of whole device pixels around it, as the screen shows it (a box
    starting inside a device pixel would be drawn again shifted)."""
    box = div.bounding_box()
    ratio = div.evaluate("() => window.devicePixelRatio")
    left, top = (math.floor(box[k] * ratio) / ratio for k in ("x", "y"))
    right = math.ceil((box["x"] + box["width"]) * ratio) / ratio
    bottom = math.ceil((box["y"] + box["height"]) * ratio) / ratio
    clip = {"x": left, "y": top, "width": right - left, "height": bottom - top, "scale": 1}
    return base64.b64decode(cdp.send("Page.captureScreenshot", {"format": "png", "clip": clip})["data"])


@pytest.mark.parametrize("draw", ["canvas", "svg"])
def test_patched_points_look_as_plotly_draws_them(lab: LabServer, page: Any, draw: str) -> None:
    """``canvas``: the page as users get it, the new points drawn as a picture in a canvas over
    each chart and the SVG is left as plotly drew it; ``svg``: a browser without
    ``OffscreenCanvas`` (removed from the page before the grid draws), where the new points
    are written into the SVG."""
    with evidence_on_failure(page, lab, f"patched-{draw}"):
        page.set_viewport_size({"width": 1400, "height": 1100})
        page.goto(lab.notebook_url(NOTEBOOK))
        page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
        # Each batch drawn in the frame after it arrives, not a quarter of a second after the
        # page's draw pass before (the passes' gap is test_browser_drawing's subject): this
        # test sends some 150 batches one at a time, each waited for until drawn (and its
        # pictures in, see _pictures_in).
        page.evaluate("() => { document.documentElement.dataset.workbenchPasses = 'frame'; }")
        if draw == "svg":  # before the grid draws
            page.evaluate("() => { delete window.OffscreenCanvas; }")
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        page.wait_for_function(JS_NO_CELL_RUNNING, timeout=90_000, polling=250)
        page.mouse.move(1, 1)  # the pointer away from the charts
        page.evaluate(JS_KERNEL_RUN, SEND)
        page.evaluate(JS_WATCH_CAPTION)
        # The window fills (shapes are added: markers, bars), then moves (old points leave).
        last = 0
        for last in range(0, 70):
            page.evaluate(JS_KERNEL_RUN, f"send({last})")
            expected = list(range(max(0, last - 59), last + 1))
            wait_for(lambda: all(x and x[0] == expected for x in (c["x"] for c in _charts(page).values())),
                     30, 0.05, text=lambda: f"batch {last} not drawn: {_charts(page)}")
            _pictures_in(page, draw)
        drawn = full = _charts(page)
        assert set(drawn) == {"watermark", "state", "latency", "rates"}, drawn
        for key, chart in drawn.items():
            assert chart["patched"] >= 40, f"{key}: points that fit the axes went through plotly: {chart}"
            assert all(len(x) == 60 for x in chart["x"]), f"{key}: a trace holds other than the window: {chart}"
            canvases = page.locator(f'.workbench-chart[data-chart="{key}"] canvas.workbench-trace-canvas').count()
            if draw == "canvas":
                # Every patched batch, and each batch that moved the axes alone, drew the canvas.
                assert chart["pointer"] == 0 and chart["canvas"] == chart["patched"] + chart["axis"] and canvases == 1, (
                    f"{key}: patched batches not drawn in the chart's canvas ({canvases} canvases): {chart}")
            else:
                assert chart["canvas"] == 0 and canvases == 0, (
                    f"{key}: a canvas drew in a browser without OffscreenCanvas: {chart}, {canvases} canvases")
        if draw == "canvas":
            # Over plotly's legend, titles and hover layer, which nothing of theirs covers the
            # plot with; under them in the chart with a note inside its plot.
            places = page.evaluate(JS_CANVAS_PLACES)
            assert places == {"watermark": "over", "state": "over", "latency": "under", "rates": "over"}, places

        # The window moves on: a patched batch changes a few shapes per trace, not all.
        page.evaluate(JS_WATCH_SHAPES)
        changes: dict[str, int] = {}
        patched_before: set[str] = set()  # charts whose batch before was patched too
        for last in range(last + 1, last + 9):
            before = _charts(page)
            page.evaluate(JS_SHAPES_CHANGED)
            _send(page, last, draw)
            counts, now = page.evaluate(JS_SHAPES_CHANGED), _charts(page)
            patched = {key for key in now if now[key]["patched"] > before[key]["patched"]}
            changes.update({key: counts[key] for key in patched & patched_before})
            patched_before = patched
            if len(changes) == len(LIVE_TRACES):
                break
        assert set(changes) == set(LIVE_TRACES), f"some chart was not patched twice in a row in 8 batches: {changes}"
        for key, count in changes.items():
            if draw == "canvas":
                # The canvas draws the batch: the SVG plotly drew is not touched.
                assert count == 0, f"{key}: a batch drawn in the canvas changed {count} SVG shapes"
                continue
            assert 0 < count <= SHAPES_PER_TRACE * LIVE_TRACES[key], (
                f"{key}: one patched batch changed {count} shapes, more than {SHAPES_PER_TRACE} per trace "
                f"({LIVE_TRACES[key]} traces): the whole chart repaints")
        # The window moves on past the axes' room, twice: the axes move with the points patched
        # over them, no chart drawn in full since the window filled, and an axis moved so stays
        # the chart's (not taken for a zoom of the user's, which would keep its range).
        while last < 150 and (last < PAST_TWO_MOVES or not all(
                chart["axis"] >= full[key]["axis"] + 2 for key, chart in _charts(page).items())):
            last += 1
            _send(page, last, draw)
        drawn = _charts(page)
        for key, chart in drawn.items():
            assert chart["axis"] >= full[key]["axis"] + 2, f"{key}: its axes did not move twice without a full draw: {chart}"
            assert chart["full"] == full[key]["full"], f"{key}: drawn in full once its window was full: {chart}"
        outside = page.evaluate(JS_OUTSIDE)
        assert not outside, f"the newest points lie outside the axes: {outside}"
        lines = page.evaluate(JS_SVG_LINE_POINTS, "rates")  # two lines, every point present
        if draw == "canvas":
            # The last plotly drew of them was a move: the lines' two ends, hidden under the canvas.
            assert lines == [2, 2], f"rates: a move under the canvas drew the SVG lines through {lines} points"
        else:
            assert len(lines) >= 2 and sum(lines) >= 2 * 60, f"rates: the SVG lines hold {lines} points, not the window's"

        # The caption named each batch as its points showed, in the same frame: every chart's
        # data and (canvas) picture held that batch whenever the caption changed.
        seen = page.evaluate("() => window.captionSeen")
        assert len(seen) >= last - 10, f"the caption changed {len(seen)} times in {last + 1} batches"
        for record in seen:
            batch = int(record["caption"].split()[-1])
            for key, chart in record["charts"].items():
                assert chart["newest"] == batch, f"{key} showed batch {chart['newest']} under caption {record}"
                if draw == "canvas":
                    assert chart["pictures"] == chart["asked"], f"{key}'s picture not in when the caption changed: {record}"

        _look_as_plotly_draws(page, drawn, "patched")
        _plain_caption_looks_as_the_page_writes_it(page, draw)
        _caption_under_the_pointer_is_text_and_a_selection_holds_it(page, draw)
        if draw == "canvas":
            _caption_keeps_a_line_as_wide_as_its_text(page)

        # Hovering the newest point (the real pointer) shows its batch: plotly's hover data
        # caught up with the patched points when the pointer entered.
        page.mouse.move(1, 1)
        page.evaluate(JS_KERNEL_RUN, f"send({last + 1})")
        wait_for(lambda: _charts(page)["rates"]["patched"] > drawn["rates"]["patched"], 30, 0.05,
                 text=lambda: f"the next batch was not patched in: {_charts(page)['rates']}")
        page.locator('.workbench-chart[data-chart="rates"]').scroll_into_view_if_needed()
        _hover_newest(page, "rates", last + 1)
        # Plotly draws the chart under the pointer: no picture lies over its hover label.
        assert page.evaluate(JS_SVG_SHOWN, "rates"), "rates: the canvas still shows a picture while hovered"
        last = _a_resting_pointer_costs_no_plotly_draw(page, last + 1, draw)
        last = _axes_move_under_a_resting_pointer(page, last)

        # A HiDPI screen, two device pixels to a CSS pixel: the next batch is drawn at the
        # page's new ratio (the canvas's picture in device pixels, crisp bars snapped to them)
        # and still looks as plotly draws it.
        page.mouse.move(1, 1)
        cdp = page.context.new_cdp_session(page)
        set_device_ratio(page, cdp, 2)
        before = _charts(page)
        last += 2
        _send(page, last, draw)
        drawn = _charts(page)
        for key, chart in drawn.items():
            assert chart["full"] == before[key]["full"], f"{key}: drawn in full at the new ratio: {chart}"
            if draw == "canvas":
                assert chart["canvas"] > before[key]["canvas"], f"{key}: no picture at the new ratio: {chart}"
        _look_as_plotly_draws(page, drawn, "hidpi", cdp)

        if draw == "canvas":
            _drawing_fails(page, last + 1, cdp)


#: The upper end of a chart's batch axis.
JS_X_END = """(key) => document.querySelector(`.workbench-chart[data-chart="${key}"]`)._fullLayout.xaxis.range[1]"""


def _hover_newest(page: Any, key: str, batch: int) -> None:
    """Move the pointer onto the newest point of chart ``key``; wait until its hover shows ``batch``."""
    div = page.locator(f'.workbench-chart[data-chart="{key}"]')
    box = div.bounding_box()
    x, y = page.evaluate(JS_NEWEST_POINT, key)
    page.mouse.move(box["x"] + x, box["y"] + y)
    hover = div.locator(".hoverlayer")
    wait_for(lambda: f"{batch}" in hover.text_content(), 10, 0.1,
             text=lambda: f"hovering {key}'s newest point (batch {batch}) shows {hover.text_content()!r}")


def _a_resting_pointer_costs_no_plotly_draw(page: Any, newest: int, draw: str) -> int:
    """The pointer resting on the *rates* chart (on batch ``newest``): the next batch is
    patched into the chart's SVG, not drawn by plotly (no full draw; no picture over plotly's
    hover label); once the pointer moves, plotly draws the chart from its data once, and
    its hover shows the new batch. Returns the newest batch sent."""
    if page.evaluate(JS_X_END, "rates") < newest + 3:
        # Room on the batch axis first (the pointer away), so that the next batch fits the axes.
        page.mouse.move(1, 1)
        while page.evaluate(JS_X_END, "rates") < newest + 3:
            newest += 1
            _send(page, newest, draw)
        _hover_newest(page, "rates", newest)
    sent = newest + 1
    before, now = _send_rates(page, sent)
    assert now["full"] == before["full"] and now["patched"] == before["patched"] + 1, (
        f"rates: a batch under the resting pointer was not patched without plotly: {before} -> {now}")
    _in_the_svg_then_caught_up(page, sent, before, now, "under the resting pointer")
    return sent


def _axes_move_under_a_resting_pointer(page: Any, newest: int) -> int:
    """The pointer resting on the *rates* chart (on batch ``newest``, plotly caught up): batches
    until one passes the batch axis's room are patched into the SVG, and that one has plotly move
    the axes alone (no full draw, no picture), its points patched into the SVG over them; once the
    pointer moves, plotly draws the chart once and its hover shows that batch. Returns it."""
    end = page.evaluate(JS_X_END, "rates")
    for _ in range(100):
        newest += 1
        before, now = _send_rates(page, newest)
        if page.evaluate(JS_X_END, "rates") != end:
            break
        assert now["pointer"] == before["pointer"] + 1 and now["full"] == before["full"], (
            f"rates: batch {newest} under the resting pointer was not patched into the SVG: {before} -> {now}")
    else:
        raise AssertionError(f"the rates chart's batch axis did not move in 100 batches: it ends at {end}")
    assert now["full"] == before["full"] and now["axis"] == before["axis"] + 1, (
        f"rates: batch {newest} past the axes under the resting pointer was drawn in full: {before} -> {now}")
    assert page.evaluate(JS_X_END, "rates") > newest, "rates: the newest batch lies past the moved axis"
    _in_the_svg_then_caught_up(page, newest, before, now, "past the axes under the resting pointer")
    return newest


def _send_rates(page: Any, batch: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send ``batch``: the *rates* chart's counts before, and once its data holds the batch."""
    before = _charts(page)["rates"]
    page.evaluate(JS_KERNEL_RUN, f"send({batch})")
    wait_for(lambda: _charts(page)["rates"]["x"][0][-1] == batch, 30, 0.05,
             text=lambda: f"batch {batch} not in the rates chart under the pointer: {_charts(page)['rates']}")
    return before, _charts(page)["rates"]


def _in_the_svg_then_caught_up(page: Any, batch: int, before: dict[str, Any], now: dict[str, Any],
                               what: str) -> None:
    """Batch ``batch`` (the counts ``before`` and ``now``) was written into the *rates* chart's SVG
    alone, the whole window in its lines and no picture over plotly's hover label; once the pointer
    moves onto it, plotly draws the chart once and its hover shows the batch."""
    assert now["pointer"] == before["pointer"] + 1 and now["canvas"] == before["canvas"], (
        f"rates: batch {batch} {what} was not written into the SVG alone: {before} -> {now}")
    assert page.evaluate(JS_SVG_SHOWN, "rates"), "rates: a picture covers plotly's hover label under the pointer"
    lines = page.evaluate(JS_SVG_LINE_POINTS, "rates")
    assert len(lines) >= 2 and sum(lines) >= 2 * 60, f"rates: {what} the SVG lines hold {lines} points"
    _hover_newest(page, "rates", batch)
    moved = _charts(page)["rates"]
    assert moved["full"] == now["full"] + 1, f"rates: plotly did not catch up once when the pointer moved: {moved}"


#: A caption of text alone (an entity in its HTML), as a monitor's, and the text it reads.
PLAIN_CAPTION = "batch 7 &middot; input 50.0 rows/s &middot; watermark 2026-01-01 10:00:05 UTC"
PLAIN_TEXT = "batch 7 · input 50.0 rows/s · watermark 2026-01-01 10:00:05 UTC"
#: extensions/src/caption.ts: how long a caption shows as a picture with none after it (ms).
SETTLE_MS = 3000
#: Share of the caption line's pixels allowed to differ between its picture and the page's text
#: (glyph edges anti-aliased differently); the same line a pixel lower differs in 8 %.
CAPTION_SHARE = 0.005
#: The caption line's picture (caption.ts), inside ``.workbench-chart-caption``.
PICTURE = "canvas.workbench-caption-picture"


def _wait_until_settled(caption: Any, text: str) -> None:
    """Wait until the caption line, left alone for ``SETTLE_MS``, holds ``text`` as text, not a picture."""
    wait_for(lambda: caption.locator(PICTURE).count() == 0 and caption.text_content() == text,
             SETTLE_MS / 1000 + 10, 0.1,
             text=lambda: f"the caption left alone was not written as text: {caption.inner_html()!r}")


def _plain_caption_looks_as_the_page_writes_it(page: Any, draw: str) -> None:
    """``canvas``: a caption of text alone is drawn as a picture, its text the picture's
    accessible name; left alone (no caption after it for ``SETTLE_MS``, as when a stream
    stops) it is written as text, which must look as the picture did. ``svg`` (no
    ``OffscreenCanvas``): it is text at once."""
    caption = page.locator(".workbench-chart-caption")
    picture = caption.locator(PICTURE)
    page.evaluate(JS_KERNEL_RUN, f"grid.set_caption({PLAIN_CAPTION!r})")
    if draw == "svg":
        wait_for(lambda: caption.text_content() == PLAIN_TEXT, 30, 0.05,
                 text=lambda: f"the caption reads {caption.inner_html()!r} without OffscreenCanvas")
        assert picture.count() == 0, "a caption picture without OffscreenCanvas"
        return
    wait_for(lambda: picture.count() == 1 and picture.get_attribute("aria-label") == PLAIN_TEXT, 30, 0.05,
             text=lambda: f"the caption is not a picture reading {PLAIN_TEXT!r}: {caption.inner_html()!r}")
    assert picture.get_attribute("role") == "img" and caption.text_content() == "", caption.inner_html()
    drawn = caption.screenshot()
    _wait_until_settled(caption, PLAIN_TEXT)
    written = caption.screenshot()
    share = _differing(drawn, written)
    if share > CAPTION_SHARE:
        (ARTIFACTS / "caption-as-picture.png").write_bytes(drawn)
        (ARTIFACTS / "caption-as-text.png").write_bytes(written)
    assert share <= CAPTION_SHARE, (f"{share:.2%} of the caption picture's pixels differ from the page's text "
                                    f"(at most {CAPTION_SHARE:.2%}; both pictures in {ARTIFACTS})")


#: Count the captions drawn as pictures from now on: a picture put into the caption line, or
#: the one there drawn again (each picture of a new text names it anew, ``aria-label``).
JS_COUNT_PICTURES = """() => {
  const caption = document.querySelector('.workbench-chart-caption');
  window.captionPictures = 0;
  window.captionPictureObserver?.disconnect();
  window.captionPictureObserver = new MutationObserver(records => {
    for (const record of records) {
      window.captionPictures += record.type === 'attributes'
        ? 1 : [...record.addedNodes].filter(node => node.nodeName === 'CANVAS').length;
    }
  });
  window.captionPictureObserver.observe(caption, {childList: true, subtree: true, attributeFilter: ['aria-label']});
}"""


def _caption_under_the_pointer_is_text_and_a_selection_holds_it(page: Any, draw: str) -> None:
    """With the pointer over the caption line, each caption is written as text (``canvas``:
    no picture while the pointer stays), which the reader can select; while a selection
    holds the line, a newer caption waits (the line's ``data-held``) and shows once the
    selection is cleared; with the pointer gone, captions are pictures again."""
    caption = page.locator(".workbench-chart-caption")
    picture = caption.locator(PICTURE)
    captions = [PLAIN_CAPTION.replace("batch 7", f"batch {n}") for n in (201, 202, 203, 204)]
    texts = [html.unescape(text) for text in captions]

    def shown_away_from_the_pointer(index: int) -> None:
        page.mouse.move(1, 1)
        page.evaluate(JS_KERNEL_RUN, f"grid.set_caption({captions[index]!r})")
        if draw == "canvas":
            wait_for(lambda: picture.count() == 1 and picture.get_attribute("aria-label") == texts[index], 30, 0.05,
                     text=lambda: f"the caption is not a picture of {texts[index]!r}: {caption.inner_html()!r}")
        else:
            wait_for(lambda: caption.text_content() == texts[index], 30, 0.05,
                     text=lambda: f"the caption does not read {texts[index]!r}: {caption.inner_html()!r}")

    shown_away_from_the_pointer(0)
    caption.scroll_into_view_if_needed()
    caption.hover()
    page.evaluate(JS_COUNT_PICTURES)
    page.evaluate(JS_KERNEL_RUN, f"grid.set_caption({captions[1]!r})")
    wait_for(lambda: caption.text_content() == texts[1], 30, 0.05,
             text=lambda: f"the caption under the pointer does not read {texts[1]!r}: {caption.inner_html()!r}")
    assert page.evaluate("() => window.captionPictures") == 0, (
        f"a caption was drawn as a picture under the pointer: {caption.inner_html()!r}")

    page.evaluate("() => getSelection().selectAllChildren(document.querySelector('.workbench-chart-caption'))")
    assert page.evaluate("() => getSelection().toString()") == texts[1]
    page.evaluate(JS_KERNEL_RUN, f"grid.set_caption({captions[2]!r})")
    wait_for(lambda: caption.get_attribute("data-held") == "true", 30, 0.05,
             text=lambda: f"the caption sent during a selection was not held: {caption.inner_html()!r}")
    assert caption.text_content() == texts[1], f"the selected caption was rewritten: {caption.inner_html()!r}"
    assert page.evaluate("() => getSelection().toString()") == texts[1], "the selection was lost"
    assert "selection" in (caption.get_attribute("title") or ""), caption.get_attribute("title")
    page.evaluate("() => getSelection().removeAllRanges()")
    wait_for(lambda: caption.text_content() == texts[2] and caption.get_attribute("data-held") is None, 30, 0.05,
             text=lambda: f"the held caption did not show once the selection went: {caption.inner_html()!r}")
    assert caption.get_attribute("title") is None, caption.get_attribute("title")

    shown_away_from_the_pointer(3)  # a picture again with the pointer gone
    page.evaluate("() => window.captionPictureObserver.disconnect()")


#: The grid's view a flex row's item, as wide as its content (as the replay panel's monitor is,
#: or a grid in an HBox).
AS_WIDE_AS_CONTENT = """() => {
  const style = document.createElement('style');
  style.id = 'as-wide-as-content';
  style.textContent = '.jp-OutputArea-output:has(> .workbench-charts) { display: flex; flex-direction: row; }';
  document.head.appendChild(style);
}"""
#: Count the changes of the caption line's children (a picture written as text, or back).
JS_COUNT_SWAPS = """() => {
  const caption = document.querySelector('.workbench-chart-caption');
  window.captionSwaps = 0;
  window.captionSwapObserver = new MutationObserver(records => { window.captionSwaps += records.length; });
  window.captionSwapObserver.observe(caption, {childList: true});
}"""
#: A caption wider than any one chart, as a monitor's with its processing rate.
WIDE_CAPTION = PLAIN_CAPTION.replace("rows/s", "rows/s &middot; processed 196.9 rows/s")


def _caption_keeps_a_line_as_wide_as_its_text(page: Any) -> None:
    """Where the grid's line is as wide as its content and the caption's text is wider than
    the charts, the text sets the line's width: the caption drawn as a picture keeps that
    width and stays a picture (a picture as wide as its line only would narrow the line, and
    the text would no longer fit it: picture and text swapped with every caption), and
    written as text again it keeps that width too."""
    caption = page.locator(".workbench-chart-caption")
    picture = caption.locator(PICTURE)
    text = html.unescape(WIDE_CAPTION)
    page.evaluate(AS_WIDE_AS_CONTENT)
    try:
        # Wider than the line so far: written as HTML, and the line grows to hold it.
        page.evaluate(JS_KERNEL_RUN, f"grid.set_caption({WIDE_CAPTION!r})")
        wait_for(lambda: caption.text_content() == text, 30, 0.05,
                 text=lambda: f"the wide caption is not text: {caption.inner_html()!r}")
        text_width = caption.bounding_box()["width"]
        charts = page.evaluate("() => Math.max(...[...document.querySelectorAll('.workbench-chart')]"
                               ".map(chart => chart.getBoundingClientRect().width))")
        assert text_width > charts + 20, f"the caption's text ({text_width} px) is not wider than a chart ({charts} px)"
        # The same text in other HTML (its characters, not their entities): a new caption for
        # the kernel to send, which fits the line it made.
        page.evaluate(JS_KERNEL_RUN, f"grid.set_caption({text!r})")
        wait_for(lambda: picture.count() == 1 and picture.get_attribute("aria-label") == text, 30, 0.05,
                 text=lambda: f"the caption is not a picture: {caption.inner_html()!r}")
        page.evaluate(JS_COUNT_SWAPS)
        # A picture that narrows its line is text again a frame later; one that keeps it stays
        # till SETTLE_MS (3 s after it was drawn): half a second in between says which.
        page.wait_for_timeout(500)
        swaps = page.evaluate("() => { window.captionSwapObserver.disconnect(); return window.captionSwaps; }")
        assert swaps == 0 and picture.count() == 1, (
            f"the caption's picture was swapped {swaps} times in 0.5 s with no caption after it: {caption.inner_html()!r}")
        drawn_width = caption.bounding_box()["width"]
        assert abs(drawn_width - text_width) <= 1, f"the line {text_width} px wide as text, {drawn_width} as a picture"
        _wait_until_settled(caption, text)
        assert abs(caption.bounding_box()["width"] - text_width) <= 1, "the line changed its width as text again"
    finally:
        page.evaluate("() => document.getElementById('as-wide-as-content').remove()")


def _drawing_fails(page: Any, batch: int, cdp: Any) -> None:
    """Drawing a picture fails from now on (the browser's canvas gives out) while batch
    ``batch`` is drawn: the page says so once, every canvas goes, and each chart's SVG shows
    that batch's points at once, as plotly draws them (under a picture it held what plotly
    last drew there, the lines through their two ends after an axis move); later batches
    are written into the SVG."""
    warnings: list[str] = []
    page.on("console", lambda message: warnings.append(message.text) if message.type == "warning" else None)
    page.evaluate("() => { OffscreenCanvas.prototype.transferToImageBitmap = () => {"
                  " throw new Error('no picture'); }; }")
    for sent in (batch, batch + 1):
        before = _charts(page)
        _send(page, sent, "svg")  # pictures fail: the page writes the SVG
        drawn = _charts(page)
        assert page.locator("canvas.workbench-trace-canvas").count() == 0, "a canvas stayed after drawing failed"
        for key, chart in drawn.items():
            assert (chart["full"], chart["canvas"]) == (before[key]["full"], before[key]["canvas"]) and (
                chart["patched"] > before[key]["patched"]), f"{key}: batch {sent} not patched into the SVG: {chart}"
            assert page.evaluate(JS_SVG_SHOWN, key), f"{key}: its SVG is still hidden after drawing failed"
        lines = page.evaluate(JS_SVG_LINE_POINTS, "rates")
        assert len(lines) >= 2 and sum(lines) >= 2 * 60, f"rates: after batch {sent} the SVG lines hold {lines} points"
        _look_as_plotly_draws(page, drawn, f"failed-{sent - batch}", cdp)
        page.mouse.move(1, 1)
    failed = [text for text in warnings if "cannot be drawn as pictures" in text]
    assert len(failed) == 1, f"the page warned {len(failed)} times that pictures failed: {warnings}"
