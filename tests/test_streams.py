"""The foundation on real Spark: session defaults, starting streams, handles, history, faults."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from pyspark.sql import functions as F

import workbench
from workbench.errors import StreamStartError, StreamStopError
from workbench.spark import STREAM_COLUMNS
from workbench.spark.stopping import describe_cause
from tests.helpers import live_threads, wait_for

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]


def test_session_is_tuned_for_local_streaming_and_stays_on_loopback(spark):
    assert workbench.session() is spark
    conf = spark.conf
    assert conf.get("spark.sql.shuffle.partitions") == "2"
    assert conf.get("spark.sql.adaptive.enabled") == "false"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert urlparse(spark.sparkContext.uiWebUrl).hostname == "127.0.0.1"
    assert spark.sparkContext.master.startswith("local")


def test_memory_stream_result_and_typed_history(env, rate_stream):
    # A trigger interval leaves time between batches, and stop() waits for a running one, so a
    # cut batch is rare; the next test makes one happen.
    handle = env.start(rate_stream(rows_per_batch=5), "numbers", trigger="0.3 seconds")
    assert handle.status == "active" and handle.sink == "memory"
    wait_for(lambda: handle.progress.total >= 1 and handle.preview(3)[1] > 0, message="a first preview")
    wait_for(lambda: handle.progress.total >= 3, message="3 batches")
    handle.stop()
    history = handle.history()
    result = handle.result()
    assert handle.status == "stopped" and handle.error is None
    assert list(history["batch_id"]) == list(range(len(history)))
    # Every committed row reached the memory table, and the history accounts for all of them.
    cut_rows = handle.cut_batch.rows if handle.cut_batch is not None else 0
    assert len(result) - cut_rows == history["num_input_rows"].sum() == 5 * len(history)
    assert sorted(result["value"]) == list(range(len(result)))
    assert handle.table_rows == len(result)
    assert str(history["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert (history["trigger_execution_ms"] > 0).all()
    assert history["watermark"].isna().all()  # no watermark defined: NaT, not epoch 0
    latest, total = handle.preview(3)
    assert total == len(result) and list(latest["value"]) == list(result["value"])[-3:]


def _stop_after_a_sink_write(handle) -> None:
    """Stop right after Spark wrote a batch to the memory sink and before it reported the batch.

    Spark writes a batch's rows to the memory sink, then commits the batch and reports its
    progress; the memory sink says which batch it holds last, so the test can stop the query
    inside that window (measured: the stop then cuts that batch 8 times out of 8).
    """
    sink = handle.query._jsq.streamingQuery().sink()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        latest, reported = sink.latestBatchId(), handle.query.lastProgress
        if latest.isDefined() and reported and latest.get() > reported["batchId"]:
            break
    handle.stop(grace=0)


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_a_batch_cut_by_stop_after_its_sink_write_is_named_and_counted(env, rate_stream, mode):
    df = rate_stream(rows_per_batch=3)
    query = df if mode == "append" else df.groupBy((df.value % 2).alias("k")).count()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        # Back to back (no trigger interval): a stop usually lands inside a batch, but not always.
        handle = env.start(query, f"cut_{mode}", output_mode=mode, poll_interval=0.1)
        wait_for(lambda: handle.progress.total >= 2, message="2 batches")
        _stop_after_a_sink_write(handle)
        history = handle.history()
        table = handle.result()
        cut = handle.cut_batch
        reported = history["num_output_rows"].sum() if mode == "append" else history["num_output_rows"].iloc[-1]
        # Whatever the stop cut, the rows in the table are the rows the history and the cut batch account for.
        assert handle.table_rows == len(table)
        if cut is None:
            assert len(table) == reported
            continue
        assert cut.batch_id == history["batch_id"].iloc[-1] + 1
        assert cut.rows == (3 if mode == "append" else 2)
        assert len(table) == (reported + cut.rows if mode == "append" else cut.rows)
        if mode == "append":  # the cut batch's rows are the ones no progress record accounts for
            assert sorted(table["value"]) == list(range(3 * (cut.batch_id + 1)))
        else:
            assert int(table["count"].sum()) == 3 * (cut.batch_id + 1)
        assert handle.table_note == (
            f"The stop cut batch {cut.batch_id} after its sink write: its {cut.rows} rows are in the memory table, "
            f"but Spark reported no progress for it, so the history ends at batch {cut.batch_id - 1}."
        )
        assert env.streams().set_index("name").loc[f"cut_{mode}", "cut_batch"] == cut.batch_id
        monitor = handle.monitor()
        assert "The stop cut batch" in monitor.header.value
        monitor.close()
        break
    else:
        pytest.fail("for 2 minutes, no stop right after a sink write cut a batch")


def test_history_keeps_every_batch_beyond_sparks_recent_list(env, spark, rate_stream):
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "2")
    try:
        handle = env.start(rate_stream(rows_per_batch=2), "fast", poll_interval=0.5)
        wait_for(lambda: handle.progress.total >= 20, timeout=120, message="20 batches (ten times the recent list)")
        # Ticks that found several new batches read them from the listener's reports, not
        # from Spark's recent list (~0.14 s a fetch): a run without them fetched on about one
        # tick in two (14 fetches in 86 batches of this stream).
        fetches = handle.poller.recent_fetches
        handle.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.numRecentProgressUpdates")
    assert len(handle.query.recentProgress) <= 2
    ids = list(handle.history()["batch_id"])
    assert len(ids) >= 20 and ids == list(range(len(ids)))
    assert fetches <= 3, f"the poller fetched Spark's recent list {fetches} times in {len(ids)} batches"


def test_a_failing_progress_read_is_not_taken_for_the_streams_end(env, rate_stream):
    # A network blip to a cluster or Spark Connect server, or a report the reader trips on:
    # the query runs on, so the stream must stay active (and stoppable), not be settled as stopped.
    handle = env.start(rate_stream(rows_per_batch=2), "flaky_reads", poll_interval=0.2)
    monitor = handle.monitor()
    try:
        wait_for(lambda: handle.progress.total >= 2, timeout=120, message="two batches")
        source = handle.poller.source

        def unreadable():
            raise ConnectionError("Error while sending or receiving")

        source.last_progress = unreadable  # the instance's read fails; the query is untouched
        wait_for(lambda: handle.poller.read_failures >= 2, timeout=30, message="two failed reads")
        assert handle.status == "active" and handle.query.isActive and not handle.finished
        assert env.streams().set_index("name").loc["flaky_reads", "status"] == "active"
        assert handle.progress_note.startswith("Reading this stream's progress failed")
        assert "ConnectionError: Error while sending or receiving" in handle.progress_note
        wait_for(lambda: "Reading this stream&#x27;s progress failed" in monitor.header.value, timeout=30,
                 text=lambda: f"the monitor's status line says so: {monitor.header.value!r}")
        # Whether it is active cannot be read either, for a moment: still not settled as ended.
        query = handle.query

        class Unreachable:
            @property
            def isActive(self):
                raise ConnectionError("Error while sending or receiving")

        handle.query = Unreachable()
        try:
            assert handle.status == "active" and handle.error is None
        finally:
            handle.query = query
        before = handle.progress.total
        del source.last_progress
        wait_for(lambda: handle.progress.total >= before + 2, timeout=60, message="batches again")
        assert handle.progress_note is None
        wait_for(lambda: "progress failed" not in monitor.header.value, timeout=30, message="the note gone")
    finally:
        handle.stop()
        monitor.close()
    assert handle.status == "stopped" and not handle.query.isActive
    ids = list(handle.history()["batch_id"])
    assert ids == list(range(len(ids)))  # none lost while the reads failed


def test_a_stop_that_spark_could_not_carry_out_leaves_the_stream_active_and_says_so(env, rate_stream):
    # The stop call itself fails (a Spark Connect server out of reach, a JVM call that breaks)
    # and the query runs on: the stream must not be settled as stopped while it still runs.
    handle = env.start(rate_stream(rows_per_batch=2), "unstoppable", poll_interval=0.2)
    wait_for(lambda: handle.progress.total >= 2, timeout=120, message="two batches")

    def failing_stop():
        raise ConnectionError("Error while sending or receiving")

    handle.query.stop = failing_stop  # this run's stop call fails; the query is untouched
    try:
        with pytest.raises(StreamStopError) as raised:
            handle.stop(0.0)
        assert str(raised.value) == (
            "stream 'unstoppable' could not be stopped: ConnectionError: Error while sending or receiving; "
            "it still runs (stop() again tries again)")
        assert raised.value._render_traceback_() == [f"StreamStopError: {raised.value}"]
        assert handle.status == "active" and handle.query.isActive and not handle.finished
        assert env.streams().set_index("name").loc["unstoppable", "status"] == "active"
        before = handle.progress.total
        wait_for(lambda: handle.progress.total >= before + 2, timeout=60, message="the history going on")
    finally:
        del handle.query.stop
    handle.stop(0.0)  # tries again
    assert handle.status == "stopped" and not handle.query.isActive and handle.finished
    ids = list(handle.history()["batch_id"])
    assert ids == list(range(len(ids)))


def test_a_fraction_of_a_minute_triggers_and_a_bad_grace_stops_nothing(env, rate_stream):
    # Spark refuses "0.5 minutes" (a fraction of any unit but seconds) when the writer is built;
    # the workbench hands it "30 seconds".
    handle = env.start(rate_stream(rows_per_batch=2), "half_minute", trigger="0.5 minutes")
    try:
        wait_for(lambda: handle.progress.total >= 1, timeout=120, message="the first batch")
        assert handle.trigger == "30 seconds"
        for grace in (None, "2", -1, float("nan")):
            with pytest.raises(ValueError, match=r"^grace must be a number of seconds from 0 to 86400 \(a day\), got "):
                handle.stop(grace)
            assert handle.status == "active" and handle.query.isActive
    finally:
        handle.stop(0.0)
    assert handle.status == "stopped"


def test_names_that_differ_only_in_case_never_share_a_memory_table(env, rate_stream):
    # Spark registers a memory sink's table under the query's name, and table names ignore case.
    upper = env.start(rate_stream(rows_per_batch=2), "Cased", trigger="0.2 seconds")
    try:
        wait_for(lambda: upper.progress.total >= 1, timeout=120, message="a batch of 'Cased'")
        with pytest.raises(ValueError) as refused:
            env.start(rate_stream(rows_per_batch=5), "cased")
        assert str(refused.value) == (
            "stream name 'cased' differs from the running query 'Cased' only in case: Spark's memory tables "
            "ignore case, so both would write one table; stop 'Cased' first (%stream stop Cased) or choose "
            "another name")
        assert upper.status == "active" and [h.name for h in env.handles()].count("cased") == 0
        console = env.start(rate_stream(rows_per_batch=1), "CASED", sink="console", console=lambda text: None)
        console.stop()  # a console stream keeps no table: nothing shared
    finally:
        upper.stop()
    # Nor does a query of the user's own to another sink, once its progress says so.
    foreign = rate_stream(rows_per_batch=1).writeStream.format("noop").queryName("CaSeD").start()
    try:
        wait_for(lambda: foreign.lastProgress is not None, timeout=120, message="a batch of the noop query")
        env.start(rate_stream(rows_per_batch=1), "cAsEd", sink="memory").stop()
    finally:
        foreign.stop()
    lower = env.start(rate_stream(rows_per_batch=5), "cased", trigger="0.2 seconds")
    try:
        wait_for(lambda: lower.progress.total >= 1, timeout=120, message="a batch of 'cased'")
        # The stopped 'Cased' lost its table to 'cased': it says so instead of returning the other's rows.
        with pytest.raises(ValueError, match="was replaced by the newer stream 'cased': Spark's memory tables ignore "
                                             "case"):
            upper.result()
        assert upper.replaced_by is lower and len(lower.result()) >= 5
    finally:
        lower.stop()


def test_idle_re_reports_are_not_batches(env, spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\n")
    df = spark.readStream.format("text").load(str(folder))
    # Spark re-reports an idle query under the next batch id with 0 rows, every
    # noDataProgressEventInterval (10 s by default; 1 s here, read when the query starts).
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "1s")
    try:
        handle = env.start(df, "idle")
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    wait_for(lambda: (handle.query.lastProgress or {}).get("batchId") == 1, timeout=40,
             message="Spark's idle re-report")
    time.sleep(1.0)  # at least one poll after it
    history = handle.history()
    handle.stop()
    assert list(history["batch_id"]) == [0] and list(history["num_input_rows"]) == [2]


def test_a_stream_before_its_first_batch_is_not_fetched_every_tick(env, spark, tmp_path):
    # An empty input folder: Spark re-reports "batch 0 next" (here every second) until a file
    # comes; one fetch of the recent list says nothing ran, and no tick fetches it again.
    folder = tmp_path / "in"
    folder.mkdir()
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "1s")
    try:
        handle = env.start(spark.readStream.format("text").load(str(folder)), "waiting", trigger="0.2 seconds")
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    try:
        wait_for(lambda: handle.query.lastProgress is not None, timeout=40, message="Spark's first idle report")
        time.sleep(3.0)  # a dozen ticks of the poller, several idle re-reports
        assert handle.poller.recent_fetches <= 2 and handle.progress.total == 0, handle.poller.recent_fetches
        (folder / "a.txt").write_text("one\n")
        wait_for(lambda: handle.progress.total == 1, message="the first batch")
        assert list(handle.history()["num_input_rows"]) == [1]
    finally:
        handle.stop()


def test_event_times_past_year_9999_keep_the_history_going(env, rate_stream):
    # Epoch milliseconds read as seconds: Spark's event times and watermark are in year
    # 55840, past what Python's datetime holds; the history and its notes carry on.
    events = rate_stream(rows_per_batch=5).withColumn(
        "ts", F.timestamp_seconds(F.col("value") * 1000 + F.lit(1_700_000_000_000)))
    counts = events.withWatermark("ts", "1 minute").groupBy(F.window("ts", "10 minutes")).count()
    handle = env.start(counts, "far_future", trigger="0.3 seconds")
    try:
        wait_for(lambda: handle.progress.total >= 3, message="3 batches")
        assert handle.poller.read_failures == 0 and handle.progress_note is None
        history = handle.history()
        assert history["event_time_max"].dt.year.eq(9999).all(), history["event_time_max"].tolist()
        assert history["watermark"].iloc[-1].year == 9999
    finally:
        handle.stop()


def test_console_sink_renders_each_batch_like_spark(env, rate_stream):
    texts: list[str] = []
    handle = env.start(rate_stream(rows_per_batch=4, partitions=1), "shown", sink="console",
                       rows=3, console=texts.append)
    wait_for(lambda: len(texts) >= 3, message="3 console batches")
    handle.stop()
    for batch_id, text in enumerate(texts[:3]):
        lines = text.splitlines()
        assert lines[:3] == ["-" * 43, f"Batch: {batch_id}", "-" * 43]
        assert lines[3].startswith("+") and "|value|" in lines[4].replace(" ", "")
        assert "only showing top 3 rows" in text
        values = [int(line.split("|")[2]) for line in lines[6:9]]
        assert values == [4 * batch_id + k for k in range(3)]
    # Tables cut at 3 of 4 rows: the batch's count all the same, not Spark's -1 for this foreachBatch sink.
    history = handle.history()
    assert len(history) >= 3 and history["num_output_rows"].tolist() == [4] * len(history), history["num_output_rows"]
    with pytest.raises(ValueError, match="console sink"):
        handle.result()


def test_a_stateful_console_stream_runs_on_when_its_tables_are_cut(env, rate_stream):
    # 100 groups over two partitions, 20 rows shown: Spark fails a stateful batch whose
    # foreachBatch function left a partition unread (its state not committed), as show() would.
    counts = rate_stream(rows_per_batch=200, partitions=2).groupBy((F.col("value") % 100).alias("k")).count()
    texts: list[str] = []
    handle = env.start(counts, "counted", sink="console", output_mode="complete", console=texts.append)
    try:
        wait_for(lambda: len(texts) >= 3 or handle.status != "active", message="3 console batches")
        assert handle.status == "active", handle.error
        assert "only showing top 20 rows" in texts[2] and "Batch: 2" in texts[2]
    finally:
        handle.stop()
    assert handle.error is None
    assert list(handle.history()["num_output_rows"][:3]) == [100, 100, 100]


def test_starting_an_active_name_replaces_the_stream(env, spark, rate_stream):
    first = env.start(rate_stream(), "same")
    second = env.start(rate_stream(), "same")
    assert first.status == "stopped" and second.status == "active"
    assert [q.name for q in spark.streams.active] == ["same"]
    assert workbench.stream("same") is second
    # The memory table is found by name: the old handle must not pass off the new rows as its own.
    assert first.replaced_by is second
    with pytest.raises(ValueError, match=r"replaced by a newer stream of the same name.*stream\('same'\)\.result"):
        first.result()
    with pytest.raises(ValueError, match="replaced by a newer stream"):
        first.preview(3)
    wait_for(lambda: len(second.history()) >= 1, message="a batch of the second stream")
    assert second.result()["value"].min() == 0
    second.stop()
    # A console stream of the name keeps no table: the memory stream's table is still its own.
    rows = len(second.result())
    third = env.start(rate_stream(), "same", sink="console", console=lambda _text: None)
    third.stop()
    assert second.replaced_by is third and len(second.result()) == rows and second.preview(2)[1] == rows


def test_a_query_started_outside_the_workbench_is_left_alone(env, spark, rate_stream):
    raw = rate_stream().writeStream.format("memory").queryName("raw").start()
    with pytest.raises(ValueError, match=r"named 'raw' that the workbench did not start is running; it is left "
                                         r"alone: stop it first \(workbench.stream\('raw'\).stop\(\)"):
        env.start(rate_stream(), "raw")
    assert raw.isActive and [q.name for q in spark.streams.active] == ["raw"]
    workbench.stream("raw").stop()  # asked for: now it stops, and the name is free
    assert not raw.isActive
    handle = env.start(rate_stream(), "raw")
    assert handle.status == "active" and handle.started_by == "workbench"
    handle.stop()


@pytest.mark.parametrize(
    "trigger, expected_batches", [("once", 1), ("available-now", None)]
)
def test_one_shot_triggers_end_by_themselves(env, rate_stream, trigger, expected_batches):
    handle = env.start(rate_stream(), f"t_{trigger.replace('-', '_')}", trigger=trigger)
    assert handle.wait_finished(60)
    assert handle.status == "stopped"
    batches = handle.history()
    assert len(batches) >= 1 and batches["num_input_rows"].iloc[0] == 10
    if expected_batches is not None:
        assert len(batches) == expected_batches


def test_processing_time_trigger_spaces_batches(env, rate_stream):
    handle = env.start(rate_stream(), "slow", trigger="1 second")
    wait_for(lambda: handle.progress.total >= 3, message="3 batches")
    handle.stop()
    starts = handle.history()["timestamp"]
    # Spark starts processing-time triggers on multiples of the interval (since the epoch),
    # at most one per interval: a late start (a loaded machine) shortens the gap to the next
    # one, but no two batches share a one-second slot.
    slots = starts.dt.floor("1s")
    assert slots.is_monotonic_increasing and slots.is_unique, list(starts)
    assert handle.trigger == "1 seconds"


def test_streams_table(env, rate_stream):
    a = env.start(rate_stream(), "a")
    wait_for(lambda: a.progress.total >= 1, message="a batch")
    env.start(rate_stream(), "b", trigger="once").wait_finished(60)
    table = workbench.streams()
    assert list(table.columns) == list(STREAM_COLUMNS)
    rows = table.set_index("name")
    assert rows.loc["a", "status"] == "active" and rows.loc["b", "status"] == "stopped"
    assert rows.loc["b", "trigger"] == "once" and rows.loc["a", "sink"] == "memory"
    assert rows.loc["a", "batches"] >= 1 and rows.loc["b", "last_batch_id"] == 0
    env.stop_all()
    assert set(env.streams()["status"]) == {"stopped"}


def test_state_columns_sum_over_operators(env, rate_stream):
    df = (
        rate_stream(rows_per_batch=20)
        .withWatermark("timestamp", "1 second")
        .dropDuplicates(["value"])
        .groupBy(F.window("timestamp", "2 seconds"))
        .count()
    )
    handle = env.start(df, "two_ops", output_mode="update")
    # Batches before the first watermark show none (Spark's epoch-0 placeholder); then it is
    # known. How many batches run before it depends on the machine's load, so wait for it.
    wait_for(
        lambda: handle.progress.total >= 3 and handle.progress.last().known_watermark is not None,
        message="3 batches, the last with a watermark",
    )
    handle.stop()
    per_batch = handle.history()
    per_op = handle.history(operators=True)
    assert per_op.groupby("batch_id")["operator_index"].count().eq(2).all()
    summed = per_op.groupby("batch_id")["state_rows_total"].sum()
    assert (summed.values == per_batch.set_index("batch_id")["state_rows_total"].values).all()
    assert per_batch["watermark"].isna().iloc[0] and per_batch["watermark"].notna().iloc[-1]


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"name": ""}, ValueError, "empty"),
        ({"name": "two words"}, ValueError, "'two words'"),
        ({"sink": "kafka"}, ValueError, "'kafka'"),
        ({"output_mode": "upsert"}, ValueError, "'upsert'"),
        ({"trigger": "soon"}, ValueError, "'soon'"),
        ({"trigger": "continuous 1 second"}, ValueError, "Spark's continuous mode keeps one task per source partition"),
        ({"rows": 0}, ValueError, "rows"),
        ({"poll_interval": 0}, ValueError, "poll_interval"),
        ({"checkpoint": " "}, ValueError, "checkpoint"),
    ],
)
def test_bad_arguments_fail_before_spark_starts_anything(env, spark, rate_stream, kwargs, error, fragment):
    arguments = {"name": "bad", **kwargs}
    with pytest.raises(error) as info:
        env.start(rate_stream(), **arguments)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert not spark.streams.active and not env.handles()


def test_non_streaming_inputs_are_refused(env, spark):
    with pytest.raises(ValueError, match="not streaming"):
        env.start(spark.range(3), "static")
    with pytest.raises(TypeError, match="streaming pyspark DataFrame"):
        env.start([1, 2, 3], "plain")
    assert not spark.streams.active


def test_spark_refusal_is_one_readable_line(env, spark, rate_stream):
    counts = rate_stream().groupBy(F.window("timestamp", "10 seconds")).count()
    with pytest.raises(StreamStartError) as info:
        env.start(counts, "no_watermark", output_mode="append")
    message = str(info.value)
    assert "\n" not in message and "Py4J" not in message
    assert "not supported for streaming aggregations without watermark" in message
    assert "STREAMING_OUTPUT_MODE" in info.value.details
    assert not spark.streams.active


def test_a_cause_without_a_message_is_named_by_its_class_and_where_it_was_thrown():
    # Spark says "terminated with exception: null" for such a cause; the line says what it was.
    line, trace = describe_cause("java.lang.NullPointerException", None,
                                 ["org.apache.spark.sql.execution.streaming.Joiner.next(Joiner.scala:12)"])
    assert line == ("NullPointerException without a message, thrown at "
                    "org.apache.spark.sql.execution.streaming.Joiner.next(Joiner.scala:12)")
    assert trace == "java.lang.NullPointerException\n\tat org.apache.spark.sql.execution.streaming.Joiner.next(Joiner.scala:12)"
    assert describe_cause("java.io.IOException", "[DISK] disk full SQLSTATE: 58030", [])[0] == "IOException: disk full"


def test_failed_query_reports_the_users_error(env, spark, rate_stream):
    @F.udf("long")
    def check(value):
        if value >= 15:
            raise ValueError(f"value {value} is too big")
        return value

    handle = env.start(rate_stream(rows_per_batch=10).select(check("value").alias("v")), "fails")
    assert handle.wait_finished(60)
    assert handle.status == "failed"
    assert handle.error.startswith("ValueError: value 1") and handle.error.endswith("is too big")
    assert "\n" not in handle.error and len(handle.error_details) > len(handle.error)
    # The JVM's trace of the cause is one attribute away (Spark's own message carries only its text).
    assert "\n\nCaused by: org.apache.spark.api.python.PythonException" in handle.error_details
    assert "\tat org.apache.spark." in handle.error_details
    wait_for(lambda: not handle.poller.running, message="the poller to end")
    row = env.streams().set_index("name").loc["fails"]
    assert row["status"] == "failed" and row["error"] == handle.error
    assert list(handle.history()["batch_id"]) == [0]  # batch 0 succeeded before the failure


def test_an_error_spark_raises_while_the_workbench_stops_a_healthy_query_is_a_stop(env, rate_stream):
    # A user's stop interrupts the running batch; Spark counts its own interruptions as a
    # clean stop, not every exception they set off. The user asked for the stop: it is one,
    # and what Spark raised is one attribute away.
    running, release = threading.Event(), threading.Event()

    def slow(batch_df, batch_id):
        if batch_id >= 1:
            running.set()
            release.wait(60)
            raise RuntimeError(f"batch {batch_id} raised while its query was being stopped")

    handle = env.start(rate_stream(), "stopped_mid_batch", foreach_batch=slow)
    assert running.wait(60), "batch 1 never started"
    stopper = handle.begin_stop(0.0)
    wait_for(lambda: not handle.query.isActive, 30, message="Spark to take the stop")
    release.set()
    stopper.wait()
    assert handle.status == "stopped" and handle.error is None
    assert handle.error_details.startswith("Spark reported an error while the query was being stopped")
    assert "raised while its query was being stopped" in handle.error_details
    assert list(handle.history()["batch_id"]) == [0]


def test_stop_all_leaves_no_query_or_thread(env, spark, rate_stream):
    handles = [env.start(rate_stream(), f"s{i}") for i in range(3)]
    wait_for(lambda: all(h.progress.total for h in handles), message="every stream's first batch")
    workbench.stop_all()
    assert not spark.streams.active
    assert all(h.status == "stopped" and not h.poller.running for h in handles)
    assert not [t for t in live_threads() if t.name.startswith("workbench-poller")]


@pytest.mark.kernel
def test_a_checkpoint_written_into_after_close_is_removed_again():
    # Spark's state store maintenance (here every 2 s, a snapshot every 2 versions) writes a
    # stopped query's pending RocksDB snapshot into its checkpoint after the workbench was
    # closed and removed the folder; the next stream's start and the process's end remove it.
    script = textwrap.dedent(
        """
        import workbench
        from pyspark.sql import functions as F
        from workbench.spark import current_env, new_env
        from tests.helpers import wait_for
        spark = workbench.session(**{"spark.sql.streaming.stateStore.maintenanceInterval": "2s",
                                     "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2"})
        rate = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).load()
        counts = rate.withWatermark("timestamp", "5 seconds").groupBy(F.window("timestamp", "2 seconds")).count()
        handle = workbench.start(counts, "counts", trigger="50 ms", output_mode="update")
        wait_for(lambda: handle.progress.total >= 12, 120, message="12 batches")
        first = current_env().temp_dir
        new_env()  # closes the workbench: its stream stops and its folder goes
        import time
        deadline = time.monotonic() + 30
        while not first.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if not first.exists():
            # Whether a snapshot is still pending when the query stops depends on timing:
            # when Spark's maintenance had nothing left to write, write as it would.
            (first / "checkpoints" / "counts" / "state" / "0" / "0").mkdir(parents=True)
            print("written by the test", flush=True)
        print("came back", first, flush=True)
        time.sleep(4)  # two more maintenance runs: the stopped query's stores are unloaded
        workbench.start(rate, "next", trigger="1 second")
        print("after the next start", first.exists(), flush=True)
        print("second", current_env().temp_dir, flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.rsplit(" ", 1) for line in done.stdout.strip().splitlines()[-3:])
    first, second = Path(lines["came back"]), Path(lines["second"])
    assert lines["after the next start"] == "False"
    assert not first.exists() and not second.exists()


_SCRIPT_END = "-- the script's last line ran --"

_CLEAN_EXIT_SCRIPTS = {
    "session only": """
        import workbench
        spark = workbench.session()
        """,
    # A replay step runs Python workers, which keep a connection to pyspark's accumulator
    # server open until the JVM ends. stop_all() stops a stream that is still running.
    "running stream, replay panel, stop_all": """
        import workbench
        from tests.helpers import wait_for
        spark = workbench.session()
        df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
        handle = workbench.start(df, "n", trigger="1 second")
        panel = workbench.replay_panel(workbench.scenarios.guide_word_count(), monitor=False)
        panel.step(); panel.step()
        wait_for(lambda: len(handle.history()) > 0, 120, message="a batch of the running stream")
        assert handle.status == "active", handle.status
        workbench.stop_all()
        assert handle.status != "active", handle.status
        """,
    # Nothing stopped: the interpreter ends with a back-to-back stream running and a
    # stepped replay panel open.
    "running stream, replay panel, nothing stopped": """
        import workbench
        from tests.helpers import wait_for
        spark = workbench.session()
        df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
        handle = workbench.start(df, "n")
        panel = workbench.replay_panel(workbench.scenarios.guide_word_count(), monitor=False)
        panel.step(); panel.step()
        wait_for(lambda: len(handle.history()) > 1, 120, message="batches of the running stream")
        assert handle.status == "active", handle.status
        """,
}


@pytest.mark.kernel
@pytest.mark.parametrize("script", list(_CLEAN_EXIT_SCRIPTS.values()), ids=list(_CLEAN_EXIT_SCRIPTS))
def test_a_plain_script_exits_cleanly_and_silently(script):
    # The script ends with whatever it left running; the interpreter's exit stops it.
    end = ("import sys; from workbench.spark import current_env; print(current_env().temp_dir, flush=True); "
           f"print({_SCRIPT_END!r}, flush=True); print({_SCRIPT_END!r}, file=sys.stderr, flush=True)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script) + end],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    # Spark's start-up lines come before the end; nothing may come after it (interpreter exit).
    before, after = done.stdout.split(_SCRIPT_END)[-2:]
    assert after.strip() == ""
    assert done.stderr.split(_SCRIPT_END)[-1].strip() == "", done.stderr[-2000:]
    # The workbench's temporary folder (checkpoints, results) went with the interpreter.
    temp = Path(before.strip().splitlines()[-1])
    assert temp.name.startswith("workbench-") and not temp.exists()


def test_a_second_interrupt_while_an_interrupted_start_is_undone_is_one_line_and_the_stop_goes_on():
    # The undo's own logic (a real kernel interrupts a real start in test_interrupts): a start
    # and a stop that each take a while, and Ctrl-C in both. The second interrupt reached
    # query.stop() inside its Py4J call and escaped as a raw KeyboardInterrupt.
    import signal

    from workbench.spark.query_start import _start_writer
    from workbench.spark.stopping import StreamInterrupted

    starting, stopping, release = threading.Event(), threading.Event(), threading.Event()
    stopped = threading.Event()

    class Query:
        def stop(self):
            stopping.set()
            release.wait(30)
            stopped.set()

    class Writer:
        def start(self):
            starting.set()
            time.sleep(0.5)
            return Query()

    def interrupt(when: threading.Event) -> None:
        when.wait(30)
        time.sleep(0.1)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def twice() -> None:
        interrupt(starting)  # while the start runs: it is waited for, then undone
        interrupt(stopping)  # while the undo stops the query

    assert threading.current_thread() is threading.main_thread()
    threading.Thread(target=twice, daemon=True).start()
    with pytest.raises(StreamInterrupted) as caught:
        _start_writer(Writer(), "twice", None)
    assert str(caught.value) == ("interrupted: stream 'twice' was not started "
                                 "(its half-started query stops in the background)")
    assert not stopped.is_set()
    release.set()
    wait_for(stopped.is_set, timeout=10, message="the stop to go on and end")
    wait_for(lambda: not [t for t in live_threads() if "twice" in t.name], timeout=10, message="the stop's thread to end")


@pytest.mark.spark
def test_an_interrupt_after_spark_started_the_query_and_before_it_has_a_handle_stops_it(env, spark, rate_stream,
                                                                                       monkeypatch):
    # Ctrl-C landing while the handle is built (it reads the query's ids over Py4J): the query
    # ran on with nobody to stop it.
    from workbench.spark import query_start
    from workbench.spark.stopping import StreamInterrupted

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(query_start, "StreamHandle", interrupted)
    with pytest.raises(StreamInterrupted, match=r"^interrupted: stream 'unhandled' was not started "
                                                r"\(stopped the half-started query\)$"):
        env.start(rate_stream(rows_per_batch=2), "unhandled")
    assert "unhandled" not in [q.name for q in spark.streams.active]
    monkeypatch.undo()
    handle = env.start(rate_stream(rows_per_batch=2), "unhandled")  # the same name starts as usual
    handle.stop()
