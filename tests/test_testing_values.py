"""workbench.testing's values, as a user's test writes them: big and nullable whole numbers, NaN, decimals.

Also the one-line refusals of a bad schema, session or check, and a failing query's log.
"""

from __future__ import annotations

import logging
import math
from decimal import Decimal

import pytest

pytestmark = pytest.mark.spark

BIG = 1234567890123456789


@pytest.fixture
def testing(env):
    import workbench.testing

    return workbench.testing


def one_line(error: pytest.ExceptionInfo, expected: str) -> None:
    text = str(error.value)
    assert text == expected, text


def test_big_and_nullable_whole_numbers_come_back_exact(spark, testing):
    # toPandas made a nullable long column float64: a wrong answer 21 away passed, an int was 1.0.
    events = testing.MemoryStream(spark, "id long, word string, n int")
    with testing.StreamTest(events.df) as test:
        test.add(events, [(BIG, "a", None), (None, "b", 1)]).process()
        assert test.answer() == [(BIG, "a", None), (None, "b", 1)]
        assert [type(row[2]) for row in test.answer()] == [type(None), int]
        test.check_answer([(BIG, "a", None), (None, "b", 1)])
        with pytest.raises(AssertionError) as error:
            test.check_answer([(BIG - 21, "a", None), (None, "b", 1)])
        assert f"missing:\n    ({BIG - 21}, 'a', None)\n  unexpected:\n    ({BIG}, 'a', None)" in str(error.value)
        with pytest.raises(AssertionError):
            test.check_answer([(BIG, "a", None), (None, "b", 2)])


def test_nan_is_not_null(spark, testing):
    # NaN and null were both read as None.
    events = testing.MemoryStream(spark, "x double, xs array<double>")
    nan = float("nan")
    with testing.StreamTest(events.df) as test:
        test.add(events, [(nan, [nan, 1.5]), (None, [None])]).process()
        assert [math.isnan(row[0]) if row[0] is not None else None for row in events.rows()] == [True, None]
        test.check_answer([(nan, [nan, 1.5]), (None, [None])])
        test.check_answer([(None, [None]), {"x": float("nan"), "xs": [float("nan"), 1.5]}])
        with pytest.raises(AssertionError) as error:
            test.check_answer([(None, [nan, 1.5]), (None, [None])])
        assert "missing:\n    (None, (nan, 1.5))\n  unexpected:\n    (nan, (nan, 1.5))" in str(error.value)
        with pytest.raises(AssertionError):
            test.check_answer([(nan, [nan, 1.5]), (nan, [None])])
        with pytest.raises(AssertionError):
            test.check_answer([(nan, [None, 1.5]), (None, [None])])


def test_decimal_columns_take_exact_numbers_and_compare_exactly(spark, testing):
    from pyspark.sql import functions as F

    # Decimal('3.50') was refused as "not a number", and 3.5 accepted, then failed the batch in a wall.
    events = testing.MemoryStream(spark, "d decimal(10,2), word string")
    events.add([(Decimal("3.50"), "a"), (2, "b"), ("0.1", "c"), (1.25, "d"), (None, "e")])
    assert [row[0] for row in events.rows()] == [Decimal("3.50"), Decimal("2.00"), Decimal("0.10"), Decimal("1.25"),
                                                 None]
    with testing.StreamTest(events.df.select("d", "word", (F.col("d") * 2).alias("twice"))) as test:
        test.add(events, [(Decimal("-12345678.99"), "f")]).process()
        test.check_answer([(Decimal("3.5"), "a", 7), ("2", "b", "4.00"), (0.1, "c", Decimal("0.2")), (1.25, "d", 2.5),
                           (None, "e", None), ("-12345678.99", "f", Decimal("-24691357.98"))])
        assert test.answer()[0] == (Decimal("3.50"), "a", Decimal("7.00"))
        with pytest.raises(AssertionError) as error:
            test.check_answer([(Decimal("3.51"), "a", 7), ("2", "b", "4.00"), (0.1, "c", Decimal("0.2")),
                               (1.25, "d", 2.5), (None, "e", None), ("-12345678.99", "f", Decimal("-24691357.98"))])
        assert "missing:\n    (Decimal('3.51'), 'a', Decimal('7'))" in str(error.value)
        with pytest.raises(ValueError) as refused:
            test.check_answer([("three", "a", 7)])
        one_line(refused, "column 'd' is decimal(10,2): 'three' is not a number; give a Decimal, an int, a float or a "
                          "string such as '3.50'")


@pytest.mark.parametrize("value, error, message", [
    (Decimal("3.505"), ValueError, "column 'd' is decimal(10,2): Decimal('3.505') has more than 2 decimal places"),
    (0.125, ValueError, "column 'd' is decimal(10,2): 0.125 has more than 2 decimal places"),
    (Decimal("123456789"), ValueError,
     "column 'd' is decimal(10,2): Decimal('123456789') is out of its range (-99999999.99 to 99999999.99)"),
    (10 ** 8, ValueError, "column 'd' is decimal(10,2): 100000000 is out of its range (-99999999.99 to 99999999.99)"),
    ("3,50", ValueError, "column 'd' is decimal(10,2): '3,50' is not a number; give a Decimal, an int, a float "
                         "or a string such as '3.50'"),
    (float("nan"), ValueError, "column 'd' is decimal(10,2): nan is not a number; give a Decimal, an int, a float "
                               "or a string such as '3.50'"),
    (True, TypeError, "column 'd' is decimal(10,2): True is not a number; give a Decimal, an int, a float or a "
                      "string such as '3.50'"),
])
def test_decimal_columns_refuse_what_does_not_fit_in_one_line(spark, testing, value, error, message):
    events = testing.MemoryStream(spark, "d decimal(10,2)")
    with pytest.raises(error) as refused:
        events.add([(value,)])
    one_line(refused, message)
    assert events.offset == 0


def test_a_schema_naming_a_column_twice_and_a_missing_session_are_refused(spark, testing):
    # Accepted, then process() failed in a multi-line Arrow error; None failed with an AttributeError.
    with pytest.raises(ValueError) as refused:
        testing.MemoryStream(spark, "x int, x int")
    one_line(refused, "schema 'x int, x int' names column 'x' twice: give each column its own name")
    with pytest.raises(ValueError) as refused:
        testing.MemoryStream(spark, "x int, s struct<a: int, A: string>")
    one_line(refused, "schema 'x int, s struct<a: int, A: string>' names column 's.A' twice (column names ignore "
                      "case): give each column its own name")
    with pytest.raises(TypeError) as refused:
        testing.MemoryStream(None, "x int")
    one_line(refused, "MemoryStream needs a SparkSession (workbench.session(), or the pytest plugin's spark "
                      "fixture), got None")


def test_a_bare_assertion_error_is_the_errors_line(spark, testing):
    from pyspark.sql import functions as F

    from workbench.errors import summarize_error

    worker = ("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch "
              "sink. Reason: Traceback (most recent call last):\n  File \"/x/udf.py\", line 3, in check\n"
              "    assert value > 0\n           ^^^^^^^^^\nAssertionError\n\n\tat org.apache.spark.api.python."
              "BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:1)\n"
              "org.apache.spark.SparkException: Job aborted\n")
    assert summarize_error(worker) == "AssertionError"
    # Words in a traceback are not exception names.
    assert summarize_error("Traceback (most recent call last):\n  File 'x', line 1\n    Error\nValueError: bad") == \
        "ValueError: bad"

    @F.udf("int")
    def positive(value):
        if value <= 0:
            raise AssertionError  # as a bare assert in a module pytest does not rewrite
        return value

    events = testing.MemoryStream(spark, "value int")
    with testing.StreamTest(events.df.select(positive("value").alias("value"))) as test:
        with pytest.raises(AssertionError) as error:
            test.add(events, [(-1,)]).process()
        one_line(error, "step 2, process(), batch 0, watermark none: the query failed: AssertionError")
        assert "Traceback" in error.value.details


def test_a_failing_query_leaves_no_py4j_traceback_in_the_log(spark, testing, caplog):
    from pyspark.sql import functions as F

    @F.udf("int")
    def refuse(value):
        raise ValueError(f"refused {value}")

    caplog.set_level(logging.INFO)
    filters = list(logging.getLogger("py4j.clientserver").filters)
    events = testing.MemoryStream(spark, "value int")
    with testing.StreamTest(events.df.select(refuse("value").alias("value"))) as test:
        with pytest.raises(AssertionError, match=r"the query failed: ValueError: refused 7$") as error:
            test.add(events, [(7,)]).process()
        assert "Traceback" in error.value.details and "ValueError: refused 7" in error.value.details
        test.restart().expect_failure("refused 7")
    py4j = [r for r in caplog.records if r.name.startswith("py4j") and r.levelno >= logging.ERROR]
    assert not py4j, [r.getMessage() for r in py4j]
    # Only while a StreamTest runs its query: py4j's logger is as it was afterwards.
    assert logging.getLogger("py4j.clientserver").filters == filters
    assert not [f for f in logging.getLogger("py4j.clientserver").filters if type(f).__name__ == "CallbackFailureFilter"]


def test_check_late_refuses_a_query_without_a_watermark_and_late_rows_differ(spark, testing):
    from pyspark.sql import functions as F

    events = testing.MemoryStream(spark, "event_time timestamp, word string")
    with testing.StreamTest(events.df.groupBy("word").count(), output_mode="update") as test:
        test.add(events, [("2024-01-01 12:00", "dog")]).process()
        with pytest.raises(ValueError) as refused:
            test.check_late([("2024-01-01 12:00", "dog")])
        one_line(refused, "check_late: this query has no watermark: no row can be late (give it one with "
                          "withWatermark, or check its answer with check_answer)")
    counts = events.df.withWatermark("event_time", "10 minutes").groupBy(F.window("event_time", "10 minutes")).count()
    with testing.StreamTest(counts) as test:
        test.add(events, [("2024-01-01 12:21", "dog")]).process()
        test.add(events, [("2024-01-01 12:05", "cat")]).process()
        with pytest.raises(AssertionError) as error:
            test.check_late([])
        assert "the dropped late rows differ\n" in str(error.value)
