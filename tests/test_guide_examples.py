"""The programming guide's Python examples, pasted as a user would, in a real IPython shell with the workbench.

Each case is the guide's code with only what a notebook needs changed: a local source
instead of a cluster's (a socket server thread, a temporary folder, rate sources), and the
query itself as the cell's last line instead of ``query.awaitTermination()`` (which would
block the kernel; docs/watching.md says so). Each asserts what the user sees: the line and the
monitor under the cell, the result, or a one-line refusal with its hint. The ``env``
fixture checks that nothing is left running afterwards.
"""

from __future__ import annotations

import socket
import textwrap
import threading

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from tests.helpers import wait_for
from tests.test_magics import shell  # noqa: F401  (the module's IPython shell with the workbench loaded)

pytestmark = pytest.mark.spark

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def user(shell, env, spark):
    """The shell as a fresh notebook: `spark` defined, the workbench loaded, views closed after."""
    shell.user_ns["spark"] = spark
    magics = shell.magics_manager.registry["StreamMagics"]
    yield shell
    for view in list(magics.views.values()):
        view.close() if hasattr(view, "close") else None
    magics.views.clear()
    magics.cell_queries.clear()


def run(shell, code: str) -> None:
    """Run a plain cell; fail the test with the cell's own error if it raises."""
    result = shell.run_cell(textwrap.dedent(code))
    result.raise_error()


def widgets_in(captured) -> int:
    return sum(WIDGET_VIEW in o.data for o in captured.outputs)


class LineServer:
    """A local TCP server standing in for the guide's `nc -lk 9999`: sends lines to each client."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="guide-line-server", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(0.2)
        clients = []
        while not self._stop.is_set():
            try:
                client, _ = self.server.accept()
            except (socket.timeout, OSError):
                continue
            client.sendall("".join(line + "\n" for line in self.lines).encode())
            clients.append(client)
        for client in clients:
            client.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.server.close()


def test_quick_example_socket_word_count(user, env):
    server = LineServer(["apache spark", "apache hadoop"])
    try:
        with capture_output() as captured:
            user.run_cell_magic("stream", "wordcount", textwrap.dedent(f"""\
                from pyspark.sql.functions import explode
                from pyspark.sql.functions import split

                # Create DataFrame representing the stream of input lines from connection to localhost:9999
                lines = spark \\
                    .readStream \\
                    .format("socket") \\
                    .option("host", "localhost") \\
                    .option("port", {server.port}) \\
                    .load()

                # Split the lines into words
                words = lines.select(
                   explode(
                       split(lines.value, " ")
                   ).alias("word")
                )

                # Generate running word count
                wordCounts = words.groupBy("word").count()

                # Start running the query that prints the running counts to the console
                query = wordCounts \\
                    .writeStream \\
                    .outputMode("complete") \\
                    .format("console") \\
                    .start()

                query
                """))
        assert "the cell's code started this query itself (console sink); the workbench watches it" \
            in captured.stdout
        assert widgets_in(captured) == 1
        handle = env.get("wordcount")
        assert handle.started_by == "cell" and handle.output_mode == "complete"
        wait_for(lambda: handle.progress.total >= 1 and handle.history()["num_input_rows"].sum() == 2, 90,
                 message="the two lines read from the socket")
        assert user.user_ns["query"].isActive
        user.run_line_magic("stream", "stop wordcount")
        assert handle.status == "stopped"
    finally:
        server.close()


def test_csv_folder_source_into_the_memory_sink(user, env, tmp_path):
    folder = tmp_path / "people"
    folder.mkdir()
    (folder / "a.csv").write_text("ann;31\nbob;45\n")
    user.user_ns["folder"] = str(folder)
    run(user, """
        from pyspark.sql.types import StructType
        # Read all the csv files written atomically in a directory
        userSchema = StructType().add("name", "string").add("age", "integer")
        csvDF = spark \\
            .readStream \\
            .option("sep", ";") \\
            .schema(userSchema) \\
            .csv(folder)  # Equivalent to format("csv").load("/path/to/directory")
        """)
    user.run_cell_magic("stream", "people --trigger available-now --no-monitor", "csvDF.where('age > 40')")
    handle = env.get("people")
    assert handle.wait_finished(90)
    assert user.run_line_magic("stream", "result people").to_dict("records") == [{"name": "bob", "age": 45}]


def test_windowed_and_session_counts_refused_as_written_with_the_fix_named(user, env):
    run(user, """
        from pyspark.sql.functions import window, session_window, col
        words = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 4).load() \\
            .select(col("timestamp"), (col("value") % 3).cast("string").alias("word"))
        events = words.withColumnRenamed("word", "userId")
        """)
    cases = [
        ("""
        windowedCounts = words \\
            .withWatermark("timestamp", "10 minutes") \\
            .groupBy(
                window(words.timestamp, "10 minutes", "5 minutes"),
                words.word) \\
            .count()
        windowedCounts
        """, 'window("timestamp", ...)'),
        ("""
        sessionizedCounts = events \\
            .withWatermark("timestamp", "10 minutes") \\
            .groupBy(
                session_window(events.timestamp, "5 minutes"),
                events.userId) \\
            .count()
        sessionizedCounts
        """, 'session_window("timestamp", ...)'),
    ]
    for body, fix in cases:
        with pytest.raises(UsageError) as info:
            user.run_cell_magic("stream", "counts", textwrap.dedent(body))
        message = str(info.value)
        assert "without watermark" in message and "\n" not in message
        assert "hint: the query has a watermark on `timestamp` (withWatermark, 10 minutes)" in message
        assert fix in message
    assert not env.handles()
    # Doing what the hint says works.
    user.run_cell_magic("stream", "counts --no-monitor", textwrap.dedent(cases[0][0]).replace(
        "window(words.timestamp,", 'window("timestamp",'))
    assert env.get("counts").status == "active"
    user.run_line_magic("stream", "stop counts")


def test_deduplication_and_stream_static_join(user, env):
    run(user, """
        from pyspark.sql.functions import col
        streamingDf = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 6).load() \\
            .select((col("value") % 3).alias("guid"), col("timestamp").alias("eventTime"),
                    (col("value") % 2).alias("type"))
        staticDf = spark.createDataFrame([(0, "even"), (1, "odd")], ["type", "label"])
        """)
    # Without watermark using guid column
    user.run_cell_magic("stream", "dedup --no-monitor", 'streamingDf.dropDuplicates(["guid"])')
    user.run_cell_magic("stream", "joined --no-monitor", 'streamingDf.join(staticDf, "type")  # inner equi-join')
    dedup, joined = env.get("dedup"), env.get("joined")
    wait_for(lambda: dedup.progress.total >= 2 and joined.progress.total >= 2, 90, message="two batches of each")
    assert sorted(dedup.result()["guid"]) == [0, 1, 2]  # three distinct guids, ever
    rows = joined.result()
    assert set(rows["label"]) == {"even", "odd"} and (rows["label"] == rows["type"].map({0: "even", 1: "odd"})).all()
    user.run_line_magic("stream", "stop --all")


def test_stream_stream_join_with_watermarks_and_time_constraint(user, env):
    run(user, """
        from pyspark.sql.functions import expr, col
        rate = lambda: spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 4).load()
        impressions = rate().select(col("value").alias("impressionAdId"), col("timestamp").alias("impressionTime"))
        clicks = rate().where("value % 2 = 0").select(col("value").alias("clickAdId"), col("timestamp").alias("clickTime"))

        # Apply watermarks on event-time columns
        impressionsWithWatermark = impressions.withWatermark("impressionTime", "2 hours")
        clicksWithWatermark = clicks.withWatermark("clickTime", "3 hours")
        """)
    user.run_cell_magic("stream", "ads --no-monitor", textwrap.dedent('''\
        # Join with event-time constraints
        impressionsWithWatermark.join(
          clicksWithWatermark,
          expr("""
            clickAdId = impressionAdId AND
            clickTime >= impressionTime AND
            clickTime <= impressionTime + interval 1 hour
            """)
        )
        '''))
    handle = env.get("ads")
    wait_for(lambda: handle.progress.total >= 2 and len(handle.result()) >= 4, 120, message="joined clicks")
    result = handle.result()
    assert (result["clickAdId"] == result["impressionAdId"]).all() and (result["clickAdId"] % 2 == 0).all()
    assert handle.history()["state_rows_total"].max() > 0  # the join keeps state; the monitor shows it
    user.run_line_magic("stream", "stop ads")


def test_triggers_as_written_in_the_guide(user, env, tmp_path):
    run(user, """
        df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()
        """)
    for name, trigger in [("interval", "processingTime='2 seconds'"), ("one_time", "once=True"),
                          ("available_now", "availableNow=True")]:
        with capture_output() as captured:
            user.run_cell_magic("stream", f"{name} --no-monitor", textwrap.dedent(f"""\
                query = df.writeStream \\
                  .format("memory").queryName("{name}") \\
                  .trigger({trigger}) \\
                  .start()
                query
                """))
        assert f"stream '{name}': the cell's code started this query itself (memory sink)" in captured.stdout
        handle = env.get(name)
        if name == "interval":
            assert handle.trigger == "2 seconds"
            wait_for(lambda: handle.progress.total >= 1, 90, message="a first batch")
            user.run_line_magic("stream", f"stop {name}")
        else:
            assert handle.wait_finished(90), f"trigger {trigger} should end by itself"
            assert handle.status == "stopped" and len(handle.result()) == 2 * handle.progress.total
    with pytest.raises(UsageError, match="trigger 'continuous 1 second' is refused"):
        user.run_cell_magic("stream", 'c --trigger "continuous 1 second"', "df")


def test_foreach_batch_and_a_users_own_listener(user, env):
    run(user, """
        from pyspark.sql.streaming import StreamingQueryListener
        seen_batches, events = [], []

        def foreach_batch_function(df, epoch_id):
            # Transform and write batchDF
            seen_batches.append((epoch_id, df.count()))

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event):
                events.append(f"Query started: {event.id}")
            def onQueryProgress(self, event):
                events.append(f"Query made progress: {event.progress.batchId}")
            def onQueryIdle(self, event):
                pass
            def onQueryTerminated(self, event):
                events.append(f"Query terminated: {event.id}")

        listener = Listener()
        spark.streams.addListener(listener)
        streamingDF = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()
        """)
    try:
        with capture_output() as captured:
            user.run_cell_magic("stream", "batches", textwrap.dedent("""\
                streamingDF.writeStream.foreachBatch(foreach_batch_function).start()
                """))
        assert "the cell's code started this query itself (foreach_batch sink)" in captured.stdout
        handle = env.get("batches")  # an unnamed query: known by the cell's name
        wait_for(lambda: len(user.user_ns["seen_batches"]) >= 3 and handle.progress.total >= 3, 90,
                 message="three batches")
        user.run_line_magic("stream", "stop batches")
        assert user.user_ns["seen_batches"][:3] == [(0, 3), (1, 3), (2, 3)]
        history = handle.history()
        assert list(history["batch_id"])[:3] == [0, 1, 2]  # complete: the workbench's listener saw it start
        wait_for(lambda: any(e.startswith("Query terminated") for e in user.user_ns["events"]), 30,
                 message="the user's listener to hear the end")
        assert user.user_ns["events"][0] == f"Query started: {handle.id}"
        assert "Query made progress: 0" in user.user_ns["events"]
    finally:
        run(user, "spark.streams.removeListener(listener)")
