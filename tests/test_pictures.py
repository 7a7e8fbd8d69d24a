"""Readable after the kernel is gone: the pictures and text a monitor's output gains.

The picture is drawn from the chart grid's specs and points (pure, no Spark); the monitor's
display output is checked on a real IPython shell following a real Spark stream, with the
shell's display messages recorded.
"""

from __future__ import annotations

import base64
import io
from contextlib import contextmanager

import numpy as np
import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from pyspark.sql import functions as F

from workbench.progress import BatchProgress
from workbench.views.charts import ChartGrid
from workbench.views.monitor_charts import chart_points, chart_specs, operator_traces
from workbench.views.pictures import figures_picture, grid_picture
from workbench.views.static_output import WIDGET_VIEW
from tests.helpers import wait_for

WATERMARK_RED = (0xD6, 0x27, 0x28)


def pixels(png: bytes) -> np.ndarray:
    """The PNG as an RGB array (rows, columns, 3) of 0-255 values."""
    from matplotlib.image import imread

    return (imread(io.BytesIO(png), format="png")[:, :, :3] * 255).round().astype(int)


def share_of(region: np.ndarray, colour: tuple[int, int, int], tolerance: int = 12) -> float:
    """The fraction of a region's pixels within ``tolerance`` of ``colour``."""
    return float((np.abs(region - np.array(colour)).max(axis=2) <= tolerance).mean())


def record(batch: int) -> BatchProgress:
    watermark = "1970-01-01T00:00:00.000Z" if batch == 0 else f"2024-01-01T00:00:{batch - 1:02d}.000Z"
    return BatchProgress.from_json({
        "batchId": batch, "numInputRows": 5, "inputRowsPerSecond": 5.0, "processedRowsPerSecond": 40.0 + batch,
        "durationMs": {"addBatch": 30, "getBatch": 5, "queryPlanning": 10, "triggerExecution": 60},
        "eventTime": {"min": f"2024-01-01T00:00:{batch:02d}.000Z", "max": f"2024-01-01T00:00:{batch:02d}.800Z",
                      "watermark": watermark},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 2 * batch, "memoryUsedBytes": 90_000}],
    })


def monitor_grid(batches: int) -> ChartGrid:
    grid = ChartGrid(chart_specs(), window=60)
    grid.add_traces("state", operator_traces(["stateStoreSave"]))
    grid.reset(chart_points([record(b) for b in range(batches)], 1))
    return grid


def test_picture_draws_the_monitors_four_charts_with_their_colours():
    png = grid_picture(monitor_grid(30))
    image = pixels(png)
    # Two charts per row, 560 x 320 pixels each, as the live grid draws them.
    assert image.shape == (640, 1120, 3)
    half_h, half_w = image.shape[0] // 2, image.shape[1] // 2
    watermark, state = image[:half_h, :half_w], image[:half_h, half_w:]
    latency, rates = image[half_h:, :half_w], image[half_h:, half_w:]
    # The watermark line is red, as in the live chart (so are queryPlanning's bars: plotly.js's
    # fourth colour), and the rates chart has none.
    assert share_of(watermark, WATERMARK_RED) > 0.001
    assert share_of(rates, WATERMARK_RED) == 0.0
    # The latency bars stack in plotly.js's colours, as the page draws them: addBatch (#1f77b4)
    # is the first trace (tests/saved_pages.py checks them against a live page's).
    assert share_of(latency, (0x1F, 0x77, 0xB4)) > 0.02
    # Processed rows/s is the second trace: plotly.js's second colour (#ff7f0e).
    assert share_of(rates, (0xFF, 0x7F, 0x0E)) > 0.001
    assert share_of(state, (0x1F, 0x77, 0xB4)) > 0.001
    assert 20_000 < len(png) < 200_000


def test_picture_of_charts_without_points_shows_no_traces():
    empty = pixels(grid_picture(ChartGrid(chart_specs())))
    assert share_of(empty, WATERMARK_RED) == 0.0
    assert share_of(empty, (0x1F, 0x77, 0xB4)) == 0.0


def test_static_figures_with_subplots_and_dates_are_drawn():
    spec = {"layout": {"height": 400, "title": {"text": "comparison"},
                       "yaxis": {"domain": [0.55, 1.0]}, "yaxis2": {"domain": [0.0, 0.45]},
                       "xaxis2": {"title": {"text": "batch"}}},
            "traces": [{"type": "scatter", "x": [0, 1, 2, 3], "y": ["2024-01-01T00:00:00", "2024-01-01T00:00:30", "2024-01-01T00:01:00", None],
                        "line": {"color": "#d62728"}},
                       {"type": "scatter", "x": [0, 1, 2], "y": [1, 2, 3], "yaxis": "y2", "xaxis": "x2"}]}
    image = pixels(figures_picture([spec]))
    assert image.shape == (400, 560, 3)
    assert share_of(image[:200], WATERMARK_RED) > 0.001 and share_of(image[200:], WATERMARK_RED) == 0.0
    with pytest.raises(ValueError, match="columns must be a positive whole number, got 0"):
        figures_picture([spec], columns=0)


def test_a_time_axis_of_one_time_spans_a_minute_around_it():
    # Two runs with one watermark: matplotlib widened the axis by years, every tick "00:00:00".
    from matplotlib.dates import date2num
    from matplotlib.figure import Figure

    from workbench.views.pictures import _draw_chart

    figure = Figure()
    spec = {"layout": {"yaxis": {"title": {"text": "watermark"}}},
            "traces": [{"type": "scatter", "x": [0, 1], "y": ["2024-01-01T12:05:00"] * 2},
                       {"type": "scatter", "x": [0, 1], "y": ["2024-01-01T12:05:00"] * 2}]}
    _draw_chart(figure, spec, (0, 0, 1, 1), (560, 300))
    low, high = figure.axes[0].get_ylim()
    middle = date2num(np.datetime64("2024-01-01T12:05:00"))
    assert np.isclose(low, middle - 30 / 86_400) and np.isclose(high, middle + 30 / 86_400)


def test_a_line_that_connects_its_gaps_is_drawn_across_them():
    # The event-time band's edges connect over no-data batches in the live chart: so in the picture.
    def middle_is_red(connect: bool) -> bool:
        trace = {"type": "scatter", "x": [0, 1, 2, 3, 4], "y": [1, 1, None, 1, 1], "mode": "lines",
                 "line": {"color": "#d62728", "width": 6}, "connectgaps": connect}
        image = pixels(figures_picture([{"layout": {}, "traces": [trace]}]))
        # Batch 2 is in the middle of the plot area: look at the columns around it.
        middle = image.shape[1] // 2
        return share_of(image[:, middle - 3:middle + 3], WATERMARK_RED) > 0.001

    assert middle_is_red(True) and not middle_is_red(False)


def drawn(draw, monkeypatch):
    """The matplotlib figure a picture was drawn on (``draw()`` draws one), after it was saved.

    Its texts, tick labels, lines and legends are what a reader of the PNG sees.
    """
    from workbench.views import pictures

    figures, chart = [], pictures._draw_chart

    def recording(figure, *args, **kwargs):
        figures.append(figure)
        return chart(figure, *args, **kwargs)

    monkeypatch.setattr(pictures, "_draw_chart", recording)
    png = draw()
    return figures[0], png


def replay_record(batch: int, minute: int, operators=("stateStoreSave",), watermark: bool = True) -> BatchProgress:
    """A replayed batch (a trigger-once run: Spark's input rate 0) with event times at 12:``minute``."""
    data = {"batchId": batch, "numInputRows": 3, "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 30.0,
            "durationMs": {"addBatch": 30, "triggerExecution": 60},
            "stateOperators": [{"operatorName": name, "numRowsTotal": index + batch, "numRowsUpdated": 1,
                                "numRowsRemoved": 0, "numRowsDroppedByWatermark": 0, "memoryUsedBytes": 90_000 + index}
                               for index, name in enumerate(operators)]}
    if watermark:
        day = "2024-01-01T12"
        data["eventTime"] = {"min": f"{day}:{minute:02d}:00.000Z", "max": f"{day}:{minute + 2:02d}:00.000Z",
                             "watermark": f"{day}:{max(0, minute - 5):02d}:00.000Z"}
    return BatchProgress.from_json(data)


def replay_grid(records: list[BatchProgress], operators=("stateStoreSave",)) -> ChartGrid:
    grid = ChartGrid(chart_specs(), window=60)
    if operators:
        grid.add_traces("state", operator_traces(list(operators)))
    grid.reset(chart_points(records, len(operators)))
    return grid


def shown_ticks(ax) -> list[str]:
    """The y tick labels a reader sees: those inside the axis's range."""
    low, high = ax.get_ylim()
    return [label.get_text() for label, value in zip(ax.get_yticklabels(), ax.get_yticks()) if low <= value <= high]


def test_a_time_axis_is_labelled_at_round_times(monkeypatch):
    # DateFormatter over matplotlib's float ticks labelled evenly spaced days: 12:07:12, 12:14:24
    # (notebooks 01, 04, 08) or 23:59:58, 00:00:00, 00:00:01, 00:00:03 (notebook 00).
    grid = replay_grid([replay_record(b, 4 * b) for b in range(6)])  # event times 12:00 to 12:22
    figure, _ = drawn(lambda: grid_picture(grid), monkeypatch)
    labels = shown_ticks(figure.axes[0])  # the watermark chart's time axis
    assert "12:10:00" in labels and len(labels) >= 3, labels
    assert all(label.endswith(":00") and int(label[3:5]) % 5 == 0 for label in labels), labels

    seconds = ChartGrid(chart_specs(), window=60)  # the quickstart's rate source: a second a batch
    seconds.reset(chart_points([record(b) for b in range(6)], 0))
    figure, _ = drawn(lambda: grid_picture(seconds), monkeypatch)
    labels = shown_ticks(figure.axes[0])
    assert "00:00:02" in labels and len(labels) == len(set(labels)) >= 3, labels
    assert all(int(label[-2:]) % 2 == 0 for label in labels), labels


def test_a_failed_streams_picture_shows_its_header_with_status_and_error(monkeypatch):
    # Viewers without widgets show only the PNG: the header (status in colour, the error, "Why
    # no output?") was missing, so a failed stream's picture did not say it failed.
    from types import SimpleNamespace

    from workbench.progress.diagnosis import OutputSummary
    from workbench.views.monitor_header import diagnosis_html, summary_text

    records = [replay_record(0, 0, operators=())]
    error = "ValueError: could not convert string to float: 'n/a'"
    header = summary_text(SimpleNamespace(name="priced", sink="memory"), "failed", error,
                          OutputSummary().add(records), records[-1])
    note = diagnosis_html("No input has arrived.")
    figure, png = drawn(lambda: grid_picture(replay_grid(records, ()), header=header, note=note), monkeypatch)
    texts = {text.get_text(): text.get_color() for text in figure.texts}
    assert texts["failed"] == "#d62728", texts  # red, as in the live header
    assert texts[f"error: {error}"] == "#d62728", texts
    assert "Why no output? No input has arrived." in texts
    assert any(text.startswith("Stream monitor: priced (memory sink)") for text in texts), texts
    image = pixels(png)
    assert image.shape[0] > 640 and share_of(image[:60], WATERMARK_RED) > 0.001  # the header's red, over the charts
    # An error too long for the picture is wrapped and cut, never drawn past its edge.
    long = summary_text(SimpleNamespace(name="priced", sink="memory"), "failed", "ValueError: " + "n/a " * 400,
                        OutputSummary().add(records), records[-1])
    figure, _ = drawn(lambda: grid_picture(replay_grid(records, ()), header=long), monkeypatch)
    renderer = figure.canvas.get_renderer()
    errors = [text for text in figure.texts if text.get_color() == "#d62728" and text.get_text() != "failed"]
    assert len(errors) == 2 and errors[-1].get_text().endswith("…")
    assert all(text.get_window_extent(renderer).x1 <= figure.bbox.width for text in errors)


def test_state_rows_of_several_operators_have_a_colour_each_and_a_legend_inside_the_chart(monkeypatch):
    # Notebook 05: four operators' traces took plotly's colours by index, so A and C were both
    # blue, B and D both brown; the legend ran past the chart, under the neighbour's tick labels.
    operators = ("dedupe", "dedupe", "dedupeWithinWatermark", "dedupe")
    grid = replay_grid([replay_record(b, 4 * b, operators) for b in range(6)], operators)
    figure, _ = drawn(lambda: grid_picture(grid), monkeypatch)
    legend = next(legend for legend in figure.legends if legend.get_texts()[0].get_text().startswith("0:"))
    keys = {text.get_text(): handle.get_color() for text, handle in zip(legend.get_texts(), legend.legend_handles)}
    operator_colours = [keys.get(f"{index}:{name}") for index, name in enumerate(operators)]
    assert None not in operator_colours and len(set(operator_colours)) == 4, keys
    rows = figure.axes[2]  # the State chart's rows axis (after the watermark chart's two)
    assert rows.get_ylabel() == "rows"
    lines = rows.get_lines()
    assert len(lines) == 16 and {line.get_color() for line in lines} == set(operator_colours)
    assert len({line.get_linestyle() for line in lines}) == 4  # a line style per metric
    renderer = figure.canvas.get_renderer()
    for legend in figure.legends:
        box = legend.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width, "a legend is cut off"
        assert box.x1 - box.x0 <= figure.bbox.width / 2, "a legend wider than its chart"
        labels = [label for ax in figure.axes for label in ax.get_xticklabels() + ax.get_yticklabels()
                  if label.get_visible() and label.get_text()]
        assert not any(box.overlaps(label.get_window_extent(renderer)) for label in labels), "a tick label on a legend"


def test_a_query_without_a_watermark_says_so_in_its_watermark_chart(monkeypatch):
    # Notebooks 04 and 08: batches without event times drew axes of nothing (x -0.045..0.045, y
    # 23:02:24..00:57:36); the page shows the chart's message, as the State chart's "No state".
    from workbench.views.monitor_charts import NO_WATERMARK

    grid = replay_grid([replay_record(b, 0, operators=(), watermark=False) for b in range(2)], ())
    grid.set_empty_message("watermark", NO_WATERMARK)  # as the monitor does
    figure, _ = drawn(lambda: grid_picture(grid), monkeypatch)
    assert NO_WATERMARK in [text.get_text() for text in figure.texts]
    # No axes in the watermark chart's cell (the top left quarter): only latency and rates have any.
    assert all(ax.get_position().y1 <= 0.5 for ax in figure.axes), [ax.get_position() for ax in figure.axes]


# -- the monitor's display output on a real shell -------------------------------------------------


@pytest.fixture
def shell():
    """A real IPython shell whose display messages are recorded (and nothing else changed)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    saved = ip.display_pub
    ip.display_pub = CapturingDisplayPublisher()
    # Outputs shown by earlier tests on this shared shell still publish after each cell
    # (they wait for a page that never comes): set them aside while this test runs.
    events = ("pre_execute", "post_execute")
    callbacks = {event: list(ip.events.callbacks[event]) for event in events}
    for event in events:
        ip.events.callbacks[event].clear()
    try:
        yield ip
    finally:
        ip.display_pub = saved
        for event in events:
            ip.events.callbacks[event][:] = callbacks[event]


@pytest.mark.spark
def test_monitor_output_gains_picture_and_text_when_its_stream_stops(env, shell, rate_stream):
    events = (rate_stream(rows_per_batch=4, start_ms=1_704_067_200_000)
              .withWatermark("timestamp", "2 seconds").select("value", "timestamp"))
    handle = env.start(events, "numbers")
    monitor = handle.monitor()
    try:
        shell.user_ns["monitor"] = monitor
        shell.run_cell("monitor")
        outputs = shell.display_pub.outputs
        assert len(outputs) == 1
        first = outputs[0]
        display_id = first["transient"]["display_id"]
        assert first["data"][WIDGET_VIEW]["model_id"] == monitor.model_id
        assert first["data"]["text/plain"].startswith("Stream monitor: numbers (memory sink), active")
        assert "image/png" not in first["data"]

        wait_for(lambda: handle.progress.total >= 3, timeout=90, message="3 batches")
        shell.run_cell("pass")  # still running: nothing published after the cell
        assert len(outputs) == 1

        handle.stop()
        shell.run_cell("pass")  # the cell after the stop publishes the final picture
        updates = [o for o in outputs if o["update"]]
        assert updates and {o["transient"]["display_id"] for o in updates} == {display_id}
        final = updates[-1]["data"]
        # No page ever loaded the widget here (as under nbconvert --execute): the picture and
        # the text stand in for it.
        assert WIDGET_VIEW not in final
        png = base64.b64decode(final["image/png"])
        assert png == monitor.picture
        image = pixels(png)  # the watermark line, red, in the watermark chart; none in the rates chart's lines
        assert share_of(image[:320, :560], WATERMARK_RED) > 0.0001 and share_of(image[320:, 560:], WATERMARK_RED) == 0
        text = final["text/plain"]
        batches = handle.progress.total
        last = handle.progress.last()
        assert text.splitlines()[0] == "Stream monitor: numbers (memory sink), stopped"
        assert f"{batches} batches (last {last.batch_id})" in text
        assert f"{4 * batches} rows in" in text
        assert f"last watermark {last.known_watermark:%Y-%m-%d %H:%M:%S} UTC" in text
        assert "<StreamMonitor" not in text

        # Later cells publish nothing more; snapshot() draws again into the same output.
        count = len(outputs)
        shell.run_cell("pass")
        assert len(outputs) == count
        assert monitor.snapshot() == monitor.picture
        assert outputs[-1]["update"] and outputs[-1]["transient"]["display_id"] == display_id
    finally:
        monitor.close()


@pytest.mark.spark
def test_monitor_text_of_a_stream_without_batches_or_watermark(env, shell, rate_stream):
    handle = env.start(rate_stream(rows_per_batch=2).select(F.col("value")), "plain")
    monitor = handle.monitor()
    try:
        wait_for(lambda: handle.progress.total >= 1, timeout=90, message="a batch")
        handle.stop()
        wait_for(lambda: not monitor.running, message="the monitor to finish")
        lines = monitor.summary().splitlines()
        assert lines[0] == "Stream monitor: plain (memory sink), stopped"
        assert lines[1].endswith("rows out, last watermark none")
    finally:
        monitor.close()


@contextmanager
def a_shown_panel(shell):
    """The guide's word count in a replay panel shown by ``shell``, closed at the end.

    Yields the panel, the shell's outputs, and a function giving the panel output's updates so far.
    """
    import workbench

    panel = workbench.replay_panel(workbench.scenarios.guide_word_count())
    try:
        shell.user_ns["panel"] = panel
        shell.run_cell("panel")
        outputs = shell.display_pub.outputs
        display_id = outputs[-1]["transient"]["display_id"]
        yield panel, outputs, lambda: [o for o in outputs if o["update"] and o["transient"]["display_id"] == display_id]
    finally:
        panel.close()


@pytest.mark.spark
def test_replay_panel_and_comparison_outputs_gain_pictures(env, shell, tmp_path):
    import workbench

    with a_shown_panel(shell) as (panel, outputs, panel_updates):
        assert set(outputs[-1]["data"]) == {WIDGET_VIEW, "text/plain"}
        shell.run_cell("panel.step(); panel.step()")  # the cell that moved the run publishes once
        updates = panel_updates()
        assert len(updates) == 1
        data = updates[-1]["data"]
        lines = data["text/plain"].splitlines()
        assert lines[0].startswith(f"Replay panel: {panel.run.name}, ")
        assert lines[1].startswith("batch 1 (2 data batches)") and lines[2].startswith("batch 1:")
        image = pixels(base64.b64decode(data["image/png"]))
        # The panel's three lines of text over the charts (name and status, counters, the last step).
        assert image.shape == (640 + 8 + 3 * 17, 1120, 3) and share_of(image[59:379, :560], WATERMARK_RED) > 0.0001
        assert (image[:59] < 128).any()  # dark text in the header
        shell.run_cell("pass")  # nothing moved: nothing published
        assert len([o for o in outputs if o["update"]]) == 1

        panel.save(tmp_path / "run")
        shell.user_ns["comparison"] = workbench.compare(tmp_path / "run", panel, labels=["saved", "live"])
        before = len(outputs)
        shell.run_cell("comparison")
        shown = outputs[before:]
        assert "text/html" in shown[0]["data"]  # the metrics table
        chart_id = shown[1]["transient"]["display_id"]
        picture = [o for o in shown if o["update"] and o["transient"]["display_id"] == chart_id][-1]["data"]
        assert picture["text/plain"] == ("Comparison of saved, live: watermark, state rows and late rows "
                                         "dropped or partial (cumulative), batch by batch")
        image = pixels(base64.b64decode(picture["image/png"]))
        assert image.shape == (650, 560, 3)
        # Three charts stacked; the live run, drawn last, in plotly's 5th and 6th colours:
        # its state rows in the middle one, its late rows in the bottom one.
        assert share_of(image[220:430], (0xFF, 0xA1, 0x5A)) > 0.001 and share_of(image[430:600], (0xFF, 0xA1, 0x5A)) == 0
        assert share_of(image[430:600], (0x19, 0xD3, 0xF3)) > 0.0002


@pytest.mark.spark
def test_a_panel_without_a_monitor_publishes_its_text_and_a_reset_publishes_the_fresh_run(env, shell):
    import workbench

    # A panel without a monitor kept the text it was shown with ("batch – (0 data batches)"), and
    # a reset left the run before it in the output (and its last step's line in the summary).
    panel = workbench.replay_panel(workbench.scenarios.guide_word_count(), monitor=False)
    try:
        shell.user_ns["panel"] = panel
        shell.run_cell("panel")
        outputs = shell.display_pub.outputs
        display_id = outputs[-1]["transient"]["display_id"]

        def last_update():
            return [o for o in outputs if o["update"] and o["transient"]["display_id"] == display_id][-1]["data"]

        shell.run_cell("panel.step(); panel.step()")
        lines = last_update()["text/plain"].splitlines()
        assert lines[1].startswith("batch 1 (2 data batches)") and lines[2].startswith("batch 1:"), lines
        assert "image/png" not in last_update()
        shell.run_cell("panel.reset()")
        assert last_update()["text/plain"].splitlines()[1:] == ["batch – (0 data batches) · watermark none → none · "
                                                                 "rows in 0 · rows emitted 0"]
    finally:
        panel.close()

    with a_shown_panel(shell) as (panel, outputs, panel_updates):
        shell.run_cell("panel.step()")
        shell.run_cell("panel.reset()")
        assert len(panel_updates()) == 2
        data = panel_updates()[-1]["data"]
        assert data["text/plain"].splitlines()[1:] == ["batch – (0 data batches) · watermark none → none · "
                                                       "rows in 0 · rows emitted 0"]
        assert share_of(pixels(base64.b64decode(data["image/png"])), WATERMARK_RED) == 0  # empty charts


@pytest.mark.spark
def test_a_playing_panel_publishes_after_cells_at_most_every_few_seconds_and_at_once_when_paused(
        env, shell, monkeypatch):
    from workbench.views import replay_panel

    with a_shown_panel(shell) as (panel, _outputs, updates):
        def cell_after_a_batch() -> None:
            batches = panel.run.progress.total
            wait_for(lambda: panel.run.progress.total > batches, 60, message="the next played batch")
            shell.run_cell("pass")

        shell.run_cell("panel.play(20)")  # no batch yet: no picture of empty charts
        cell_after_a_batch()  # the first cell after a played batch publishes
        assert len(updates()) == 1
        for _ in range(3):  # later batches, later cells: within the interval nothing more
            cell_after_a_batch()
        assert len(updates()) == 1 and panel.run.status == "playing"
        monkeypatch.setattr(replay_panel, "PLAYING_PICTURE_EVERY_S", 0.0)
        cell_after_a_batch()  # the interval has passed: the newer picture
        assert len(updates()) == 2
        shell.run_cell("panel.pause()")  # a pause publishes at once
        assert len(updates()) == 3
        assert updates()[-1]["data"]["text/plain"].splitlines()[0].endswith("paused")


def test_output_leaves_the_view_out_only_while_no_page_loaded_the_charts(shell):
    from workbench.views.static_output import StaticOutput

    grid = monitor_grid(3)
    output = StaticOutput(grid, text=lambda: "three batches", picture=lambda: grid_picture(grid),
                          after_cell=lambda: False)
    output.watch_page(grid)
    shell.user_ns["output"] = output
    shell.run_cell("output.display()")
    # Only this output's messages: outputs of earlier tests publish after cells too.
    own_id = output._display_ids[0]

    def last() -> dict:
        return [o for o in shell.display_pub.outputs if o["transient"].get("display_id") == own_id][-1]

    assert set(last()["data"]) == {WIDGET_VIEW, "text/plain"}
    output.publish("first")  # in the displaying cell nothing is known yet: the view stays
    assert set(last()["data"]) == {WIDGET_VIEW, "image/png", "text/plain"}
    shell.run_cell("pass")  # a later cell started and no page said "ready": no page draws it
    output.publish("first")
    assert set(last()["data"]) == {"image/png", "text/plain"}
    # A page that queued its cells (Run All) says "ready" late: the view comes back at once.
    grid._handle_custom_msg({"kind": "ready"}, [])
    assert last()["update"] and set(last()["data"]) == {WIDGET_VIEW, "image/png", "text/plain"}
    output.stop_listening()
    grid.close()


def test_an_ending_process_draws_and_sends_no_picture_and_waits_for_one_being_drawn(shell, monkeypatch):
    # The kernel's shutdown stops the streams, whose monitors would then draw their final
    # pictures on their threads while the interpreter ends: matplotlib dying mid-draw aborted
    # the kernel (SIGABRT). Once the process is ending nothing is drawn or sent, and the
    # shutdown waits for a picture begun before.
    import threading

    from workbench import _process_end
    from workbench._process_end import process_ending, wait_for_pictures
    from workbench.views.static_output import StaticOutput

    monkeypatch.setattr(_process_end, "_ending", threading.Event())  # this process goes on
    drawn, started, release = [], threading.Event(), threading.Event()

    def picture() -> bytes:
        drawn.append(1)
        started.set()
        release.wait(30)
        return b"png"

    grid = monitor_grid(3)
    output = StaticOutput(grid, text=lambda: "three batches", picture=picture, after_cell=lambda: False)
    shell.user_ns["output"] = output
    shell.run_cell("output.display()")
    own_id = output._display_ids[0]
    sent = lambda: [o for o in shell.display_pub.outputs if o["transient"].get("display_id") == own_id]
    try:
        drawing = threading.Thread(target=output.publish, args=("first",))
        drawing.start()
        assert started.wait(30)
        process_ending()  # while a picture is being drawn
        assert not wait_for_pictures(0.2)  # it is not done yet
        release.set()
        assert wait_for_pictures(30)
        drawing.join(30)
        count = len(sent())
        output.publish("second")  # a stream that ends now: nothing drawn, nothing sent
        assert output.draw("third") == b"png"  # the picture drawn last, not a new one
        assert len(drawn) == 1 and len(sent()) == count
    finally:
        release.set()
        output.stop_listening()
        grid.close()


def test_a_process_that_never_loaded_the_magics_ends_its_pictures_before_its_streams(monkeypatch):
    # A kernel that only called workbench.session() (no %load_ext) ends through the spark
    # layer's exit hook: it too says the process is ending before it stops the streams, whose
    # monitors would otherwise draw final pictures as the interpreter finalises.
    import threading

    from workbench import _process_end
    from workbench.spark import environment

    monkeypatch.setattr(_process_end, "_ending", threading.Event())  # this process goes on
    seen = []

    class Env:  # the hook's one call into the workbench, recorded
        def shutdown(self) -> None:
            seen.append(_process_end.is_ending())

    monkeypatch.setattr(environment._holder, "env", Env())
    environment._close_at_exit()
    assert seen == [True]


def test_a_shutdown_with_nothing_left_says_so_once_not_as_a_second_shutdown(caplog):
    # The interpreter's exit hook runs after the kernel's shutdown hook has ended everything:
    # the session's log then says it found nothing, not a second "shutdown took ..." line.
    import logging

    from workbench.spark.environment import Workbench

    with caplog.at_level(logging.DEBUG, logger="workbench.spark.environment"):
        took = Workbench().shutdown()
    assert took["spark"] == 0.0 and took["folders"] == 0.0
    assert "shutdown: nothing left to end" in caplog.text
    assert "shutdown took" not in caplog.text


def test_console_output_carries_its_tables_as_text_for_viewers_without_the_widget(shell, monkeypatch):
    """The console sink's output: the batches' text beside the widget view, marked for the page's fallback."""
    from workbench.views.console import CellConsole
    from workbench.views.static_output import FALLBACK_METADATA, StaticOutput

    monkeypatch.setattr(StaticOutput, "page_seen_in_process", False)  # as under nbconvert --execute
    console = CellConsole(max_batches=2)
    shell.user_ns["console"] = console
    shell.run_cell("from IPython.display import display; display(console.widget)")
    own_id = console.widget.static_output._display_ids[0]

    def last() -> dict:
        return [o for o in shell.display_pub.outputs if o["transient"].get("display_id") == own_id][-1]

    assert set(last()["data"]) == {WIDGET_VIEW, "text/plain"}
    assert last()["metadata"] == FALLBACK_METADATA  # the extension shows the text if the model is gone
    console("Batch: 0\n+-----+\n|value|\n+-----+\n|    0|\n+-----+\n\n")
    console("Batch: 1\n+-----+\n|value|\n+-----+\n|    5|\n+-----+\n\n")
    shell.run_cell("pass")  # the cell after the batches publishes them; no page draws widgets here
    assert last()["update"] and set(last()["data"]) == {"text/plain"}
    assert last()["data"]["text/plain"].startswith("Batch: 0\n+-----+") and "|    5|" in last()["data"]["text/plain"]
    updates = len(shell.display_pub.outputs)
    shell.run_cell("pass")  # no new batch: nothing sent
    assert len(shell.display_pub.outputs) == updates

    console("Batch: 2\n+-----+\n|value|\n+-----+\n|   10|\n+-----+\n\n")
    shell.run_cell("pass")
    text = last()["data"]["text/plain"]
    assert text.startswith("(1 earlier batches not shown)\nBatch: 1") and text.endswith("|   10|\n+-----+")
    # A page turned out to draw widgets (a chart model said "ready"): the view is back after the next cell.
    monkeypatch.setattr(StaticOutput, "page_seen_in_process", True)
    shell.run_cell("pass")
    assert set(last()["data"]) == {WIDGET_VIEW, "text/plain"} and last()["metadata"] == FALLBACK_METADATA
    # Its stream ends after a last batch: the next cell publishes it, and later cells leave it alone.
    console("Batch: 3\n+-----+\n|value|\n+-----+\n|   15|\n+-----+\n\n")
    console.finish()
    hooks = len(shell.events.callbacks["post_execute"])
    shell.run_cell("pass")
    assert last()["data"]["text/plain"].endswith("|   15|\n+-----+")
    assert len(shell.events.callbacks["post_execute"]) == hooks - 1
    console.widget.close()


def test_saving_without_the_extension_keeps_pictures_not_dead_widget_views(tmp_path, monkeypatch):
    """The server's pre-save hook: only while the page config disables the extension, only marked outputs."""
    import json

    from workbench._save_hook import keep_pictures
    from workbench.views.static_output import FALLBACK_METADATA

    def notebook() -> dict:
        ours = {"output_type": "display_data", "metadata": FALLBACK_METADATA,
                "data": {WIDGET_VIEW: {"model_id": "a"}, "image/png": "iVBO", "text/plain": "monitor"}}
        bare = {"output_type": "display_data", "metadata": FALLBACK_METADATA, "data": {WIDGET_VIEW: {"model_id": "b"}}}
        other = {"output_type": "display_data", "metadata": {},
                 "data": {WIDGET_VIEW: {"model_id": "c"}, "image/png": "iVBO", "text/plain": "Figure"}}
        return {"type": "notebook", "content": {"cells": [
            {"cell_type": "code", "outputs": [ours, bare, other]}, {"cell_type": "markdown"}]}}

    def kept(model: dict) -> list[list[str]]:
        return [sorted(o["data"]) for o in model["content"]["cells"][0]["outputs"]]

    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    enabled = notebook()
    keep_pictures(enabled, "a.ipynb")  # the page shows the picture itself: the file keeps both
    assert kept(enabled) == kept(notebook())

    (tmp_path / "labconfig").mkdir()
    (tmp_path / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"spark-streaming-workbench": True}}), encoding="utf-8")
    disabled = notebook()
    keep_pictures(disabled, "a.ipynb")
    # The workbench's output loses its dead view; one with nothing else to show, and another
    # package's output, are left as they were.
    assert kept(disabled) == [["image/png", "text/plain"], [WIDGET_VIEW], [WIDGET_VIEW, "image/png", "text/plain"]]
    folder = {"type": "directory", "content": None}
    keep_pictures(folder, "somewhere")
    assert folder == {"type": "directory", "content": None}


@pytest.mark.spark
def test_a_replays_monitor_follows_it_across_cells_while_paused_and_ends_at_reset_or_close(env, shell):
    # A replay between steps is "paused", not ended: the cell after it must not take the
    # monitor for finished (it stopped drawing the next steps). A reset ends it (the run goes
    # on in a new view; the old one said "paused" for ever and kept its hook), and so does close.
    from workbench.replay import Replay
    from workbench.spark.replay_run import ReplayRun

    run = ReplayRun(Replay(rows_per_batch=2, start="2024-01-01 12:00", advance="1 minute", seed=1),
                    lambda df: df, name="paused_replay", env=env)
    monitor = run.stream.monitor()
    try:
        shell.user_ns["monitor"] = monitor
        shell.run_cell("monitor")
        run.step()
        shell.run_cell("pass")
        assert monitor.running and len(shell.display_pub.outputs) == 1
        run.step()
        wait_for(lambda: "2 batches" in monitor.summary(), timeout=30, message="the second step drawn")
        run.reset()
        wait_for(lambda: not monitor.running, timeout=30, message="the monitor to end at the reset")
        hooks = len(shell.events.callbacks["post_execute"])
        shell.run_cell("pass")
        assert monitor.summary().splitlines()[0] == "Stream monitor: paused_replay (memory sink), stopped"
        assert len(shell.events.callbacks["post_execute"]) == hooks - 1, "it still runs after every cell"
        monitor.close()
        monitor = run.stream.monitor()
        shell.user_ns["monitor"] = monitor
        shell.run_cell("monitor")
        run.step()
        run.close()
        wait_for(lambda: not monitor.running, timeout=30, message="the monitor to end with the run")
        shell.run_cell("pass")
        assert monitor.summary().splitlines()[0] == "Stream monitor: paused_replay (memory sink), closed"
    finally:
        monitor.close()
        run.close()
