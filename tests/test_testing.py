"""workbench.testing on the suite's Spark: MemoryStream, each StreamTest step, failure messages, bad input.

The guide's windowed word count (10-minute windows sliding every 5 minutes, a 10-minute
watermark) is the query under test, with the expected rows written out by hand.
"""

from __future__ import annotations

import os
import re
import threading
from datetime import datetime

import pandas as pd
import pytest

pytestmark = pytest.mark.spark

SCHEMA = "event_time timestamp, word string"


def t(hm: str) -> str:
    return f"2024-01-01 {hm}"


def w(start: str, end: str) -> tuple[str, str]:
    return (t(start), t(end))


@pytest.fixture
def testing(env):
    import workbench.testing

    return workbench.testing


def word_counts(df, delay: str = "10 minutes"):
    from pyspark.sql import functions as F

    return df.withWatermark("event_time", delay).groupBy(F.window("event_time", "10 minutes", "5 minutes"),
                                                         "word").count()


def test_the_guides_word_count_step_by_step_with_a_restart(spark, testing):
    events = testing.MemoryStream(spark, SCHEMA)
    with testing.StreamTest(word_counts(events.df)) as test:
        (test.add(events, [(t("12:07"), "dog"), (t("12:08"), "owl")]).process()
         .check_new_answer([]).check_watermark(t("11:58")).check_late([], fate="late")
         .add(events, [(t("12:14"), "dog"), (t("12:09"), "cat")]).process()
         .check_new_answer([]).check_watermark(t("12:04"))
         .add(events, [(t("12:15"), "cat"), (t("12:08"), "dog"), (t("12:13"), "owl"), (t("12:21"), "owl")])
         .process()
         # The watermark passed 12:10 (12:21 - 10 min), and process() ran the no-data batch
         # that emits the windows it closed.
         .check_watermark(t("12:11"))
         .check_new_answer([(w("12:00", "12:10"), "dog", 2), (w("12:00", "12:10"), "owl", 1),
                            {"window": w("12:00", "12:10"), "word": "cat", "count": 1}])
         # Behind the watermark 12:11: both windows of 12:04 and of 11:50 end by then.
         .add(events, [(t("12:17"), "owl"), (t("12:04"), "donkey"), (t("11:50"), "rat")]).process()
         .check_late([(t("12:04"), "donkey"), (t("11:50"), "rat")])
         .check_new_answer([])
         .restart()
         .add(events, [(t("12:40"), "cat")]).process()
         .check_watermark(t("12:30"))
         # Counts made before the restart are in the windows emitted after it.
         .check_new_answer([
             (w("12:05", "12:15"), "cat", 1), (w("12:05", "12:15"), "dog", 3), (w("12:05", "12:15"), "owl", 2),
             (w("12:10", "12:20"), "cat", 1), (w("12:10", "12:20"), "dog", 1), (w("12:10", "12:20"), "owl", 2),
             (w("12:15", "12:25"), "cat", 1), (w("12:15", "12:25"), "owl", 2), (w("12:20", "12:30"), "owl", 1),
         ])
         .check_state([(t("12:35"), t("12:45"), "cat", 1), {"window_start": t("12:40"), "window_end": t("12:50"),
                                                              "word": "cat", "count": 1}])
         .check_answer([(w("12:00", "12:10"), "dog", 2), (w("12:00", "12:10"), "owl", 1),
                        (w("12:00", "12:10"), "cat", 1),
                        (w("12:05", "12:15"), "cat", 1), (w("12:05", "12:15"), "dog", 3),
                        (w("12:05", "12:15"), "owl", 2), (w("12:10", "12:20"), "cat", 1),
                        (w("12:10", "12:20"), "dog", 1), (w("12:10", "12:20"), "owl", 2),
                        (w("12:15", "12:25"), "cat", 1), (w("12:15", "12:25"), "owl", 2),
                        (w("12:20", "12:30"), "owl", 1)]))
    assert events.offset == 5


def test_one_batch_per_process_lets_the_guides_donkey_in(spark, testing):
    # Without the no-data batch, the watermark that moved to 12:11 first acts on the batch
    # after the donkey's: the donkey is filtered against 12:04 and counted, as in the replay.
    events = testing.MemoryStream(spark, SCHEMA)
    with testing.StreamTest(word_counts(events.df), no_data_batches=False) as test:
        test.add(events, [(t("12:07"), "dog"), (t("12:08"), "owl")]).process().check_watermark("1970-01-01")
        test.add(events, [(t("12:14"), "dog")]).process().check_watermark(t("11:58"))
        test.add(events, [(t("12:21"), "owl")]).process().check_watermark(t("12:04")).check_new_answer([])
        test.add(events, [(t("12:04"), "donkey"), (t("11:50"), "rat")]).process()
        test.check_watermark(t("12:11")).check_late([(t("12:04"), "donkey")], fate="counted")
        test.check_late([(t("11:50"), "rat")])
        test.check_new_answer([(w("11:55", "12:05"), "donkey", 1), (w("12:00", "12:10"), "donkey", 1),
                               (w("12:00", "12:10"), "dog", 1), (w("12:00", "12:10"), "owl", 1)])
    assert test.last_batch == 3


def test_process_without_the_no_data_batch_runs_one_batch_and_the_next_process_goes_on(spark, testing):
    # As in a live stream whose next rows came before Spark's watermark-only batch.
    events = testing.MemoryStream(spark, SCHEMA)
    with testing.StreamTest(word_counts(events.df)) as test:
        (test.add(events, [(t("12:07"), "dog"), (t("12:08"), "owl")]).process(no_data_batch=False)
         .check_watermark("1970-01-01").check_new_answer([])
         .add(events, [(t("12:21"), "owl")]).process()
         .check_watermark(t("12:11"))
         .check_new_answer([(w("12:00", "12:10"), "dog", 1), (w("12:00", "12:10"), "owl", 1)]))
        assert test.last_batch == 2, "batch 0, then batch 1 with the new rows and its watermark-only batch 2"
        with pytest.raises(TypeError, match="no_data_batch must be True or False, got 'no'"):
            test.process(no_data_batch="no")


def test_process_after_a_held_back_batch_runs_its_watermark_only_batch(spark, testing):
    # A query started again from its checkpoint runs no watermark-only batch of its own: the
    # dog's window, which the owl's watermark closed, stayed unemitted however often one processed.
    events = testing.MemoryStream(spark, SCHEMA)
    with testing.StreamTest(word_counts(events.df)) as test:
        (test.add(events, [(t("12:07"), "dog"), (t("12:21"), "owl")]).process(no_data_batch=False)
         .process(no_data_batch=False)  # runs nothing, and keeps the batch held back
         .check_new_answer([]).process()
         .check_watermark(t("12:11")).check_new_answer([(w("12:00", "12:10"), "dog", 1)]))
        assert test.last_batch == 1 and events.batches()[1:] == [[]], "batch 1 reads nothing"
        test.process()
        assert test.last_batch == 1, "nothing more to run"
        # Rows added after the held-back batch run with its watermark, and no extra batch.
        test.add(events, [(t("12:30"), "cat")]).process(no_data_batch=False).add(events, [(t("12:31"), "cat")])
        test.process().check_watermark(t("12:21")).check_new_answer([(w("12:05", "12:15"), "dog", 1)])
        assert test.last_batch == 4, "batch 2 held back, batch 3 with the second cat, its watermark-only batch 4"


def test_late_rows_keep_an_input_column_named_event_time_beside_the_watermarks(spark, testing):
    # With the watermark on ts, the input's own event_time column was replaced by ts's time.
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, "ts timestamp, event_time timestamp, word string")
    counts = events.df.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), "word").count()
    with testing.StreamTest(counts) as test:
        test.add(events, [(t("12:07"), t("09:00"), "dog"), (t("12:21"), t("09:01"), "owl")]).process()
        test.add(events, [(t("11:50"), t("09:30"), "rat")]).process()
        test.check_late([(t("11:50"), t("09:30"), "rat")])
        assert list(test.late_rows()["input_event_time"]) == [pd.Timestamp(t("09:30"))]


def test_rows_added_in_one_step_are_one_batch_however_long_the_step_takes(spark, testing):
    # The query runs between steps: without holding added rows back until process(), the owl
    # would run as a batch of its own while the step went on, and its watermark would drop the donkey.
    import time

    events = testing.MemoryStream(spark, SCHEMA)
    with testing.StreamTest(word_counts(events.df)) as test:
        test.add(events, [(t("12:07"), "dog")]).process().check_watermark(t("11:57"))
        test.add(events, [(t("12:21"), "owl")])
        time.sleep(1.0)  # the step takes its time (a slow fixture, a breakpoint): nothing runs meanwhile
        test.check_new_answer([])
        test.add(events, [(t("12:04"), "donkey")]).process()
        # One batch with the owl and the donkey, run with the watermark 11:57: the donkey is on time.
        test.check_late([]).check_late([], fate="counted").check_watermark(t("12:11"))
        assert test.last_batch == 3, "batch 0, its watermark-only batch 1, batch 2 with both rows, then batch 3"
        test.check_new_answer([(w("11:55", "12:05"), "donkey", 1), (w("12:00", "12:10"), "dog", 1),
                               (w("12:00", "12:10"), "donkey", 1)])
    # Once the test is over, a live query on the stream reads everything added again.
    live = events.df.writeStream.format("memory").queryName("after_the_test").start()
    try:
        live.processAllAvailable()
        assert spark.table("after_the_test").count() == 3
    finally:
        live.stop()


def test_two_tests_on_one_stream_each_hold_its_rows_until_their_own_process(spark, testing):
    events = testing.MemoryStream(spark, "word string")
    with testing.StreamTest(events.df) as first, testing.StreamTest(events.df) as second:
        first.add(events, [("dog",)]).process().check_new_answer([("dog",)])
        second.add(events, [("owl",)])
        first.close()  # its gate goes; the second test's stays
        second.process().check_new_answer([("dog",), ("owl",)])
        second.add(events, [("cat",)])
        second.check_new_answer([])  # held until its next process()
        second.process().check_new_answer([("cat",)])


def test_every_row_is_read_once_in_order_across_restarts(spark, testing):
    events = testing.MemoryStream(spark, "id int, name string")
    assert events.add([(1, "a"), (2, "b")]) == 1
    assert events.add([{"id": 3, "name": "c"}]) == 2
    assert events.add([]) == 2
    with testing.StreamTest(events.df) as test:
        test.process().restart().restart()
        test.add(events, pd.DataFrame({"name": ["d", "e"], "id": [4, 5]})).process().restart()
        test.add(events, [(6, None)]).process()
        test.check_answer([(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"), (6, None)])
        assert test.last_batch == 2, "a restart made Spark read something again"
        # In order: batch 0 read the first two adds, batch 1 the DataFrame, batch 2 the last row,
        # each in the order the rows were added.
        assert test.batch_answers() == {0: [(1, "a"), (2, "b"), (3, "c")], 1: [(4, "d"), (5, "e")], 2: [(6, None)]}
    assert events.rows() == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"), (6, None)]


def assert_message(error: pytest.ExceptionInfo, *parts: str) -> str:
    text = str(error.value)
    for part in parts:
        assert part in text, f"{part!r} not in the message:\n{text}"
    assert not re.search(r"py4j|org\.apache|Traceback|\tat ", text), f"a JVM or Python stack in:\n{text}"
    return text


def test_failing_checks_name_the_step_batch_watermark_and_rows(spark, testing):
    events = testing.MemoryStream(spark, SCHEMA)
    with testing.StreamTest(word_counts(events.df)) as test:
        test.add(events, [(t("12:07"), "dog"), (t("12:21"), "owl")]).process()
        with pytest.raises(AssertionError) as error:
            test.check_new_answer([(w("12:00", "12:10"), "dog", 2), (w("12:00", "12:10"), "cat", 1)])
        assert_message(error, "step 3, check_new_answer(), batch 1, watermark 2024-01-01 12:11",
                       "missing:\n    (('2024-01-01 12:00', '2024-01-01 12:10'), 'cat', 1)\n"
                       "    (('2024-01-01 12:00', '2024-01-01 12:10'), 'dog', 2)\n"
                       "  unexpected:\n    (('2024-01-01 12:00', '2024-01-01 12:10'), 'dog', 1)")
        with pytest.raises(AssertionError) as error:
            test.check_watermark(t("12:10"))
        assert_message(error, "check_watermark('2024-01-01 12:10'), batch 1",
                       "the watermark is 2024-01-01 12:11, expected 2024-01-01 12:10")
        with pytest.raises(AssertionError) as error:
            test.check_answer([])
        assert_message(error, "check_answer()", "missing:\n    (none)")
        test.add(events, [(t("11:50"), "rat")]).process()
        with pytest.raises(AssertionError) as error:
            test.check_late([])
        assert_message(error, "check_late(fate='dropped')", "unexpected:\n    ('2024-01-01 11:50', 'rat')")
        with pytest.raises(AssertionError) as error:
            test.check_state([])
        assert_message(error, "check_state()", "the state ['window_start', 'window_end', 'word', 'count']",
                       "('2024-01-01 12:15', '2024-01-01 12:25', 'owl', 1)")


def test_a_failing_query_is_one_line_and_expect_failure_matches_it(spark, testing):
    from pyspark.sql import functions as F

    @F.udf("int")
    def checked(value):
        if value < 0:
            raise ValueError(f"negative value {value}")
        return value

    events = testing.MemoryStream(spark, "value int")
    with testing.StreamTest(events.df.select(checked("value").alias("value"))) as test:
        test.add(events, [(1,)]).process().check_new_answer([(1,)])
        test.add(events, [(-7,)]).expect_failure(r"negative value -7")
        with pytest.raises(AssertionError) as error:
            test.restart().process()
        assert_message(error, "process(), batch 1, watermark none: the query failed: ValueError: negative value -7")
        assert "\n" not in str(error.value)
        with pytest.raises(AssertionError) as error:
            test.expect_failure("too big")
        assert_message(error, "the query failed, but not with 'too big': ValueError: negative value -7")
        # Not the UDF's source line that Spark's message echoes, nor the query's plan.
        with pytest.raises(AssertionError, match="the query failed, but not with 'if value < 0'"):
            test.expect_failure("if value < 0")
        # Spark's error class, matched on its own (the UDF fails inside the test's foreachBatch sink).
        test.restart().expect_failure("^FOREACH_BATCH_USER_FUNCTION_ERROR$")
    with testing.StreamTest(events.df) as fine:
        with pytest.raises(AssertionError) as error:
            fine.expect_failure("anything")
        assert_message(error, "expected the query to fail with 'anything', but it processed batches [0]")


def extra_threads(before: list[threading.Thread]) -> list[str]:
    """Threads started since ``before`` that are not pyspark's or py4j's session-wide ones (foreachBatch's callbacks)."""
    def spark_own(thread: threading.Thread) -> bool:
        module = getattr(getattr(thread, "_target", None), "__module__", None) or ""
        return thread.daemon and module.split(".")[0] in ("py4j", "pyspark")

    return [f"{t.name} (daemon={t.daemon})" for t in threading.enumerate()
            if t not in before and t.is_alive() and not spark_own(t)]


def test_a_test_leaves_no_query_or_folder_behind_pass_or_fail(spark, testing):
    from pyspark.sql import functions as F

    from workbench.testing.plugin import StreamTests

    before = threading.enumerate()
    events = testing.MemoryStream(spark, SCHEMA)
    with pytest.raises(AssertionError):
        with testing.StreamTest(word_counts(events.df)) as test:
            test.add(events, [(t("12:07"), "dog")]).process().check_answer([])
            test.check_watermark(t("09:00"))
    assert not spark.streams.active
    assert not os.path.exists(os.path.dirname(test.checkpoint)), "the failing test's folder is still there"
    test.close()  # twice is fine
    # Used after close: refused in one line, and no gate is left in the stream's folder
    # (it would hold back the rows of every other query on the stream).
    with pytest.raises(RuntimeError, match=r"^add\(1 rows\) on a closed StreamTest: make a new StreamTest"):
        test.add(events, [(t("12:08"), "cat")])
    assert not [name for name in os.listdir(events.folder) if name.startswith("released.")]

    with testing.StreamTest(word_counts(events.df)) as passing:
        passing.add(events, [(t("12:21"), "owl")]).process().check_watermark(t("12:11"))
        folder = os.path.dirname(passing.checkpoint)
        assert os.path.isdir(folder)
    assert not spark.streams.active
    assert not os.path.exists(folder), "the passing test's folder is still there"

    @F.udf("int")
    def refuse(value):
        raise ValueError("refused")

    numbers = testing.MemoryStream(spark, "value int")
    with testing.StreamTest(numbers.df.select(refuse("value").alias("value"))) as failing:
        failing.add(numbers, [(1,)]).expect_failure("refused")
    assert not spark.streams.active
    assert not os.path.exists(os.path.dirname(failing.checkpoint)), "expect_failure's folder is still there"

    # A test never closed (no with, no fixture) stops its query once collected, then its folder goes.
    import gc

    dropped = testing.StreamTest(word_counts(events.df))
    dropped.add(events, [(t("12:30"), "cat")]).process()
    folder = os.path.dirname(dropped.checkpoint)
    assert len(spark.streams.active) == 1
    del dropped
    gc.collect()
    assert not spark.streams.active and not os.path.exists(folder)
    # Nor does it hold the stream's rows back any more; a killed run's gate goes when the stream is opened.
    from workbench.spark.memory_source import released

    assert released(events.folder) is None
    with open(os.path.join(events.folder, "released.999999999.stream_test_999999999_1"), "w") as gate:
        gate.write("0")
    assert released(events.folder) == 0
    testing.MemoryStream.at(spark, events.folder)
    assert released(events.folder) is None

    # The pytest fixture's factory (as the plugin yields it) closes what it made.
    made = StreamTests(spark)
    words = made.memory_stream("word string")
    fixture_test = made(words.df.groupBy("word").count(), output_mode="complete")
    fixture_test.add(words, [("dog",)]).process().check_answer([("dog", 1)])
    assert spark.streams.active
    made.close()
    assert not spark.streams.active
    assert not os.path.exists(words.folder) and not os.path.exists(os.path.dirname(fixture_test.checkpoint))

    folders = [events.folder, numbers.folder]
    events.close()
    numbers.close()
    assert not any(os.path.exists(f) for f in folders)
    assert not extra_threads(before), f"threads left behind: {extra_threads(before)}"


@pytest.mark.parametrize("make, error, message", [
    (lambda s, m: m(s, "event_time timestamp, word"), ValueError, "is not a valid DDL schema"),
    (lambda s, m: m(s, 42), TypeError, "schema must be a DDL string"),
    (lambda s, m: m(s, SCHEMA).add([("noon", "dog")]), ValueError, "column 'event_time': 'noon' is not a time"),
    (lambda s, m: m(s, SCHEMA).add([(t("12:00"), 7)]), TypeError, "column 'word' is string: 7 is not a string"),
    (lambda s, m: m(s, SCHEMA).add([(t("12:00"),)]), ValueError, "has 1 value(s); the stream's columns are"),
    (lambda s, m: m(s, SCHEMA).add([{"when": t("12:00")}]), ValueError, "unknown column(s) ['when']"),
    (lambda s, m: m(s, SCHEMA).add("dog"), TypeError, "rows must be a list of tuples or dicts"),
    (lambda s, m: m(s, "n int").add([(True,)]), TypeError, "True is not a whole number"),
    # Spark's Arrow conversion refused these only when the batch ran, in a line naming neither.
    (lambda s, m: m(s, "n int").add([(2**40,)]), ValueError,
     "column 'n' is int: 1099511627776 is out of its range (-2147483648 to 2147483647)"),
    (lambda s, m: m(s, "a array<int>").add([(["a"],)]), TypeError, "column 'a[0]' is int: 'a' is not a whole number"),
    (lambda s, m: m(s, "m map<string,int>").add([({"k": "v"},)]), TypeError, "is int: 'v' is not a whole number"),
    (lambda s, m: m(s, "a array<int>").add([(5,)]), TypeError, "column 'a' is array<int>: 5 is not a list"),
])
def test_memory_stream_refuses_bad_input_in_one_line(spark, testing, make, error, message):
    with pytest.raises(error) as raised:
        make(spark, testing.MemoryStream)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_pandas_frames_missing_values_are_nulls(spark, testing):
    # A missing whole number turns its pandas column into floats, and a missing time is NaT: both
    # were refused (or accepted, then failed the batch) instead of being nulls.
    events = testing.MemoryStream(spark, "n bigint, t timestamp, tags array<string>")
    try:
        events.add(pd.DataFrame({"n": [1, None], "t": [pd.Timestamp("2024-01-01 12:00"), pd.NaT],
                                 "tags": [["a"], None]}))
        assert events.rows() == [(1, datetime(2024, 1, 1, 12, 0), ["a"]), (None, None, None)]
        with pytest.raises(TypeError, match=r"column 'n' is bigint: 1.5 is not a whole number"):
            events.add(pd.DataFrame({"n": [1.5], "t": [pd.NaT], "tags": [None]}))
    finally:
        events.close()


def test_a_fixed_folder_is_not_read_again_by_the_next_run(spark, testing, tmp_path):
    # A test run twice on one folder read the first run's rows as well: refused, and at() reopens.
    first = testing.MemoryStream(spark, SCHEMA, folder=tmp_path / "events")
    first.add([(t("12:07"), "dog")])
    with pytest.raises(ValueError) as refused:
        testing.MemoryStream(spark, SCHEMA, folder=tmp_path / "events")
    assert str(refused.value) == (
        f"folder {str(tmp_path / 'events')!r} holds the rows of an earlier memory stream: give an empty folder, "
        "remove it first, or reopen that stream with MemoryStream.at(spark, folder)")
    assert testing.MemoryStream.at(spark, tmp_path / "events").rows() == first.rows()
    # And a state check before any batch says so (it said the checkpoint was removed).
    with testing.StreamTest(first.df.groupBy("word").count(), output_mode="complete") as test:
        with pytest.raises(ValueError, match=r"^check_state needs a processed batch: no batch has run yet"):
            test.check_state([])
    first.close()


def test_stream_test_refuses_bad_input_before_starting(spark, testing):
    events = testing.MemoryStream(spark, SCHEMA)
    with pytest.raises(ValueError, match="not streaming"):
        testing.StreamTest(spark.range(3))
    with pytest.raises(ValueError, match="unknown output mode 'sometimes'"):
        testing.StreamTest(events.df, output_mode="sometimes")
    with pytest.raises(ValueError, match="cannot run this query in append mode"):
        testing.StreamTest(events.df.groupBy("word").count())
    # Under another session time zone, rows added as UTC came back hours away from the answers.
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        with pytest.raises(ValueError) as refused:
            testing.StreamTest(events.df)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert str(refused.value) == (
        "StreamTest reads and compares times in UTC, but this session's time zone is 'America/New_York': run "
        "spark.conf.set('spark.sql.session.timeZone', 'UTC') first (workbench.session() and the pytest plugin's "
        "spark fixture do)")
    test = testing.StreamTest(events.df)
    try:
        with pytest.raises(ValueError, match="unknown fate 'lost': use one of dropped, partial, counted, late"):
            test.check_late([], fate="lost")
        with pytest.raises(ValueError, match=r"match '\[window' is not a regular expression"):
            test.expect_failure("[window")
        with pytest.raises(ValueError, match=r"row \('dog',\) has 1 value\(s\); the result's columns are"):
            test.check_answer([("dog",)])
        with pytest.raises(TypeError, match="add needs a workbench.testing.MemoryStream"):
            test.add(spark, [])
        # Rows added to a stream the query does not read reached no batch: the answer then just differed.
        other = testing.MemoryStream(spark, SCHEMA)
        with pytest.raises(ValueError, match=r"^add: the query under test does not read this MemoryStream \(<MemoryStream "):
            test.add(other, [("2024-01-01 12:07", "dog")])
        other.close()
    finally:
        test.close()
    assert not spark.streams.active


def test_the_widget_adds_typed_rows_and_says_why_it_refuses_one(spark, testing):
    events = testing.MemoryStream(spark, "event_time timestamp, word string, n int")
    form = events.widget()
    assert form is events.widget()
    assert form._repr_mimebundle_()["text/plain"] == "<AddRowForm: one row of event_time, word, n at a time>"
    form.fields["event_time"].value, form.fields["word"].value, form.fields["n"].value = t("12:04"), "donkey", "3"
    form.button.click()
    assert events.rows() == [(pd.Timestamp(t("12:04")).to_pydatetime(), "donkey", 3)]
    assert "Added at offset 1" in form.status.value
    form.fields["event_time"].value = "soon"
    assert form.add() is None
    assert "Not added" in form.status.value and "'soon' is not a time" in form.status.value
    assert events.offset == 1


def test_check_state_reads_a_transform_with_state_variable(spark, testing):
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class WordCount(StatefulProcessor):
        """Per word: a running count (value state) and the lengths seen (list state)."""

        def init(self, handle):
            self.count = handle.getValueState("count", "n long")
            self.lengths = handle.getListState("lengths", "length int")

        def handleInputRows(self, key, rows, timerValues):
            total = self.count.get()[0] if self.count.exists() else 0
            for frame in rows:
                for word in frame["word"]:
                    total += 1
                    self.lengths.appendValue((len(word),))
            self.count.update((total,))
            yield pd.DataFrame({"word": [key[0]], "n": [total]})

        def close(self):
            pass

    events = testing.MemoryStream(spark, "word string")
    counts = events.df.groupBy("word").transformWithStateInPandas(
        WordCount(), outputStructType="word string, n long", outputMode="Update", timeMode="None")
    with testing.StreamTest(counts, output_mode="update") as test:
        (test.add(events, [("dog",), ("owl",), ("dog",)]).process()
         .check_new_answer([("dog", 2), ("owl", 1)])
         .check_state([("dog", 2), {"word": "owl", "n": 1}], variable="count")
         .check_state([("dog", 3), ("dog", 3), ("owl", 3)], variable="lengths")
         .add(events, [("mouse",)]).process().restart()
         .check_state([("dog", 2), ("owl", 1), ("mouse", 1)], variable="count"))
        with pytest.raises(AssertionError) as error:
            test.check_state([("dog", 2)], variable="count")
        assert_message(error, "check_state(variable='count'), batch 1", "unexpected:\n    ('mouse', 1)\n    ('owl', 1)")
        with pytest.raises(ValueError, match="unknown state variable 'cnt'.*use one of 'count', 'lengths'"):
            test.check_state([], variable="cnt")


def test_late_rows_of_an_input_with_a_value_column(spark, testing):
    # The fates' table orders rows by a ``value`` column; an input's own ``value`` must not clash with it.
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, "event_time timestamp, value long")
    counts = events.df.withWatermark("event_time", "10 minutes").groupBy(F.window("event_time", "10 minutes")).count()
    with testing.StreamTest(counts) as test:
        test.add(events, [(t("12:21"), 1)]).process().check_watermark(t("12:11"))
        test.add(events, [(t("12:05"), 2), (t("12:15"), 3)]).process()
        test.check_late([(t("12:05"), 2)]).check_late([(t("12:05"), 2)], fate="late")


def test_late_rows_need_the_watermark_on_an_input_column(spark, testing):
    # A watermark on a renamed or computed column failed with a bare KeyError naming it.
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, SCHEMA)
    counts = (events.df.withColumnRenamed("event_time", "ts").withWatermark("ts", "10 minutes")
              .groupBy(F.window("ts", "10 minutes"), "word").count())
    with testing.StreamTest(counts) as test:
        test.add(events, [(t("12:21"), "dog")]).process().check_watermark(t("12:11"))
        with pytest.raises(ValueError) as raised:
            test.check_late([])
    assert str(raised.value) == (
        "late rows are told from the input's rows, but the watermark's column 'ts' is made in the query (renamed "
        "or computed), not one of the input's columns ['event_time', 'word']: put the watermark on an input "
        "column to check late rows")


def test_a_struct_type_schema_reads_like_its_ddl(spark, testing):
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    schema = StructType([StructField("event_time", TimestampType()), StructField("word", StringType()),
                         StructField("n", LongType())])
    events = testing.MemoryStream(spark, schema)
    assert events.schema == schema and events.df.schema == schema
    with testing.StreamTest(events.df.groupBy("word").sum("n"), output_mode="complete") as test:
        (test.add(events, [(t("12:07"), "dog", 2), {"event_time": t("12:08"), "word": "owl", "n": 5}])
         .add(events, [(t("12:09"), "dog", 3)]).process()
         .check_answer([("dog", 5), ("owl", 5)]))
    assert events.rows()[0] == (pd.Timestamp(t("12:07")).to_pydatetime(), "dog", 2)
    events.close()


def test_check_answer_in_complete_mode_is_the_current_table(spark, testing):
    events = testing.MemoryStream(spark, "word string")
    with testing.StreamTest(events.df.groupBy("word").count(), output_mode="complete") as test:
        test.add(events, [("dog",), ("dog",), ("owl",)]).process().check_answer([("dog", 2), ("owl", 1)])
        test.add(events, [("owl",), ("cat",)]).process()
        # Every row emitted so far would hold ('owl', 1) and ('dog', 2) twice: the answer is the table now.
        test.check_answer([("dog", 2), ("owl", 2), ("cat", 1)])
        with pytest.raises(AssertionError) as error:
            test.check_answer([("dog", 2), ("owl", 1), ("dog", 2), ("owl", 2), ("cat", 1)])
        assert_message(error, "check_answer(), batch 1", "missing:\n    ('dog', 2)\n    ('owl', 1)\n  unexpected:\n    (none)")
        assert {b: sorted(rows) for b, rows in test.batch_answers().items()} == {
            0: [("dog", 2), ("owl", 1)], 1: [("cat", 1), ("dog", 2), ("owl", 2)]}
        # Two batches since the last check: the new answer is the newest table, not both stacked.
        test.add(events, [("cat",)]).process().add(events, [("eel",)]).process()
        test.check_new_answer([("dog", 2), ("owl", 2), ("cat", 2), ("eel", 1)])


def test_check_answer_compares_array_columns_as_lists(spark, testing):
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, "word string, n int")
    query = events.df.groupBy("word").agg(F.sort_array(F.collect_list("n")).alias("ns"))
    with testing.StreamTest(query, output_mode="complete") as test:
        test.add(events, [("dog", 2), ("dog", 1), ("owl", 5)]).process()
        # toPandas gives array columns as numpy arrays: a two-element one crashed, a one-element one was a scalar.
        test.check_answer([("dog", [1, 2]), ("owl", [5])])
        with pytest.raises(ValueError, match=r"^column 'ns' is an array: give it as a list, got 5$"):
            test.check_answer([("dog", [1, 2]), ("owl", 5)])
        with pytest.raises(AssertionError) as error:
            test.check_answer([("dog", [1, 2]), ("owl", [6])])
        assert_message(error, "check_answer(), batch 0", "missing:\n    ('owl', (6,))\n  unexpected:\n    ('owl', (5,))")


def test_times_and_days_inside_arrays_structs_and_maps_compare_as_written(spark, testing):
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, SCHEMA)
    at = F.col("event_time")
    query = events.df.select("word", F.to_date(at).alias("day"), F.array(at).alias("times"),
                             F.struct(at.alias("at"), F.lit(1).alias("n")).alias("first"),
                             F.create_map("word", at).alias("seen"), F.array(F.struct(at.alias("at"))).alias("log"))
    with testing.StreamTest(query) as test:
        test.add(events, [(t("12:07"), "dog")]).process()
        # A date, and times inside arrays, structs and maps, never matched as strings before.
        row = ("dog", "2024-01-01", [t("12:07")], (t("12:07"), 1), {"dog": t("12:07")}, [(t("12:07"),)])
        test.check_answer([row]).check_answer([{"word": "dog", "day": datetime(2024, 1, 1), "times": [t("12:07")],
                                                "first": {"at": t("12:07"), "n": 1}, "seen": {"dog": t("12:07")},
                                                "log": [{"at": t("12:07")}]}])
        assert test.batch_answers() == {0: [test.columns.row(row)]}
        with pytest.raises(AssertionError) as error:
            test.check_new_answer([(*row[:3], (t("12:08"), 1), *row[4:])])
        assert_message(error, "check_new_answer(), batch 0", "missing:\n    ('dog', '2024-01-01', ('2024-01-01 12:07',), "
                       "('2024-01-01 12:08', 1), (('dog', '2024-01-01 12:07'),), (('2024-01-01 12:07',),))")
        for bad, line in [((*row[:3], (t("12:07"),), *row[4:]), "column 'first' is a struct<at, n>: give it as a "
                           "tuple of its 2 fields or a dict, got ('2024-01-01 12:07',)"),
                          ((row[0], "2024-01-01 12:07", *row[2:]), "column 'day' is a date: '2024-01-01 12:07' is not "
                           "a day; write days like '2024-01-01'"),
                          ((*row[:4], [("dog", t("12:07"))], row[5]), "column 'seen' is a map: give it as a dict, "
                           "got [('dog', '2024-01-01 12:07')]"),
                          ((*row[:5], [{"at": t("12:07"), "x": 1}]), "column 'log[0]' is a struct<at>: unknown field(s) "
                           "['x'] in {'at': '2024-01-01 12:07', 'x': 1}"),
                          ((*row[:3], {"at": t("12:07")}, *row[4:]), "column 'first' is a struct<at, n>: missing "
                           "field(s) ['n'] in {'at': '2024-01-01 12:07'}"),
                          ((row[0], "noon", *row[2:]), "column 'day': 'noon' is not a date; write dates like "
                           "'2024-01-01'")]:
            with pytest.raises(ValueError) as refused:
                test.check_answer([bad])
            assert str(refused.value) == line


def test_check_state_reads_each_side_of_a_stream_stream_join(spark, testing):
    from pyspark.sql import functions as F

    left = testing.MemoryStream(spark, "k string, lt timestamp")
    right = testing.MemoryStream(spark, "k2 string, rt timestamp")
    lt, rt = left.df.withWatermark("lt", "10 minutes"), right.df.withWatermark("rt", "10 minutes")
    joined = lt.join(rt, (lt.k == rt.k2) & rt.rt.between(lt.lt - F.expr("interval 5 minutes"),
                                                           lt.lt + F.expr("interval 5 minutes")))
    with testing.StreamTest(joined, output_mode="append") as test:
        test.add(left, [("a", "2024-01-01 12:00")]).add(right, [("b", "2024-01-01 12:01")]).process()
        test.check_state([("a", "a", "2024-01-01 12:00")], side="left")
        test.check_state([("b", "b", "2024-01-01 12:01")], side="right")
        with pytest.raises(AssertionError, match=r"check_state\(side='right'\)"):
            test.check_state([("a", "a", "2024-01-01 12:00")], side="right")
        # Late rows are followed for one input: a join's are refused, not read off the wrong input.
        with pytest.raises(ValueError, match=r"^late rows follow one input, and this query reads 2 streams \(a join or a union\)"):
            test.check_late([])


def test_check_state_picks_one_of_two_stateful_operators(spark, testing):
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, SCHEMA)
    unique_counts = (events.df.withWatermark("event_time", "10 minutes").dropDuplicates(["word", "event_time"])
                     .groupBy(F.window("event_time", "10 minutes"), "word").count())
    with testing.StreamTest(unique_counts) as test:
        test.add(events, [(t("12:07"), "dog"), (t("12:07"), "dog"), (t("12:08"), "owl"), (t("12:09"), "dog")])
        test.process().check_new_answer([])
        # Spark numbers the operators from the sink: 0 is the count, 1 the dropDuplicates.
        test.check_state([(t("12:00"), t("12:10"), "dog", 2), (t("12:00"), t("12:10"), "owl", 1)], operator=0)
        test.check_state([("dog", t("12:07")), ("dog", t("12:09")), {"word": "owl", "event_time": t("12:08")}],
                         operator=1)
        test.check_state([("dog", t("12:07")), ("dog", t("12:09")), ("owl", t("12:08"))], operator="dropDuplicates")
        test.check_state([(t("12:00"), t("12:10"), "dog", 2), (t("12:00"), t("12:10"), "owl", 1)],
                         operator="stateStoreSave")
        with pytest.raises(AssertionError) as error:
            test.check_state([("dog", t("12:07"))], operator="dedupe")
        assert_message(error, "check_state(operator='dedupe'), batch 1, watermark 2024-01-01 11:59", "the state ['word', 'event_time'] differs",
                       "unexpected:\n    ('dog', '2024-01-01 12:09')\n    ('owl', '2024-01-01 12:08')")
        for bad, error_text in [(7, "unknown operator 7"), ("join", "unknown operator 'join'"),
                                (None, "has 2 stateful operators: pick one with operator=")]:
            with pytest.raises(ValueError) as raised:
                test.check_state([], operator=bad)
            assert error_text in str(raised.value) and "0 (stateStoreSave), 1 (dedupe)" in str(raised.value)
            assert "\n" not in str(raised.value)


TIME_ZONE_SCRIPT = """
import datetime, json, time, workbench
from workbench.testing import MemoryStream

spark = workbench.session()
events = MemoryStream(spark, "event_time timestamp, wall timestamp_ntz, word string, "
                             "nested struct<at: timestamp>, times array<timestamp>")
at = datetime.datetime(2024, 1, 1, 12, 7)
events.add([("2024-01-01 12:07", "2024-01-01 12:07", "dog", {"at": at}, [at])])
query = events.df.writeStream.format("memory").queryName("zoned").start()
query.processAllAvailable()
query.stop()
row = spark.sql("SELECT date_format(event_time, 'HH:mm') AS utc, date_format(wall, 'HH:mm') AS ntz, "
                "date_format(nested.at, 'HH:mm') AS nested, date_format(times[0], 'HH:mm') AS listed FROM zoned").first()
print(json.dumps({"zone": time.strftime("%Z", time.localtime(1704110820)), "utc": row.utc, "ntz": row.ntz,
                  "nested": row.nested, "listed": row.listed}))
"""


@pytest.mark.kernel  # a Python process with a Spark of its own, in another time zone
def test_memory_stream_times_are_utc_whatever_the_machines_time_zone():
    # Spark's Python worker reads a datetime without a zone in the process's local time: on a
    # laptop in New York every event moved five hours.
    import json
    import subprocess
    import sys
    from pathlib import Path

    environment = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER")}
    environment.update(TZ="America/New_York", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", TIME_ZONE_SCRIPT], capture_output=True, text=True, timeout=300,
                          env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"zone": "EST", "utc": "12:07", "ntz": "12:07", "nested": "12:07", "listed": "12:07"}


def test_a_query_functions_globals_go_into_the_written_module_or_are_refused_in_one_line():
    from workbench.testing.recording import query_function_source

    namespace: dict = {}
    exec("import numpy as np\nfrom pyspark.sql.functions import window\nDELAY = '10 minutes'\n"
         "SCHEMA = 'value string'\nCUTOFF = np.float64(2.5)\n"
         "def counts(df):\n    return df.withWatermark('t', DELAY).groupBy(window('t', '5 minutes')).count()\n"
         "def parsed(df):\n    return df.selectExpr(SCHEMA)\n"
         "def cut(df):\n    return df.where(df.x > CUTOFF)\n", namespace)
    # The source of an exec'd function cannot be read back: only the names are checked here.
    from workbench.testing.recording import _names_used

    assert _names_used(namespace["counts"]) == "from pyspark.sql.functions import window\nDELAY = '10 minutes'"
    with pytest.raises(ValueError, match=r"^the query function uses the global SCHEMA, a name the test module gives"):
        _names_used(namespace["parsed"])
    with pytest.raises(ValueError, match=r"^the query function uses CUTOFF, which the test module cannot define"):
        _names_used(namespace["cut"])
    with pytest.raises(ValueError, match=r"^cannot read the source of query=counts \(defined in a notebook cell"):
        query_function_source(namespace["counts"])
