"""A live stream saved as a test: a %%stream cell over a MemoryStream, fed from Python, then record().

The cell runs on a real IPython shell (as in tests/test_magics.py) with a processing-time
trigger; rows added from Python afterwards reach its next batches. ``record`` writes the
run as a pytest module, which is then run on the suite's Spark: as written it passes, and
with a 5-minute watermark it fails at the first step whose watermark differs.
"""

from __future__ import annotations

import runpy

import pytest
from pyspark.sql.functions import window

from tests.helpers import wait_for
from tests.test_magics import magics, shell  # noqa: F401  (the shared IPython shell with the workbench loaded)

pytestmark = pytest.mark.spark

SCHEMA = "event_time timestamp, word string"


def t(hm: str) -> str:
    return f"2024-01-01 {hm}"


SLIDE = "5 minutes"  # a module global the query uses: the written module defines it too


def counts(df):
    return (df.withWatermark("event_time", "10 minutes")
            .groupBy(window("event_time", "10 minutes", SLIDE), "word").count())


def run_written_test(path, spark, name):
    """Run the written module's test function on the suite's Spark, as pytest would, with its fixture."""
    from workbench.testing.plugin import StreamTests

    tests = StreamTests(spark)
    try:
        runpy.run_path(str(path))[f"test_{name}"](tests)
    finally:
        tests.close()
    assert not spark.streams.active


@pytest.mark.slow
def test_a_stream_cell_reads_rows_added_live_and_record_saves_the_run(shell, magics, spark, env, tmp_path):
    from workbench.testing import MemoryStream, record

    events = MemoryStream(spark, SCHEMA)
    shell.user_ns.update(events=events, counts=counts)
    try:
        shell.run_cell_magic("stream", "live_words --trigger '0.5 seconds' --no-monitor", "counts(events.df)")
        handle = env.get("live_words")
        # Each add moves the watermark, so Spark follows its batch with a watermark-only
        # batch; the last add holds only late rows: one batch, nothing after it.
        for rows, last_batch in [([(t("12:07"), "dog"), (t("12:08"), "owl")], 1),
                                 ([(t("12:14"), "dog"), (t("12:09"), "cat")], 3),
                                 ([(t("12:21"), "owl")], 5),
                                 ([(t("12:04"), "donkey"), (t("11:50"), "rat")], 6)]:
            events.add(rows)
            wait_for(lambda: (handle.progress.last_batch_id or -1) >= last_batch, 60,
                     text=lambda: f"batch {last_batch}; the history has {handle.history()[['batch_id', 'num_input_rows']]}")
        result = handle.result()
        assert sorted(zip(result["window_start"].dt.strftime("%H:%M"), result["word"], result["count"])) == [
            ("12:00", "cat", 1), ("12:00", "dog", 1), ("12:00", "owl", 1)]
        shell.run_line_magic("stream", "stop live_words")

        # The input is found from the running query's plan: only the query's code must be given.
        path = record(handle, tmp_path / "test_live_words.py", query=counts)
    finally:
        shell.user_ns.pop("events", None)
        shell.user_ns.pop("counts", None)
    text = path.read_text()
    assert "def test_live_words(stream_test):" in text and "def counts(df):" in text
    assert "from pyspark.sql.functions import window\nSLIDE = '5 minutes'\n" in text, text
    assert text.count(".process()\n") == 3 and text.count(".process(no_data_batch=False)\n") == 1, text
    assert "test.check_watermark('2024-01-01 12:11')" in text
    assert "    test.check_late([\n        ('2024-01-01 11:50', 'rat'),\n        ('2024-01-01 12:04', 'donkey'),\n" \
           "    ], fate='dropped')" in text, text
    run_written_test(path, spark, "live_words")

    changed = tmp_path / "test_live_words_5.py"
    changed.write_text(text.replace('withWatermark("event_time", "10 minutes")',
                                    'withWatermark("event_time", "5 minutes")'))
    with pytest.raises(AssertionError) as error:
        run_written_test(changed, spark, "live_words")
    assert str(error.value) == ("step 4, check_watermark('2024-01-01 11:58'), batch 1, watermark 2024-01-01 12:03: "
                                "the watermark is 2024-01-01 12:03, expected 2024-01-01 11:58")

    assert record(handle, tmp_path / "test_given.py", query=counts, stream=events).read_text() == text
    with pytest.raises(ValueError) as error:
        record(handle, tmp_path / "test_x.py")
    assert str(error.value).startswith("record needs the query's code, which a running query does not keep: pass "
                                       "query=") and "\n" not in str(error.value)
    with pytest.raises(TypeError, match="record's second argument is the file to write; the input, when given, "
                                        "is stream="):
        record(handle, events, query=counts)
    with pytest.raises(TypeError, match="stream= is the stream's input, a workbench.testing.MemoryStream, got str"):
        record(handle, tmp_path / "test_x.py", query=counts, stream="events")
    with pytest.raises(ValueError, match="folder .*nowhere' does not exist"):
        record(handle, tmp_path / "nowhere" / "test_x.py", query=counts)
    events.close()
    with pytest.raises(ValueError, match="holds no workbench.testing.MemoryStream \\(closed, or never one\\)"):
        record(handle, tmp_path / "test_x.py", query=counts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_given.py", "test_live_words.py",
                                                          "test_live_words_5.py"]


def test_record_refuses_what_it_cannot_replay_in_one_line(spark, env, tmp_path):
    import workbench
    from workbench.testing import MemoryStream, record

    events = MemoryStream(spark, "word string")
    words = events.df.groupBy("word").count()
    try:
        complete = workbench.start(words, "complete_words", output_mode="complete", trigger="available-now")
        with pytest.raises(ValueError) as error:
            record(complete, tmp_path / "test_words.py", query_source="def query(df):\n    return df")
        assert "runs in complete mode, whose memory table keeps only the latest batch's rows" in str(error.value)
        other = workbench.start(spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load(),
                                "rate_rows", trigger="available-now")
        other.wait_finished(60)
        with pytest.raises(ValueError) as error:
            record(other, tmp_path / "test_rate.py", query_source="def query(df):\n    return df")
        assert str(error.value) == ("stream 'rate_rows' reads 0 workbench.testing.MemoryStreams (none): record "
                                    "replays a stream over exactly one")
        with pytest.raises(ValueError) as error:
            record(other, tmp_path / "test_rate.py", query_source="def query(df):\n    return df", stream=events)
        assert "does not read exactly one workbench.testing.MemoryStream" in str(error.value)
        assert "\n" not in str(error.value)
        with pytest.raises(TypeError, match="record needs a stream's handle"):
            record("rate_rows", tmp_path / "test_rate.py", query_source="def query(df):\n    return df")
    finally:
        workbench.stop_all()
        events.close()
    assert not list(tmp_path.iterdir())


def renamed_counts(df):
    return (df.withColumnRenamed("event_time", "ts").withWatermark("ts", "10 minutes")
            .groupBy(window("ts", "10 minutes"), "word").count())


def test_a_watermark_on_a_column_the_query_makes_is_recorded_without_late_rows(spark, env, tmp_path):
    # Late rows are told from the input's rows: a renamed watermark column failed with KeyError 'ts'.
    import workbench
    from workbench.testing import MemoryStream, record

    events = MemoryStream(spark, SCHEMA)
    try:
        events.add([(t("12:07"), "dog")])
        handle = workbench.start(renamed_counts(events.df), "renamed_watermark", trigger="available-now")
        assert handle.wait_finished(60) and handle.status == "stopped"
        text = record(handle, tmp_path / "test_renamed.py", query=renamed_counts).read_text()
        assert "check_late" not in text and "withColumnRenamed" in text
    finally:
        workbench.stop_all()
        events.close()


def test_the_input_is_found_when_spark_hides_its_folder_in_the_plans_it_prints(spark, env, tmp_path):
    # Spark redacts an option value matching spark.sql.redaction.options.regex ("url") in
    # printed plans; a folder with "url" in its name must still be found (random temporary
    # names have it now and then).
    import workbench
    from workbench.spark.stream_record import input_stream
    from workbench.testing import MemoryStream

    events = MemoryStream(spark, SCHEMA, folder=tmp_path / "curly-url")
    try:
        events.add([(t("12:07"), "dog")])
        handle = workbench.start(counts(events.df), "redacted_input", trigger="available-now")
        assert handle.wait_finished(60) and handle.status == "stopped"
        found = input_stream(handle)
        assert found.folder == events.folder and found.rows() == events.rows()
    finally:
        workbench.stop_all()
        events.close()


def delayed_counts(df, delay="10 minutes"):
    return df.withWatermark("event_time", delay).groupBy(window("event_time", "10 minutes"), "word").count()


def counts_needing_delay(df, delay):
    return df.withWatermark("event_time", delay).groupBy(window("event_time", "10 minutes"), "word").count()


class Counts:
    def build(self, df):
        return df


FIVE_MINUTES = ('def query(df):\n    return (df.withWatermark("event_time", "5 minutes")\n'
                '            .groupBy(F.window("event_time", "10 minutes"), "word").count())\n')


def refusals(call, cases):
    """``{case: (its message or "written", the words expected)}`` for the cases whose message lacks them."""
    out = {}
    for case, (options, expected) in cases.items():
        try:
            call(**options)
            message = "written"
        except (TypeError, ValueError) as error:
            message = str(error)
        except Exception as error:  # not a refusal: shown with its type
            message = f"{type(error).__name__}: {error}"
        if any(words not in message for words in expected) or "\n" in message:
            out[case] = (message, expected)
    return out


def test_record_refuses_in_one_line_what_would_fail_the_modules_first_run(spark, env, tmp_path):
    # Each of these was written, and the module failed on its first run (or was never collected).
    import functools

    import workbench
    from workbench.testing import MemoryStream, record

    events, other = MemoryStream(spark, SCHEMA), MemoryStream(spark, "id int")
    try:
        other.add([(1,)])
        events.add([(t("12:07"), "dog"), (t("12:08"), "owl")])
        # Observing the inputs adds nodes to the stream's plan, which the query's comparison leaves out.
        handle = workbench.start(delayed_counts(events.df, "5 minutes"), "five_minutes", trigger="available-now",
                                 input_watermarks=True)
        assert handle.wait_finished(60) and handle.status == "stopped"
        (tmp_path / "folder").mkdir()
        good = {"query_source": FIVE_MINUTES}
        cases = {
            "the function's default delay, not the stream's": ({"query": delayed_counts}, [
                "query=delayed_counts builds another query than stream 'five_minutes' ran: its plan has "
                "'EventTimeWatermark event_time: timestamp, 10 minutes' where the stream's has 'EventTimeWatermark "
                "event_time: timestamp, 5 minutes'; pass the function and arguments the stream ran with"]),
            "a function of two arguments": ({"query": counts_needing_delay}, [
                "query=counts_needing_delay takes (df, delay), but the test calls query(df) with the input alone: "
                "give delay a default"]),
            "a partial": ({"query": functools.partial(delayed_counts, delay="5 minutes")}, [
                "query= is functools.partial(delayed_counts, ...), whose source the test module cannot copy"]),
            "a bound method": ({"query": Counts().build}, [
                "query= is the bound method Counts.build of a Counts object, whose source"]),
            "a lambda": ({"query": lambda df: df}, ["query= is a lambda, whose source"]),
            "both": ({"query": delayed_counts, **good}, ["record takes query= or query_source=, not both"]),
            "source that is not Python": ({"query_source": "return df.groupBy("}, [
                "query_source is not Python (line 1: '(' was never closed)"]),
            "source without query": ({"query_source": "def counts(df):\n    return df"}, [
                "query_source defines no function query (it defines SCHEMA, counts, test_five_minutes)"]),
            "a query the input cannot run": ({"query_source": "def query(df):\n    return df.select('nope')"}, [
                "query_source fails on the input (AnalysisException: ", "nope"]),
            "another stream's input": ({"stream": other, **good}, [
                f"stream= is the MemoryStream in {other.folder!r}, which stream 'five_minutes' does not read "
                f"(it reads {events.folder}): pass the one it reads, or leave stream= out"]),
            "a folder": ({"path": tmp_path / "folder", **good}, [
                f"path {str(tmp_path / 'folder')!r} is a folder: name the file to write in it"]),
            "a name pytest does not collect": ({"path": tmp_path / "five_check.py", **good}, [
                "file name 'five_check.py' is not one pytest collects: name it test_*.py or *_test.py"]),
        }
        assert refusals(lambda path=tmp_path / "test_five.py", **options: record(handle, path, **options),
                        cases) == {}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]

        # Written once; again only with overwrite=True: the file may be a test edited since.
        path = record(handle, tmp_path / "test_five.py", **good)
        path.write_text(path.read_text() + "# edited\n")
        assert refusals(lambda **options: record(handle, path, **good, **options), {
            "again": ({}, [f"file {str(path)!r} exists (a test written before, maybe edited since): pass "
                           "overwrite=True to replace it, or name another file"]),
        }) == {}
        assert path.read_text().endswith("# edited\n")
        assert record(handle, path, overwrite=True, **good) == path and "# edited" not in path.read_text()
        run_written_test(path, spark, "five_minutes")
        # The stream's own function, given its arguments in a def query(df), is the same query.
        assert record(handle, tmp_path / "five_test.py", query_source=(
            "def query(df):\n    return df.withWatermark('event_time', '5 minutes')"
            ".groupBy(F.window('event_time', '10 minutes'), 'word').count()")).exists()
    finally:
        workbench.stop_all()
        events.close()
        other.close()


def test_a_saved_replay_is_refused_the_same_way(env, tmp_path):
    # to_test, which the replay panel's "Save as test" runs, shares record's rules for the file.
    import workbench
    from workbench.testing import to_test

    panel = workbench.replay_panel(workbench.scenarios.guide_word_count(), monitor=False)
    try:
        panel.step()
        (tmp_path / "test_guide.py").write_text("# my test\n")
        assert refusals(lambda path, **options: to_test(panel, path, **options), {
            "a name pytest does not collect": ({"path": tmp_path / "guide.py"}, [
                "file name 'guide.py' is not one pytest collects: name it test_*.py or *_test.py"]),
            "a file that exists": ({"path": tmp_path / "test_guide.py"}, ["exists (a test written before"]),
            "a folder": ({"path": tmp_path}, ["is a folder: name the file to write in it"]),
            "source that is not Python": ({"path": tmp_path / "test_new.py", "query_source": "def query(df"}, [
                "query_source is not Python (line 1: '(' was never closed)"]),
        }) == {}
        assert [p.name for p in tmp_path.iterdir()] == ["test_guide.py"]
        assert to_test(panel, tmp_path / "test_guide.py", overwrite=True).read_text().startswith('"""Recorded')
    finally:
        panel.close()
