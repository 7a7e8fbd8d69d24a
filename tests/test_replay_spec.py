"""Replay specs, scripts, scenarios and the late-row rules: pure Python, no Spark."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from workbench.replay import (
    Disorder, KeyColumn, PayloadColumn, Replay, Script, WindowCount, WindowShape, late_row_fates, late_totals,
    scenarios, source_from_json, window_spans,
)

REPO = Path(__file__).resolve().parents[1]
UTC = timezone.utc


def t(hm: str) -> pd.Timestamp:
    return pd.Timestamp(f"2024-01-01 {hm}", tz="UTC")


def test_replay_round_trips_through_json_with_every_generator():
    spec = Replay(rows_per_batch=7, num_partitions=2, start="2024-02-03 04:05:06", advance="30 seconds", seed=11,
                  keys=(KeyColumn("user", 50, skew=1.5), KeyColumn("region", 3, prefix="r")),
                  disorder=Disorder(0.25, "2 minutes", "9 minutes", "exponential", jitter=False),
                  payload=(PayloadColumn("amount", "float", 1, 9), PayloadColumn("kind", "choice", choices=("a", "b"))))
    again = Replay.from_json(spec.to_json())
    assert again == spec
    assert source_from_json(spec.to_json()) == spec
    assert again.start == datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC) and again.advance == timedelta(seconds=30)
    assert again.columns == ["value", "timestamp", "event_time", "user", "region", "amount", "kind"]
    assert spec.start_ms == round(spec.start.timestamp() * 1000) and spec.advance_ms == 30_000


@pytest.mark.parametrize("make, message", [
    (lambda: Replay(rows_per_batch=-5), "rows_per_batch must be a whole number >= 1, got -5"),
    (lambda: Replay(num_partitions=0), "num_partitions"),
    (lambda: Replay(start="yesterday-ish"), "cannot read event time 'yesterday-ish'"),
    (lambda: Replay(advance="soon"), "cannot read advance 'soon'"),
    (lambda: Disorder(distribution="poisson"), "unknown distribution 'poisson': use one of uniform, fixed, exponential"),
    (lambda: Disorder(share=1.5), "late share must be a number from 0 to 1"),
    (lambda: Disorder(min_delay="5 minutes", max_delay="1 minute"), "must not be below min_delay"),
    (lambda: KeyColumn("k", cardinality=0), "cardinality of key 'k'"),
    (lambda: PayloadColumn("p", "gaussian"), "unknown payload kind 'gaussian'"),
    (lambda: Replay(keys=(KeyColumn("event_time"),)), "column names must be distinct"),
    (lambda: WindowCount(window="0 minutes"), "window must be positive"),
])
def test_bad_replay_values_raise_one_clear_line(make, message):
    with pytest.raises((ValueError, TypeError)) as info:
        make()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_script_delivery_plan_pads_short_batches():
    script = Script([[("12:07", "dog", 1), ("12:08", "owl", 2)], [], [(datetime(2024, 1, 1, 12, 14), "dog", 3)]],
                    ["event_time", "word", "n"])
    assert script.rows_per_batch == 2
    assert script.scripted_rows(5) == [2, 0, 1, 0, 0]
    assert script.column_types == ("string", "bigint")
    # value -> (batch, row): batch b, row r is delivered with rate value b * width + r.
    assert [(v, b, w) for v, b, _, w, _ in script.table()] == [(0, 0, "dog"), (1, 0, "owl"), (4, 2, "dog")]
    assert script.table()[2][2] == datetime(2024, 1, 1, 12, 14, tzinfo=UTC)
    assert Script.from_json(script.to_json()) == script


@pytest.mark.parametrize("batches, columns, message", [
    ([[("12:07", "dog")], [("12:08",)]], ["event_time", "word"], "script batch 1, row 0 has 1 values"),
    ([[("half past", "dog")]], ["event_time", "word"], "cannot read event time 'half past'"),
    ([[("12:07", "dog")], [("12:08", 3)]], ["event_time", "word"], "mixes str and int"),
    ([], ["event_time"], "the script has no batches"),
    ([[("12:07", "dog")]], ["event_time", "value"], "not 'value'/'timestamp'"),
    ([[("12:07", "dog")]], ["event time", "word"], "bad script column name 'event time'"),
])
def test_bad_scripts_raise_before_spark(batches, columns, message):
    with pytest.raises((ValueError, TypeError)) as info:
        Script(batches, columns)
    assert message in str(info.value)


def test_sliding_window_spans():
    shape = WindowShape(timedelta(minutes=10), timedelta(minutes=5))
    spans = window_spans(t("12:04").to_pydatetime(), shape)
    assert [(s.strftime("%H:%M"), e.strftime("%H:%M")) for s, e in spans] == [("11:55", "12:05"), ("12:00", "12:10")]
    tumbling = window_spans(t("12:10").to_pydatetime(), WindowShape(timedelta(minutes=10)))
    assert [(s.strftime("%H:%M"), e.strftime("%H:%M")) for s, e in tumbling] == [("12:10", "12:20")]


def test_late_rules_for_windowed_plain_and_stateless_queries():
    inputs = pd.DataFrame({"batch": [0, 1, 1, 1, 1], "value": [0, 1, 2, 3, 4],
                           "event_time": [t("11:00"), t("12:04"), t("11:58"), t("11:50"), t("12:30")],
                           "word": list("abcde")})
    marks = [datetime(1970, 1, 1, tzinfo=UTC), t("12:04")]
    shape = WindowShape(timedelta(minutes=10), timedelta(minutes=5))
    windowed = late_row_fates(inputs, event_time="event_time", watermarks=marks, window=shape, batch_ids=[5, 6])
    assert list(windowed["value"]) == [1, 2, 3]  # 12:30 is ahead of the watermark; batch 0 only drops pre-1970
    assert list(windowed["fate"]) == ["counted", "partial", "dropped"]
    assert list(windowed["batch_id"]) == [6, 6, 6] and list(windowed["word"]) == ["b", "c", "d"]
    assert windowed.loc[1, "dropped_windows"] == [(t("11:50"), t("12:00"))]
    plain = late_row_fates(inputs, event_time="event_time", watermarks=marks)
    assert list(plain["fate"]) == ["dropped", "dropped", "dropped"]
    sessions = late_row_fates(inputs, event_time="event_time", watermarks=marks, session_gap=timedelta(minutes=5))
    assert list(sessions["fate"]) == ["counted", "dropped", "dropped"]  # 12:04 + 5 min > 12:04
    assert sessions.loc[0, "kept_windows"] == [(t("12:04"), t("12:09"))]
    stateless = late_row_fates(inputs, event_time="event_time", watermarks=marks, window=shape, stateful=False)
    assert set(stateless["fate"]) == {"counted"}
    none = late_row_fates(inputs, event_time="event_time", watermarks=[None, None], window=shape)
    assert none.empty and list(none.columns[:6]) == ["batch", "batch_id", "value", "event_time", "watermark", "fate"]
    totals = late_totals(windowed, spark_dropped_groups=3)
    assert (totals["late_rows"], totals["dropped"], totals["partial"], totals["counted"]) == (3, 1, 1, 1)
    assert totals["dropped_row_windows"] == 3 and "groups" in totals["note"]


def test_guide_scenario_states_what_spark_really_does():
    scenario = scenarios.guide_word_count()
    assert [len(b) for b in scenario.source.batches] == [2, 2, 4, 2]
    assert scenario.source.batches[3][1] == (datetime(2024, 1, 1, 12, 4, tzinfo=UTC), "donkey")
    assert scenario.query.window == timedelta(minutes=10) and scenario.query.slide == timedelta(minutes=5)
    assert "NOT ignored" in scenario.notes and "END" in scenario.notes
    assert scenarios.get("late_clicks").source.disorder.share == 0.2
    with pytest.raises(ValueError, match="unknown scenario 'nope': use one of guide_word_count"):
        scenarios.get("nope")


def test_public_replay_names_do_not_import_pyspark():
    code = (
        "import sys, workbench, workbench.replay\n"
        "spec = workbench.Replay(rows_per_batch=3); s = workbench.scenarios.guide_word_count()\n"
        "assert workbench.Script is type(s.source) is workbench.replay.Script\n"
        "assert callable(workbench.replay_stream) and 'replay_stream' in workbench.__all__\n"
        "assert 'pyspark' not in sys.modules, sorted(m for m in sys.modules if 'spark' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env={"PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("value, message", [
    ("12:07", "replay_stream needs a workbench.Replay or workbench.Script, got '12:07' (str)"),
    (pd.DataFrame({"event_time": range(100)}), "replay_stream needs a workbench.Replay or workbench.Script, got a DataFrame"),
    (scenarios.guide_word_count(), "got the scenario 'guide_word_count': pass its .source"),
])
def test_replay_stream_refuses_what_is_not_a_spec_before_spark_starts(value, message):
    import workbench

    with pytest.raises(TypeError) as raised:
        workbench.replay_stream(value)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_step_as_a_cells_last_line_shows_its_line():
    # IPython showed the dataclass's fields (datetime.datetime(1970, 1, 1, 0, 0, tzinfo=...), ...).
    from IPython.lib.pretty import pretty

    from workbench.spark.replay_view import StepReport

    report = StepReport((0,), datetime(1970, 1, 1, tzinfo=timezone.utc), datetime(2024, 1, 1, 11, 58), 2, 0, {}, 4, 0)
    assert pretty(report) == str(report) == ("batch 0: watermark none yet -> 2024-01-01 11:58:00, 2 rows in, "
                                             "0 rows out, late rows: none, state rows 4")
