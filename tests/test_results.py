"""A stream's memory table read on real Spark: result() and preview() agree on every column."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark

NOON_UTC_MS = 1_704_110_400_000  # 2024-01-01 12:00 UTC
NOON_UTC = pd.Timestamp("2024-01-01 12:00", tz="UTC")


@pytest.fixture
def local_zone():
    """Set the Python process's time zone (``TZ``) for one test, then put it back."""
    before = os.environ.get("TZ")

    def set_zone(zone: str) -> None:
        os.environ["TZ"] = zone
        time.tzset()

    yield set_zone
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def _typed(df):
    """Columns of the types whose pandas form differs between collecting ways."""
    odd = F.col("value") % 2 == 1
    return df.select(
        "timestamp", "value",
        F.col("timestamp").cast("timestamp_ntz").alias("wall"),
        F.col("value").cast("int").alias("small"),
        F.when(odd, F.col("value").cast("int")).alias("gaps"),
        (F.col("value") / 2).alias("half"),
        odd.alias("odd"),
        F.when(odd, F.col("timestamp")).alias("some_times"),
    )


def _finished(env, df, name, **options):
    handle = env.start(df, name, trigger="available-now", **options)
    assert handle.wait_finished(60), f"{name} did not finish"
    return handle


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_preview_has_results_columns_dtypes_and_times(env, rate_stream, local_zone, mode):
    local_zone("America/New_York")  # Python's datetimes would come in New York time
    df = _typed(rate_stream(rows_per_batch=4, start_ms=NOON_UTC_MS))
    if mode == "complete":
        df = df.groupBy("value", "timestamp", "wall").agg(F.count("*").alias("rows"), F.max("gaps").alias("gaps"))
    handle = _finished(env, df, f"typed_{mode}", output_mode=mode)
    result = handle.result()
    preview, total = handle.preview(3)
    assert total == len(result) > 3
    expected = result.tail(3) if mode == "append" else result.head(3)
    pd.testing.assert_frame_equal(preview, expected.reset_index(drop=True))
    assert str(preview["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert preview["timestamp"].min() >= NOON_UTC
    assert str(preview["wall"].dtype) == "datetime64[ns]"


def test_times_are_instants_whatever_the_session_time_zone(env, spark, rate_stream):
    try:
        spark.conf.set("spark.sql.session.timeZone", "Europe/Paris")
        df = rate_stream(rows_per_batch=2, start_ms=NOON_UTC_MS).select(
            "timestamp", "value", F.lit("2024-01-01 12:00").cast("timestamp_ntz").alias("wall"))
        handle = _finished(env, df, "paris")
        result = handle.result()
        preview, _ = handle.preview(2)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert result["timestamp"].iloc[0] == NOON_UTC
    assert str(result["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert list(result["wall"]) == [pd.Timestamp("2024-01-01 12:00")] * len(result)  # no zone, as written
    pd.testing.assert_frame_equal(preview, result.tail(2).reset_index(drop=True))


def test_flattened_names_are_unique_and_any_character_works(env, rate_stream):
    df = rate_stream(rows_per_batch=3).select(
        F.struct((F.col("value") + 100).alias("x")).alias("a"),
        F.col("value").alias("a_x"),
        F.col("value").alias("a`b"),
    )
    handle = _finished(env, df, "names")
    result = handle.result()
    assert list(result.columns) == ["a.x", "a_x", "a`b"]
    assert list(result["a.x"]) == [100, 101, 102] and list(result["a_x"]) == [0, 1, 2]
    preview, _ = handle.preview(2)
    assert list(preview.columns) == ["a.x", "a_x", "a`b"]
    assert preview.values.tolist() == [[101, 1, 1], [102, 2, 2]]


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_a_preview_with_a_known_total_does_not_count_the_table(env, spark, rate_stream, mode):
    df = rate_stream(rows_per_batch=50)
    if mode == "complete":
        df = df.groupBy((F.col("value") % 20).alias("key")).count()
    handle = _finished(env, df, f"known_{mode}", output_mode=mode)
    reader, tracker = handle._reader, spark.sparkContext.statusTracker()
    expected_rows = handle.result().shape[0]
    group = f"preview-{mode}"
    spark.sparkContext.setJobGroup(group, "a preview with a known total")
    try:
        preview, total = reader.preview(5, replaced=False, total=expected_rows)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert total == expected_rows and len(preview) == 5
    stages = [tracker.getStageInfo(s) for job in tracker.getJobIdsForGroup(group)
              for s in tracker.getJobInfo(job).stageIds]
    names = [stage.name for stage in stages if stage is not None]
    assert not any(name.startswith("count") for name in names), names
    counted, counted_total = reader.preview(5, replaced=False)  # unknown total: Spark counts
    assert counted_total == expected_rows
    pd.testing.assert_frame_equal(counted, preview)
