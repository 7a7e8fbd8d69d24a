"""The live monitor on real Spark (no browser): figures follow the history, controls work."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from workbench.errors import StreamStartError
from workbench.progress import DURATION_PARTS
from workbench.progress.diagnosis import OutputSummary
from workbench.spark.plan import plan_facts
from workbench.views.monitor import StreamMonitor
from workbench.views.monitor_charts import NO_STATE, NO_WATERMARK
from workbench.views.monitor_header import no_output_reason
from tests.helpers import live_threads, wait_for

pytestmark = pytest.mark.spark

START_MS = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC: far from epoch 0, like real data
EPOCH = pd.Timestamp(0, tz="UTC")


def hour_windows(rate_stream, rows_per_batch: int = 6):
    """Counts in 1-hour windows with a 10 s watermark; event times spread over 3 s per batch.

    With 1 s of event time per batch the watermark needs an hour of batches to pass the
    first window's end, so in append mode nothing is output during the test.
    """
    return (
        rate_stream(rows_per_batch=rows_per_batch, start_ms=START_MS, advance_ms=1000)
        .withColumn("event", F.col("timestamp") - F.make_interval(secs=(F.col("value") % 3).cast("int")))
        .withWatermark("event", "10 seconds")
        .dropDuplicates(["value", "event"])
        .groupBy(F.window("event", "1 hour"))
        .count()
    )


def traces(monitor: StreamMonitor, figure: str) -> dict[str, object]:
    return {trace.name: trace for trace in monitor.figures[figure].data}


def plain(series: pd.Series) -> np.ndarray:
    """A history column as the monitor plots it: naive UTC times (NaT) or floats (NaN)."""
    if str(series.dtype).startswith("datetime64"):
        return series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[us]")
    return series.astype("Float64").to_numpy(dtype="float64", na_value=np.nan)


def same(trace_values, expected) -> None:
    np.testing.assert_array_equal(np.asarray(trace_values, dtype="float64"), np.asarray(expected, dtype="float64"))


def same_times(trace_values, expected) -> None:
    """Times reach the charts as UTC wall-clock text, which plotly.js reads as dates."""
    drawn = pd.to_datetime(pd.Series(trace_values, dtype="object"), format="%Y-%m-%d %H:%M:%S.%f")
    np.testing.assert_array_equal(drawn.to_numpy(dtype="datetime64[us]"), expected)


def assert_figures_match(monitor: StreamMonitor, history: pd.DataFrame, per_operator: pd.DataFrame) -> None:
    ids = list(history["batch_id"])
    wm = traces(monitor, "watermark")
    watermark = history["watermark"].where(history["watermark"] > EPOCH)  # epoch 0 = not set yet
    assert list(wm["watermark"].x) == ids
    same_times(wm["watermark"].y, plain(watermark))
    same_times(wm["event time min"].y, plain(history["event_time_min"]))
    same_times(wm["event time max"].y, plain(history["event_time_max"]))
    gap = (history["event_time_max"] - watermark).dt.total_seconds()
    same(wm["gap (s)"].y, plain(gap))
    latency = traces(monitor, "latency")
    for key, column in [*DURATION_PARTS.items(), ("triggerExecution", "trigger_execution_ms")]:
        assert list(latency[key].x) == ids
        same(latency[key].y, plain(history[column]))
    rates = traces(monitor, "rates")
    same(rates["input rows/s"].y, plain(history["input_rows_per_second"]))
    same(rates["processed rows/s"].y, plain(history["processed_rows_per_second"]))
    state = traces(monitor, "state")
    operators = per_operator[per_operator["batch_id"].isin(ids)]
    for index, rows in operators.groupby("operator_index"):
        label = f"{index}:{rows['operator_name'].iloc[0]} "
        assert list(state[label + "total"].x) == ids
        same(state[label + "total"].y, rows["state_rows_total"])
        same(state[label + "updated"].y, rows["state_rows_updated"])
        same(state[label + "removed"].y, rows["state_rows_removed"])
        # Spark counts late groups there, not rows: the trace says so.
        same(state[label + "late groups dropped"].y, rows["state_rows_dropped_by_watermark"])
        same(state[label + "memory"].y, rows["state_memory_bytes"])
    # Real times, not epoch milliseconds, reach the chart; the axis reads them as dates.
    assert all(isinstance(v, str) for v in wm["watermark"].y if v is not None)
    assert monitor.figures["watermark"].layout.yaxis.type == "date"


def test_monitor_follows_the_history_and_stops_the_stream(env, rate_stream, tmp_path):
    handle = env.start(hour_windows(rate_stream), "hourly")
    assert handle.plan.window_duration == pd.Timedelta(hours=1)  # read from the plan at start
    full = handle.monitor(window=60)
    rolling = handle.monitor(window=5)
    wait_for(lambda: handle.progress.total >= 7, timeout=90, message="7 batches")

    # Pause: the model keeps filling, the charts stay; resume catches up from the model.
    rolling.pause_button.value = True
    frozen = list(traces(rolling, "latency")["addBatch"].x)
    seen = handle.progress.total
    wait_for(lambda: handle.progress.total >= seen + 2, timeout=60, message="2 more batches")
    assert list(traces(rolling, "latency")["addBatch"].x) == frozen
    rolling.pause_button.value = False
    wait_for(lambda: list(traces(rolling, "latency")["addBatch"].x)[-1] >= seen + 1, message="catch-up")

    # The status line is not sent again with each batch: the charts' caption, which travels
    # with their points, says the newest batch.
    changes: list = []
    full.header.observe(changes.append, names="value")
    seen = handle.progress.total
    wait_for(lambda: handle.progress.total >= seen + 2, timeout=60, message="2 more batches")
    wait_for(lambda: f"batch {handle.progress.last_batch_id} ·" in full.charts.caption,
             text=lambda: f"the caption says {full.charts.caption!r}, not the newest batch")
    full.header.unobserve(changes.append, names="value")
    assert changes == [] and "<b>active</b>" in full.header.value and "batch" not in full.header.value

    # The "why no output?" line: watermarked, but the first 1-hour window is far from closed.
    message = wait_for(lambda: full.diagnosis.value, message="a diagnosis")
    assert "has not yet passed the end of the earliest open window (2023-11-14 23:00:00 UTC)" in message
    assert re.search(r"watermark \(2023-11-14 22:1\d:\d\d UTC\)", message)

    rolling.stop_button.click()
    assert handle.wait_finished(60)
    wait_for(lambda: not full.running and not rolling.running, message="monitors to finish")
    history = handle.history()
    per_operator = handle.history(operators=True)
    assert handle.status == "stopped" and len(history) >= 9
    for monitor in (full, rolling):
        assert "<b>stopped</b>" in monitor.header.value
        assert monitor.charts.caption.startswith(f"batch {history['batch_id'].iloc[-1]} · input ")
        assert monitor.stop_button.disabled
    assert_figures_match(full, history, per_operator)
    assert_figures_match(rolling, history.tail(5).reset_index(drop=True), per_operator)
    assert set(per_operator["operator_index"]) == {0, 1}  # dedup + aggregate: a line each
    # Spark's initial epoch-0 watermark is missing in the table; the record keeps it as reported.
    assert history["watermark"].isna().iloc[0] and history["watermark"].iloc[-1] > EPOCH
    assert handle.progress.records()[0].watermark == EPOCH and handle.progress.records()[0].known_watermark is None

    page = full.save_html(tmp_path / "hourly.html").read_text()
    assert page.count("Plotly.newPlot") == 4 and page.count("plotly.js v") == 1  # plotly.js once
    assert "hourly" in page and '"watermark"' in page and not re.search(r"<script[^>]+src=", page)

    # Export round trips: Parquet keeps UTC times and nullable ints exactly; CSV keeps values.
    history.to_parquet(tmp_path / "h.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "h.parquet"), history)
    history.to_csv(tmp_path / "h.csv", index=False)
    back = pd.read_csv(tmp_path / "h.csv", parse_dates=["timestamp", "watermark", "event_time_max"])
    assert back["watermark"].equals(history["watermark"]) and back["batch_id"].tolist() == history["batch_id"].tolist()

    for monitor in (full, rolling):
        monitor.close()
    assert not [t for t in live_threads() if t.name.startswith(("workbench-monitor", "workbench-stop"))]


def test_failed_query_shows_its_error(env, rate_stream):
    @F.udf("long")
    def check(value):
        if value >= 15:
            raise ValueError(f"value {value} is too big")
        return value

    handle = env.start(rate_stream(rows_per_batch=10).select(check("value").alias("v")), "breaks")
    monitor = handle.monitor()
    assert handle.wait_finished(60)
    wait_for(lambda: not monitor.running, message="the monitor to finish")
    assert "<b>failed</b>" in monitor.header.value
    assert "ValueError: value 1" in monitor.header.value and "is too big" in monitor.header.value
    assert monitor.diagnosis.value == ""
    monitor.close()
    assert not [t for t in live_threads() if t.name.startswith("workbench-monitor")]


def test_no_input_is_explained_and_output_is_not(env, spark, rate_stream, tmp_path):
    folder = tmp_path / "incoming"
    folder.mkdir()
    waiting = (
        spark.readStream.format("text").load(str(folder))
        .withColumn("event", F.current_timestamp()).withWatermark("event", "10 seconds")
        .groupBy(F.window("event", "1 minute")).count()
    )
    empty = env.start(waiting, "waiting")
    flowing = env.start(rate_stream(rows_per_batch=4), "flowing")
    quiet = empty.monitor(quiet_seconds=2.0)
    busy = flowing.monitor(rows=3)
    message = wait_for(lambda: quiet.diagnosis.value, timeout=30, message="the no-input diagnosis")
    assert "No input rows arrive: no micro-batch has run" in message
    wait_for(lambda: flowing.progress.total >= 4, message="4 batches")
    wait_for(lambda: "Result" in busy.preview.value, message="the result preview")
    assert busy.diagnosis.value == ""  # rows are output: nothing to explain
    # A query without watermark or state: those charts say so instead of drawing empty axes;
    # a watermarked query that has not run a batch yet keeps waiting for one.
    said = {spec["key"]: spec.get("empty_message") for spec in busy.charts.charts}
    assert said["watermark"] == NO_WATERMARK and said["state"] == NO_STATE
    assert {spec["key"]: spec.get("empty_message") for spec in quiet.charts.charts}["watermark"] is None
    # The preview shows the latest rows of the memory table. Read it before the table: the
    # stream keeps running, so the preview may only ever be behind the table, never ahead.
    # The first preview may come right after batch 0; it is read again every 2 s, so it moves
    # on to newer rows (batch 0 holds values 0-3).
    def shown() -> list[int]:
        return [int(v) for v in re.findall(r"<td>(\d+)</td>", busy.preview.value)]

    latest = wait_for(lambda: (lambda values: values if values and min(values) >= 4 else None)(shown()),
                      timeout=30, message="a preview of rows newer than batch 0's")
    table = flowing.result()
    assert len(latest) == 3 and set(latest) <= set(table["value"])
    for monitor in (quiet, busy):
        monitor.close()
    assert not [t for t in live_threads() if t.name.startswith("workbench-monitor")]
    assert empty.status == flowing.status == "active"  # closing a monitor leaves its stream alone


def test_plan_facts_and_the_no_watermark_case(env, rate_stream):
    facts = plan_facts(hour_windows(rate_stream))
    assert facts.has_aggregation and facts.has_watermark
    assert facts.window_duration == pd.Timedelta(hours=1) and facts.watermark_delay == pd.Timedelta(seconds=10)
    # Spark refuses an aggregation without a watermark in append mode at the start, so the
    # user reads that reason in the start error, before any monitor exists.
    counts = rate_stream().groupBy(F.window("timestamp", "10 seconds")).count()
    assert not plan_facts(counts).has_watermark
    with pytest.raises(StreamStartError, match="without watermark"):
        env.start(counts, "no_watermark", output_mode="append")


def test_bad_monitor_options_are_refused(env, rate_stream):
    handle = env.start(rate_stream(), "opts")
    for options, fragment in [({"window": 0}, "window"), ({"rows": "5"}, "rows"), ({"interval": -1}, "interval")]:
        with pytest.raises(ValueError, match=fragment):
            handle.monitor(**options)
    assert not [t for t in live_threads() if t.name.startswith("workbench-monitor")]
    handle.stop()


def test_console_view_keeps_the_newest_batches_each_in_its_own_widget():
    from workbench.views.console import CellConsole

    console = CellConsole(max_batches=3)
    for i in range(5):
        console(f"Batch: {i}\n")
    assert console.texts() == ["Batch: 2\n", "Batch: 3\n", "Batch: 4\n"]
    note, *batches = console.widget.children
    assert "2 earlier batches not shown (the newest 3 are kept)" in note.value
    assert [b.outputs[0]["text"] for b in batches] == console.texts()
    with pytest.raises(ValueError, match="max_batches must be a positive whole number, got 0"):
        CellConsole(max_batches=0)


def reason_after(handle, batches: int = 4) -> str | None:
    """"Why no output?" for a stream stopped after ``batches`` batches, as the monitor words it."""
    wait_for(lambda: handle.progress.total >= batches or handle.status != "active", 60, message=f"{batches} batches")
    handle.stop()
    assert handle.error is None, handle.error_details
    return no_output_reason(handle, OutputSummary().add(handle.progress.records()), [], min_batches=3,
                            quiet_time=pd.Timedelta(seconds=10).to_pytimedelta())


def test_an_aggregate_on_a_joins_static_side_is_no_streaming_aggregation(spark, rate_stream):
    static = spark.range(5).select((F.col("id") + 1000).alias("value")).groupBy("value").count()
    assert not plan_facts(rate_stream().join(static, "value")).has_aggregation
    assert plan_facts(rate_stream().groupBy("value").count()).has_aggregation


def test_a_late_row_dropped_by_the_watermark_leaves_the_reason(env, rate_stream):
    # Value 5 (batch 2) is two hours late: Spark drops it, yet progress's eventTime.min shows it.
    late = F.when(F.col("value") == 5, F.col("timestamp") - F.expr("INTERVAL 2 HOURS")).otherwise(F.col("timestamp"))
    counts = (rate_stream(rows_per_batch=2, start_ms=START_MS).withColumn("timestamp", late)
              .withWatermark("timestamp", "0 seconds").groupBy(F.window("timestamp", "1 hour")).count())
    handle = env.start(counts, "late_row", trigger="0.3 seconds")
    message = reason_after(handle)
    records = handle.progress.records()
    assert records[2].state_rows_dropped_by_watermark == 1
    assert min(r.event_time_min for r in records if r.event_time_min) == pd.Timestamp(START_MS, unit="ms", tz="UTC") \
        + pd.Timedelta(seconds=2) - pd.Timedelta(hours=2)
    assert "has not yet passed the end of the earliest open window (2023-11-14 23:00:00 UTC)" in message


def test_with_two_watermarked_inputs_no_window_end_is_guessed(env, rate_stream):
    # The second input's events are an hour earlier; progress reports the event times of one input only.
    early = rate_stream(rows_per_batch=2, start_ms=START_MS - 3_600_000).withWatermark("timestamp", "0 seconds")
    union = rate_stream(rows_per_batch=2, start_ms=START_MS).withWatermark("timestamp", "0 seconds").union(early)
    handle = env.start(union.groupBy(F.window("timestamp", "1 hour")).count(), "two_inputs", trigger="0.3 seconds")
    assert handle.plan.watermarks == 2
    message = reason_after(handle)
    assert "has not yet passed the end of any aggregate" in message
    assert "2 watermarked inputs" in message and "cannot be told from progress" in message
    assert "earliest open window" not in message


def test_a_slow_first_batch_is_not_called_a_source_without_data(env, rate_stream, tmp_path):
    flag = str(tmp_path / "go")

    @F.udf("long")
    def held(value):  # the first batch runs until the test lets it finish
        import os
        import time

        while not os.path.exists(flag):
            time.sleep(0.05)
        return value

    handle = env.start(rate_stream(rows_per_batch=1).select(held("value").alias("v")), "held", trigger="0.3 seconds")
    monitor = handle.monitor(quiet_seconds=1.0)
    try:
        message = wait_for(lambda: monitor.diagnosis.value, 60, message="a diagnosis")
        assert "The first micro-batch is still running" in message and "no new data" not in message
    finally:
        (tmp_path / "go").touch()
    wait_for(lambda: handle.progress.total >= 1, 60, message="the first batch")
    wait_for(lambda: monitor.diagnosis.value == "", 30, message="the diagnosis to go once a batch ran")
    monitor.close()
    handle.stop()
