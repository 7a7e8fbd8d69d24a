"""Where the pyspark releases the workbench accepts (4.0 to 4.3) differ, on real Spark.

Each test holds on every pyspark of the version matrix (``noxfile.py`` runs this file in
every smoke session); what one release lacks is handled by the workbench, not left to the
user to meet as a JVM error.
"""

from __future__ import annotations

import pandas as pd
import pytest
from pyspark.sql import functions as F

from workbench.replay import Disorder, KeyColumn, Replay
from workbench.spark.replay_run import ReplayRun

pytestmark = pytest.mark.spark


def test_a_replay_whose_query_has_a_void_column_steps(env):
    # A replay stores each batch as parquet; pyspark 4.0's parquet writer refuses a VOID
    # column (a bare F.lit(None)), 4.1 and later store it. Either way the user sees nulls.
    spec = Replay(rows_per_batch=4, start="2024-01-01 12:00", advance="1 minute", seed=3,
                  keys=(KeyColumn("key", 3),), disorder=Disorder(0.0, "1 minute", "1 minute"))
    run = ReplayRun(spec, lambda df: df.withColumn("note", F.lit(None)), name="void_column", env=env)
    try:
        run.step()
        run.step()
        results = run.results()
        assert len(results) == 8 and results["note"].isna().all(), results
        assert set(results["batch_id"]) == {0, 1}
        assert "note" in run.result_columns
    finally:
        run.close()


def test_flat_results_keep_a_void_column_as_nulls(spark):
    from workbench.spark.frames import to_flat_pandas

    frame = to_flat_pandas(spark.range(2).select("id", F.lit(None).alias("note"),
                                                 F.struct(F.lit(None).alias("why")).alias("s")))
    assert list(frame.columns) == ["id", "note", "s_why"]
    assert frame[["note", "s_why"]].isna().all().all()
    assert isinstance(frame, pd.DataFrame)
