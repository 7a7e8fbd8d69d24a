"""The chart widget's kernel side and the monitor's points: pure logic, no Spark, no browser.

What the page draws is checked in a real browser (tests/test_browser.py); here: what the
kernel keeps and sends, message by message.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from workbench.progress import BatchProgress, ProgressHistory
from workbench.views.charts import EMPTY_MESSAGE, ChartGrid
from workbench.views.monitor import StreamMonitor
from workbench.views.monitor_charts import chart_points, chart_specs, operator_traces
from tests.helpers import wait_for


def grid_with_outbox(window: int = 3) -> tuple[ChartGrid, list[dict[str, Any]]]:
    grid = ChartGrid([
        {"key": "a", "layout": {"title": {"text": "A"}}, "traces": [{"type": "scatter", "name": "one"},
                                                                   {"type": "scatter", "name": "two"}]},
        {"key": "b", "layout": {}, "traces": []},
    ], window=window)
    sent: list[dict[str, Any]] = []
    grid.send = sent.append  # what would go to the page
    return grid, sent


def test_extend_sends_only_new_points_and_keeps_a_window():
    grid, sent = grid_with_outbox(window=3)
    grid.extend({"a": ([0, 1], [[1, 2], [10, 20]])})
    grid.extend({"a": ([2, 3], [[3, 4], [None, 40]])})
    assert sent[-1] == {"kind": "data", "reset": False, "charts": {"a": {"x": [2, 3], "y": [[3, 4], [None, 40]]}}}
    assert grid.data("a") == ([1, 2, 3], [[2, 3, 4], [20, None, 40]])


def test_a_page_that_loads_gets_the_whole_window():
    grid, sent = grid_with_outbox(window=3)
    grid.extend({"a": ([0, 1, 2, 3], [[1, 2, 3, 4], [5, 6, 7, 8]])})
    grid._on_page_message(grid, {"kind": "ready"}, [])
    assert sent[-1]["reset"] is True
    assert sent[-1]["charts"]["a"] == {"x": [1, 2, 3], "y": [[2, 3, 4], [6, 7, 8]]}
    assert sent[-1]["charts"]["b"] == {"x": [], "y": []}


def test_a_grid_nobody_sees_sends_nothing_and_catches_up_once_seen():
    grid, sent = grid_with_outbox(window=3)
    woken = []
    grid.on_seen(lambda: woken.append(True))
    assert grid.seen  # no view has said anything (an older front end): send as always
    grid._on_page_message(grid, {"kind": "seen", "view": "v1", "visible": False}, [])
    grid._on_page_message(grid, {"kind": "seen", "view": "v2", "visible": False}, [])
    assert not grid.seen
    sent.clear()
    grid.extend({"a": ([0, 1], [[1, 2], [3, 4]])})
    grid.extend({"a": ([2, 3], [[5, 6], [7, 8]])})
    assert sent == [] and grid.data("a") == ([1, 2, 3], [[2, 5, 6], [4, 7, 8]])  # kept, not sent
    grid._on_page_message(grid, {"kind": "seen", "view": "v2", "visible": True}, [])
    assert grid.seen and woken == [True]
    assert sent == [{"kind": "data", "reset": True, "caption": "",
                     "charts": {"a": {"x": [1, 2, 3], "y": [[2, 5, 6], [4, 7, 8]]}, "b": {"x": [], "y": []}}}]
    grid.extend({"a": ([4], [[9], [10]])})  # seen: new points go at once
    assert sent[-1]["reset"] is False and len(sent) == 2
    # The view that could be seen goes (its output cleared): the other one is hidden.
    grid._on_page_message(grid, {"kind": "seen", "view": "v2", "visible": False, "gone": True}, [])
    assert not grid.seen
    grid._on_page_message(grid, {"kind": "seen", "view": "v1", "visible": False, "gone": True}, [])
    assert not grid.seen  # nobody left to send to
    grid.extend({"a": ([5], [[1], [2]])})
    assert len(sent) == 2 and woken == [True]


def test_the_kernel_forgets_each_view_that_goes():
    # A monitor's output re-rendered (a cell re-run, a page reloaded) again and again: each view
    # says it goes, and the kernel holds only the views that live, however many came and went.
    grid, sent = grid_with_outbox()
    for view in range(10):
        grid._on_page_message(grid, {"kind": "seen", "view": f"v{view}", "visible": True}, [])
        assert grid.seen
        grid._on_page_message(grid, {"kind": "seen", "view": f"v{view}", "visible": False}, [])
        grid._on_page_message(grid, {"kind": "seen", "view": f"v{view}", "visible": False, "gone": True}, [])
        assert not grid.seen  # nobody left to send to
    assert grid._views == {}
    grid._on_page_message(grid, {"kind": "seen", "view": "last", "visible": True}, [])
    assert grid.seen and grid._views == {"last": True}


def test_the_caption_travels_with_the_points_only_when_it_changed():
    grid, sent = grid_with_outbox(window=3)
    grid.extend({"a": ([0], [[1], [2]])}, caption="batch 0")
    grid.extend({"a": ([1], [[3], [4]])}, caption="batch 0")  # unchanged: not sent again
    grid.extend({"a": ([2], [[5], [6]])})  # None: unchanged too
    assert [m.get("caption") for m in sent] == ["batch 0", None, None]
    assert all(m["charts"] for m in sent)  # one message per update, points and caption together
    grid.set_caption("stopped at batch 2")  # the caption alone
    assert sent[-1] == {"kind": "data", "reset": False, "charts": {}, "caption": "stopped at batch 2"}
    count = len(sent)
    grid.set_caption("stopped at batch 2")
    assert len(sent) == count and grid.caption == "stopped at batch 2"
    # A view that loads, and one shown again after nobody saw the grid, get the newest caption.
    grid._on_page_message(grid, {"kind": "ready"}, [])
    assert sent[-1]["reset"] and sent[-1]["caption"] == "stopped at batch 2"
    grid._on_page_message(grid, {"kind": "seen", "view": "v1", "visible": False}, [])
    sent.clear()
    grid.extend({"a": ([3], [[7], [8]])}, caption="batch 3")
    assert sent == []
    grid._on_page_message(grid, {"kind": "seen", "view": "v1", "visible": True}, [])
    assert sent[-1]["reset"] and sent[-1]["caption"] == "batch 3" and sent[-1]["charts"]["a"]["x"] == [1, 2, 3]


def test_traces_added_later_have_no_earlier_values_and_overlays_keep_live_points():
    grid, sent = grid_with_outbox(window=5)
    grid.extend({"b": ([0, 1], [])})
    grid.add_traces("b", [{"type": "scatter", "name": "late"}], title="B (1)")
    assert grid.charts[1]["layout"]["title"]["text"] == "B (1)"
    grid.extend({"b": ([2], [[7]])})
    assert grid.data("b") == ([0, 1, 2], [[None, None, 7]])
    grid.set_overlays("b", [{"type": "scatter", "name": "marks", "x": [1], "y": [9]}])
    grid.set_overlays("b", [{"type": "scatter", "name": "marks", "x": [2], "y": [8]}])
    figure = grid.figure("b")
    assert [t.name for t in figure.data] == ["late", "marks"]
    assert list(figure.data[0].y) == [None, None, 7] and list(figure.data[1].x) == [2]
    with pytest.raises(ValueError, match="overlay trace needs x and y"):
        grid.set_overlays("b", [{"type": "scatter", "name": "no data"}])
    with pytest.raises(ValueError, match="has 1 traces, got values for 2"):
        grid.extend({"b": ([3], [[1], [2]])})


def test_an_empty_chart_says_what_it_waits_for():
    grid, _ = grid_with_outbox()
    figure = grid.figure("a")
    assert [a.text for a in figure.layout.annotations] == [EMPTY_MESSAGE]
    grid.extend({"a": ([0], [[1], [2]])})
    assert not grid.figure("a").layout.annotations


def test_a_figure_has_the_pages_colours_unless_its_spec_names_a_template():
    # The page draws a spec without a template in plotly.js's colours; a saved HTML or a
    # picture of it should show the same ones (plotly.py's templates have others).
    from workbench.views.pictures import PLOTLY_COLOURS

    own = {"layout": {"colorway": ["#123456"]}}
    grid = ChartGrid([{"key": "plain", "layout": {}, "traces": [{"type": "scatter"}]},
                      {"key": "templated", "layout": {"template": own}, "traces": [{"type": "scatter"}]}])
    plain, templated = grid.figure("plain").layout, grid.figure("templated").layout
    # plotly.js's own default colours, as the plotly.js the page loads has them.
    defaults = re.search(r'\.defaults=(\[[^\]]*\]);\w+\.defaultLine="#444"', PLOTLY_MIN_JS.read_text())
    assert defaults, "plotly.js's default colours not found in its bundle"
    assert list(plain.colorway) == list(PLOTLY_COLOURS) == json.loads(defaults.group(1))
    assert templated.colorway is None and list(templated.template.layout.colorway) == ["#123456"]
    assert "template" not in grid.drawn_spec("plain")["layout"]  # what the page gets


def test_chart_keys_must_be_unique():
    with pytest.raises(ValueError, match="chart keys must be unique"):
        ChartGrid([{"key": "a", "layout": {}, "traces": []}, {"key": "a", "layout": {}, "traces": []}])


def record(batch_id: int, operators: int = 2) -> BatchProgress:
    return BatchProgress.from_json({
        "batchId": batch_id, "numInputRows": 100, "inputRowsPerSecond": float("nan"),
        "processedRowsPerSecond": 250.0,
        "durationMs": {key: 5 for key in ("addBatch", "getBatch", "latestOffset", "queryPlanning",
                                          "walCommit", "commitOffsets")} | {"triggerExecution": 40},
        "eventTime": {"min": "2024-01-01T12:00:00.000Z", "max": "2024-01-01T12:00:09.500Z",
                      "watermark": "1970-01-01T00:00:00.000Z" if batch_id == 0 else "2024-01-01T11:59:59.500Z"},
        "stateOperators": [{"operatorName": f"op{i}", "numRowsTotal": 10 * (i + 1), "memoryUsedBytes": 2048}
                           for i in range(operators)],
    })


def test_monitor_points_match_the_specs_and_stay_small():
    specs = {spec["key"]: spec for spec in chart_specs()}
    records = [record(0), record(1)]
    points = chart_points(records, operators=2)
    state_traces = operator_traces(["op0", "op1"])
    for key, (x, ys) in points.items():
        assert x == [0, 1]
        expected = len(state_traces) if key == "state" else len(specs[key]["traces"])
        assert len(ys) == expected and all(len(y) == 2 for y in ys), key
    # Epoch 0 means "no watermark yet": not drawn; NaN rates are not JSON: null.
    assert points["watermark"][1][2] == [None, "2024-01-01 11:59:59.500000"]
    assert points["watermark"][1][3] == [None, 10.0]
    assert points["rates"][1] == [[None, None], [250.0, 250.0]]
    assert points["state"][1][0] == [10, 10] and points["state"][1][5] == [20, 20]
    assert [t["name"] for t in state_traces[:2]] == ["0:op0 total", "0:op0 updated"]
    # One batch's update, as sent: far below the page's per-update budget (20 KB).
    grid = ChartGrid(chart_specs())
    grid.add_traces("state", state_traces)
    sent: list[dict[str, Any]] = []
    grid.send = sent.append
    grid.extend(chart_points([record(2)], operators=2))
    assert len(json.dumps(sent[-1])) < 2_000


class _Stream:
    """What a monitor reads of a stream (``workbench.views.protocol.MonitoredStream``), without Spark."""

    name, sink, output_mode, started_at, plan, status, error = "demo", "console", "append", None, None, "active", None

    def __init__(self, history: ProgressHistory) -> None:
        self.progress = history

    def stop(self) -> None:
        pass

    def on_finished(self, callback: Any) -> None:
        pass


def test_a_redraw_while_a_batch_is_on_its_way_draws_that_batch_once():
    # A batch is in the history, but the monitor's listener has yet to hear of it (another
    # listener runs first) when the monitor redraws its whole window (refresh(), Resume, a
    # replay's step): the batch is drawn once, not twice (a point twice, a bar twice as high).
    history = ProgressHistory()
    history.extend([record(0), record(1)])
    told, release = threading.Event(), threading.Event()
    history.subscribe(lambda added: (told.set(), release.wait(30)))  # before the monitor's listener
    monitor = StreamMonitor(_Stream(history), interval=3600)
    sent: list[dict[str, Any]] = []
    monitor.charts.send = lambda content, buffers=None: sent.append(content)  # the page's messages
    try:
        adding = threading.Thread(target=history.extend, args=([record(2)],))
        adding.start()
        assert told.wait(30), "batch 2 never reached the history's listeners"
        monitor.refresh()
        release.set()
        adding.join(30)
        # The monitor's thread sends what its listener queued: batch 2, appended.
        wait_for(lambda: any(not m["reset"] and 2 in m["charts"].get("latency", {}).get("x", [])
                             for m in sent if m.get("kind") == "data"), timeout=30, message="batch 2 appended")
    finally:
        release.set()
        monitor.close()
    page: list[Any] = []  # the latency chart's batches in the page: each reset, then what is appended
    for message in (m for m in sent if m.get("kind") == "data" and "latency" in m["charts"]):
        page = ([] if message["reset"] else page) + message["charts"]["latency"]["x"]
    assert page == [0, 1, 2]
    assert monitor.charts.data("latency")[0] == [0, 1, 2]
    assert list(monitor.figures["latency"].data[0].x) == [0, 1, 2]


# ---------------------------------------------------------------------------------------------
# The widget's code: a small anywidget loader; the chart code and plotly.js once per page
# ---------------------------------------------------------------------------------------------

import gzip  # noqa: E402
from pathlib import Path  # noqa: E402

from workbench import _labext  # noqa: E402
from workbench.views import widget_code  # noqa: E402

PLOTLY_MIN_JS = Path(__import__("plotly").__file__).parent / "package_data" / "plotly.min.js"


def test_the_built_widget_code_matches_its_sources():
    recorded = _labext.recorded_hash(widget_code.STATIC)
    assert recorded is not None, f"no built widget code in {widget_code.STATIC}: {_labext.REBUILD_HINT}"
    assert recorded == _labext.source_hash(_labext.SOURCE_DIR), (
        f"{widget_code.STATIC} was built from other sources than extensions/ holds: {_labext.REBUILD_HINT}")


def test_each_widget_carries_a_small_loader_not_plotly():
    grid, _ = grid_with_outbox()
    state = json.dumps(grid.get_state())
    assert grid.get_state()["_model_module"] == "anywidget"
    assert len(state) < 10_000, f"a chart grid's state is {len(state)} bytes"
    assert "plotly.js v" not in grid._esm and "Plotly" not in grid._esm
    assert "spark-streaming-workbench.widgets" in grid._esm  # it looks for the extension's code first


def test_a_page_without_the_extension_gets_the_chart_code_and_plotly_once_it_asks():
    grid = ChartGrid([{"key": "a", "layout": {}, "traces": [{"type": "scatter"}]}])
    sent: list[tuple[dict[str, Any], Any]] = []
    grid.send = lambda content, buffers=None: sent.append((content, buffers))
    grid._on_page_message(grid, {"kind": "code"}, [])
    (content, buffers), = sent
    assert content == {"kind": "code", "files": ["widgets.js", "plotly.min.js.gz"]}
    module, plotly_gz = buffers
    assert b"export{" in module and b"makeWidgets" in module and b"plotly.js v" not in module
    assert gzip.decompress(plotly_gz) == PLOTLY_MIN_JS.read_bytes()  # plotly.py's own copy
    assert len(plotly_gz) < 2_000_000, f"plotly.js compressed to {len(plotly_gz)} bytes"


def test_an_unbuilt_checkout_says_how_to_build(monkeypatch, tmp_path):
    monkeypatch.setattr(widget_code, "STATIC", tmp_path)
    text = widget_code.esm("chartgrid.js")
    assert text.startswith("export default") and "was not built" in text and "npm run build" in text
