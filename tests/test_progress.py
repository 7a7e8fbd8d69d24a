"""Pure tests of the progress model: records, history and poller logic on scripted progress."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pandas as pd
import pytest

from workbench.progress import (
    HISTORY_COLUMNS,
    BatchProgress,
    ProgressHistory,
    ProgressPoller,
    ProgressSource,
)
from workbench.progress.poller import ENDED_TRIES, MAX_RETRY, SourceGone
from tests.helpers import wait_for

# The shape of a real progress entry of a windowed aggregation (captured from Spark 4.3).
FULL = {
    "id": "5b2f", "runId": "9c1e", "name": "counts", "timestamp": "2026-11-22T18:27:13.498Z",
    "batchId": 4, "batchDuration": 212, "numInputRows": 10, "inputRowsPerSecond": 26.6,
    "processedRowsPerSecond": 47.2,
    "durationMs": {"addBatch": 120, "commitOffsets": 30, "getBatch": 1, "latestOffset": 2,
                   "queryPlanning": 14, "triggerExecution": 211, "walCommit": 28},
    "eventTime": {"avg": "1970-01-01T00:00:04.500Z", "max": "1970-01-01T00:00:05.000Z",
                  "min": "1970-01-01T00:00:04.000Z", "watermark": "1970-01-01T00:00:01.000Z"},
    "stateOperators": [
        {"operatorName": "stateStoreSave", "numRowsTotal": 3, "numRowsUpdated": 2,
         "numRowsRemoved": 1, "numRowsDroppedByWatermark": 1, "memoryUsedBytes": 1000,
         "numShufflePartitions": 2, "numStateStoreInstances": 2, "customMetrics": {"x": 1}},
        {"operatorName": "dedupe", "numRowsTotal": 7, "numRowsUpdated": 1, "numRowsRemoved": 0,
         "numRowsDroppedByWatermark": 0, "memoryUsedBytes": 500},
    ],
    "sources": [], "sink": {"description": "MemorySink", "numOutputRows": 2},
}


def batch(i: int, rows: int = 1, **extra) -> dict:
    return {"batchId": i, "numInputRows": rows, "durationMs": {"addBatch": 1, "triggerExecution": 2}, **extra}


def idle(i: int) -> dict:
    """Spark's idle re-report: the next batch id, no rows, only two durations."""
    return {"batchId": i, "numInputRows": 0, "durationMs": {"latestOffset": 0, "triggerExecution": 0}}


class TestRecords:
    def test_full_record_is_typed(self):
        r = BatchProgress.from_json(FULL)
        assert r.batch_id == 4 and r.name == "counts" and r.run_id == "9c1e"
        assert r.timestamp == datetime(2026, 11, 22, 18, 27, 13, 498000, tzinfo=timezone.utc)
        assert (r.add_batch_ms, r.wal_commit_ms, r.trigger_execution_ms) == (120, 28, 211)
        assert r.watermark == datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
        assert r.event_time_max - r.event_time_min == pd.Timedelta(seconds=1)
        assert r.state_rows_total == 10 and r.state_rows_updated == 3 and r.state_rows_removed == 1
        assert r.state_rows_dropped_by_watermark == 1 and r.state_memory_bytes == 1500
        assert r.operators[0].custom_metrics == {"x": 1}
        assert r.num_output_rows == 2 and not r.is_idle_report

    def test_custom_metrics_read_as_spark_gave_them(self):
        def metrics(value):
            operator = {"operatorName": "x", "customMetrics": {"a": value, "rocksdbBytes": 2**40}}
            return BatchProgress.from_json({**FULL, "stateOperators": [operator]}).operators[0].custom_metrics
        one, two = metrics(1), metrics(2)
        assert one == {"a": 1, "rocksdbBytes": 2**40} and dict(two) == {"a": 2, "rocksdbBytes": 2**40}
        assert list(two) == ["a", "rocksdbBytes"] and two.get("missing", 0) == 0 and len(one) == 2
        with pytest.raises(KeyError):
            one["missing"]
        assert metrics(0.5) == {"a": 0.5, "rocksdbBytes": 2**40}  # not a long: kept as given

    def test_records_are_frozen(self):
        r = BatchProgress.from_json(FULL)
        with pytest.raises(AttributeError):
            r.batch_id = 5  # type: ignore[misc]

    def test_watermark_only_batch_is_a_batch(self):
        r = BatchProgress.from_json({"batchId": 3, "numInputRows": 0,
                                     "durationMs": {"addBatch": 5, "triggerExecution": 40},
                                     "eventTime": {"watermark": "2024-01-01T12:04:00.000Z"}})
        assert not r.is_idle_report and r.event_time_min is None and r.watermark is not None

    def test_totals_missing_from_spark_connect_json_come_from_the_sources(self):
        r = BatchProgress.from_json({
            "batchId": 2, "durationMs": {"addBatch": 3},
            "sources": [{"numInputRows": 5, "inputRowsPerSecond": 2.5, "processedRowsPerSecond": 10.0},
                        {"numInputRows": 1, "inputRowsPerSecond": 0.5, "processedRowsPerSecond": 2.0}],
        })
        assert (r.num_input_rows, r.input_rows_per_second, r.processed_rows_per_second) == (6, 3.0, 12.0)

    def test_idle_report_is_recognised(self):
        assert BatchProgress.from_json(idle(7)).is_idle_report


    def test_times_past_year_9999_are_the_latest_time_not_a_failed_read(self):
        # Event times in epoch milliseconds read as seconds (timestamp_seconds) land in year
        # 55840, which Java writes with a sign and Python's datetime cannot hold.
        far = "+55840-11-09T23:13:20.000Z"
        record = BatchProgress.from_json(batch(3, eventTime={"min": far, "max": far, "avg": far, "watermark": far}))
        assert record.watermark == record.event_time_max == datetime.max.replace(tzinfo=timezone.utc)
        early = BatchProgress.from_json(batch(4, eventTime={"min": "-0044-03-15T00:00:00.000Z"}))
        assert early.event_time_min == datetime.min.replace(tzinfo=timezone.utc)
        history = ProgressHistory()
        history.extend([BatchProgress.from_json(batch(2)), record])
        frame = history.to_frame()  # past 2262: microseconds, where nanoseconds end
        assert str(frame["watermark"].dtype) == "datetime64[us, UTC]"
        assert frame["watermark"].iloc[1].year == 9999 and pd.isna(frame["watermark"].iloc[0])


class TestHistory:
    def test_frame_columns_types_and_nat(self):
        h = ProgressHistory()
        h.extend([BatchProgress.from_json(FULL), BatchProgress.from_json(batch(5))])
        frame = h.to_frame()
        assert list(frame.columns) == list(HISTORY_COLUMNS)
        assert str(frame["watermark"].dtype) == "datetime64[ns, UTC]"
        assert frame.loc[1, "watermark"] is pd.NaT
        assert frame.loc[0, "state_rows_total"] == 10
        assert pd.isna(frame.loc[1, "wal_commit_ms"])  # Spark gave none: missing, not 0

    def test_operator_rows(self):
        h = ProgressHistory()
        h.extend([BatchProgress.from_json(FULL)])
        ops = h.to_frame(operators=True)
        assert list(ops["operator_name"]) == ["stateStoreSave", "dedupe"]
        assert ops["state_rows_total"].sum() == h.to_frame().loc[0, "state_rows_total"]

    def test_refuses_idle_reports_and_duplicates(self):
        h = ProgressHistory()
        added = h.extend(BatchProgress.from_json(d) for d in [batch(0), batch(1), idle(2), batch(1)])
        assert [r.batch_id for r in added] == [0, 1]
        assert h.last_batch_id == 1 and len(h) == 2

    def test_cap_drops_oldest(self):
        h = ProgressHistory(cap=3)
        h.extend(BatchProgress.from_json(batch(i)) for i in range(10))
        assert [r.batch_id for r in h.records()] == [7, 8, 9]
        assert h.total == 10 and h.dropped == 7
        assert [r.batch_id for r in h.tail(2)] == [8, 9]

    @pytest.mark.parametrize("cap", [0, -1, 2.5, True, "10"])
    def test_bad_cap(self, cap):
        with pytest.raises(ValueError, match="cap"):
            ProgressHistory(cap=cap)

    def test_subscribers_get_new_records_and_can_unsubscribe(self):
        h = ProgressHistory()
        seen: list[list[int]] = []
        unsubscribe = h.subscribe(lambda records: seen.append([r.batch_id for r in records]))
        h.extend([BatchProgress.from_json(batch(0)), BatchProgress.from_json(batch(1))])
        h.extend([BatchProgress.from_json(batch(1))])  # nothing new: no call
        unsubscribe()
        h.extend([BatchProgress.from_json(batch(2))])
        assert seen == [[0, 1]]

    def test_a_failing_subscriber_does_not_break_the_history(self):
        h = ProgressHistory()
        h.subscribe(lambda records: 1 / 0)
        h.extend([BatchProgress.from_json(batch(0))])
        assert h.last_batch_id == 0


class ScriptedSource(ProgressSource):  # hears no progress events: the poller fetches the recent list
    """A progress source driven by the test: what Spark would report at each tick."""

    def __init__(self) -> None:
        self.active = True
        self.last: dict | None = None
        self.recent: list[dict] = []
        self.recent_calls = 0

    def report(self, *entries: dict) -> None:
        self.recent = (self.recent + list(entries))[-99:]
        self.last = entries[-1]

    def is_active(self) -> bool:
        return self.active

    def last_progress(self):
        return self.last

    def recent_progress(self):
        self.recent_calls += 1
        return list(self.recent)


class TestPollerLogic:
    def setup_method(self):
        self.source = ScriptedSource()
        self.history = ProgressHistory()
        self.poller = ProgressPoller(self.source, self.history)

    def ids(self):
        return [r.batch_id for r in self.history.records()]

    def test_nothing_yet(self):
        assert self.poller.poll_once() == [] and self.source.recent_calls == 0

    def test_next_batch_is_read_cheaply(self):
        self.source.report(batch(0))
        self.poller.poll_once()  # first poll fills from the list
        calls = self.source.recent_calls
        self.source.report(batch(1))
        self.poller.poll_once()
        self.source.report(batch(2))
        self.poller.poll_once()
        assert self.ids() == [0, 1, 2] and self.source.recent_calls == calls

    def test_gap_is_filled_from_recent_progress(self):
        self.source.report(batch(0))
        self.poller.poll_once()
        self.source.report(batch(1), batch(2), batch(3))
        self.poller.poll_once()
        assert self.ids() == [0, 1, 2, 3]

    def test_same_batch_twice_costs_nothing(self):
        self.source.report(batch(0))
        self.poller.poll_once()
        calls = self.source.recent_calls
        assert self.poller.poll_once() == [] and self.source.recent_calls == calls

    def test_idle_reports_are_not_batches(self):
        self.source.report(batch(0))
        self.poller.poll_once()
        calls = self.source.recent_calls
        self.source.report(idle(1))
        assert self.poller.poll_once() == [] and self.source.recent_calls == calls
        self.source.report(idle(1))
        self.poller.poll_once()
        self.source.report(batch(1))
        self.poller.poll_once()
        assert self.ids() == [0, 1]

    def test_missed_batch_behind_an_idle_report_is_filled(self):
        self.source.report(batch(0))
        self.poller.poll_once()
        self.source.report(batch(1), idle(2))  # batch 1 ran and went idle between two ticks
        self.poller.poll_once()
        assert self.ids() == [0, 1]

    def test_a_stream_before_its_first_batch_fetches_the_list_once(self):
        # An empty input folder, a topic without data: Spark re-reports "batch 0 next" every
        # few seconds; the list holds nothing else until a batch runs.
        self.source.report(idle(0))
        for _ in range(5):
            assert self.poller.poll_once() == []
        assert self.source.recent_calls == 1
        self.source.report(idle(0))  # re-reported: still nothing ran
        self.poller.poll_once()
        assert self.source.recent_calls == 1
        self.source.report(batch(0), idle(1))  # batch 0 ran between two ticks
        self.poller.poll_once()
        assert self.ids() == [0] and self.source.recent_calls == 2

    def test_batches_gone_from_the_recent_list_are_said_to_be_missing(self):
        self.source.report(batch(0))
        self.poller.poll_once()
        assert self.history.skipped_note is None
        for i in range(1, 251):  # 250 batches while nobody read: the list keeps the last 99
            self.source.report(batch(i))
        self.poller.poll_once()
        assert self.ids() == [0, *range(152, 251)] and self.history.skipped == 151
        assert self.history.skipped_note.startswith("151 batches were never read (the last: 1-151)")
        self.source.report(batch(251))
        self.poller.poll_once()
        assert self.history.skipped == 151  # the next batch follows on

    def test_restart_from_checkpoint_starts_at_later_id(self):
        self.source.report(batch(40), batch(41))
        self.poller.poll_once()
        assert self.ids() == [40, 41]

    def test_long_run_with_small_recent_list_keeps_every_batch(self):
        for i in range(0, 300, 3):  # three batches between ticks, list holds 99
            self.source.report(batch(i), batch(i + 1), batch(i + 2))
            self.poller.poll_once()
        assert self.ids() == list(range(300))

    def test_batches_the_events_told_of_spare_the_fetch_only_without_a_gap(self):
        heard: list[dict] = []
        self.source.heard_after = lambda known: [raw for raw in heard if raw["batchId"] > known]
        self.source.report(batch(0))
        self.poller.poll_once()
        calls = self.source.recent_calls
        # Three batches between two ticks, all heard: read from the events, no fetch.
        heard += [batch(1), batch(2), batch(3)]
        self.source.report(batch(1), batch(2), batch(3))
        assert [r.batch_id for r in self.poller.poll_once()] == [1, 2, 3]
        assert self.source.recent_calls == calls
        # Batch 5 ended before its event came: what was heard goes in, the rest with the next tick.
        heard += [batch(4)]
        self.source.report(batch(4), batch(5))
        assert [r.batch_id for r in self.poller.poll_once()] == [4] and self.source.recent_calls == calls
        heard += [batch(5)]
        self.poller.poll_once()
        assert self.ids() == [0, 1, 2, 3, 4, 5] and self.source.recent_calls == calls
        # The events missed batch 6 (a gap), or told of nothing new: the recent list fills in.
        heard += [batch(7)]
        self.source.report(batch(6), batch(7))
        self.poller.poll_once()
        self.source.report(batch(8), batch(9))
        self.poller.poll_once()
        assert self.ids() == list(range(10)) and self.source.recent_calls == calls + 2

    @pytest.mark.parametrize("interval", [0, -1, "1", True])
    def test_bad_interval(self, interval):
        with pytest.raises(ValueError, match="interval"):
            ProgressPoller(self.source, self.history, interval=interval)


class TestPollerThread:
    def test_stops_itself_when_the_query_ends_and_reads_the_last_batches(self):
        source, history = ScriptedSource(), ProgressHistory()
        finished = threading.Event()
        poller = ProgressPoller(source, history, interval=0.01, on_finished=finished.set).start()
        source.report(batch(0))
        wait_for(lambda: history.last_batch_id == 0, timeout=5, message="first batch")
        source.recent = [batch(0), batch(1), batch(2)]
        source.active = False  # ended before the poller saw batches 1 and 2
        assert finished.wait(5)
        assert [r.batch_id for r in history.records()] == [0, 1, 2]
        assert not poller.running

    def test_a_source_that_is_gone_stops_the_thread_and_calls_finish(self):
        class Gone(ScriptedSource):
            def is_active(self):
                raise SourceGone("session is gone")

        finished = threading.Event()
        poller = ProgressPoller(Gone(), ProgressHistory(), interval=0.01, on_finished=finished.set).start()
        assert finished.wait(5)
        poller.stop()
        assert not poller.running

    @pytest.mark.parametrize("failing", ["last_progress", "is_active"])
    def test_failed_reads_of_a_running_query_are_tried_again_not_taken_for_its_end(self, failing):
        class Flaky(ScriptedSource):
            broken = False

            def fail(self):
                if self.broken:
                    raise ConnectionError("gRPC: UNAVAILABLE")

            def is_active(self):
                if failing == "is_active":
                    self.fail()
                return super().is_active()

            def last_progress(self):
                if failing == "last_progress":
                    self.fail()
                return super().last_progress()

        source, history, finished = Flaky(), ProgressHistory(), threading.Event()
        poller = ProgressPoller(source, history, interval=0.01, on_finished=finished.set).start()
        source.report(batch(0))
        wait_for(lambda: history.last_batch_id == 0, timeout=5, message="first batch")
        source.broken = True
        # Once a read has failed, no read that began before the break is still under way.
        wait_for(lambda: poller.read_failures >= 1, timeout=5, message="a failed read")
        source.report(batch(1), batch(2))
        wait_for(lambda: poller.read_failures >= 3, timeout=5, message="three failed reads")
        assert "ConnectionError" in poller.read_error and "UNAVAILABLE" in poller.read_error
        assert poller.running and not finished.is_set() and history.last_batch_id == 0
        source.broken = False
        # The tries come at most MAX_RETRY seconds apart.
        wait_for(lambda: history.last_batch_id == 2, timeout=MAX_RETRY + 10, message="the batches after the failures")
        assert [r.batch_id for r in history.records()] == [0, 1, 2]
        assert poller.read_failures == 0 and poller.read_error is None
        assert poller.running and not finished.is_set()
        source.active = False
        assert finished.wait(5) and not poller.running

    def test_the_wait_between_failed_reads_doubles_up_to_max_retry_however_long_they_fail(self):
        poller = ProgressPoller(ScriptedSource(), ProgressHistory(), interval=0.5)
        waits = [poller._read_failed(ConnectionError("down")) for _ in range(2000)]  # hours of failures
        assert waits[:5] == [0.5, 1.0, 2.0, 4.0, 8.0] and waits[6:] == [MAX_RETRY] * (len(waits) - 6)
        assert poller.read_failures == 2000

    def test_the_last_read_of_an_ended_query_is_tried_a_few_times_then_given_up(self):
        class Unreadable(ScriptedSource):
            def recent_progress(self):
                super().recent_progress()
                raise ValueError("a progress report this version cannot read")

        source, finished = Unreadable(), threading.Event()
        poller = ProgressPoller(source, ProgressHistory(), interval=0.01, on_finished=finished.set).start()
        source.active = False
        assert finished.wait(5)
        assert source.recent_calls == ENDED_TRIES and not poller.running

    def test_stop_joins_the_thread(self):
        poller = ProgressPoller(ScriptedSource(), ProgressHistory(), interval=0.01).start()
        assert poller.running and poller._thread.daemon
        poller.stop()
        assert not poller.running


def test_a_sink_that_cannot_count_reports_unknown_rows_not_minus_one():
    record = BatchProgress.from_json({"batchId": 0, "numInputRows": 3, "durationMs": {"addBatch": 1},
                                      "sink": {"description": "FileSink[/tmp/out]", "numOutputRows": -1}})
    assert record.num_output_rows is None
