"""A watermark per input: the pure rules, the magic option, and the figures on real Spark.

On Spark, each figure is checked against what Spark itself reports: every input's max
event time against the deterministic ``rate-micro-batch`` input, and the global watermark
derived from the inputs against the ``eventTime.watermark`` Spark reports for the next batch.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from IPython.core.error import UsageError

from workbench.magics.parser import parse_cell
from workbench.progress import BatchProgress, ProgressHistory
from workbench.progress.diagnosis import OutputSummary, PlanFacts, held_back_by, why_no_output
from workbench.progress.input_watermarks import InputSpec, InputWatermarkTracker, input_watermarks
from tests.helpers import wait_for

START = datetime(2024, 1, 1, 10, 0, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SPECS = (InputSpec("clicks", "o0", "click_time", 2 * MINUTE), InputSpec("views", "o1", "view_time", 5 * MINUTE))


def batch(batch_id: int, clicks: datetime | None, views: datetime | None,
          kind: type[BatchProgress] = BatchProgress) -> BatchProgress:
    def metrics(t: datetime | None) -> dict:
        return {"rows": 0, "max_event_time_us": None} if t is None else {
            "rows": 2, "max_event_time_us": int((t - EPOCH) / timedelta(microseconds=1))}

    return kind.from_json({"batchId": batch_id, "numInputRows": 1, "durationMs": {"addBatch": 1},
                           "observedMetrics": {"o0": metrics(clicks), "o1": metrics(views)}})


def test_tracker_follows_sparks_rules():
    records = [batch(0, START, None), batch(1, START + 4 * MINUTE, START + 10 * MINUTE),
               batch(2, START + 3 * MINUTE, None), batch(3, None, None)]
    rows = {(r.batch_id, r.input): r for r in input_watermarks(records, SPECS)}
    # An input with no rows yet stands at epoch 0, which holds the global watermark at 0.
    assert rows[0, "views"].watermark == EPOCH and rows[0, "views"].max_event_time is None
    assert rows[0, "clicks"].watermark == START - 2 * MINUTE and rows[0, "clicks"].global_watermark == EPOCH
    assert rows[1, "clicks"].watermark == START + 2 * MINUTE and rows[1, "views"].watermark == START + 5 * MINUTE
    assert rows[1, "clicks"].global_watermark == START + 2 * MINUTE
    # An older event time never moves an input's watermark back; quiet batches are counted.
    assert rows[2, "clicks"].watermark == START + 2 * MINUTE and rows[2, "clicks"].max_event_time == START + 4 * MINUTE
    assert (rows[3, "clicks"].quiet_batches, rows[3, "views"].quiet_batches) == (1, 2)
    # Under the max policy the leading input wins; the global watermark never goes back.
    most = {(r.batch_id, r.input): r for r in input_watermarks(records, SPECS, policy="max")}
    assert most[1, "views"].global_watermark == START + 5 * MINUTE == most[3, "views"].global_watermark
    with pytest.raises(ValueError, match="unknown watermark policy 'median': use 'min' or 'max'"):
        InputWatermarkTracker(SPECS, "median")
    # Folding batch by batch gives the same rows as folding the whole history.
    tracker = InputWatermarkTracker(SPECS)
    assert [r for record in records for r in tracker.add([record])] == input_watermarks(records, SPECS)


def test_diagnosis_names_the_input_that_holds_the_watermark_back():
    records = [batch(0, START, START)] + [batch(i, None, START + i * MINUTE) for i in range(1, 13)]
    latest = [r for r in input_watermarks(records, SPECS) if r.batch_id == 12]
    message = held_back_by(latest)
    assert message == ("Input `clicks` has had no rows for 12 batches; its watermark stays at 2024-01-01 09:58:00 UTC "
                       "and holds the global watermark back (the lowest input watermark wins; input `views` is at "
                       "2024-01-01 10:07:00 UTC).")
    assert held_back_by(latest, policy="max") is None
    assert held_back_by(latest[:1]) is None  # one input holds nothing back
    # Slow rather than quiet: said so, with its event time and delay.
    slow = [r for r in input_watermarks([batch(0, START, START + 30 * MINUTE)], SPECS)]
    assert held_back_by(slow).startswith("Input `clicks` is behind: its latest event time (2024-01-01 10:00:00 UTC) "
                                         "minus its 2 min delay puts its watermark at 2024-01-01 09:58:00 UTC")
    # why_no_output adds it to the window message, and gives it alone for a join.
    summary = OutputSummary().add([BatchProgress.from_json({
        "batchId": i, "numInputRows": 4, "durationMs": {"addBatch": 1}, "sink": {"numOutputRows": 0},
        "eventTime": {"min": "2024-01-01T10:00:00.000Z", "max": "2024-01-01T10:12:00.000Z",
                      "watermark": "2024-01-01T09:58:00.000Z"}}) for i in range(3)])
    windowed = PlanFacts(has_aggregation=True, has_watermark=True, window_duration=10 * MINUTE)
    text = why_no_output(summary, output_mode="append", plan=windowed, inputs=latest)
    assert text.startswith("The watermark (2024-01-01 09:58:00 UTC) has not yet passed the end of the earliest open "
                           "window") and text.endswith(message)
    joined = why_no_output(summary, output_mode="append", plan=PlanFacts(has_watermark=True, watermarks=2),
                           inputs=latest)
    assert joined.startswith(message)
    assert why_no_output(summary, output_mode="append", plan=PlanFacts(has_watermark=True, watermarks=2)) is None


class ScriptedJoin:
    """A stream with two watermarked inputs known only by its scripted progress (``MonitoredStream``)."""

    name, sink, output_mode, started_at, plan, status, error = "joined", "console", "append", None, None, "active", None
    inputs, watermark_policy = SPECS, "min"

    def __init__(self, records: list[BatchProgress]) -> None:
        self.progress = ProgressHistory()
        self.progress.extend(records)

    def stop(self) -> None:
        pass

    def on_finished(self, callback) -> None:
        pass


def scripted_join(first: int, count: int, kind: type[BatchProgress] = BatchProgress) -> list[BatchProgress]:
    """Clicks at minute b in each batch b; views at minute 2b in batches 0 to 2, then none."""
    return [batch(b, START + b * MINUTE, START + 2 * b * MINUTE if b < 3 else None, kind)
            for b in range(first, first + count)]


def assert_lanes_show(monitor, records: list[BatchProgress], ids: list[int]) -> None:
    """At batch b each input's lane shows the watermark it proposed after batch b - 1 (none at epoch 0)."""
    proposed = {(row.batch_id, row.input): row.watermark for row in input_watermarks(records, SPECS)}
    lanes = {trace.name: trace for trace in monitor.figures["watermark"].data}
    for name in ("clicks", "views"):
        lane = lanes[f"watermark: {name}"]
        assert list(lane.x) == ids
        expected = [proposed.get((b - 1, name)) for b in ids]
        assert list(lane.y) == [None if t is None or t <= EPOCH else t.strftime("%Y-%m-%d %H:%M:%S.%f")
                                for t in expected], name


def test_a_monitor_opened_on_a_long_history_reads_each_batch_a_bounded_number_of_times():
    # Opening a monitor folds the whole history through the input tracker, on the caller's
    # thread and under the lock the poller's updates wait on: it must cost O(batches). A
    # probe counts every read of each batch's fields; the most any batch is read must not
    # grow with the history (it did: once per row of the history, so O(batches²) in all).
    from collections import Counter

    from workbench.views.monitor import StreamMonitor

    window = 30

    def opened(count: int) -> tuple[StreamMonitor, Counter, list[BatchProgress]]:
        reads: Counter = Counter()

        class Counted(BatchProgress):
            def __getattribute__(self, name: str):
                if not name.startswith("__"):
                    reads[object.__getattribute__(self, "batch_id")] += 1
                return super().__getattribute__(name)

        records = scripted_join(0, count, Counted)
        stream = ScriptedJoin(records)
        reads.clear()
        monitor = StreamMonitor(stream, window=window, interval=3600)
        return monitor, Counter(reads), records

    small, small_reads, _ = opened(500)
    small.close()
    monitor, reads, records = opened(2_000)
    try:
        assert set(reads) == set(range(2_000))  # every batch is folded
        most, most_in_small = max(reads.values()), max(small_reads.values())
        assert most <= most_in_small, f"a batch was read {most} times in 2,000 batches, {most_in_small} times in 500"
        assert_lanes_show(monitor, records, list(range(2_000 - window, 2_000)))
        assert "2000 batches (last 1999)" in monitor.summary()
        # New batches, more than the window at once, as a poll after a pause brings them.
        later = scripted_join(2_000, window + 5)
        monitor.handle.progress.extend(later)
        monitor.refresh()
        assert_lanes_show(monitor, records + later, list(range(2_005, 2_005 + window)))
    finally:
        monitor.close()


def test_magic_option_parses_and_refuses_replays():
    assert parse_cell("joined --input-watermarks", "SELECT * FROM a").input_watermarks is True
    assert parse_cell("joined", "SELECT * FROM a").input_watermarks is False
    with pytest.raises(UsageError, match="--input-watermarks cannot be used with --replay"):
        parse_cell("joined --input-watermarks --replay guide_word_count", "")


def rate(spark, rows: int, advance_s: int):
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).option("numPartitions", 1)
            .option("startTimestamp", int(START.timestamp() * 1000)).option("advanceMillisPerBatch", advance_s * 1000)
            .load())


@pytest.mark.spark
def test_join_input_watermarks_match_spark(env, spark):
    from pyspark.sql import functions as F

    rate(spark, 3, 60).select(F.col("value").alias("click_id"), F.col("timestamp").alias("click_time")) \
        .createOrReplaceTempView("clicks")
    # Views stop after batch 1 (value < 4, two rows a batch), so their watermark stays where it was.
    views = rate(spark, 2, 120).where("value < 4").select(F.col("value").alias("view_id"),
                                                          F.col("timestamp").alias("view_time"))
    left = spark.table("clicks").withWatermark("click_time", "2 minutes")
    right = views.withWatermark("view_time", "5 minutes").alias("views")
    joined = left.join(right, F.expr("click_id = view_id AND click_time BETWEEN view_time - interval 1 minute "
                                     "AND view_time + interval 1 minute"), "leftOuter")
    handle = env.start(joined, "joined", trigger="200 ms", input_watermarks=True)
    monitor = handle.monitor(window=60)
    wait_for(lambda: handle.progress.total >= 7 or handle.status != "active", 120, message="7 batches")
    handle.stop()
    assert handle.error is None, handle.error_details
    wait_for(lambda: not monitor.running, 30, message="the monitor to finish")
    assert list(handle.result().columns) == ["click_id", "click_time", "view_id", "view_time"]
    frame = handle.input_watermarks()
    assert list(frame.columns)[:5] == ["batch_id", "input", "max_event_time", "delay", "watermark"]
    assert set(frame["input"]) == {"clicks", "views"}
    records = {r.batch_id: r for r in handle.progress.records()}
    last = max(records)
    for row in frame.itertuples():
        if row.input == "clicks":  # three rows a batch, batch b at START + b minutes
            assert (row.rows, row.max_event_time, row.delay) == (3, START + row.batch_id * MINUTE, 2 * MINUTE)
        else:  # two rows a batch at START + 2b minutes, none from batch 2 on
            expected = START + min(row.batch_id, 1) * 2 * MINUTE
            assert (row.rows, row.max_event_time, row.delay) == (2 if row.batch_id < 2 else 0, expected, 5 * MINUTE)
        assert row.watermark == row.max_event_time - row.delay
        # The global watermark derived from the inputs is the one Spark runs the next batch with.
        if row.batch_id < last:
            assert row.global_watermark == records[row.batch_id + 1].watermark, row
    assert frame["global_watermark"].iloc[-1] == START + 2 * MINUTE - 5 * MINUTE  # held by the quiet views
    latest = [r for r in input_watermarks(handle.progress.records(), handle.inputs, handle.watermark_policy)
              if r.batch_id == last]
    assert held_back_by(latest).startswith(f"Input `views` has had no rows for {last - 1} batches")
    # The monitor draws a lane per input: at batch b, the watermark the input proposed after
    # batch b - 1 (what batch b ran with), next to the global one.
    lanes = {t.name: dict(zip(t.x, t.y)) for t in monitor.figures["watermark"].data}
    proposed = {(row.batch_id, row.input): row.watermark for row in frame.itertuples()}
    for name in ("clicks", "views"):
        drawn = lanes[f"watermark: {name}"]
        assert sorted(drawn) == sorted(records)
        for batch_id, value in drawn.items():
            before = proposed.get((batch_id - 1, name))
            expected = None if before is None or before <= EPOCH else before.strftime("%Y-%m-%d %H:%M:%S.%f")
            assert value == expected, (name, batch_id, value, expected)
    monitor.close()

    # An ordinary query is not observed at all.
    plain = env.start(rate(spark, 2, 60).withWatermark("timestamp", "1 minute"), "plain", trigger="200 ms")
    wait_for(lambda: plain.progress.total >= 1, 60, message="a batch")
    plain.stop()
    assert plain.inputs == () and all(not r.observed_metrics for r in plain.progress.records())
    with pytest.raises(ValueError, match="stream 'plain' was started without input_watermarks=True"):
        plain.input_watermarks()
    with pytest.raises(ValueError, match="this query has no watermarked input"):
        env.start(rate(spark, 2, 60), "no_marks", input_watermarks=True)
    assert not spark.streams.active


@pytest.mark.spark
def test_stream_magic_option_observes_the_inputs(env, spark):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    try:
        shell.user_ns["marked"] = rate(spark, 2, 60).withWatermark("timestamp", "1 minute").alias("ticks")
        with capture_output():
            shell.run_cell_magic("stream", "ticks --input-watermarks --no-monitor --trigger '0.2 seconds'", "marked")
        handle = env.get("ticks")
        wait_for(lambda: handle.progress.total >= 2, 60, message="two batches")
        handle.stop()
        frame = handle.input_watermarks()
        assert set(frame["input"]) == {"ticks"}
        first = frame.iloc[0]
        assert (first.batch_id, first.rows, first.max_event_time, first.watermark) == (0, 2, START, START - MINUTE)
    finally:
        shell.run_line_magic("unload_ext", "workbench")
