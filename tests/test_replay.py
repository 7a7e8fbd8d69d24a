"""The replay panel on real Spark: the guide's example, late-row fates, reproducibility, faults."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F

import workbench
from workbench.errors import StreamStartError
from workbench.replay import Disorder, KeyColumn, Replay, Script, WindowCount, scenarios
from workbench.replay.saved import NON_TIMING_COLUMNS, output_delays, save_run
from workbench.spark.replay_run import ReplayError, ReplayRun
from workbench.spark.replay_source import _script_table as script_table
from workbench.views.monitor import StreamMonitor
from tests.helpers import wait_for

pytestmark = pytest.mark.spark

UTC = timezone.utc


def t(hm: str) -> pd.Timestamp:
    return pd.Timestamp(f"2024-01-01 {hm}", tz="UTC")


def test_guide_example_steps_late_fates_match_sparks_output(env, tmp_path):
    # The guide's four batches, plus rows at 11:58 and 11:50 next to the donkey.
    scenario = scenarios.guide_word_count(extra_last_batch=(("11:58", "cat"), ("11:50", "eel")))
    panel = workbench.replay_panel(scenario)
    try:
        assert isinstance(panel.monitor, StreamMonitor)
        first = panel.step()
        # Batch 0 runs before any watermark: the report says so, not Spark's 1970-01-01 (kept raw).
        assert str(first).startswith("batch 0: watermark none yet -> 2024-01-01 11:58:00, 2 rows in"), str(first)
        assert first.watermark_before == datetime(1970, 1, 1, tzinfo=UTC)
        # The counters are the line over the monitor's charts, drawn with the batch's points.
        caption = panel.monitor.charts.caption
        assert caption.startswith("batch 0 (1 data batches) · watermark none yet → 2024-01-01 11:58:00"), caption
        assert panel.counters.value == f"<b>{panel.run.name}</b> · paused", panel.counters.value
        for _ in range(2):
            panel.step()
        panel.step_button.click()  # the button path runs on a background thread
        assert panel.wait(120)
        assert panel.message.value.startswith("batch 3:"), panel.message.value
        history = panel.history()
        # One data batch per step, no watermark-only batches (trigger once).
        assert list(history["batch_id"]) == [0, 1, 2, 3]
        # Spark's initial epoch-0 watermark ("none yet") is missing in the table.
        assert history["watermark"].isna().tolist() == [True, False, False, False]
        assert list(history["watermark"][1:]) == [t("11:58"), t("12:04"), t("12:11")]
        # Scripted rows, not the rate source's padding (the longest batch has 4 rows).
        assert list(history["num_input_rows"]) == [2, 2, 4, 4]
        assert list(history["spark_num_input_rows"]) == [4, 4, 4, 4]
        caption = panel.monitor.charts.caption
        assert "batch 3 (4 data batches)" in caption and "rows in 12 · rows emitted 6" in caption, caption

        results = panel.results()
        counts = {(r.window_start.strftime("%H:%M"), r.word): (r.count, r.batch_id) for r in results.itertuples()}
        # The donkey is counted in both of its windows and emitted in batch 3 itself.
        assert counts[("12:00", "donkey")] == (1, 3) and counts[("11:55", "donkey")] == (1, 3)
        # Spark drops nothing for the eel and only one of the 11:58 cat's windows.
        assert not any(word == "eel" for _, word in counts)

        late = panel.late_rows()
        fates = dict(zip(late["word"], late["fate"]))
        assert fates == {"donkey": "counted", "cat": "partial", "eel": "dropped"}
        assert set(late["watermark"]) == {t("12:04")} and set(late["batch_id"]) == {3}
        # Check every fate against Spark's output: for each (window, word), rows in the
        # input minus Spark's count must equal the late rows that lost that window.
        inputs = panel.run.inputs()
        from workbench.replay import WindowShape, window_spans
        shape = WindowShape(scenario.query.window, scenario.query.slide)
        naive: dict[tuple[pd.Timestamp, str], int] = {}
        for row in inputs.itertuples():
            for start, end in window_spans(row.event_time.to_pydatetime(), shape):
                if end <= t("12:11"):  # append mode: emitted once the watermark passed the end
                    naive[(pd.Timestamp(start), row.word)] = naive.get((pd.Timestamp(start), row.word), 0) + 1
        lost: dict[tuple[pd.Timestamp, str], int] = {}
        for row in late.itertuples():
            for start, _end in row.dropped_windows:
                lost[(pd.Timestamp(start), row.word)] = lost.get((pd.Timestamp(start), row.word), 0) + 1
        observed = {(r.window_start, r.word): r.count for r in results.itertuples()}
        for key, expected in naive.items():
            assert expected - observed.get(key, 0) == lost.get(key, 0), key
        summary = panel.run.late_summary()
        assert summary["spark_dropped_groups"] == 3 and summary["late_rows"] == 3 and summary["dropped"] == 1
        assert "Spark's numRowsDroppedByWatermark: 3" in panel.late.value
        # The monitor's watermark lane marks each late row at its arrival batch, by fate.
        marks = {t.name: sorted(zip(t.x, (pd.Timestamp(y).strftime("%H:%M") for y in t.y)))
                 for t in panel.monitor.figures["watermark"].data if t.name and t.name.startswith("late: ")}
        assert marks == {"late: dropped": [(3, "11:50")], "late: partial": [(3, "11:58")],
                         "late: counted": [(3, "12:04")]}

        saved = panel.save(tmp_path / "guide")
        comparison = workbench.compare(saved, panel, labels=["saved", "live"])
        assert list(comparison.table.loc["late rows dropped"]) == [1, 1]
        assert list(comparison.table.loc["Spark numRowsDroppedByWatermark"]) == [3, 3]
        assert len(comparison.figure.data) == 6
        # A notebook draws it with the chart widget: the data travels once, plotly.js never.
        chart = comparison.chart()
        traces = chart.charts[0]["traces"]
        assert len(traces) == 6 and traces[0]["x"] == [int(b) for b in comparison.figure.data[0].x]
        assert len(json.dumps(chart.charts)) < 100_000
        chart.close()

        old_monitor = panel.monitor
        panel.reset()
        assert panel.history().empty and panel.results().empty and panel.late_rows().empty
        assert panel.monitor is not old_monitor and not old_monitor.running
    finally:
        panel.close()


def _in_result(results: pd.DataFrame, column: str, row) -> bool:
    """Whether Spark's output has a group of ``row.user`` whose ``column`` window holds the row."""
    mine = results[results["user"] == row.user]
    return bool(((mine[f"{column}_start"] <= row.event_time) & (row.event_time < mine[f"{column}_end"])).any())


def test_late_fates_of_session_windows_and_complete_mode_match_sparks_output(env):
    # Batch 1 reports the watermark 12:15, which filters batch 2's rows. There ann's 12:12
    # row is late but its own session [12:12, 12:17) ends after the watermark, so Spark keeps
    # it; cyd's 12:08 row [12:08, 12:13) is dropped. The 13:00 row then closes every session
    # (append mode).
    script = Script([[("12:00", "ann"), ("12:20", "bob")], [("12:21", "bob")],
                     [("12:12", "ann"), ("12:08", "cyd"), ("12:30", "bob")],
                     [("13:00", "zed")]], ["event_time", "user"], day="2024-01-01")
    sessions = workbench.replay_panel(
        script, lambda df: (df.withWatermark("event_time", "5 minutes")
                              .groupBy(F.session_window("event_time", "5 minutes"), "user").count()),
        name="late_sessions", output_mode="append", monitor=False)
    # Complete mode keeps every group: Spark aggregates late rows too, whatever the watermark.
    complete = workbench.replay_panel(
        script, lambda df: (df.withWatermark("event_time", "5 minutes")
                              .groupBy(F.window("event_time", "10 minutes"), "user").count()),
        name="late_complete", output_mode="complete", monitor=False)
    try:
        for _ in range(5):
            sessions.step()
            complete.step()
        inputs = sessions.run.inputs()
        late = sessions.late_rows()
        assert dict(zip(late["user"], late["fate"])) == {"ann": "counted", "cyd": "dropped"}
        assert set(late["watermark"]) == {t("12:15")}
        results = sessions.results()
        assert {(r.user, r.session_window_start.strftime("%H:%M"), r.session_window_end.strftime("%H:%M"), r.count)
                for r in results.itertuples()} >= {("ann", "12:12", "12:17", 1)}
        dropped = set(late.loc[late["fate"] == "dropped", "value"])
        for row in inputs[inputs["user"] != "zed"].itertuples():  # zed's session is still open
            assert _in_result(results, "session_window", row) == (row.value not in dropped), row

        late = complete.late_rows()
        assert dict(zip(late["user"], late["fate"])) == {"ann": "counted", "cyd": "counted"}
        table = complete.results()
        counted = {(r.user, r.window_start): r.count for r in table.itertuples()}
        expected: dict[tuple[str, pd.Timestamp], int] = {}
        for row in inputs.itertuples():
            key = (row.user, row.event_time.floor("10min"))
            expected[key] = expected.get(key, 0) + 1
        assert counted == expected
    finally:
        sessions.close()
        complete.close()


def test_a_join_replays_empty_batch_keeps_its_watermark_and_a_batch_with_rows_says_unknown(env):
    # Two watermarked inputs: progress reports neither input's own maximum, so after a batch
    # with rows the next watermark cannot be told; a batch without rows moves no watermark.
    script = Script([[("12:00", "impression", "ad1"), ("12:04", "click", "ad1")], []],
                    ["event_time", "kind", "ad_id"], day="2024-01-01")

    def joined(stream):
        views = (stream.where("kind = 'impression'").select(F.col("ad_id").alias("view_ad"), F.col("event_time").alias("view_time"))
                 .withWatermark("view_time", "2 minutes"))
        clicks = (stream.where("kind = 'click'").select(F.col("ad_id").alias("click_ad"), F.col("event_time").alias("click_time"))
                  .withWatermark("click_time", "3 minutes"))
        return views.join(clicks, F.expr("click_ad = view_ad AND click_time BETWEEN view_time AND view_time + interval 10 minutes"))

    panel = workbench.replay_panel(script, joined, name="joined_steps", output_mode="append", monitor=False)
    try:
        assert str(panel.step()).startswith("batch 0: watermark none yet -> unknown, 2 rows in, 1 rows out")
        assert "watermark none yet → unknown" in panel.counters.value
        # min(12:00 - 2 minutes, 12:04 - 3 minutes) after batch 0; batch 1 brings no row.
        assert str(panel.step()).startswith("batch 1: watermark 2024-01-01 11:58:00 -> 2024-01-01 11:58:00, 0 rows in")
        assert "watermark 2024-01-01 11:58:00 → 2024-01-01 11:58:00" in panel.counters.value
        # Each step is a run of its own, whose one batch Spark gives an input rate of 0: no rate, not 0.
        assert panel.history()["input_rows_per_second"].isna().all()
    finally:
        panel.close()


def _spec() -> Replay:
    return Replay(rows_per_batch=4, start="2024-01-01 12:00", advance="1 minute", seed=3,
                  keys=(KeyColumn("key", 3),), disorder=Disorder(0.3, "1 minute", "4 minutes"))


def _per_batch(run: ReplayRun, batches: int) -> tuple[pd.DataFrame, dict[int, list[tuple]]]:
    history = run.history()
    history = history[history["batch_id"] < batches][list(NON_TIMING_COLUMNS)].reset_index(drop=True)
    results = {b: sorted(map(tuple, frame.astype(str).values.tolist()))
               for b, frame in run.batch_results().items() if b < batches}
    return history, results


def test_same_spec_twice_is_identical_and_stepping_then_playing_equals_playing(env):
    query = WindowCount("event_time", "2 minutes", None, "1 minute", ("key",))
    stepped = ReplayRun(_spec(), query, name="stepped", output_mode="update", env=env)
    played = ReplayRun(_spec(), query, name="played", output_mode="update", env=env)
    try:
        for _ in range(2):
            stepped.step()
        stepped.play()
        played.play()
        wait_for(lambda: stepped.data_batches >= 5 and played.data_batches >= 5, timeout=120, message="5 batches each")
        stepped.pause()
        played.pause()
        a_history, a_results = _per_batch(stepped, 5)
        b_history, b_results = _per_batch(played, 5)
        pd.testing.assert_frame_equal(a_history, b_history)
        assert a_results == b_results and len(a_results) == 5
        assert (a_history["num_input_rows"] == 4).all()
        # The generated disorder really produced late rows, and they repeat exactly.
        a_late = stepped.late_rows()
        b_late = played.late_rows()
        a_late, b_late = (f[f["batch_id"] < 5].drop(columns=["kept_windows", "dropped_windows"]) for f in (a_late, b_late))
        pd.testing.assert_frame_equal(a_late.reset_index(drop=True), b_late.reset_index(drop=True))
        inputs = stepped.inputs()
        assert (inputs["event_time"] < inputs["timestamp"]).any()
        # The monitor's preview reads only the newest batches but shows what the whole table ends with.
        everything = played.results()
        for rows in (1, 3, len(everything) + 5):
            shown, total = played.stream.preview(rows)
            assert total == len(everything)
            pd.testing.assert_frame_equal(shown.reset_index(drop=True),
                                          everything.tail(rows).reset_index(drop=True))
    finally:
        stepped.close()
        played.close()


def test_a_closed_replays_checkpoint_goes_under_a_checkpoint_root_too_and_its_results_stay(env, tmp_path):
    # A closed run never restarts from its checkpoint: under a root of the user's, it would be
    # left there for good (streams' checkpoints there are kept on purpose, to restart from).
    saved, env.checkpoint_root = env.checkpoint_root, str(tmp_path)
    try:
        run = ReplayRun(_spec(), lambda df: df.select("key"), name="rooted", env=env)
    finally:
        env.checkpoint_root = saved
    try:
        run.step()
        checkpoint = Path(run.checkpoint)
        assert checkpoint.is_relative_to(tmp_path) and (checkpoint / "commits" / "0").exists()
    finally:
        run.close()
    assert not checkpoint.exists()
    assert len(run.results()) == 4 and run.history()["batch_id"].tolist() == [0]
    with pytest.raises(ReplayError, match=r"^replay 'rooted' is closed: its state went with its checkpoint$"):
        run.state()


def test_a_panel_closes_whole_when_spark_cannot_stop_its_runs_query(env):
    # A step interrupted or timed out leaves its query to close(); if Spark cannot stop it,
    # the error is raised, and the run and its panel are closed all the same.
    from workbench.errors import StreamStopError

    panel = workbench.replay_panel(_spec(), lambda df: df.select("key"), name="unstoppable")

    class Stuck:  # the step's handle, as Spark's failed stop leaves it
        status = "active"

        def stop(self):
            raise StreamStopError("stream 'unstoppable' could not be stopped: boom; it still runs")

    panel.run.handle = Stuck()
    with pytest.raises(StreamStopError, match="could not be stopped"):
        panel.close()
    assert panel.run.status == "closed" and panel.monitor.comm is None and panel.comm is None
    # The query still runs: its checkpoint stays (it writes there; workbench.streams() lists it).
    assert Path(panel.run.checkpoint).exists()
    with pytest.raises(StreamStopError, match="could not be stopped"):
        panel.close()  # again: tries to stop it again
    Stuck.stop = lambda self: setattr(self, "status", "stopped")  # Spark can stop it now
    panel.close()
    assert not Path(panel.run.checkpoint).exists()
    panel.close()  # again (ipywidgets does when the panel is collected): nothing left to do


def test_bad_query_and_failed_runs_say_so_and_reset_is_clean(env, spark):
    with pytest.raises(TypeError, match="the query function must return a streaming DataFrame"):
        ReplayRun(_spec(), lambda df: 42, name="bad", env=env)
    with pytest.raises(ValueError, match="not streaming"):
        ReplayRun(_spec(), lambda df: spark.range(3), name="bad", env=env)
    # Spark's refusal of the query function (a misspelt column) as its one line, not as a bare
    # AssertionError (pyspark's exceptions cannot be rebuilt from a message); the user's own
    # Python error keeps its type.
    with pytest.raises(StreamStartError) as refused:
        ReplayRun(_spec(), lambda df: df.groupBy("kye").count(), name="typo", output_mode="complete", env=env)
    assert str(refused.value).startswith("the query function failed on the replay source: ")
    assert "`kye` cannot be resolved" in str(refused.value) and "\n" not in str(refused.value)
    assert "AnalysisException" in refused.value.details

    def own_error(df):
        raise ValueError("no column named kye")

    with pytest.raises(ValueError) as own:
        ReplayRun(_spec(), own_error, name="typo", env=env)
    assert type(own.value) is ValueError
    assert str(own.value) == "the query function failed on the replay source: no column named kye"
    # Refused when the panel is built, not at the first step.
    with pytest.raises(StreamStartError, match="cannot run replay 'agg': Invalid streaming output mode: append"):
        ReplayRun(_spec(), lambda df: df.groupBy("key").count(), name="agg", output_mode="append", env=env)
    assert not spark.streams.active
    run = ReplayRun(_spec(), lambda df: df.withColumn("boom", F.raise_error(F.lit("replay boom"))), name="boom",
                    env=env)
    try:
        with pytest.raises(ReplayError, match="replay boom"):
            run.step()
        assert run.status == "failed"
        ended: list = []
        failed_view = run.stream
        failed_view.on_finished(ended.append)  # a monitor of the run ends with it
        assert ended == [failed_view]
        with pytest.raises(ReplayError, match="failed: .*replay boom.*reset"):
            run.step()
        with pytest.raises(ReplayError, match="reset"):
            run.play()
        run.reset()
        assert run.status == "paused" and run.error is None and run.history().empty
        # The failed run's view (and a monitor on it) still says how it ended.
        assert failed_view.status == "failed" and "replay boom" in failed_view.error
    finally:
        run.close()
    with pytest.raises(ReplayError, match="closed"):
        run.step()


def test_a_play_run_that_fails_says_so_at_once_and_leaves_only_reset(env):
    # The third batch's rows raise: the play run fails by itself, with nobody stepping or pausing.
    boom = F.when(F.col("value") >= 8, F.raise_error(F.lit("replay boom"))).otherwise(F.col("value"))
    panel = workbench.replay_panel(_spec(), lambda df: df.withColumn("checked", boom), name="boom_play")
    told: list[str] = []
    panel.run.on_failed.append(told.append)
    try:
        panel.play()
        wait_for(lambda: told, timeout=120, message="the play run's failure")
        [message] = told
        assert message.startswith("replay 'boom_play' failed: ") and "replay boom" in message
        assert message.endswith("Call reset() to start over.") and "\n" not in message
        assert panel.run.status == "failed" and "replay boom" in panel.run.error
        assert "replay boom" in panel.message.value and "failed" in panel.counters.value
        # The text a viewer without widgets reads (and the picture's header): an error line, no HTML.
        assert panel.summary().splitlines()[-1] == f"error: {message}"
        # %stream step says the same in one line.
        from IPython.core.error import UsageError
        from workbench.magics.magic import StreamMagics
        from workbench.magics.parser import parse
        magics = StreamMagics(shell=None)
        magics.panels["boom_play"] = panel
        with pytest.raises(UsageError, match=r"^%stream step boom_play: replay 'boom_play' failed: .*replay boom"):
            magics.execute(parse("step boom_play"))
        assert panel.play_button.disabled and panel.step_button.disabled and panel.pause_button.disabled
        assert not panel.reset_button.disabled
        # The monitor under the panel says so too, and its Stop (which pauses) goes disabled.
        failed_monitor = panel.monitor
        wait_for(lambda: "failed" in failed_monitor.header.value, timeout=30, message="the monitor's failed status")
        assert "replay boom" in failed_monitor.header.value and failed_monitor.stop_button.disabled
        with pytest.raises(ReplayError, match="failed: .*replay boom.*reset"):
            panel.run.pause()
        panel.reset()
        assert panel.run.status == "paused" and not panel.play_button.disabled
        assert panel.monitor is not failed_monitor and not panel.monitor.stop_button.disabled
    finally:
        panel.close()


@pytest.mark.slow
def test_compare_watermark_delays_dropped_rows_state_and_output_delay(env, tmp_path):
    # The guide's batches with an 11:50 eel next to the donkey, then a batch at 12:40 that
    # pushes both watermarks past every window, and an empty batch to emit them.
    batches = [list(b) for b in scenarios.GUIDE_BATCHES]
    batches[3].append(("11:50", "eel"))
    batches += [[("12:40", "ant")], []]
    script = Script(batches, ["event_time", "word"], day="2024-01-01")
    runs = {}
    for delay in ("10 minutes", "20 minutes"):
        query = WindowCount("event_time", "10 minutes", "5 minutes", delay, ("word",))
        runs[delay] = ReplayRun(script, query, name=f"delay_{delay.split()[0]}", output_mode="append", env=env)
    try:
        for run in runs.values():
            for _ in range(len(batches)):
                run.step()
        short, long = runs["10 minutes"], runs["20 minutes"]
        save_run(short, tmp_path / "delay10")
        table = workbench.compare(tmp_path / "delay10", long, labels=["10 min", "20 min"]).table
        # What Spark did, read from its output: the eel is in no result with a 10-minute
        # delay and counted with 20 minutes.
        assert "eel" not in set(short.results()["word"]) and "eel" in set(long.results()["word"])
        assert list(table.loc["late rows dropped"]) == [1, 0]
        # A longer delay keeps more windows open: more state, emitted later.
        assert table.loc["max state rows", "20 min"] > table.loc["max state rows", "10 min"]
        assert table.loc["mean output delay (event time)", "20 min"] > table.loc["mean output delay (event time)", "10 min"]
        # In append mode no window comes out before the stream's event time is a full
        # watermark delay past its end.
        for delay, run in runs.items():
            delays = output_delays(run.history(), run.results())
            assert len(delays) == len(run.results()[["window_start", "window_end"]].drop_duplicates()) > 0
            assert (delays["delay_event_time"] >= pd.Timedelta(delay)).all(), delays
            assert (delays["delay_batches"] >= 1).all()
    finally:
        for run in runs.values():
            run.close()


def test_late_rows_follow_the_column_the_watermark_is_on(env):
    # late_clicks' rows arrive out of event-time order but in arrival order: a watermark on the
    # rate source's ``timestamp`` drops none, where judging them by event_time made 4 "dropped".
    from pyspark.sql import functions as F

    def by_arrival(df):
        return df.withWatermark("timestamp", "1 minute").groupBy(F.window("timestamp", "5 minutes"), "page").count()

    run = ReplayRun(scenarios.late_clicks().source, by_arrival, name="by_arrival", output_mode="append", env=env)
    try:
        for _ in range(4):
            run.step()
        assert run.late_rows().empty and run.late_summary()["late_rows"] == 0
        assert sum(r.state_rows_dropped_by_watermark for r in run.raw_progress.records()) == 0
    finally:
        run.close()


def test_compare_runs_without_a_watermark(env):
    # Spark reports no event times without a watermark: compare failed on the missing
    # "event_time_max" ("datetime64[ns] cannot be converted to timedelta64[ns]").
    source = scenarios.guide_word_count().source
    runs = [ReplayRun(source, WindowCount("event_time", "10 minutes", "5 minutes", None, ("word",)),
                      name=f"no_watermark_{mode}", output_mode=mode, env=env) for mode in ("update", "complete")]
    try:
        for run in runs:
            run.step(), run.step()
        comparison = workbench.compare(*runs)
        table = comparison.table
        assert list(table.loc["batches"]) == [2, 2], table
        # Complete mode emits the whole table each batch, update mode only the windows that changed.
        assert 0 < table.loc["rows emitted"].iloc[0] < table.loc["rows emitted"].iloc[1], table
        assert table.loc["mean output delay (event time)"].isna().all()
        assert table.loc["mean output delay (batches)"].isna().all()
        assert output_delays(runs[0].history(), runs[0].results())["delay_event_time"].dtype == "timedelta64[ns]"
        assert comparison.picture().startswith(b"\x89PNG")
    finally:
        for run in runs:
            run.close()


def test_speed_control_paces_play_and_pause_keeps_state(env):
    panel = workbench.replay_panel(scenarios.late_clicks(), monitor=False)
    try:
        # The control shows its first choice until one is picked.
        assert (panel.speed.label, panel.speed.value) == ("as fast as possible", None)
        panel.step()
        # Without a monitor the counters follow the name and status on the panel's own line.
        assert panel.counters.value.startswith(f"<b>{panel.run.name}</b> · paused · batch 0 (1 data batches)"), \
            panel.counters.value
        panel.speed.value = 2  # batches per second
        panel.play_button.click()
        wait_for(lambda: panel.run.data_batches >= 4, timeout=120, message="4 batches at 2 per second")
        # A speed or step timeout that is no number of seconds is refused before the run changes:
        # a NaN speed used to pause the playing run, then fail converting it.
        for bad, message in [(lambda: panel.run.play(float("nan")), "speed must be a number of batches per second"),
                             (lambda: panel.run.play(float("inf")), "speed must be a number of batches per second"),
                             (lambda: panel.run.play(1e-5), "at least 1/86400 \\(one a day\\)"),
                             (lambda: panel.run.step(timeout=-1), "timeout must be a positive number of seconds")]:
            with pytest.raises(ValueError, match=message):
                bad()
            assert panel.run.status == "playing"
        panel.pause_button.click()
        assert panel.wait(60) and panel.run.status != "playing"
        played = panel.history()[panel.history()["batch_id"] >= 1]
        # Paced by a 500 ms processing-time trigger: at most one batch per half-second slot.
        slots = played["timestamp"].dt.floor("500ms")
        assert slots.is_monotonic_increasing and slots.is_unique, list(played["timestamp"])
        # Pausing kept the state: the next step continues from the next batch id.
        last = int(panel.history()["batch_id"].max())
        report = panel.step()
        assert report.batch_ids and report.batch_ids[0] == last + 1
        assert (panel.history()["batch_id"].diff().dropna() == 1).all()
    finally:
        panel.close()


def test_replay_stream_builds_the_specs_streaming_frame_on_the_workbench_session(env, spark):
    script = Script([[("12:07", "dog"), ("12:08", "owl")], [("12:14", "dog")]], ["event_time", "word"])
    events = workbench.replay_stream(script)
    assert events.isStreaming and events.columns == ["event_time", "word"]
    assert events.sparkSession is spark
    generated = workbench.replay_stream(Replay(keys=KeyColumn("user", 3)), spark)
    assert generated.isStreaming and generated.columns == ["value", "timestamp", "event_time", "user"]


def test_a_scripts_rows_are_a_table_the_jvm_holds_not_python_rows(env, spark, capsys):
    # Python rows would reach the JVM through a Python worker, whose start-up a fresh session
    # pays in a scripted replay's first step: the script's table is a local table in the plan.
    script = Script([[("12:07", "dog"), ("12:08", None)], [("12:14", "owl")]], ["event_time", "word"])
    workbench.replay_stream(script).explain()
    plan = capsys.readouterr().out
    assert "LocalTableScan [value" in plan and "ExistingRDD" not in plan, plan
    # Its rows are the script's, at the times it wrote (UTC).
    rows = script_table(spark, script).selectExpr("value", "date_format(event_time, 'HH:mm')", "word").collect()
    width = script.rows_per_batch
    assert [tuple(row) for row in rows] == [(0, "12:07", "dog"), (1, "12:08", None), (width, "12:14", "owl")]
