"""transformWithState on real Spark: state variables, timers and TTL, batch by batch.

Inputs come from ``rate-micro-batch``: batch ``b`` holds values ``b*4 .. b*4+3``, all at
event time ``START + b minutes``. The event-time processor keys rows by ``value // 8``, so
each key gets two batches of input and then none: its timer (last event + 2 minutes) fires
once the watermark passes it. Each test derives what Spark must hold from those inputs and
compares it with what the inspector read from the checkpoint.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
from IPython.core.error import UsageError
import pyspark
import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from workbench.progress.diagnosis import OutputSummary, format_duration, format_time, why_no_output
from workbench.views.monitor_header import held_timers

from tests.helpers import wait_for
from tests.test_magics import magics, shell  # noqa: F401  (the shared IPython shell with the workbench loaded)

pytestmark = pytest.mark.spark

#: GroupedData.transformWithState (Rows) arrived in pyspark 4.1; on 4.0 the magic's test
#: checks the one line a user of the older release sees instead.
ROWS_FLAVOUR = tuple(int(part) for part in pyspark.__version__.split(".")[:2]) >= (4, 1)
needs_rows_flavour = pytest.mark.skipif(not ROWS_FLAVOUR, reason=f"pyspark {pyspark.__version__} has no "
                                        "GroupedData.transformWithState (4.1 added it)")

START = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)
ROWS = 4


class Sessions(StatefulProcessor):
    """Per key: a count (value state), the values seen (list), a count per value % 3 (map) and a
    timer at the last event + 2 minutes, which emits the key's total and clears its state."""

    def init(self, handle):
        self.handle = handle
        self.count = handle.getValueState("count", "count long")
        self.seen = handle.getListState("seen", "value long")
        self.by_rest = handle.getMapState("by_rest", "rest int", "n long")

    def handleInputRows(self, key, rows, timerValues):
        total, last = (self.count.get()[0] if self.count.exists() else 0), None
        for frame in rows:
            for value, ts in zip(frame["value"], frame["timestamp"]):
                self.seen.appendValue((int(value),))
                rest = (int(value) % 3,)
                old = self.by_rest.getValue(rest)
                self.by_rest.updateValue(rest, ((old[0] if old else 0) + 1,))
                total += 1
                last = ts if last is None else max(last, ts)
        self.count.update((total,))
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        self.handle.registerTimer(int(last.timestamp() * 1000) + 2 * 60_000)
        yield pd.DataFrame({"k": [int(key[0])], "count": [total], "fired": [False],
                            "watermark_ms": [timerValues.getCurrentWatermarkInMs()]})

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        total = self.count.get()[0] if self.count.exists() else 0
        self.count.clear()
        self.seen.clear()
        self.by_rest.clear()
        # The watermark the firing batch ran with: it names the batch the fired row came out in.
        yield pd.DataFrame({"k": [int(key[0])], "count": [total], "fired": [True],
                            "watermark_ms": [timerValues.getCurrentWatermarkInMs()]})


class Latest(StatefulProcessor):
    """Row flavour, processing time: the latest value (TTL 1 hour), recent values (TTL 1 ms), a
    total without TTL, and a processing-time timer an hour ahead; key 0 also gets a timer a
    second ahead, whose expiry emits a row with ``fired`` set."""

    def init(self, handle):
        self.handle = handle
        self.latest = handle.getValueState("latest", "value long", 3_600_000)
        self.recent = handle.getListState("recent", "value long", 1)
        self.total = handle.getValueState("total", "n long")

    def handleInputRows(self, key, rows, timerValues):
        total = self.total.get()[0] if self.total.exists() else 0
        for row in rows:
            self.latest.update((row.value,))
            self.recent.appendValue((row.value,))
            total += 1
        self.total.update((total,))
        if not list(self.handle.listTimers()):
            now = timerValues.getCurrentProcessingTimeInMs()
            self.handle.registerTimer(now + 3_600_000)
            if key[0] == 0:
                self.handle.registerTimer(now + 1_000)
        yield Row(k=key[0], n=total, fired=False)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield Row(k=key[0], n=self.total.get()[0], fired=True)


# Spark 4.3's state-metadata operatorProperties for a processor (measured).
PROPERTIES = ('{"timeMode":"EventTime","outputMode":"Update","stateVariables":['
              '{"stateName":"by_kind","stateVariableType":"MapState","ttlEnabled":false},'
              '{"stateName":"count","stateVariableType":"ValueState","ttlEnabled":false},'
              '{"stateName":"$eventTimers_keyToTimestamp","stateVariableType":"TimerState","ttlEnabled":false},'
              '{"stateName":"seen","stateVariableType":"ListState","ttlEnabled":true}]}')


def test_processor_variables_from_sparks_metadata():
    from workbench.spark.tws_state import StateVariable, processor_state

    state = processor_state(PROPERTIES)
    assert state.variables == (StateVariable("by_kind", "map", False), StateVariable("count", "value", False),
                               StateVariable("seen", "list", True))
    assert state.describe() == "by_kind (map); count (value); seen (list, TTL); timers: event time"
    assert state.pick("seen", "s").kind == "list"
    with pytest.raises(ValueError, match=r"^unknown state variable 'Count' in stream 's': use one of 'by_kind', "
                                         r"'count', 'seen'$"):
        state.pick("Count", "s")
    with pytest.raises(ValueError, match=r"has 3 state variables: pick one with variable="):
        state.pick(None, "s")
    only = processor_state('{"timeMode":"ProcessingTime","stateVariables":['
                           '{"stateName":"n","stateVariableType":"ValueState","ttlEnabled":false}]}')
    assert only.pick(None, "s").name == "n" and only.describe() == "n (value)"


def rate(spark):
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS).option("numPartitions", 1)
            .option("startTimestamp", int(START.timestamp() * 1000)).option("advanceMillisPerBatch", 60_000).load())


def run_until(handle, done, what: str):
    wait_for(lambda: done() or handle.status != "active", 240,
             text=lambda: f"{handle.name}: {what}; {handle.progress.total} batches, {handle.status} {handle.error}")
    assert handle.error is None


def one_line(message: str) -> bool:
    return "\n" not in message and "py4j" not in message.lower() and "org.apache" not in message


def sessions_query(spark):
    # A deduplication before the processor: a query with two stateful operators.
    events = (rate(spark).withWatermark("timestamp", "1 minute").dropDuplicatesWithinWatermark(["value"])
              .withColumn("k", (F.col("value") / (2 * ROWS)).cast("long")))
    return events.groupBy("k").transformWithStateInPandas(
        Sessions(), "k long, count long, fired boolean, watermark_ms long", "Update", "EventTime")


def assert_monitor_draws_timers(monitor, history) -> None:
    """The State chart draws the timers and TTL per batch; the Watermark chart marks where timers left."""
    wait_for(lambda: not monitor.running, 60, message="the monitor to finish")
    state = {trace.name: trace for trace in monitor.figures["state"].data}
    for name, column in (("timers registered", "timers_registered"), ("timers deleted", "timers_deleted"),
                         ("timers expired", "timers_expired"), ("state variables", "state_variables"),
                         ("values removed by TTL", "state_values_removed_by_ttl")):
        assert list(state[name].x) == history["batch_id"].tolist()
        assert list(state[name].y) == history[column].tolist(), name
    marks = next(t for t in monitor.figures["watermark"].data if t.name == "timers fired or deleted")
    left = history["timers_deleted"] + history["timers_expired"] > 0
    assert left.any() and not left.all()
    expected = history["watermark"].where(left).dt.tz_localize(None)
    assert pd.to_datetime(pd.Series(list(marks.y), dtype="object")).equals(expected.rename(None))
    assert monitor.snapshot()[:4] == b"\x89PNG"
    monitor.close()


WORKER_LINE = "TransformWithStateInPandas Python worker"


@pytest.mark.slow
def test_event_time_processor_state_and_timers_batch_by_batch(env, spark):
    log = spark._workbench_log
    worker_lines = log.read_text().count(WORKER_LINE)
    handle = env.start(sessions_query(spark), "sessions", trigger="200 ms", output_mode="update")
    monitor = handle.monitor()
    # Key 0 has input in batches 0 and 1 only: wait until its timer fired and key 1's did too.
    run_until(handle, lambda: handle.result()["fired"].sum() >= 2, "two keys' timers fired")
    handle.stop()
    assert_monitor_draws_timers(monitor, handle.history())
    last = handle.progress.last_batch_id
    marks = {r.batch_id: pd.Timestamp(r.watermark) for r in handle.progress.records()}

    summary = handle.state_summary()
    assert summary["operator_name"].tolist() == ["transformWithStateInPandasExec", "dedupeWithinWatermark"]
    assert summary.loc[0, "variables"] == "by_rest (map); count (value); seen (list); timers: event time"
    assert summary.loc[1, "variables"] == ""

    fired = handle.result().query("fired")
    # Each fired row came out in the batch that ran with the watermark its handler saw.
    batch_of_mark = {int(mark.timestamp() * 1000): b for b, mark in marks.items() if pd.notna(mark)}
    # Unless the stop cut the batch after its rows reached the memory table: no progress record
    # has its watermark, and the handle names it (its rows are the table's, not the history's).
    reported = fired["watermark_ms"].astype("int64").isin(batch_of_mark)
    if not reported.all():
        assert handle.cut_batch is not None and handle.cut_batch.batch_id == last + 1, (handle.cut_batch, last)
        fired = fired[reported]
    fired_in = {int(r.k): batch_of_mark[int(r.watermark_ms)] for r in fired.itertuples()}
    final_expiry, checks = {}, []
    for batch_id in range(last + 1):
        seen = pd.DataFrame([(b, v) for b in range(batch_id + 1) for v in range(b * ROWS, (b + 1) * ROWS)],
                            columns=["batch", "value"])
        seen["k"] = seen["value"] // (2 * ROWS)
        seen["ts"] = START + seen["batch"] * MINUTE
        # A key is held until its timer (last event + 2 min) fires: in the first batch whose
        # watermark reaches it (measured: a watermark equal to the expiry fires it).
        expiry = seen.groupby("k")["ts"].max() + 2 * MINUTE
        final_expiry.update(expiry)
        gone = {k for k, t in expiry.items() if any(marks[b] >= t for b in range(batch_id + 1))}
        held = seen[~seen["k"].isin(gone)]

        count = handle.state(batch_id=batch_id, variable="count")
        assert list(count.columns) == ["k", "count", "partition_id"]
        assert dict(zip(count["k"], count["count"])) == held.groupby("k").size().to_dict(), batch_id
        elements = handle.state(batch_id=batch_id, variable="seen")  # one row per list element
        assert list(elements.columns) == ["k", "value", "partition_id"]
        assert sorted(zip(elements["k"], elements["value"])) == sorted(zip(held["k"], held["value"]))
        per_rest = handle.state(batch_id=batch_id, variable="by_rest")  # one row per map key
        assert list(per_rest.columns) == ["k", "rest", "n", "partition_id"]
        expected = held.assign(rest=held["value"] % 3).groupby(["k", "rest"]).size().to_dict()
        assert {(r.k, r.rest): r.n for r in per_rest.itertuples()} == expected

        timers = handle.timers(batch_id=batch_id)
        assert list(timers.columns) == ["k", "expires_at", "time_mode", "watermark", "ahead_of_watermark",
                                        "fires_in_batch", "partition_id"]
        assert dict(zip(timers["k"], timers["expires_at"])) == {k: t for k, t in expiry.items() if k not in gone}
        assert (timers["time_mode"] == "event time").all()
        if marks[batch_id].timestamp() > 0:
            assert (timers["watermark"] == marks[batch_id]).all()
            assert (timers["ahead_of_watermark"] == timers["expires_at"] - marks[batch_id]).all()
        else:  # Spark's epoch-0 watermark, "none yet", as in history(): no timer is ahead of it
            assert timers["watermark"].isna().all() and timers["ahead_of_watermark"].isna().all()
        # What fired in this batch is what the inspector stopped showing.
        assert set(fired.query("k in @gone")["k"]) == gone
        timers_by_key = {int(r.k): r for r in timers.itertuples()}
        # Before any timer fired, "why no output?" names the earliest one and how far ahead it is.
        if not gone and timers_by_key:
            first = min(timers_by_key.values(), key=lambda r: r.expires_at)
            as_if_quiet = OutputSummary(batches=3, input_rows=1, processor=True)  # as if it output nothing
            reason = why_no_output(as_if_quiet, output_mode="update", timers=lambda: held_timers(timers))
            unset = pd.isna(marks[batch_id]) or marks[batch_id] <= pd.Timestamp(0, tz="UTC")
            mark_text = "the watermark is not set yet" if unset else \
                f"{format_duration(first.expires_at - marks[batch_id])} ahead of the watermark"
            assert f"Earliest timer: key {first.k} at {format_time(first.expires_at)}, " in reason
            assert mark_text in reason, reason
        checks.append(timers_by_key)

    # fires_in_batch: the batch that fired the timer, for each timer as it stood when read
    # (a timer the processor moved later fires later); missing beyond the history.
    for batch_id, timers_by_key in enumerate(checks):
        for k, timer in timers_by_key.items():
            if timer.expires_at != final_expiry[k]:
                continue  # moved by a later input
            expected = fired_in.get(k)
            assert (pd.isna(timer.fires_in_batch) if expected is None else timer.fires_in_batch == expected), \
                (batch_id, k, timer.fires_in_batch, expected)
    assert fired_in and set(fired_in) <= {k for t in checks for k in t}

    # Progress: timers registered per batch, and each fired timer counted as deleted.
    history = handle.history()
    assert history["timers_registered"].sum() >= 2 and history["state_variables"].max() > 0
    assert history["timers_deleted"].sum() >= len(fired)
    assert (history["state_values_removed_by_ttl"] == 0).all()

    # The Python worker's start-up lines of this query went to the JVM's log file, which is
    # where the JVM's standard error goes (never a cell's output; notebook 10 checks cells).
    # How many lines Spark writes varies by release and with the worker's socket retries.
    assert log.read_text().count(WORKER_LINE) > worker_lines

    # The stop may cut a batch after its state was stored but before Spark reported it: the
    # checkpoint (Spark's own state metadata and commit log) then goes one batch beyond the history.
    stored = spark.read.format("state-metadata").load(handle.checkpoint).agg(F.max("maxBatchId")).first()[0]
    committed = max(int(entry.name) for entry in (Path(handle.checkpoint) / "commits").iterdir() if entry.name.isdigit())
    assert last <= committed <= stored <= last + 1

    # Bad names: one line listing the valid ones, before Spark reads any state.
    cases = [
        (dict(variable="cnt"), r"unknown state variable 'cnt' in stream 'sessions': use one of 'by_rest', 'count', "
                               r"'seen'"),
        (dict(variable="$eventTimers_keyToTimestamp"), r"\(timers are read with timers\(\)\): use one of"),
        (dict(), r"has 2 stateful operators: pick one with operator="),
        (dict(operator=0), r"processor has 3 state variables: pick one with variable= \(one of 'by_rest', 'count'"),
        (dict(operator=1, variable="count"), r"variable='count' applies only to transformWithState; operator 1 "
                                             r"\(dedupeWithinWatermark\) has no named state variables"),
        (dict(variable="count", batch_id=stored + 2), rf"batch {stored + 2} is not in the checkpoint of stream "
                                                      rf"'sessions': operator 0 \(transformWithStateInPandasExec\) "
                                                      rf"has state for batches 0 to {stored}"),
        (dict(variable="count", batch_id="1"), r"batch_id must be a batch id \(a whole number >= 0\), got '1'"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message) as caught:
            handle.state(**kwargs)
        assert one_line(str(caught.value))
    with pytest.raises(TypeError, match="variable must be a state variable's name"):
        handle.state(variable=3)
    with pytest.raises(ValueError, match=r"operator 1 \(dedupeWithinWatermark\) of stream 'sessions' keeps no timers"):
        handle.timers(operator=1)

    # Restart from the checkpoint: state and timers are read back, and the query goes on.
    before = {name: handle.state(batch_id=committed, variable=name) for name in ("count", "seen", "by_rest")}
    timers_before = handle.timers(batch_id=committed)
    again = env.start(sessions_query(spark), "sessions_again", trigger="200 ms", output_mode="update",
                      sink="console", checkpoint=handle.checkpoint)
    run_until(again, lambda: again.progress.total >= 1, "a batch after the restart")
    again.stop()
    assert again.progress.records()[0].batch_id == committed + 1
    after_first = again.progress.records()[0].batch_id
    assert handle.state(batch_id=committed, variable="count").equals(before["count"])
    assert again.state(batch_id=committed, variable="seen").equals(before["seen"])
    assert again.state(batch_id=committed, variable="by_rest").equals(before["by_rest"])
    assert again.timers(batch_id=committed)[["k", "expires_at"]].equals(timers_before[["k", "expires_at"]])
    # The restarted run's first batch goes on from them: the timers not yet due and the counts of
    # the keys still held are there, plus what that batch's input added (all of one key).
    restart_mark = pd.Timestamp(again.progress.records()[0].watermark)
    new_key = (after_first * ROWS) // (2 * ROWS)
    counts_after = again.state(batch_id=after_first, variable="count")
    timers_after = again.timers(batch_id=after_first)
    waiting = timers_before[(timers_before["expires_at"] > restart_mark) & (timers_before["k"] != new_key)]
    assert not waiting.empty
    held_after = dict(zip(timers_after["k"], timers_after["expires_at"]))
    assert {k: held_after.get(k) for k in waiting["k"]} == dict(zip(waiting["k"], waiting["expires_at"]))
    counted_before = dict(zip(before["count"]["k"], before["count"]["count"]))
    expected_counts = {k: n for k, n in counted_before.items() if k in set(waiting["k"])}
    expected_counts[new_key] = counted_before.get(new_key, 0) + ROWS
    assert dict(zip(counts_after["k"], counts_after["count"])) == expected_counts


def run_until_ttl_removed(env, query, name: str, also=lambda handle: True):
    """Run a processing-time processor until its TTL removed values (and ``also(handle)``); return it stopped."""
    handle = env.start(query, name, trigger="200 ms", output_mode="update")
    # A processing-time query with a TTL runs a cleanup batch at every trigger, data or not.
    run_until(handle, lambda: handle.progress.total >= 4 and handle.history()["state_values_removed_by_ttl"].sum() > 0
              and also(handle), "TTL removed values")
    handle.stop()
    return handle  # callers read state at the history's last batch: a stop may cut one more


def run_two_keys(env, spark, processor, name: str, time_mode: str, *, batches: int):
    """``processor`` over keys 0 and 1 (``k``, two rows each a batch) for ``batches`` batches, stopped."""
    query = (rate(spark).select((F.col("value") % 2).alias("k"), "value").groupBy("k")
             .transformWithStateInPandas(processor, "k long, n long", "Update", time_mode))
    handle = env.start(query, name, trigger="200 ms", output_mode="update")
    run_until(handle, lambda: handle.progress.total >= batches, f"{batches} batches")
    handle.stop()
    return handle


class ClearsPastFour(StatefulProcessor):
    """Per key a running count; key 0 clears it once past 4 (an update, then a delete, in one batch)."""

    def init(self, handle):
        self.n = handle.getValueState("n", "n long")

    def handleInputRows(self, key, rows, timerValues):
        n = (self.n.get()[0] if self.n.exists() else 0) + sum(len(frame) for frame in rows)
        self.n.update((n,))
        if key[0] == 0 and n > 4:
            self.n.clear()
        yield pd.DataFrame({"k": [int(key[0])], "n": [n]})


def test_the_change_feed_in_its_order_rebuilds_each_batchs_state(env, spark):
    # The changes of a batch were sorted by their type: key 0's update, then its delete, read as
    # a delete, then an update (the key still held), while state() had it gone.
    handle = run_two_keys(env, spark, ClearsPastFour(), "clears", "None", batches=4)
    last = handle.progress.last_batch_id
    changes = handle.state_changes(0, last)
    held: dict[int, int] = {}
    for batch_id in range(last + 1):
        for change in changes[changes["batch_id"] == batch_id].itertuples():
            if change.change_type == "delete":
                held.pop(change.k, None)
            else:
                held[change.k] = change.n
        # A batch id read from a history table (a numpy integer) reads as well as an int.
        state = handle.state(batch_id=handle.history()["batch_id"].iloc[batch_id])
        assert dict(zip(state["k"], state["n"])) == held, (batch_id, changes)
    assert held[1] == 2 * (last + 1)  # two rows a batch, never cleared
    assert list(changes.query("k == 0 and batch_id == 2")["change_type"]) == ["update", "delete"]
    # timeMode None: no timers, said so (not Spark's complaint about a reader option never set).
    with pytest.raises(ValueError) as refused:
        handle.timers()
    assert str(refused.value) == ("stream 'clears''s processor runs with timeMode None, so it has no timers (give "
                                  "transformWithState timeMode 'EventTime' or 'ProcessingTime' to register some)")


class TimersOnly(StatefulProcessor):
    """No state variable: a processing-time timer an hour ahead per key."""

    def init(self, handle):
        self.handle = handle

    def handleInputRows(self, key, rows, timerValues):
        self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + 3_600_000)
        yield pd.DataFrame({"k": [int(key[0])], "n": [sum(len(frame) for frame in rows)]})


def test_a_processor_with_timers_only_says_so(env, spark):
    handle = run_two_keys(env, spark, TimersOnly(), "timers_only", "ProcessingTime", batches=2)
    assert set(handle.timers()["k"]) == {0, 1}
    for read in (handle.state, lambda: handle.state_changes(0)):
        with pytest.raises(ValueError) as refused:
            read()
        assert str(refused.value) == ("stream 'timers_only''s processor keeps no state variables, only timers: "
                                      "read them with timers()")


@needs_rows_flavour
def test_row_flavour_processing_time_ttl_and_timers(env, spark):
    keyed = rate(spark).select((F.col("value") % 2).alias("k"), "value")
    query = keyed.groupBy("k").transformWithState(Latest(), "k long, n long, fired boolean", "Update",
                                                  "ProcessingTime")
    # Key 0's one-second timer fires once a batch runs a second after the first one did.
    handle = run_until_ttl_removed(env, query, "latest", also=lambda h: h.result()["fired"].any())
    last = handle.progress.last_batch_id
    summary = handle.state_summary()
    assert summary["kind"].tolist() == ["transformWithState (Python)"]
    assert summary.loc[0, "variables"] == ("latest (value, TTL); recent (list, TTL); total (value); "
                                           "timers: processing time")

    total = handle.state(batch_id=last, variable="total")
    assert list(total.columns) == ["k", "n", "partition_id"]
    assert dict(zip(total["k"], total["n"])) == {0: ROWS // 2 * (last + 1), 1: ROWS // 2 * (last + 1)}
    latest = handle.state(batch_id=last, variable="latest")
    assert list(latest.columns) == ["k", "value", "expires_at", "partition_id"]
    assert dict(zip(latest["k"], latest["value"])) == {0: (last + 1) * ROWS - 2, 1: (last + 1) * ROWS - 1}
    # A TTL is counted from the batch's processing time: an hour after this run's batches.
    stamps = [pd.Timestamp(r.timestamp) for r in handle.progress.records()]
    assert ((latest["expires_at"] - pd.Timedelta(hours=1)).between(stamps[0], stamps[-1] + pd.Timedelta(minutes=1))
            ).all()
    # The list's TTL is 1 ms: by the next batch its values are gone, and progress counted them.
    recent = handle.state(batch_id=last, variable="recent")
    assert list(recent.columns) == ["k", "value", "expires_at", "partition_id"]
    removed = handle.history()["state_values_removed_by_ttl"].sum()
    assert set(recent["value"]) <= set(range(last * ROWS, (last + 1) * ROWS))
    assert removed + len(recent) == ROWS * (last + 1)  # every value appended is held or was removed

    # Key 0's processing-time timer a second ahead fired: its row came out once, and timers()
    # listed it after batch 0 and no longer does; the hour-long timers wait.
    fired = handle.result().query("fired")
    assert fired[["k", "n"]].values.tolist()[:1] == [[0, fired["n"].iloc[0]]] and len(fired) == 1
    at_start = handle.timers(batch_id=0)
    assert sorted(at_start["k"]) == [0, 0, 1]
    short = at_start["expires_at"].min()
    assert at_start.loc[at_start["expires_at"] == short, "k"].tolist() == [0]
    timers = handle.timers(batch_id=last)
    assert short not in set(timers["expires_at"])
    assert sorted(timers["k"]) == [0, 1] and (timers["time_mode"] == "processing time").all()
    assert timers["watermark"].isna().all() and timers["ahead_of_watermark"].isna().all()
    assert timers["fires_in_batch"].isna().all()
    first = pd.Timestamp(handle.progress.records()[0].timestamp)
    assert ((timers["expires_at"] - pd.Timedelta(hours=1)).between(first - pd.Timedelta(minutes=1),
                                                                     stamps[-1])).all()


class Tallies(StatefulProcessor):
    """Map state with a TTL, pandas flavour, processing time: a count per value % 3 kept an hour,
    and each value's event time kept 1 ms, so that every batch's cleanup removes the last batch's."""

    def init(self, handle):
        self.by_rest = handle.getMapState("by_rest", "rest int", "n long", 3_600_000)
        self.times = handle.getMapState("times", "value long", "at timestamp", 1)

    def handleInputRows(self, key, rows, timerValues):
        for frame in rows:
            for value, ts in zip(frame["value"], frame["timestamp"]):
                rest = (int(value) % 3,)
                old = self.by_rest.getValue(rest)
                self.by_rest.updateValue(rest, ((old[0] if old else 0) + 1,))
                self.times.updateValue((int(value),), (ts,))
        yield pd.DataFrame({"k": [int(key[0])], "keys": [len(list(self.by_rest.keys()))]})


def test_map_state_with_ttl_its_expiry_and_what_ttl_removed(env, spark):
    keyed = rate(spark).select((F.col("value") % 2).alias("k"), "value", "timestamp")
    query = keyed.groupBy("k").transformWithStateInPandas(Tallies(), "k long, keys long", "Update", "ProcessingTime")
    handle = run_until_ttl_removed(env, query, "tallies")
    last = handle.progress.last_batch_id
    stamps = [pd.Timestamp(r.timestamp) for r in handle.progress.records()]
    assert handle.state_summary().loc[0, "variables"] == "by_rest (map, TTL); times (map, TTL); timers: processing time"

    # One row per map key: the grouping key, the map key, the value, then the entry's expiry.
    by_rest = handle.state(batch_id=last, variable="by_rest")
    assert list(by_rest.columns) == ["k", "rest", "n", "expires_at", "partition_id"]
    values = pd.DataFrame({"value": range((last + 1) * ROWS)})
    expected = values.assign(k=values["value"] % 2, rest=values["value"] % 3).groupby(["k", "rest"]).size()
    assert {(r.k, r.rest): r.n for r in by_rest.itertuples()} == expected.to_dict()
    # Each entry expires an hour after the batch that last wrote it (the batch's processing time).
    assert str(by_rest["expires_at"].dtype) == "datetime64[ns, UTC]"
    written = by_rest["expires_at"] - pd.Timedelta(hours=1)
    assert written.between(stamps[0], stamps[-1] + pd.Timedelta(minutes=1)).all()

    # A 1 ms TTL: what is left is the last batch's values only, already past their expiry (Spark
    # removes an expired entry at the next batch's cleanup; until then the state reader shows it).
    times = handle.state(batch_id=last, variable="times")
    assert list(times.columns) == ["k", "value", "at", "expires_at", "partition_id"]
    assert set(times["value"]) <= set(range(last * ROWS, (last + 1) * ROWS))
    assert (times["k"] == times["value"] % 2).all()
    assert (times["at"] == START + (times["value"] // ROWS) * MINUTE).all()
    assert (times["expires_at"] < pd.Timestamp.now(tz="UTC")).all()
    # Every entry written is held or was removed, and progress counted the removals of both maps:
    # by_rest's entries are rewritten every batch and never expire within the run.
    history = handle.history()
    assert history["state_values_removed_by_ttl"].sum() + len(times) == ROWS * (last + 1)
    # An earlier batch still shows entries this one no longer holds.
    first_held = handle.state(batch_id=0, variable="times")
    assert sorted(first_held["value"]) == list(range(ROWS))
    # The change feed names each removal as a delete of the batch that removed it.
    changes = handle.state_changes(1, last, variable="times")
    deleted = changes.query("change_type == 'delete'")
    assert sorted(deleted["value"]) == list(range(last * ROWS))
    assert deleted["at"].isna().all()


PROCESSOR_CELL = """
import pandas as pd
from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

class Counter(StatefulProcessor):
    def init(self, handle):
        self.n = handle.getValueState("n", "n long")

    def handleInputRows(self, key, rows, timerValues):
        n = (self.n.get()[0] if self.n.exists() else 0) + sum(1 for _ in rows)
        self.n.update((n,))
        yield Row(k=key[0], n=n)

class PandasCounter(StatefulProcessor):
    def init(self, handle):
        self.n = handle.getValueState("n", "n long")

    def handleInputRows(self, key, rows, timerValues):
        n = (self.n.get()[0] if self.n.exists() else 0) + sum(len(frame) for frame in rows)
        self.n.update((n,))
        yield pd.DataFrame({"k": [int(key[0])], "n": [n]})
"""


@pytest.mark.parametrize("method, processor", [("transformWithState", "Counter"),
                                               ("transformWithStateInPandas", "PandasCounter")])
def test_stream_magic_runs_a_processor_with_nothing_set_by_hand(shell, magics, spark, env, method,  # noqa: F811
                                                                 processor):
    assert shell.run_cell(PROCESSOR_CELL).success
    args = ("stream", "counted --mode update --trigger available-now --no-monitor", (
        "spark.sql('SELECT value % 2 AS k, value FROM events').groupBy('k')"
        f".{method}({processor}(), 'k long, n long', 'Update', 'None')"))
    if method == "transformWithState" and not ROWS_FLAVOUR:
        # pyspark 4.0: one line that names the release, and nothing started
        with pytest.raises(UsageError) as caught:
            shell.run_cell_magic(*args)
        assert str(caught.value) == (
            "%%stream counted: the cell failed: GroupedData.transformWithState (transformWithState on Rows) "
            f"needs pyspark 4.1 or later; this is pyspark {pyspark.__version__}")
        assert not env.handles() and not spark.streams.active
        return
    shell.run_cell_magic(*args)
    handle = env.get("counted")
    assert handle.wait_finished(180) and handle.error is None
    assert handle.state_summary()["operator_name"].tolist() == [
        "transformWithStateInPandasExec" if method == "transformWithStateInPandas" else "transformWithStateInPySparkExec"]
    inputs = int(handle.history()["num_input_rows"].sum())
    state = handle.state(variable="n")
    assert inputs > 0 and int(state["n"].sum()) == inputs
    assert dict(zip(state["k"], state["n"])) == handle.result().groupby("k")["n"].max().to_dict()


def cell_processor(name: str) -> type:
    """A processor of PROCESSOR_CELL, defined as the cell defines it (outside an importable module,
    so that pyspark ships it to its workers by value)."""
    namespace: dict = {"__name__": "processor_cell"}
    exec(PROCESSOR_CELL, namespace)
    return namespace[name]


def test_stream_test_steps_processors_in_processing_time(env, spark):
    # Spark runs a batch for such a processor at every trigger, new data or not: StreamTest's
    # process() ran "until everything is processed" and never returned.
    from pyspark.sql.streaming.state import GroupStateTimeout

    from workbench.testing import MemoryStream, StreamTest

    def count_rows(key, frames, state):
        n = (state.get[0] if state.exists else 0) + sum(len(frame) for frame in frames)
        state.update((n,))
        state.setTimeoutDuration(3_600_000)
        yield pd.DataFrame({"k": [int(key[0])], "n": [n]})

    for processor in (
        lambda grouped: grouped.transformWithStateInPandas(cell_processor("PandasCounter")(), "k long, n long", "Update",
                                                           "ProcessingTime"),
        lambda grouped: grouped.applyInPandasWithState(count_rows, "k long, n long", "n long", "update",
                                                       GroupStateTimeout.ProcessingTimeTimeout),
    ):
        keys = MemoryStream(spark, "k long")
        with StreamTest(processor(keys.df.groupBy("k")), "update") as test:
            test.add(keys, [(1,), (1,), (2,)]).process().check_new_answer([(1, 2), (2, 1)])
            test.add(keys, [(1,)]).process().check_new_answer([(1, 3)])
            assert test.last_batch == 1  # one batch per process(), none by the clock in between
        keys.close()
