"""The "why no output?" rules and the plan-text parser, on scripted progress (pure logic)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from workbench.progress import BatchProgress
from workbench.progress.records import OperatorProgress
from workbench.progress.diagnosis import (
    HeldTimers, OutputSummary, PlanFacts, earliest_window_end, format_duration, parse_interval, why_no_output,
)

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
EPOCH_TEXT = "1970-01-01T00:00:00.000Z"


def iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def batch(i: int, rows: int = 5, out: int = 0, event: datetime | None = None,
          watermark: str | None = None, stateful: bool = True, last: datetime | None = None) -> BatchProgress:
    """One batch's progress; its event times run from ``event`` to ``last`` (``event`` when left out)."""
    event_time = {}
    if event is not None:
        event_time.update(min=iso(event), max=iso(last or event), avg=iso(event))
    if watermark is not None:
        event_time["watermark"] = watermark
    return BatchProgress.from_json({
        "batchId": i, "numInputRows": rows, "durationMs": {"addBatch": 1, "triggerExecution": 2},
        "eventTime": event_time, "sink": {"numOutputRows": out},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 1}] if stateful else [],
    })


def watermarked(n: int, step: timedelta = timedelta(seconds=1), delay: timedelta = timedelta(seconds=10)):
    """Batches like rate-micro-batch with a watermark: it lags the data by one batch."""
    records = []
    for i in range(n):
        watermark = EPOCH_TEXT if i == 0 else iso(T0 + (i - 1) * step - delay)
        records.append(batch(i, event=T0 + i * step, watermark=watermark))
    return records


HOUR_WINDOW = PlanFacts(has_aggregation=True, has_watermark=True, watermark_delay=timedelta(seconds=10),
                        window_duration=timedelta(hours=1), window_slide=timedelta(hours=1))
NO_WATERMARK = PlanFacts(has_aggregation=True)
SESSIONS = PlanFacts(has_aggregation=True, has_watermark=True, watermark_delay=timedelta(seconds=10),
                     window_column="ts", has_session_window=True, session_gap=timedelta(minutes=5))


@pytest.mark.parametrize(
    "records, mode, plan, elapsed, expected",
    [
        # the three situations
        ([batch(i, stateful=False) for i in range(3)], "append", NO_WATERMARK, None,
         "No watermark is defined for this aggregation"),
        (watermarked(4), None, HOUR_WINDOW, None,
         "has not yet passed the end of the earliest open window (2024-01-01 13:00:00 UTC)"),
        ([batch(i, rows=0) for i in range(3)], "append", HOUR_WINDOW, None, "No input rows arrive: 3 micro-batches"),
        ([], "append", HOUR_WINDOW, timedelta(seconds=12), "no micro-batch has run in the 12 s"),
        # without plan facts: progress shows state and watermark, but not the window end
        (watermarked(4), "append", None, None, "has not yet passed the end of any aggregate"),
        (watermarked(4), "append", SESSIONS, None,
         "has not yet passed the end of the earliest session (at 2024-01-01 12:05:00 UTC or later"),
        # ... and not otherwise
        (watermarked(2), "append", HOUR_WINDOW, None, None),                  # too early to judge
        ([], "append", HOUR_WINDOW, timedelta(seconds=3), None),              # still starting
        (watermarked(4), "update", HOUR_WINDOW, None, None),                  # update mode emits as it goes
        (watermarked(4), "complete", HOUR_WINDOW, None, None),
        (watermarked(3) + [batch(3, out=1, event=T0, watermark=iso(T0))], "append", HOUR_WINDOW, None, None),
        ([batch(i, stateful=False) for i in range(3)], "append", PlanFacts(), None, None),  # plain select
        ([batch(i, stateful=False) for i in range(3)], "append", None, None, None),
        ([batch(i, rows=0) for i in range(3)], "update", None, None, None),
    ],
)
def test_why_no_output(records, mode, plan, elapsed, expected):
    message = why_no_output(OutputSummary().add(records), output_mode=mode, plan=plan, elapsed=elapsed)
    if expected is None:
        assert message is None
    else:
        assert message is not None and expected in message and "\n" not in message


def test_watermark_message_shows_both_times_and_the_gap():
    records = watermarked(5)  # newest watermark: 12:00:03 - 10 s = 11:59:53
    message = why_no_output(OutputSummary().add(records), output_mode="append", plan=HOUR_WINDOW)
    assert "watermark (2024-01-01 11:59:53 UTC)" in message
    assert "(2024-01-01 13:00:00 UTC); it is 1 h 7 s short" in message
    assert "latest event time (2024-01-01 12:00:04 UTC) by 11 s (watermark delay 10 s)" in message
    assert "1704" not in message  # never epoch numbers


def test_watermark_that_has_passed_the_window_end_gives_no_reason():
    # The window is output with the next batch: not a problem to explain.
    records = [batch(0, event=T0, watermark=EPOCH_TEXT),
               batch(1, event=T0, watermark=iso(T0 + timedelta(hours=1))),
               batch(2, event=T0, watermark=iso(T0 + timedelta(hours=1)))]
    assert why_no_output(OutputSummary().add(records), output_mode="append", plan=HOUR_WINDOW) is None


def test_watermark_not_yet_set_is_said_in_words():
    records = [batch(i, event=T0, watermark=EPOCH_TEXT) for i in range(3)]
    message = why_no_output(OutputSummary().add(records), output_mode="append", plan=HOUR_WINDOW)
    assert "watermark (not set yet (epoch 0))" in message and "1970" not in message
    # Never a decades-long shortfall measured from epoch 0 ("20780 d 16 h short").
    assert " d " not in message and "short" not in message
    assert "the watermark starts once a batch with event times has run" in message


def at(hhmm: str) -> datetime:
    return datetime(2024, 1, 1, *map(int, hhmm.split(":")), tzinfo=timezone.utc)


def minutes(n: int) -> timedelta:
    return timedelta(minutes=n)


# The programming guide's windows (10 minutes, sliding every 5), and tumbling 10-minute ones, with a 1-minute delay.
GUIDE = PlanFacts(has_aggregation=True, has_watermark=True, watermark_delay=minutes(1),
                  window_duration=minutes(10), window_slide=minutes(5), watermarks=1)
TEN_MINUTES = dataclasses.replace(GUIDE, window_slide=minutes(10))


def test_a_window_the_last_batchs_event_times_closed_is_due_with_the_next_batch():
    # One batch (availableNow on a Python data source, or trigger once): it ran with the watermark
    # not set, and left 12:21 - 1 min = 12:20 for a next batch that never runs.
    records = [batch(0, event=at("12:07"), last=at("12:21"), watermark=EPOCH_TEXT)]
    message = why_no_output(OutputSummary().add(records), output_mode="append", plan=GUIDE, min_batches=1)
    assert message == (
        "The next micro-batch outputs the earliest open window (2024-01-01 12:10:00 UTC): the last batch ran with "
        "the watermark not set yet and moved it to 2024-01-01 12:20:00 UTC (latest event time 2024-01-01 12:21:00 "
        "UTC minus the 1 min delay), past the window's end. Spark runs that batch without new rows only while the "
        "query keeps running (a processing-time trigger); trigger once, and availableNow on a Python data source "
        "such as workbench.testing.MemoryStream, end before it.")
    assert "starts once a batch with event times has run" not in message


def guide_batches(last: str) -> list[BatchProgress]:
    """Three batches, each with the watermark the one before it left; the last one's event times end at ``last``."""
    return [batch(0, event=at("12:01"), last=at("12:05"), watermark=EPOCH_TEXT),
            batch(1, event=at("12:06"), last=at("12:09"), watermark=iso(at("12:04"))),
            batch(2, event=at("12:09"), last=at(last), watermark=iso(at("12:08")))]


def test_a_watermark_short_only_in_the_last_batch_is_not_called_short():
    # Batch 2 ran with 12:08, 2 min short of 12:10, but its 12:15 moved the watermark to 12:14.
    message = why_no_output(OutputSummary().add(guide_batches("12:15")), output_mode="append", plan=TEN_MINUTES)
    assert message.startswith("The next micro-batch outputs the earliest open window (2024-01-01 12:10:00 UTC): "
                              "the last batch ran with the watermark at 2024-01-01 12:08:00 UTC and moved it to "
                              "2024-01-01 12:14:00 UTC (latest event time 2024-01-01 12:15:00 UTC minus the 1 min "
                              "delay), past the window's end.")
    assert "short" not in message


def test_a_watermark_the_last_batch_leaves_short_too_is_still_called_short():
    # Batch 2's 12:10 moves the watermark to 12:09 only: the window ending 12:10 stays open.
    message = why_no_output(OutputSummary().add(guide_batches("12:10")), output_mode="append", plan=TEN_MINUTES)
    assert message == (
        "The watermark (2024-01-01 12:08:00 UTC) has not yet passed the end of the earliest open window "
        "(2024-01-01 12:10:00 UTC); it is 2 min short. In append mode a window is output only once the watermark "
        "passes its end. The watermark trails the latest event time (2024-01-01 12:10:00 UTC) by 2 min "
        "(watermark delay 1 min).")


@pytest.mark.spark
def test_an_ended_available_now_stream_on_a_memory_stream_is_told_the_next_batch_would_output(spark, env):
    import workbench.testing
    from pyspark.sql import functions as F

    from workbench.views.monitor_header import no_output_reason

    events = workbench.testing.MemoryStream(spark, "event_time timestamp, word string")
    try:
        events.add([("2024-01-01 12:07", "dog"), ("2024-01-01 12:21", "owl")])
        counts = (events.df.withWatermark("event_time", "1 minute")
                  .groupBy(F.window("event_time", "10 minutes", "5 minutes"), "word").count())
        handle = env.start(counts, "ended_words", trigger="available-now")
        assert handle.wait_finished(60) and handle.status == "stopped"
        records = handle.progress.records()
        assert [(r.batch_id, r.num_output_rows) for r in records] == [(0, 0)], "no watermark-only batch ran"
        message = no_output_reason(handle, OutputSummary().add(records), [], min_batches=1,
                                   quiet_time=timedelta(seconds=10))
        assert message.startswith("The next micro-batch outputs the earliest open window (2024-01-01 12:10:00 UTC): "
                                  "the last batch ran with the watermark not set yet and moved it to "
                                  "2024-01-01 12:20:00 UTC"), message
    finally:
        events.close()


def test_summary_folds_incrementally_like_all_at_once():
    records = watermarked(6) + [batch(6, rows=0, out=3, event=None, watermark=iso(T0))]
    folded = OutputSummary()
    for record in records:
        folded = folded.add([record])
    assert folded == OutputSummary().add(records)
    assert (folded.batches, folded.input_rows, folded.output_rows, folded.quiet_batches) == (7, 30, 3, 1)
    assert folded.earliest_event_time == T0 and folded.latest_event_time == T0 + timedelta(seconds=5)
    assert folded.watermark == T0


@pytest.mark.parametrize(
    "event, duration, slide, offset, end",
    [
        ("12:07", "10 minutes", None, "0 seconds", "12:10"),
        ("12:10", "10 minutes", None, "0 seconds", "12:20"),  # windows are [start, end)
        ("12:07", "10 minutes", "5 minutes", "0 seconds", "12:10"),
        ("12:04", "10 minutes", "5 minutes", "0 seconds", "12:05"),
        ("12:07", "10 minutes", "5 minutes", "1 minute", "12:11"),
        ("12:07", "1 hour", None, "0 seconds", "13:00"),
    ],
)
def test_earliest_window_end(event, duration, slide, offset, end):
    at = lambda hhmm: datetime(2024, 1, 1, *map(int, hhmm.split(":")), tzinfo=timezone.utc)
    got = earliest_window_end(at(event), parse_interval(duration),
                              parse_interval(slide) if slide else None, parse_interval(offset))
    assert got == at(end)


PARSED = ("'Aggregate ['window('timestamp, 10 minutes, 5 minutes, 1 minute)], "
          "[unresolvedalias('window('timestamp, 10 minutes, 5 minutes, 1 minute)), 'count(1) AS count#2]\n"
          "+- ~EventTimeWatermark 1e47e321-4793-4e33-a037-8a197a8b17cb, timestamp#0: timestamp, 10 seconds\n"
          "   +- ~StreamingRelationV2 rate-micro-batch, [timestamp#0, value#1L]")


@pytest.mark.parametrize(
    "text, expected",
    [
        (PARSED, PlanFacts(True, True, "timestamp", timedelta(seconds=10), "timestamp",
                           timedelta(minutes=10), timedelta(minutes=5), timedelta(minutes=1), watermarks=1)),
        ("'Aggregate ['window('ts, 1 hour)], ['count(1)]\n+- ~StreamingRelationV2 x",
         PlanFacts(True, False, None, None, "ts", timedelta(hours=1), timedelta(hours=1))),
        ("~Project [value#1L]\n+- ~StreamingRelationV2 rate-micro-batch", PlanFacts()),
        ("~Deduplicate [value#1L]\n+- ~EventTimeWatermark 1e47e321-4793-4e33-a037-8a197a8b17cb, "
         "ts#0: timestamp, 1 hour 30 minutes",
         PlanFacts(False, True, "ts", timedelta(minutes=90), watermarks=1)),
        # a stream-stream join: one watermark per side, each named in both plans
        ("~Join Inner\n:- ~EventTimeWatermark 1e47e321-4793-4e33-a037-8a197a8b17cb, a#0: timestamp, 1 minute\n"
         "+- ~EventTimeWatermark 2f47e321-4793-4e33-a037-8a197a8b17cb, b#1: timestamp, 2 minutes\n"
         "Join Inner\n:- EventTimeWatermark 1e47e321-4793-4e33-a037-8a197a8b17cb, a#0: timestamp, 1 minute",
         PlanFacts(False, True, "a", timedelta(minutes=1), watermarks=2)),
        ("'Aggregate ['session_window('ts, 5 minutes), 'user], ['count(1)]", PlanFacts(
            True, window_column="ts", has_session_window=True, session_gap=timedelta(minutes=5))),
        # a gap computed per row is known to be a session window, with no fixed gap
        ("'Aggregate ['session_window('ts, CASE WHEN '`>`('v, 1) THEN 5 minutes ELSE 1 minute END)]",
         PlanFacts(True, window_column="ts", has_session_window=True)),
        # workbench.testing.MemoryStream inputs: their folders, once each though both plans name them
        ("~Union\n:- ~StreamingRelationV2 org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2@2, "
         "workbench_memory, org.apache.spark.sql.execution.datasources.v2.python.PythonTable@7, "
         "[folder=/tmp/workbench-memory-stream-a4j16ma0], [word#0], name=<Unassigned>\n"
         "+- ~StreamingRelationV2 org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2@3, "
         "workbench_memory, org.apache.spark.sql.execution.datasources.v2.python.PythonTable@8, "
         "[folder=/data/b], [word#1], name=<Unassigned>\n"
         "Union\n:- StreamingRelationV2 workbench_memory, PythonTable@7, [folder=/tmp/workbench-memory-stream-a4j16ma0]",
         PlanFacts(memory_folders=("/tmp/workbench-memory-stream-a4j16ma0", "/data/b"))),
        # A folder Spark redacts in printed plans (its name has "url" in it) is read from its hex copy.
        ("workbench_memory, org.apache.spark.sql.execution.datasources.v2.python.PythonTable@7, "
         f"[folder=*********(redacted), folder_hex={'/tmp/workbench-memory-stream-curl0a1b'.encode().hex()}], "
         "[word#0], name=<Unassigned>",
         PlanFacts(memory_folders=("/tmp/workbench-memory-stream-curl0a1b",))),
    ],
)
def test_plan_facts_from_text(text, expected):
    assert PlanFacts.from_plan_text(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [("10 seconds", timedelta(seconds=10)), ("1 minute", timedelta(minutes=1)),
     ("interval 2 hours", timedelta(hours=2)), ("500 milliseconds", timedelta(milliseconds=500)),
     ("1 day 2 hours", timedelta(days=1, hours=2)), ("later", None), ("10 fortnights", None), ("", None)],
)
def test_parse_interval(text, expected):
    assert parse_interval(text) == expected


@pytest.mark.parametrize(
    "value, text",
    [(timedelta(milliseconds=5), "5 ms"), (timedelta(seconds=11), "11 s"),
     (timedelta(hours=1, seconds=7), "1 h 7 s"), (timedelta(minutes=-3), "-3 min")],
)
def test_format_duration(value, text):
    assert format_duration(value) == text


def processor_batch(i: int, registered: int, watermark: str = "2024-01-01T12:00:00.000Z") -> BatchProgress:
    return BatchProgress.from_json({
        "batchId": i, "numInputRows": 4, "sink": {"numOutputRows": 0}, "eventTime": {"watermark": watermark},
        "stateOperators": [{"operatorName": "transformWithStateInPandasExec",
                            "customMetrics": {"numRegisteredTimers": registered}}]})


TIMER_AT = T0 + timedelta(minutes=11)


@pytest.mark.parametrize(
    "held, expected",
    [
        (HeldTimers(2, "event time", "bob", TIMER_AT, T0),
         "has 2 timers waiting and none has fired: an event-time timer fires in the first batch whose watermark "
         "reaches its expiry. Earliest timer: key bob at 2024-01-01 12:11:00 UTC, 11 min ahead of the watermark "
         "(2024-01-01 12:00:00 UTC)."),
        (HeldTimers(1, "event time", "bob", TIMER_AT, TIMER_AT),
         "Earliest timer: key bob at 2024-01-01 12:11:00 UTC, already reached by the watermark "
         "(2024-01-01 12:11:00 UTC): the next batch fires it."),
        (HeldTimers(1, "event time", "bob", TIMER_AT, datetime(1970, 1, 1, tzinfo=timezone.utc)),
         "Earliest timer: key bob at 2024-01-01 12:11:00 UTC, the watermark is not set yet."),
        (HeldTimers(1, "processing time", "3", TIMER_AT),
         "a processing-time timer fires in the first batch that runs at or after its expiry. Earliest timer: key 3 "
         "at 2024-01-01 12:11:00 UTC."),
        (HeldTimers(0, "event time"), "has output nothing and no timer is registered now"),  # all were deleted
        # timers not readable: progress's counts
        (None, "has 3 timers waiting and none has fired: an event-time timer fires in the first batch whose "
               "watermark reaches its expiry, and the watermark is at 2024-01-01 12:00:00 UTC."),
    ],
)
def test_processor_reason_names_the_earliest_timer(held, expected):
    calls = []
    summary = OutputSummary().add(processor_batch(i, 1) for i in range(3))
    message = why_no_output(summary, output_mode="update", timers=lambda: calls.append(1) or held)
    assert expected in message and calls == [1]


def test_processor_timers_are_read_only_when_the_processor_rule_applies():
    calls = []
    summary = OutputSummary().add(processor_batch(i, 1) for i in range(2))  # fewer batches than min_batches
    assert why_no_output(summary, output_mode="update", timers=lambda: calls.append(1)) is None and calls == []


def test_processor_reason_without_any_timer_registered():
    summary = OutputSummary().add(processor_batch(i, 0) for i in range(3))
    message = why_no_output(summary, output_mode="update", timers=lambda: HeldTimers(0, "event time"))
    assert "has output nothing and no timer is registered yet" in message


# -- what the monitor must not claim -----------------------------------------------------------------------


def unknown_output(records: list[BatchProgress]) -> list[BatchProgress]:
    """The same batches from a sink that cannot count its rows (foreachBatch, files: Spark writes -1)."""
    return [dataclasses.replace(r, num_output_rows=None) for r in records]


def test_a_sink_that_cannot_count_its_rows_gets_no_reason_that_nothing_was_output():
    summary = OutputSummary().add(BatchProgress.from_json({"batchId": 0, "numInputRows": 5,
                                                            "sink": {"numOutputRows": -1}}) for _ in range(1))
    assert (summary.output_rows, summary.output_known) == (0, False)
    assert why_no_output(OutputSummary().add(unknown_output(watermarked(4))), output_mode="append",
                         plan=HOUR_WINDOW) is None
    assert why_no_output(OutputSummary().add(unknown_output(watermarked(4))), output_mode="append") is None
    calls = []
    processor = OutputSummary().add(unknown_output([processor_batch(i, 1) for i in range(3)]))
    assert why_no_output(processor, output_mode="update", timers=lambda: calls.append(1)) is None and calls == []
    # No input is still no input, whatever the sink can count.
    quiet = unknown_output([batch(i, rows=0) for i in range(3)])
    assert "No input rows arrive" in why_no_output(OutputSummary().add(quiet), output_mode="append")


JOIN_WITH_STATIC_AGGREGATE = (
    "'Join UsingJoin(Inner, [value])\n"
    ":- ~StreamingRelationV2 rate-micro-batch, [rowsPerBatch=3], [timestamp#5, value#6L], name=<Unassigned>\n"
    "+- Aggregate [value#1L], [value#1L, count(1) AS count#2L]\n"
    "   +- Project [(id#0L + cast(1000 as bigint)) AS value#1L]\n"
    "      +- Range (0, 5, step=1, splits=Some(2))\n"
    "\n"
    "~Project [value#6L, timestamp#5, count#2L]\n"
    "+- ~Join Inner, (value#6L = value#1L)\n"
    "   :- ~StreamingRelationV2 rate-micro-batch, [rowsPerBatch=3], [timestamp#5, value#6L], name=<Unassigned>\n"
    "   +- Aggregate [value#1L], [value#1L, count(1) AS count#2L]\n"
    "      +- Project [(id#0L + cast(1000 as bigint)) AS value#1L]\n"
    "         +- Range (0, 5, step=1, splits=Some(2))")


@pytest.mark.parametrize(
    "text, aggregation",
    [
        (JOIN_WITH_STATIC_AGGREGATE, False),                          # the aggregate is on the static side
        ("WriteToMicroBatchDataSource MemorySink\n+- ~Aggregate [window#13-T0ms], [count(1) AS count#9L]\n"
         "   +- ~StreamingDataSourceV2ScanRelation[timestamp#7, value#8L] RatePerMicroBatch", True),
        ("'Aggregate ['v], ['count(1)]\n+- ~StreamingRelationV2 rate", True),   # unresolved, over a stream
        ("'Aggregate ['v], ['count(1)]\n+- 'UnresolvedRelation [lookup]\n\nAggregate [v#1], [count(1)]\n"
         "+- LocalRelation [v#1]", False),                            # a batch query's aggregate
        ("~Deduplicate [value#1L]\n+- ~StreamingRelationV2 rate", False),
    ],
)
def test_only_a_streaming_aggregation_counts_as_one(text, aggregation):
    assert PlanFacts.from_plan_text(text).has_aggregation is aggregation


def test_a_stream_static_join_with_an_aggregated_static_side_gets_no_watermark_reason():
    plan = PlanFacts.from_plan_text(JOIN_WITH_STATIC_AGGREGATE)
    assert why_no_output(OutputSummary().add(batch(i, stateful=False) for i in range(3)), output_mode="append",
                         plan=plan) is None


def operator_batches(name: str, n: int = 4) -> list[BatchProgress]:
    return [dataclasses.replace(r, operators=(OperatorProgress.from_json({"operatorName": name}),))
            for r in watermarked(n)]


@pytest.mark.parametrize("operator, expected", [
    ("symmetricHashJoin", None), ("dedupe", None), ("stateStoreSave", "has not yet passed the end of any aggregate"),
    ("sessionWindowStateStoreSaveExec", "has not yet passed the end of any aggregate"),
])
def test_without_a_plan_only_an_aggregations_operator_means_an_aggregation(operator, expected):
    message = why_no_output(OutputSummary().add(operator_batches(operator)), output_mode="append", plan=None)
    assert message is None if expected is None else expected in message


def test_a_slow_first_batch_is_not_a_source_without_data():
    asked = []

    def running(answer: bool):
        return lambda: asked.append(answer) or answer

    message = why_no_output(OutputSummary(), output_mode="append", elapsed=timedelta(seconds=12),
                            batch_running=running(True))
    assert message.startswith("The first micro-batch is still running") and "12 s" in message
    message = why_no_output(OutputSummary(), output_mode="append", elapsed=timedelta(seconds=12),
                            batch_running=running(False))
    assert "because the source has no new data" in message
    # Spark's status is read only when that reason would be shown.
    for summary, elapsed in [(OutputSummary(), timedelta(seconds=3)), (OutputSummary().add(watermarked(4)), None)]:
        why_no_output(summary, output_mode="append", plan=HOUR_WINDOW, elapsed=elapsed, batch_running=running(True))
    assert asked == [True, False]


def test_a_late_dropped_row_does_not_silence_the_reason():
    # Batch 2 has one row two hours behind its watermark: Spark drops it, yet eventTime.min shows it.
    records = watermarked(4)
    late = T0 - timedelta(hours=2)
    records[2] = dataclasses.replace(records[2], event_time_min=late)
    summary = OutputSummary().add(records)
    assert summary.earliest_event_time == records[2].watermark  # no earlier than what batch 2 could keep
    message = why_no_output(summary, output_mode="append", plan=HOUR_WINDOW)
    assert "earliest open window (2024-01-01 12:00:00 UTC)" in message


def test_several_watermarked_inputs_give_no_window_end_from_one_inputs_event_times():
    plan = dataclasses.replace(HOUR_WINDOW, watermarks=2)
    message = why_no_output(OutputSummary().add(watermarked(4)), output_mode="append", plan=plan)
    assert "has not yet passed the end of any aggregate" in message
    assert "2 watermarked inputs" in message and "cannot be told from progress" in message
    assert "13:00" not in message and "latest event time" not in message and "\n" not in message
