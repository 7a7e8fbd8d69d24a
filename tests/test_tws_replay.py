"""transformWithState in a replay panel: steps are deterministic, state and timers read after each.

A scripted stream of page views; the processor keeps per user a page count (value state)
and the pages (list state) and registers an event-time timer 30 minutes after the user's
last page, which emits the session and clears the user. Each step runs exactly one data
batch (``trigger once``), whose watermark is the previous batches' latest event time minus
10 minutes, so the step at which a timer fires follows from the script alone. Each step
restarts the query (and the processor's Python worker): this is the suite's slow replay.
"""

from __future__ import annotations

import pandas as pd
import pyspark
import pytest
from packaging.version import Version
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

import workbench
from workbench.replay import Script
from workbench.replay.saved import NON_TIMING_COLUMNS

from tests.helpers import wait_for

pytestmark = pytest.mark.spark

DAY = "2024-01-01"
SCRIPT = Script([
    [("10:00", "alice", "home"), ("10:02", "bob", "home"), ("10:05", "alice", "search")],
    [("10:20", "alice", "item"), ("10:31", "alice", "cart")],
    [("10:50", "carol", "home")],           # moves the next batch's watermark to 10:40, past bob's timer
    # Late: Spark filters a batch's rows against the previous batch's watermark (10:21).
    [("10:15", "bob", "faq")],
], ["event_time", "user", "page"], day=DAY)
TIMER_COLUMNS = ["user", "expires_at", "time_mode", "watermark", "ahead_of_watermark"]


class PageSessions(StatefulProcessor):
    def init(self, handle):
        self.handle = handle
        self.count = handle.getValueState("count", "pages long")
        self.pages = handle.getListState("pages", "page string, at timestamp")

    def handleInputRows(self, key, rows, timerValues):
        frames = list(rows)
        for frame in frames:
            for page, at in zip(frame["page"], frame["event_time"]):
                self.pages.appendValue((page, at))
        self.count.update(((self.count.get()[0] if self.count.exists() else 0) + sum(map(len, frames)),))
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        last = max(frame["event_time"].max() for frame in frames)
        self.handle.registerTimer(int(last.timestamp() * 1000) + 30 * 60_000)
        return iter([])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        pages = [page for page, _ in self.pages.get()]
        self.count.clear()
        self.pages.clear()
        yield pd.DataFrame({"user": [key[0]], "pages": [len(pages)], "path": [" > ".join(pages)]})


def sessions(df):
    return (df.withWatermark("event_time", "10 minutes").groupBy("user")
            .transformWithStateInPandas(PageSessions(), "user string, pages long, path string", "Update", "EventTime"))


def at(hhmm: str) -> pd.Timestamp:
    return pd.Timestamp(f"{DAY} {hhmm}", tz="UTC")


#: After each step: (watermark the batch used, pages per user held, each held user's timer).
EXPECTED = [
    (None, {"alice": 2, "bob": 1}, {"alice": "10:35", "bob": "10:32"}),
    ("09:55", {"alice": 4, "bob": 1}, {"alice": "11:01", "bob": "10:32"}),
    ("10:21", {"alice": 4, "bob": 1, "carol": 1}, {"alice": "11:01", "bob": "10:32", "carol": "11:20"}),
    ("10:40", {"alice": 4, "carol": 1}, {"alice": "11:01", "carol": "11:20"}),
]


def step_through(panel) -> list[dict]:
    """Step the panel through the script; what it shows after each step, checked against EXPECTED."""
    seen = []
    for batch_id, (mark, pages, timers_due) in enumerate(EXPECTED):
        report = panel.step()
        assert report.batch_ids == (batch_id,)
        watermark = panel.history()["watermark"].iloc[-1]
        assert (pd.isna(watermark) or watermark == pd.Timestamp(0, tz="UTC")) if mark is None else watermark == at(mark)
        count = panel.state(variable="count")
        assert dict(zip(count["user"], count["pages"])) == pages, batch_id
        held = panel.handle.state(variable="pages")  # one row per page
        assert held.groupby("user").size().to_dict() == pages
        timers = panel.handle.timers()
        assert list(timers.columns) == [*TIMER_COLUMNS, "fires_in_batch", "partition_id"]
        assert timers["fires_in_batch"].isna().all()  # no batch after this one has run yet
        assert dict(zip(timers["user"], timers["expires_at"])) == {u: at(t) for u, t in timers_due.items()}
        assert (timers["time_mode"] == "event time").all()
        if mark is not None:
            assert (timers["ahead_of_watermark"] == timers["expires_at"] - at(mark)).all()
        seen.append({"count": count, "pages": held, "timers": timers[TIMER_COLUMNS]})
        if batch_id == 2:
            # Nothing came out yet: the monitor's "why no output?" names bob's timer, 11 min ahead.
            panel.monitor.refresh()
            assert ("Earliest timer: key bob at 2024-01-01 10:32:00 UTC, 11 min ahead of the watermark "
                    "(2024-01-01 10:21:00 UTC)") in panel.monitor.diagnosis.value
    return seen


def check_spark_40_counts_keys_in_the_wrong_family_after_a_restart(stepped, played, keys: list[int]) -> None:
    """Spark 4.0's ``numRowsTotal`` for a processor that was restarted (each step restarts it).

    On a restart the RocksDB store replays its changelog and, on Spark 4.0, counts the
    replayed keys in the wrong column family (SPARK-53069, fixed in 4.1): the last step
    reports 7 rows where the state holds 4 and the played run reports 4; the store's keys
    of all families together (the rows plus ``rocksdbNumInternalColFamiliesKeys``) agree.
    """
    def counts(panel):
        ops = [op for record in panel.handle.progress.records()[:len(keys)] for op in record.operators]
        return ([op.num_rows_total for op in ops],
                [op.num_rows_total + op.custom_metrics["rocksdbNumInternalColFamiliesKeys"] for op in ops])

    (stepped_rows, stepped_keys), (played_rows, played_keys) = counts(stepped), counts(played)
    assert played_rows == keys and stepped_rows == [*keys[:-1], 7] and keys[-1] == 4
    assert stepped_keys == played_keys


@pytest.mark.slow
def test_a_processor_steps_deterministically_with_state_and_timers_after_each_step(env):
    first = workbench.replay_panel(SCRIPT, sessions, name="page_sessions", output_mode="update")
    second = workbench.replay_panel(SCRIPT, sessions, name="page_sessions_again", output_mode="update",
                                    monitor=False)
    try:
        seen = step_through(first)
        # Bob's timer fired in the last step (the watermark reached 10:40): his session came out,
        # without the late page of 10:15, dropped in the same batch before the processor saw it.
        assert first.results()[["batch_id", "user", "pages", "path"]].values.tolist() == [[3, "bob", 1, "home"]]
        assert first.late_rows()[["batch_id", "user", "page", "fate"]].values.tolist() == [[3, "bob", "faq", "dropped"]]
        history = first.history()
        assert history["timers_registered"].tolist()[:2] == [2, 1] and history["timers_deleted"].iloc[-1] == 1

        # A second run of the same script, played rather than stepped, holds the same state and
        # timers after every batch, and has the same history and results.
        second.run.play()
        wait_for(lambda: second.run.data_batches >= len(EXPECTED), 180, message=f"{len(EXPECTED)} played batches")
        second.run.pause()
        # Read later, the timers name the batch that fires them: bob's in batch 3, whose watermark
        # (10:40) passed his 10:32; the others beyond the run.
        fires = second.handle.timers(2)
        assert dict(zip(fires["user"], fires["fires_in_batch"].astype(object))) == {
            "alice": pd.NA, "bob": 3, "carol": pd.NA}
        # Alice's timer after batch 0 (10:35) was moved by her page in batch 1 (to 11:01): the
        # watermark passed 10:35 in batch 3, yet that timer never fired there.
        fires = second.handle.timers(0)
        assert dict(zip(fires["user"], fires["fires_in_batch"].astype(object))) == {"alice": pd.NA, "bob": 3}
        for batch_id, shown in enumerate(seen):
            pd.testing.assert_frame_equal(second.handle.state(batch_id, variable="count"), shown["count"])
            pd.testing.assert_frame_equal(second.handle.state(batch_id, variable="pages"), shown["pages"])
            pd.testing.assert_frame_equal(second.handle.timers(batch_id)[TIMER_COLUMNS], shown["timers"])
        columns = [*NON_TIMING_COLUMNS, "state_variables", "timers_registered", "timers_deleted", "timers_expired"]
        played_history = second.history().head(len(EXPECTED))
        # Spark counts each variable once per state store (4 on 2 partitions): count and pages.
        assert set(played_history["state_variables"]) == {2}, played_history["state_variables"]
        # Spark counts the processor's state rows as its variables' keys: per user, a count and a list of pages.
        keys = [len(shown["count"]) + shown["pages"]["user"].nunique() for shown in seen]
        assert played_history["state_rows_total"].tolist() == keys
        if Version(pyspark.__version__) < Version("4.1"):
            columns.remove("state_rows_total")
            check_spark_40_counts_keys_in_the_wrong_family_after_a_restart(first, second, keys)
        pd.testing.assert_frame_equal(history[columns], played_history[columns])
        played = second.results()
        assert played[played["batch_id"] < len(EXPECTED)].equals(first.results())

        # The panel's monitor draws the timers per batch and marks the batch in which bob's fired.
        first.monitor.refresh()
        state = {t.name: list(t.y) for t in first.monitor.figures["state"].data}
        assert state["timers registered"] == history["timers_registered"].tolist()
        marks = next(t for t in first.monitor.figures["watermark"].data if t.name == "timers fired or deleted")
        marked = [batch for batch, y in zip(marks.x, marks.y) if y is not None]
        assert marked == history.query("timers_deleted > 0")["batch_id"].tolist()
        # The panel's state view shows each variable and the timers, read once a page loads the
        # panel (its charts say "ready"): no page saw the steps, so none was read for the view.
        assert first.state_view.value == ""
        first.monitor.charts._handle_custom_msg({"kind": "ready"}, [])
        view = first.state_view.value
        for title in ("count (value)", "pages (list)", "timers (event time)"):
            assert f"State: transformWithStateInPandas, {title}</b>" in view
        summary = first.handle.state_summary()
        assert summary["variables"].tolist() == ["count (value); pages (list); timers: event time"]
        with pytest.raises(ValueError, match=r"^stream 'page_sessions'.s processor has 2 state variables: pick one "
                                             r"with variable= \(one of 'count', 'pages'\)$"):
            first.state()
    finally:
        first.close()
        second.close()
