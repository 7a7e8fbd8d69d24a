"""The state inspector on real Spark: state rows, the change feed and the operator list.

Inputs come from ``rate-micro-batch``, which is deterministic: batch ``b`` holds values
``b*rows .. (b+1)*rows - 1``, all at event time ``start + b * advance``. Each test derives
what Spark must hold from those inputs and the watermark each batch reported, and compares
it with what the inspector read from the checkpoint.
"""

from __future__ import annotations

import itertools
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F

from tests.helpers import wait_for

pytestmark = pytest.mark.spark

START = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


def rate(spark, rows: int, advance_s: int = 60):
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).option("numPartitions", 1)
            .option("startTimestamp", int(START.timestamp() * 1000)).option("advanceMillisPerBatch", advance_s * 1000)
            .load())


def run(env, df, name: str, batches: int, mode: str | None = None):
    """Run ``batches`` micro-batches and stop between two of them.

    A trigger gap leaves an idle moment, and the stop waits for it however long a batch
    takes on a loaded machine: a stop inside a batch could commit it (its state too) without
    Spark reporting its progress, and the tests compare the state with what was reported.
    """
    handle = env.start(df, name, trigger="200 ms", output_mode=mode)
    wait_for(lambda: handle.progress.total >= batches or handle.status != "active", 120,
             text=lambda: f"{name}: {handle.progress.total} of {batches} batches, status {handle.status} {handle.error}")
    handle.stop(grace=120)
    assert handle.error is None and handle.cut_batch is None, (handle.error_details, handle.cut_batch)
    return handle


def inputs(rows: int, batches: int, advance_s: int = 60) -> pd.DataFrame:
    """The rows rate-micro-batch produced: batch, value, event time."""
    return pd.DataFrame([(b, v, START + b * timedelta(seconds=advance_s))
                         for b in range(batches) for v in range(b * rows, (b + 1) * rows)],
                        columns=["batch", "value", "event_time"])


def watermarks(handle) -> dict[int, datetime]:
    return {r.batch_id: r.watermark for r in handle.progress.records()}


def one_line(message: str) -> bool:
    return "\n" not in message and "py4j" not in message.lower() and "org.apache" not in message


def test_windowed_state_holds_exactly_the_windows_not_yet_emitted(env, spark):
    counts = (rate(spark, 4).withWatermark("timestamp", "2 minutes")
              .groupBy(F.window("timestamp", "2 minutes"), (F.col("value") % 2).alias("k")).count())
    handle = run(env, counts, "window_counts", 7)
    last = handle.progress.last_batch_id
    rows = inputs(4, last + 1)
    rows["window_start"] = rows["event_time"].map(lambda t: START + (t - START) // (2 * MINUTE) * 2 * MINUTE)
    rows["k"] = rows["value"] % 2
    marks = watermarks(handle)
    assert marks[last] > START, "the watermark must have evicted something for this test to mean anything"
    for batch_id in range(last + 1):
        seen = rows[rows["batch"] <= batch_id]
        # Append mode evicts a window once the watermark of the batch reaches its end.
        held = seen[seen["window_start"] + 2 * MINUTE > marks[batch_id]]
        expected = held.groupby(["window_start", "k"]).size().to_dict()
        state = handle.state(batch_id=batch_id)
        assert list(state.columns) == ["window_start", "window_end", "k", "count", "partition_id"]
        assert (state["window_end"] - state["window_start"] == 2 * MINUTE).all()
        assert {(r.window_start, r.k): r.count for r in state.itertuples()} == expected, f"batch {batch_id}"
    # What the state holds after the last batch is exactly what append mode has not yet emitted.
    emitted = {(r.window_start, r.k) for r in handle.result().itertuples()}
    held = {(r.window_start, r.k) for r in handle.state().itertuples()}
    assert emitted and held and not emitted & held
    assert emitted | held == set(zip(rows["window_start"], rows["k"]))
    summary = handle.state_summary()
    assert summary.to_dict("records") == [{
        "operator": 0, "operator_name": "stateStoreSave", "kind": "aggregation", "sides": "", "stores": "default",
        "num_partitions": 2, "min_batch_id": 0, "max_batch_id": last}]


_GROUPS = itertools.count()


def _spark_jobs(spark, read):
    """``read()``'s result and the Spark jobs it ran (their number).

    Spark's status tracker learns of a job from its listener bus, which runs behind the
    driver: the bus is drained before the count (else a busy machine counts none).
    """
    context = spark.sparkContext
    group = f"workbench-test-{next(_GROUPS)}"
    context.setJobGroup(group, "counted")
    try:
        result = read()
    finally:
        for name in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            context.setLocalProperty(name, None)  # what setJobGroup set, unset
    context._jsc.sc().listenerBus().waitUntilEmpty(60_000)
    return result, len(context.statusTracker().getJobIdsForGroup(group))


def test_operators_are_read_again_only_when_the_checkpoint_changed(env, spark):
    counts = rate(spark, 4).withWatermark("timestamp", "2 minutes").groupBy(F.window("timestamp", "2 minutes")).count()
    handle = env.start(counts, "operators_read", trigger="200 ms")
    wait_for(lambda: handle.progress.total >= 2, 120, text=lambda: f"{handle.progress.total} batches")
    running = handle.state_summary().loc[0, "max_batch_id"]
    # A running query commits batch after batch: each read sees the newest.
    wait_for(lambda: handle.progress.total >= running + 4, 120, text=lambda: f"{handle.progress.total} batches")
    assert handle.state_summary().loc[0, "max_batch_id"] >= running + 2
    handle.stop(grace=120)
    last = handle.progress.last_batch_id
    first, jobs = _spark_jobs(spark, handle.state_summary)
    assert first.loc[0, "max_batch_id"] == last and jobs >= 1
    # Stopped, its checkpoint no longer changes: the operators and their batch ranges are known.
    again, jobs = _spark_jobs(spark, handle.state_summary)
    assert jobs == 0 and again.equals(first)
    state, jobs = _spark_jobs(spark, lambda: handle.state(batch_id=last - 1))
    assert jobs >= 1 and not state.empty  # the state itself is read each time
    # Files removed from the checkpoint (older state versions) are seen: read again.
    oldest = sorted(f for f in (Path(handle.checkpoint) / "commits").iterdir() if f.name.isdigit())[0]
    oldest.unlink()
    _, jobs = _spark_jobs(spark, handle.state_summary)
    assert jobs >= 1


def test_a_state_file_gone_from_the_checkpoint_is_named(env, spark):
    # A missing change log was read as a store that keeps none, with advice to restart the query.
    counts = rate(spark, 4).withWatermark("timestamp", "1 minute").groupBy(F.window("timestamp", "1 minute")).count()
    handle = run(env, counts, "gone_file", 3)
    last = handle.progress.last_batch_id
    gone = sorted((Path(handle.checkpoint) / "state" / "0").glob(f"*/{last + 1}.changelog"))[0]  # version = batch + 1
    gone.unlink()
    with pytest.raises(ValueError) as raised:
        handle.state(batch_id=last)
    assert str(raised.value).startswith("state file ") and str(raised.value).endswith(
        f"{gone.parent.name}/{gone.name} of stream 'gone_file' is missing: its state from that batch on cannot be rebuilt")


def test_change_feed_deletes_match_num_rows_removed_and_carry_their_watermark(env, spark):
    counts = (rate(spark, 4).withWatermark("timestamp", "1 minute")
              .groupBy(F.window("timestamp", "1 minute"), (F.col("value") % 2).alias("k")).count())
    handle = run(env, counts, "changing", 6)
    last = handle.progress.last_batch_id
    changes = handle.state_changes(0, last)
    assert list(changes.columns) == ["batch_id", "change_type", "window_start", "window_end", "k", "count",
                                     "watermark", "partition_id"]
    assert set(changes["batch_id"]) <= set(range(last + 1))
    deletes = changes[changes["change_type"] == "delete"]
    assert len(deletes) > 0
    for record in handle.progress.records():
        in_batch = changes[changes["batch_id"] == record.batch_id]
        op = record.operators[0]
        assert (in_batch["change_type"] == "delete").sum() == op.num_rows_removed, f"batch {record.batch_id}"
        assert (in_batch["change_type"] == "update").sum() == op.num_rows_updated, f"batch {record.batch_id}"
    # Each delete is attributed to the watermark of its own batch, which has passed the window's end.
    for row in deletes.itertuples():
        assert row.watermark == handle.progress.records()[row.batch_id].watermark
        assert row.window_end <= row.watermark
        assert pd.isna(row.count)
    assert changes.loc[changes["change_type"] == "update", "watermark"].isna().all()
    # A deleted window was held after the batch before and is gone after its own batch.
    first = deletes.iloc[0]
    before = handle.state(batch_id=int(first.batch_id) - 1)
    after = handle.state(batch_id=int(first.batch_id))
    key = (first.window_start, first.k)
    assert key in set(zip(before["window_start"], before["k"])) and key not in set(zip(after["window_start"], after["k"]))
    # A range reads only its batches.
    assert set(handle.state_changes(2, 3)["batch_id"]) <= {2, 3}


def test_deduplication_state_with_and_without_watermark(env, spark):
    with_watermark = run(env, rate(spark, 4).withWatermark("timestamp", "1 minute")
                         .dropDuplicates(["value", "timestamp"]), "dedup_wm", 5)
    last = with_watermark.progress.last_batch_id
    rows = inputs(4, last + 1)
    mark = watermarks(with_watermark)[last]
    state = with_watermark.state(batch_id=last)  # the batch whose watermark is `mark`
    assert list(state.columns) == ["value", "timestamp", "partition_id"]  # no placeholder value column
    # Keys are kept until the watermark reaches their event time.
    expected = rows[rows["event_time"] > mark]
    assert set(zip(state["value"], state["timestamp"])) == set(zip(expected["value"], expected["event_time"]))
    assert with_watermark.state_summary()["kind"].tolist() == ["dropDuplicates"]

    without = run(env, rate(spark, 4).withColumn("k", F.col("value") % 3).dropDuplicates(["k"]), "dedup_all", 3)
    assert sorted(without.state()["k"]) == [0, 1, 2]  # every key ever seen, forever

    within = run(env, rate(spark, 4).withWatermark("timestamp", "1 minute")
                 .withColumn("k", (F.col("value") / 2).cast("long")).dropDuplicatesWithinWatermark(["k"]),
                 "dedup_within", 5)
    last = within.progress.last_batch_id
    rows = inputs(4, last + 1)
    rows["k"] = rows["value"] // 2
    first_seen = rows.groupby("k")["event_time"].min()
    mark = watermarks(within)[last]
    state = within.state(batch_id=last)
    assert list(state.columns) == ["k", "expires_at", "partition_id"]
    # Each key expires one delay after its first event time, and leaves state when the watermark gets there.
    assert {r.k: r.expires_at for r in state.itertuples()} == {
        k: t + MINUTE for k, t in first_seen.items() if t + MINUTE > mark}
    assert within.state_summary()["kind"].tolist() == ["dropDuplicatesWithinWatermark"]


@pytest.mark.slow
def test_session_window_and_apply_in_pandas_with_state(env, spark):
    sessions = (rate(spark, 4).withWatermark("timestamp", "1 minute")
                .groupBy(F.session_window("timestamp", "90 seconds"), (F.col("value") % 2).alias("user")).count())
    handle = run(env, sessions, "sessions", 4)
    for batch_id in range(handle.progress.last_batch_id + 1):
        state = handle.state(batch_id=batch_id)
        assert list(state.columns) == ["user", "session_start_time", "session_window_start", "session_window_end",
                                       "value_user", "count", "partition_id"]
        # Events every minute with a 90-second gap: one growing session per user.
        assert {(r.user, r.session_start_time, r.session_window_end, r.count) for r in state.itertuples()} == {
            (user, START, START + batch_id * MINUTE + timedelta(seconds=90), 2 * (batch_id + 1)) for user in (0, 1)}

    from pyspark.sql.streaming.state import GroupStateTimeout

    def count_rows(key, frames, state):
        total = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
        state.update((total,))
        yield pd.DataFrame({"k": [key[0]], "n": [total]})

    counted = (rate(spark, 4).withColumn("k", F.col("value") % 2).groupBy("k")
               .applyInPandasWithState(count_rows, "k long, n long", "n long", "update", GroupStateTimeout.NoTimeout))
    handle = run(env, counted, "pandas_state", 3, mode="update")
    for batch_id in range(handle.progress.last_batch_id + 1):
        state = handle.state(batch_id=batch_id)
        assert list(state.columns) == ["k", "n", "partition_id"]
        assert dict(zip(state["k"], state["n"])) == {0: 2 * (batch_id + 1), 1: 2 * (batch_id + 1)}
    assert handle.state_summary()["kind"].tolist() == ["applyInPandasWithState"]

    # With a timeout Spark keeps the timeout beside the state row: the row was left wrapped
    # (groupState_n) and the timeout in raw milliseconds.
    def count_until(key, frames, state):
        total = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
        state.update((total,))
        state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 10 * 60_000)
        yield pd.DataFrame({"k": [key[0]], "n": [total]})

    timed = (rate(spark, 4).withWatermark("timestamp", "1 minute").withColumn("k", F.col("value") % 2).groupBy("k")
             .applyInPandasWithState(count_until, "k long, n long", "n long", "update", GroupStateTimeout.EventTimeTimeout))
    handle = run(env, timed, "pandas_state_timeout", 3, mode="update")
    watermarks = handle.history().set_index("batch_id")["watermark"]
    for batch_id in range(handle.progress.last_batch_id + 1):
        state = handle.state(batch_id=batch_id)
        assert list(state.columns) == ["k", "n", "timeout_at", "partition_id"]
        assert dict(zip(state["k"], state["n"])) == {0: 2 * (batch_id + 1), 1: 2 * (batch_id + 1)}
        # Set in the batch at its watermark (missing, Spark's 0, before any) + 10 minutes.
        ran_with = watermarks.get(batch_id)
        mark = pd.Timestamp(0, tz="UTC") if pd.isna(ran_with) else pd.Timestamp(ran_with)
        assert set(state["timeout_at"]) == {mark + timedelta(minutes=10)}, (state, ran_with)


def test_join_state_per_side(env, spark):
    clicks = rate(spark, 3).select(F.col("value").alias("click_id"), F.col("timestamp").alias("click_time"))
    views = rate(spark, 2).select(F.col("value").alias("view_id"), F.col("timestamp").alias("view_time"))
    joined = clicks.withWatermark("click_time", "1 minute").join(
        views.withWatermark("view_time", "2 minutes"),
        F.expr("click_id = view_id AND click_time BETWEEN view_time AND view_time + interval 1 minute"))
    handle = run(env, joined, "joined", 7)
    last = handle.progress.last_batch_id
    summary = handle.state_summary()
    assert summary[["kind", "sides"]].values.tolist() == [["stream-stream join", "left, right"]]
    left, right = handle.state(side="left"), handle.state(side="right")
    assert list(left.columns) == ["join_key", "click_id", "click_time", "partition_id"]
    assert list(right.columns) == ["join_key", "view_id", "view_time", "partition_id"]
    assert (left["join_key"] == left["click_id"]).all() and (right["join_key"] == right["view_id"]).all()
    all_clicks = inputs(3, last + 1)
    assert set(zip(left["click_id"], left["click_time"])) <= set(zip(all_clicks["value"], all_clicks["event_time"]))
    # Spark's numRowsTotal counts the rows both sides hold.
    for batch_id in (last - 1, last):
        total = handle.progress.records()[batch_id].operators[0].num_rows_total
        assert len(handle.state(batch_id, side="left")) + len(handle.state(batch_id, side="right")) == total
    changes = {side: handle.state_changes(0, last, side=side) for side in ("left", "right")}
    removed = sum(r.operators[0].num_rows_removed for r in handle.progress.records())
    deletes = sum(int((c["change_type"] == "delete").sum()) for c in changes.values())
    assert removed > 0 and deletes == removed
    assert (changes["left"].query("change_type == 'delete'")["watermark"].notna()).all()


def test_bad_arguments_are_one_clear_line_before_spark_reads(env, spark):
    two = (rate(spark, 4).withWatermark("timestamp", "1 minute").dropDuplicates(["value", "timestamp"])
           .groupBy(F.window("timestamp", "1 minute")).count())
    handle = run(env, two, "two_ops", 3)
    last = handle.progress.last_batch_id
    assert handle.state_summary()["operator_name"].tolist() == ["stateStoreSave", "dedupe"]
    by_name = handle.state(operator="dedupe")
    assert by_name.equals(handle.state(operator=1)) and list(by_name.columns) == ["value", "timestamp", "partition_id"]
    cases = [
        (dict(), r"has 2 stateful operators: pick one with operator= \(one of 0 \(stateStoreSave\), 1 \(dedupe\)\)"),
        (dict(operator=7), r"unknown operator 7 in stream 'two_ops': use one of 0 \(stateStoreSave\), 1 \(dedupe\)"),
        (dict(operator="join"), r"unknown operator 'join'"),
        (dict(operator=0, side="left"), r"side='left' applies only to stream-stream joins"),
        (dict(operator=0, side="up"), r"unknown side 'up': use 'left' or 'right'"),
        (dict(operator=0, batch_id=last + 5), rf"batch {last + 5} is not in the checkpoint of stream 'two_ops': "
                                             rf"operator 0 \(stateStoreSave\) has state for batches 0 to {last}"),
        (dict(operator=0, batch_id=-1), r"batch_id must be a batch id \(a whole number >= 0\), got -1"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message) as caught:
            handle.state(**kwargs)
        assert one_line(str(caught.value))
    with pytest.raises(ValueError, match="start_batch 2 is after end_batch 1") as caught:
        handle.state_changes(2, 1, operator=0)
    with pytest.raises(ValueError, match=rf"end_batch 99 is not in the checkpoint.*batches 0 to {last}"):
        handle.state_changes(0, 99, operator=0)

    stateless = run(env, rate(spark, 2).where("value % 2 = 0"), "evens", 2)
    with pytest.raises(ValueError, match="stream 'evens' keeps no state: its query has no stateful operator"):
        stateless.state()

    shutil.rmtree(handle.checkpoint)
    with pytest.raises(ValueError, match=r"the checkpoint of stream 'two_ops' \(.*\) was removed") as caught:
        handle.state_summary()
    assert one_line(str(caught.value))
    assert not spark.streams.active


@pytest.mark.slow
def test_rocksdb_change_feed_needs_and_gets_a_change_log(env, spark):
    provider = "spark.sql.streaming.stateStore.providerClass"
    changelog = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    saved = spark.conf.get(provider)
    # The workbench's session turns the change log on, so the change feed works on RocksDB.
    assert spark.conf.get(changelog) == "true"
    counts = lambda: (rate(spark, 4).withWatermark("timestamp", "1 minute")  # noqa: E731
                      .groupBy(F.window("timestamp", "1 minute")).count())
    spark.conf.set(provider, "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    try:
        handle = run(env, counts(), "rocks", 5)
        spark.conf.set(changelog, "false")
        without = run(env, counts(), "rocks_no_log", 3)
    finally:
        spark.conf.set(provider, saved)
        spark.conf.set(changelog, "true")
    records = handle.progress.records()
    # Up to the last batch that reported progress: on a busy machine stop can still cut the
    # next batch after its state commit, and its deletes have no progress to compare with.
    changes = handle.state_changes(0, records[-1].batch_id)
    removed = sum(r.state_rows_removed for r in records)
    assert removed > 0 and (changes["change_type"] == "delete").sum() == removed
    assert len(without.state()) > 0  # the state itself reads fine without a change log
    with pytest.raises(ValueError, match="changelogCheckpointing.enabled=true on a new checkpoint") as caught:
        without.state_changes(0)
    assert one_line(str(caught.value))


def test_replay_panel_handle_gives_live_columns_and_state_after_each_step(env, spark, monkeypatch):
    import workbench
    from workbench.replay import WindowShape, scenarios, window_spans
    from workbench.spark.replay_source import build_stream, build_window_count
    from workbench.views.static_output import StaticOutput

    scenario = scenarios.guide_word_count()
    panel = workbench.replay_panel(scenario, monitor=False)
    # A page that draws widgets is connected (else the state view would not be read: below).
    monkeypatch.setattr(StaticOutput, "page_seen_in_process", True)
    try:
        assert panel.handle.result().empty
        assert list(panel.handle.result().columns) == ["window_start", "window_end", "word", "count"]
        with pytest.raises(ValueError, match="replay 'guide_word_count' has run no batch yet"):
            panel.state()
        shape = WindowShape(scenario.query.window, scenario.query.slide)
        for batch_id in range(4):
            panel.step()
            rows = panel.run.inputs()
            windows: dict[tuple, int] = {}
            for row in rows.itertuples():
                for start, _end in window_spans(row.event_time.to_pydatetime(), shape):
                    windows[(pd.Timestamp(start), row.word)] = windows.get((pd.Timestamp(start), row.word), 0) + 1
            emitted = {(r.window_start, r.word): r.count for r in panel.handle.result().itertuples()}
            state = panel.state()
            held = {(r.window_start, r.word): r.count for r in state.itertuples()}
            # In append mode state holds exactly the counted windows not yet emitted, with their counts.
            assert not set(held) & set(emitted), batch_id
            assert {**held, **emitted} == windows, batch_id
            assert state.equals(panel.handle.state(batch_id=batch_id))
            assert f"{len(state)} rows held after batch {batch_id}" in panel.state_view.value
        assert "State: aggregation" in panel.state_view.value
        assert panel.handle.history()["batch_id"].tolist() == [0, 1, 2, 3]
        replayed = panel.handle.result()
        # With no page (nbconvert --execute, a script) a step reads no state for the view.
        monkeypatch.setattr(StaticOutput, "page_seen_in_process", False)
        panel.step()
        assert "rows held after batch 3" in panel.state_view.value  # as the last page saw it
        assert panel.handle.history()["batch_id"].tolist()[-1] >= 4
    finally:
        panel.close()

    # The same query started live gives the same columns and, after the same batches, the same rows.
    live_df = build_window_count(build_stream(spark, scenario.source), scenario.query)
    live = run(env, live_df, "guide_live", 5)
    assert list(live.result().columns) == list(replayed.columns)
    key = ["window_start", "word"]
    assert (live.result().sort_values(key).reset_index(drop=True).astype(str)
            .equals(replayed.sort_values(key).reset_index(drop=True).astype(str)))
