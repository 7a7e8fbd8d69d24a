"""Watching queries the workbench did not start: the session-wide listener, back-fill, handles, listing.

The recorder's bookkeeping is pure and tested with scripted events; everything else runs on
the real local session with plain ``df.writeStream...start()`` queries, as a user writes them.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import workbench
from workbench.progress import ProgressHistory
from workbench.progress.diagnosis import OutputSummary
from workbench.progress.recorder import QueryRecorder
from workbench.spark.watch import sink_kind
from workbench.views.monitor_header import no_output_reason, summary_text
from tests.cluster_support import SPARK_PROCESSES_GROUP
from tests.helpers import wait_for


def batch(i: int, run: str = "r", rows: int = 1) -> dict:
    return {"id": "q", "runId": run, "name": "n", "batchId": i, "numInputRows": rows, "durationMs": {"addBatch": 1}}


# -- pure -------------------------------------------------------------------------------------------------


def test_recorder_keeps_every_batch_of_a_run_it_saw_start():
    recorder = QueryRecorder()
    recorder.started("q", "r", "n", "2024-01-01T00:00:00.000Z")
    for i in range(3):
        recorder.progress(batch(i))
    recorder.progress({"id": "q", "runId": "r", "batchId": 3, "numInputRows": 0, "durationMs": {}})  # idle
    record = recorder.get("r")
    assert [r.batch_id for r in record.history.records()] == [0, 1, 2]
    assert record.complete and record.missing_note is None
    recorder.terminated("r", "boom")
    assert record.ended and record.exception == "boom"


def test_a_released_runs_newest_reports_are_kept_for_its_owner_and_dropped_after_it_ended():
    from workbench.progress.recorder import HEARD_ENDED, HEARD_LIMIT

    recorder = QueryRecorder()
    recorder.release("r", wake=lambda: None)
    recorder.release("quiet")  # released without wake: its owner reads Spark alone
    for i in range(HEARD_LIMIT + 3):
        recorder.progress(batch(i))
        recorder.progress(batch(i, run="quiet"))
    recorder.progress({"id": "q", "runId": "r", "batchId": HEARD_LIMIT + 3, "numInputRows": 0,
                       "durationMs": {}})  # an idle re-report is no batch
    assert [raw["batchId"] for raw in recorder.heard("r")] == list(range(3, HEARD_LIMIT + 3))
    assert recorder.heard("quiet") == [] and recorder.heard("never") == []
    recorder.terminated("r")
    assert len(recorder.heard("r")) == HEARD_LIMIT  # the owner's last read comes after the end
    for n in range(HEARD_ENDED):
        recorder.release(f"later{n}", wake=lambda: None)
        recorder.progress(batch(0, run=f"later{n}"))
        recorder.terminated(f"later{n}")
    assert recorder.heard("r") == [] and len(recorder.heard(f"later{HEARD_ENDED - 1}")) == 1


def test_a_run_that_ended_before_its_owner_took_it_over_does_not_keep_its_owner():
    # A query that fails at once: Spark's listener reports its end before start() returns
    # and the owner (the stream's poller) takes it over. Nothing would ever drop its waker.
    import gc
    import weakref

    class Owner:
        def wake(self):
            pass

    recorder = QueryRecorder()
    recorder.started("q", "failed_at_once", "n")
    recorder.terminated("failed_at_once", "boom")
    owner = Owner()
    gone = weakref.ref(owner)
    recorder.release("failed_at_once", wake=owner.wake)
    del owner
    gc.collect()
    assert gone() is None, "the recorder keeps the owner of a run that has ended"


def test_attaching_a_history_merges_recent_and_listened_batches_and_says_what_is_missing():
    recorder = QueryRecorder()
    recorder.progress(batch(150))  # heard after the workbench loaded; the run started long before
    recorder.progress(batch(151))
    history = ProgressHistory()
    record = recorder.attach("q", "r", "n", history, recent=[batch(i) for i in range(52, 151)], recent_limit=99)
    assert [r.batch_id for r in history.records()] == list(range(52, 152))
    assert not record.complete
    assert record.missing_note.startswith("batches before 52 are missing")
    recorder.progress(batch(152))  # later batches land in the attached history
    assert history.last_batch_id == 152


def test_a_short_recent_list_is_the_whole_run():
    record = QueryRecorder().attach("q", "r", None, ProgressHistory(), recent=[batch(0), batch(1)], recent_limit=99)
    assert record.complete and record.missing_note is None


def test_ended_runs_are_forgotten_beyond_the_limit():
    recorder = QueryRecorder(max_ended=2)
    for run in ("a", "b", "c"):
        recorder.started("q", run, None)
        recorder.terminated(run)
    recorder.started("q", "live", None)
    assert [r.run_id for r in recorder.runs()] == ["b", "c", "live"]


@pytest.mark.parametrize(
    ("description", "kind"),
    [("FileSink[file:/tmp/out]", "file"), ("MemorySink", "memory"),
     ("org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink@1", "foreach_batch"),
     ("org.apache.spark.sql.execution.streaming.ConsoleTable$@2", "console"),
     ("DeltaSink[s3://b/t]", "delta"), ("SomethingElse", "SomethingElse"), (None, "unknown")],
)
def test_sink_kind(description, kind):
    assert sink_kind(description) == kind


# -- real Spark ------------------------------------------------------------------------------------------


def parquet_query(spark, rate_stream, tmp_path, name="files", rows=3):
    return (
        rate_stream(rows_per_batch=rows).writeStream.format("parquet").queryName(name)
        .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="0.3 seconds").start()
    )


@pytest.mark.spark
def test_a_parquet_query_started_after_loading_is_watched_from_batch_0(env, spark, rate_stream, tmp_path):
    query = parquet_query(spark, rate_stream, tmp_path)
    wait_for(lambda: query.lastProgress and query.lastProgress["batchId"] >= 3, 60, message="four batches")
    handle = workbench.watch("files")
    assert handle.query.id == query.id and handle.started_by == "user"
    assert (handle.sink, handle.output_mode, handle.trigger) == ("file", "append", "0.3 seconds")
    assert handle.sink_description.startswith("FileSink[") and handle.history_note is None
    history = handle.history()
    assert list(history["batch_id"]) == list(range(len(history)))  # complete from batch 0
    assert (history["num_input_rows"] == 3).all()
    # The same handle whichever way it is asked for; listed with who started it.
    assert workbench.watch(query) is handle and workbench.watch(str(query.id)) is handle
    assert workbench.stream("files") is handle
    row = workbench.streams().set_index("name").loc["files"]
    assert (row["started_by"], row["status"], row["sink"]) == ("user", "active", "file")
    with pytest.raises(ValueError, match="writes to the file sink, which keeps no table"):
        handle.preview(3)
    # The monitor works on it; watching never stopped the query.
    monitor = handle.monitor()
    try:
        wait_for(lambda: handle.progress.total >= len(history) + 2, 60, message="more batches while watched")
    finally:
        monitor.close()
    assert query.isActive
    handle.stop()  # asked for: now it stops
    assert not query.isActive and handle.status == "stopped" and handle.wait_finished(10)


def why_no_output_of(handle) -> str | None:
    """"Why no output?" for a watched handle's history so far, as the monitor words it."""
    summary = OutputSummary().add(handle.progress.records())
    return no_output_reason(handle, summary, [], min_batches=3, quiet_time=timedelta(seconds=10))


@pytest.mark.spark
def test_a_watched_stream_stream_join_is_not_called_an_aggregation(env, spark, rate_stream):
    from pyspark.sql import functions as F

    # Keys never match, so an inner join outputs nothing, and needs no watermark to output what matches.
    left = rate_stream(rows_per_batch=2).select(F.col("value").alias("k"), F.col("timestamp").alias("lt"))
    right = rate_stream(rows_per_batch=2).select((F.col("value") + 100_000).alias("k"), F.col("timestamp").alias("rt"))
    joined = left.withWatermark("lt", "2 seconds").alias("l").join(
        right.withWatermark("rt", "2 seconds").alias("r"),
        F.expr("l.k = r.k AND lt BETWEEN rt - INTERVAL 1 SECOND AND rt + INTERVAL 1 SECOND"))
    query = joined.writeStream.format("memory").queryName("watched_join").trigger(processingTime="0.3 seconds").start()
    try:
        handle = workbench.watch(query)
        assert handle.plan is not None and not handle.plan.has_aggregation and handle.plan.watermarks == 2
        wait_for(lambda: handle.progress.total >= 3, 60, message="three batches")
        assert handle.progress.records()[-1].operators[0].operator_name == "symmetricHashJoin"
        assert why_no_output_of(handle) is None
    finally:
        query.stop()


@pytest.mark.spark
def test_a_watched_foreach_batch_aggregation_does_not_claim_nothing_was_output(env, spark, rate_stream):
    from pyspark.sql import functions as F

    counted: list[int] = []
    counts = (rate_stream(rows_per_batch=2).withWatermark("timestamp", "0 seconds")
              .groupBy(F.window("timestamp", "2 seconds")).count())
    query = (counts.writeStream.foreachBatch(lambda frame, _: counted.append(frame.count()))
             .outputMode("append").trigger(processingTime="0.3 seconds").start())
    try:
        handle = workbench.watch(query)
        assert handle.plan.has_aggregation and handle.plan.has_watermark  # read from the running query
        wait_for(lambda: sum(counted) >= 2 and handle.progress.total >= 3, 60, message="windows written")
        records = handle.progress.records()
        assert all(r.num_output_rows is None for r in records)  # Spark reports -1: the sink cannot count
        assert why_no_output_of(handle) is None
        text = summary_text(handle, "active", None, OutputSummary().add(records), records[-1])
        assert "rows out unknown" in text and "0 rows out" not in text
    finally:
        query.stop()


@pytest.mark.spark
def test_the_streams_panel_lists_a_plain_query_without_being_asked(env, spark, rate_stream):
    # The panel and its status item listed only streams the workbench had started or watched:
    # a plain writeStream...start() appeared after `%stream list` had watched it, as a side effect.
    from workbench.views.streams_panel import StreamsPublisher

    from workbench.testing import MemoryStream, StreamTest

    publisher = StreamsPublisher(lambda: env, thread=False)
    assert publisher.snapshot()["streams"] == []
    words = MemoryStream(spark, "word string")
    query = rate_stream(rows_per_batch=3).writeStream.format("noop").queryName("plain").start()
    try:
        with StreamTest(words.df) as test:  # a test's own query runs in the session too: not listed
            test.add(words, [("owl",)]).process()
            runs = {str(query.runId), str(test._query.runId)}  # the test's query runs on between its steps
            wait_for(lambda: {run.run_id for run in env.watcher.recorder.runs()} >= runs, 60,
                     message="the listener hearing of both starts")
            [row] = publisher.snapshot()["streams"]
        assert (row["name"], row["status"], row["run_id"]) == ("plain", "active", str(query.runId))
        assert [row["name"] for row in publisher.snapshot()["streams"]] == ["plain"]
    finally:
        query.stop()
        publisher.close()
        words.close()
    assert workbench.stream("plain").wait_finished(10)


@pytest.mark.spark
def test_a_memory_query_watched_by_its_object_reads_its_table(env, spark, rate_stream):
    query = rate_stream(rows_per_batch=3).writeStream.format("memory").queryName("own_table").start()
    try:
        wait_for(lambda: query.lastProgress and query.lastProgress["batchId"] >= 1, 60, message="two batches")
        handle = workbench.watch(query)  # the object, not its name
        assert handle.spark is spark and handle.sink == "memory"
        assert len(handle.result()) >= 6 and handle.preview(2)[1] >= 6
        # Its table's rows are counted from batch 0, those it ran before it was watched too.
        wait_for(lambda: handle.table_rows == 3 * handle.progress.total, 10,
                 text=lambda: f"{handle.table_rows} rows counted for {handle.progress.total} batches of 3")
    finally:
        query.stop()
    assert handle.status == "stopped"


@pytest.mark.spark
def test_a_query_started_before_the_listener_is_back_filled_and_says_so(env, spark, rate_stream, tmp_path):
    # Spark keeps only its last N progress reports; with N = 4 the early batches are gone.
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "4")
    env._watcher.remove()  # as if the workbench had not loaded yet
    env._watcher = None
    try:
        query = parquet_query(spark, rate_stream, tmp_path, name="early")
        wait_for(lambda: query.lastProgress and query.lastProgress["batchId"] >= 6, 90, message="seven batches")
    finally:
        workbench.session()  # loading the workbench: the listener is installed again
    assert env._watcher is not None and env._watcher.listening
    try:
        handle = env.watch("early")
        first = int(handle.history()["batch_id"].iloc[0])
        assert first > 0
        assert handle.history_note.startswith(f"batches before {first} are missing")
        batches = list(handle.history()["batch_id"])
        assert batches == list(range(first, first + len(batches)))  # no gap after the back-fill
        wait_for(lambda: handle.progress.total > len(batches), 60, message="later batches")
    finally:
        spark.conf.unset("spark.sql.streaming.numRecentProgressUpdates")
        query.stop()


@pytest.mark.spark
def test_a_watched_runs_history_has_one_writer_so_a_monitor_loses_no_batch(env, spark, rate_stream):
    # The listener's recorder and the handle's poller both wrote a watched run's history. A
    # history tells its subscribers of each append after releasing its lock, so the monitor
    # could hear of batch k + 1 from one writer before it heard of batch k from the other,
    # and then dropped batch k for good. Here the poller's news of batch k is held (by a
    # subscriber that runs before the monitor's) until the recorder has been given Spark's
    # report of batch k + 1, as the session's listener gives it.
    import threading

    from workbench.spark.progress_source import progress_json
    from workbench.spark.watch import SessionWatcher, watched_handle
    from workbench.views.monitor import StreamMonitor

    query = (rate_stream(rows_per_batch=10).writeStream.format("noop").queryName("one_writer")
             .trigger(processingTime="0.2 seconds").start())
    watcher = SessionWatcher(spark, QueryRecorder())  # no listener of its own: the test is its listener
    handle = watched_handle(spark, query, watcher, poll_interval=0.2, history_cap=1_000)
    armed, told, failures = threading.Event(), [], []

    def report_of(batch_id: int) -> dict | None:
        return next((raw for raw in map(progress_json, query.recentProgress) if raw["batchId"] == batch_id), None)

    def listener_is_told_of_the_next_batch_first(records) -> None:
        if not armed.is_set() or told:  # until then the poller is the only one to write
            return
        try:
            after = records[-1].batch_id + 1
            raw = wait_for(lambda: report_of(after), 60, message=f"Spark's report of batch {after}")
            told.append(after)
            watcher.recorder.progress(raw)
        except BaseException as exc:  # a failed wait must not end the poller's thread
            failures.append(exc)

    handle.progress.subscribe(listener_is_told_of_the_next_batch_first)
    monitor = StreamMonitor(handle, interval=3600)
    try:
        armed.set()
        wait_for(lambda: told or failures, 60, message="a batch the poller read after the monitor opened")
        assert not failures, failures
        wait_for(lambda: (handle.progress.last_batch_id or -1) > told[0], 60, message="the batch after it")
        handle.stop()
        last = handle.progress.last_batch_id
        wait_for(lambda: f"(last {last})" in monitor.summary(), 30, message=f"the monitor taking batch {last}")
        ids = [r.batch_id for r in handle.progress.records()]
        assert ids == list(range(ids[0], last + 1))
        assert f"{len(ids)} batches (last {last}), {10 * len(ids):,} rows in" in monitor.summary()
    finally:
        monitor.close()
        handle.stop()


@pytest.mark.spark
def test_unknown_or_wrong_watch_targets_are_one_line(env, spark, rate_stream, tmp_path):
    query = parquet_query(spark, rate_stream, tmp_path, name="present")
    try:
        with pytest.raises(ValueError, match=r"no active streaming query named or with id 'absent' "
                                             r"\(active queries: 'present' \(id "):
            workbench.watch("absent")
        with pytest.raises(TypeError, match="watch\\(\\) takes a StreamingQuery, or the name or id of an active "
                                            "streaming query, got int"):
            workbench.watch(42)
    finally:
        query.stop()


CONNECT_SCRIPT = """
import json, sys, time
import workbench
spark = workbench.session()
out, ckpt = sys.argv[1], sys.argv[2]
query = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()
         .writeStream.format("parquet").queryName("files").option("path", out)
         .option("checkpointLocation", ckpt).trigger(processingTime="0.5 seconds").start())
deadline = time.time() + 90
while (not query.lastProgress or query.lastProgress["batchId"] < 2) and time.time() < deadline:
    time.sleep(0.2)
from workbench.spark import current_env
# The Streams panel's way in: a session without the listener is asked for its new queries.
started = [h.name for h in current_env().watch_started()]
handle = workbench.watch("files")
seen = handle.progress.total
while handle.progress.total < seen + 2 and time.time() < deadline:
    time.sleep(0.2)
listed = workbench.streams().set_index("name").loc["files"]
handle.stop()
history = handle.history()
print(json.dumps({
    "kind": type(spark).__module__, "sink": handle.sink, "started_by": str(listed["started_by"]),
    "batches": history["batch_id"].tolist(), "rows": history["num_input_rows"].tolist(),
    "note": handle.history_note, "status": handle.status, "active": len(spark.streams.active),
    "started": started,
}))
"""


@pytest.mark.spark
@pytest.mark.cluster
@pytest.mark.xdist_group(SPARK_PROCESSES_GROUP)
def test_watching_a_plain_parquet_query_on_spark_connect(spark_processes, tmp_path):
    """On the suite's Spark Connect server (``tests.cluster_support``), as a user's notebook reaches one."""
    import json
    import subprocess
    import sys

    from tests.cluster_support import REPO, user_env

    environment = user_env(SPARK_REMOTE=spark_processes.start_connect(), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", CONNECT_SCRIPT, str(tmp_path / "out"), str(tmp_path / "ckpt")],
                          capture_output=True, text=True, timeout=300, env=environment, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["kind"].startswith("pyspark.sql.connect")
    assert (report["sink"], report["started_by"], report["status"], report["active"]) == ("file", "user", "stopped", 0)
    # The Streams panel lists it without a %stream list first.
    assert report["started"] == ["files"], report
    # Back-filled from Spark's recent reports: complete from batch 0, nothing said missing.
    assert report["batches"][:4] == [0, 1, 2, 3] and report["note"] is None
    assert set(report["rows"]) == {3}


CONNECT_OWN_SESSION = """
import json, os, time
from pyspark.sql import SparkSession
import workbench
spark = (SparkSession.builder.remote(os.environ["SPARK_REMOTE"])
         .config("spark.sql.session.timeZone", "America/New_York").getOrCreate())
query = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()
         .groupBy((__import__("pyspark.sql.functions").sql.functions.col("value") % 2).alias("k")).count()
         .writeStream.format("memory").queryName("own_counts").outputMode("complete")
         .trigger(processingTime="0.5 seconds").start())
handle = workbench.watch(query)  # at once, before its first batch
sink_at_watch = handle.sink
deadline = time.time() + 90
while handle.progress.total < 3 and time.time() < deadline:
    time.sleep(0.2)
listed = workbench.streams().set_index("name").loc["own_counts"]
report = {"zone": spark.conf.get("spark.sql.session.timeZone"), "sink_at_watch": sink_at_watch,
          "sink": handle.sink, "mode": listed["output_mode"], "table_rows": handle.table_rows,
          "result_rows": len(handle.result()), "batches": handle.progress.total}
handle.stop()
print(json.dumps(report))
"""


@pytest.mark.spark
@pytest.mark.cluster
@pytest.mark.xdist_group(SPARK_PROCESSES_GROUP)
def test_watching_a_query_of_the_users_own_connect_session_at_once(spark_processes, tmp_path):
    """A query watched right after .start() on a Spark Connect session the user built."""
    import json
    import subprocess
    import sys

    from tests.cluster_support import REPO, user_env

    environment = user_env(SPARK_REMOTE=spark_processes.start_connect(), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", CONNECT_OWN_SESSION], capture_output=True, text=True, timeout=300,
                          env=environment, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # The user's session is adopted as it is (it was rebuilt with the workbench's settings, then
    # the watch failed), and the sink, unknown before the first batch, comes with it.
    assert report["zone"] == "America/New_York" and report["batches"] >= 3
    assert (report["sink_at_watch"], report["sink"], report["result_rows"]) == ("unknown", "memory", 2), report
    # Spark Connect does not tell the output mode: neither is the complete table's size summed.
    assert (report["mode"], report["table_rows"]) == ("unknown", None), report

