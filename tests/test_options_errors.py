"""Pure tests of option checking, error summaries and the docstring examples of pure modules."""

from __future__ import annotations


import pytest

from workbench.errors import StreamStartError, summarize_error
from workbench.options import (
    check_name,
    check_output_mode,
    check_rows,
    check_sink,
    parse_trigger,
)


@pytest.mark.parametrize(
    "text, kind, kwargs",
    [
        (None, "default", {}),
        ("", "default", {}),
        ("1 second", "processing_time", {"processingTime": "1 seconds"}),
        ("500 ms", "processing_time", {"processingTime": "500 milliseconds"}),
        ("0.5 seconds", "processing_time", {"processingTime": "0.5 seconds"}),
        ("2 minutes", "processing_time", {"processingTime": "2 minutes"}),
        ("10s", "processing_time", {"processingTime": "10 seconds"}),
        ("once", "once", {"once": True}),
        ("Available-Now", "available_now", {"availableNow": True}),
        ("availableNow", "available_now", {"availableNow": True}),
    ],
)
def test_triggers(text, kind, kwargs):
    trigger = parse_trigger(text)
    assert trigger.kind == kind and trigger.writer_kwargs() == kwargs


@pytest.mark.parametrize("text", ["soon", "1 fortnight", "-1 second", "0 seconds", "seconds", "once a day"])
def test_bad_triggers_name_the_value_and_the_forms(text):
    with pytest.raises(ValueError) as info:
        parse_trigger(text)
    message = str(info.value)
    assert repr(text) in message and "\n" not in message


def test_trigger_type():
    with pytest.raises(TypeError, match="1 second"):
        parse_trigger(5)


@pytest.mark.parametrize("name", ["", "  ", "my stream", "1abc", "a-b", "a.b"])
def test_bad_names(name):
    with pytest.raises(ValueError, match="name"):
        check_name(name)


def test_name_type_and_good_names():
    with pytest.raises(TypeError):
        check_name(None)
    assert check_name("_x1") == "_x1"


def test_sinks_and_modes():
    assert check_sink(" MEMORY ") == "memory"
    with pytest.raises(ValueError, match="'kafka'.*memory, console"):
        check_sink("kafka")
    assert check_output_mode("Complete") == "complete"
    with pytest.raises(ValueError, match="'upsert'.*append, update, complete"):
        check_output_mode("upsert")


@pytest.mark.parametrize("rows", [0, -3, 2.0, "5", True])
def test_bad_rows(rows):
    with pytest.raises(ValueError, match="rows"):
        check_rows(rows)


# Messages as Spark 4.3 produced them (see tests/test_streams.py for the live counterparts).
UDF_FAILURE = (
    "[STREAM_FAILED] Query [id = 2bf5, runId = 02ed] terminated with exception: [PYTHON_EXCEPTION] "
    "An exception was thrown from the Python worker: Traceback (most recent call last):\n"
    '  File "/tmp/x.py", line 9, in boom\n    if v > 5: raise ValueError(f"value {v} is too big")\n'
    "              ^^^^^^^^^^^^^^^^\nValueError: value 7 is too big\n SQLSTATE: 38000 SQLSTATE: XXKST\n"
    "=== Streaming Query ===\nIdentifier: t [id = 2bf5, runId = 02ed]\n"
)


@pytest.mark.parametrize(
    "text, expected",
    [
        (UDF_FAILURE, "ValueError: value 7 is too big"),
        (
            "[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: append. This "
            "output mode is not supported for streaming aggregations without watermark on streaming "
            "DataFrames/DataSets. SQLSTATE: 42KDE",
            "Invalid streaming output mode: append. This output mode is not supported for streaming "
            "aggregations without watermark on streaming DataFrames/DataSets.",
        ),
        (
            "\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. SQLSTATE: 42601 (line 1, pos 0)\n\n== SQL ==\nselec 1\n",
            "Syntax error at or near 'selec'. (line 1, pos 0)",
        ),
        (
            "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted\n=== Streaming Query ===",
            "Job aborted",
        ),
        ("", "unknown error"),
    ],
)
def test_summarize_error(text, expected):
    assert summarize_error(text) == expected


def test_start_error_keeps_details():
    err = StreamStartError("short", "long\ntext")
    assert isinstance(err, ValueError) and str(err) == "short" and err.details == "long\ntext"


def test_a_call_aside_that_fails_prints_nothing_and_is_logged(capsys, caplog):
    # A stop run aside at a script's exit can find the JVM gone; its error goes to the log,
    # not to stderr as an "Exception in thread" trace.
    import logging

    from workbench.spark.session_end import run_aside

    def fail() -> None:
        raise ConnectionResetError("the JVM went away")

    with caplog.at_level(logging.DEBUG, logger="workbench"):
        thread = run_aside(fail, "workbench-stop-query")
        assert thread is not None
        thread.join(10)
    assert capsys.readouterr().err == ""
    assert any(r.exc_info and r.exc_info[0] is ConnectionResetError for r in caplog.records), caplog.records
