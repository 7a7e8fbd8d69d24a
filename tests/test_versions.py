"""Where the pyspark releases the workbench accepts (4.0 to 4.3) differ, on real Spark.

Each test holds on every pyspark of the version matrix (``noxfile.py`` runs this file in
every smoke session); what one release lacks is handled by the workbench, not left to the
user to meet as a JVM error.
"""

from __future__ import annotations

import pandas as pd
import pyspark
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


def _grouped_data(module: str) -> object:
    """A stand-in whose type lives in ``module``, as Spark Connect's and classic pyspark's GroupedData do."""
    return type("GroupedData", (), {"__module__": module})()


def test_the_connect_gap_line_names_the_release_and_only_over_connect():
    from workbench.spark.version_gaps import missing_feature

    def error(owner: object) -> AttributeError:
        return AttributeError("'GroupedData' object has no attribute 'transformWithStateInPandas'",
                              name="transformWithStateInPandas", obj=owner)

    over_connect = error(_grouped_data("pyspark.sql.connect.group"))
    assert missing_feature(over_connect, "4.0.5") == (
        "transformWithStateInPandas over Spark Connect needs pyspark 4.1 or later; this is pyspark 4.0.5")
    assert missing_feature(over_connect, "4.1.4") is None
    # Classic pyspark 4.0 has transformWithStateInPandas: a missing one there is the user's own error.
    assert missing_feature(error(_grouped_data("pyspark.sql.group")), "4.0.5") is None


def test_spark_connects_grouped_data_has_transform_with_state_in_pandas_or_the_line_says_which_release():
    # The real Spark Connect client class of this pyspark (no server needed to look up a method).
    from pyspark.sql.connect.group import GroupedData

    from workbench.spark.version_gaps import missing_feature

    version = pyspark.__version__
    try:
        getattr(GroupedData.__new__(GroupedData), "transformWithStateInPandas")
    except AttributeError as exc:
        assert tuple(int(part) for part in version.split(".")[:2]) < (4, 1), exc
        assert missing_feature(exc, version) == (
            f"transformWithStateInPandas over Spark Connect needs pyspark 4.1 or later; this is pyspark {version}")
    else:
        assert tuple(int(part) for part in version.split(".")[:2]) >= (4, 1), version


def test_embedded_checkpoints_are_written_through_hadoops_file_system_api(env, spark):
    # Spark's default manager (Hadoop's FileContext) starts readlink processes for every
    # rename on a local disk; the embedded session names the FileSystem-based manager of the
    # pyspark in use (Spark 4.1 moved it to another package).
    from workbench.spark.session import CHECKPOINT_MANAGER, local_checkpoint_manager

    name = spark.conf.get(CHECKPOINT_MANAGER)
    assert name == local_checkpoint_manager() and name.endswith(".FileSystemBasedCheckpointFileManager")
    # A stateful query writes its offsets, commits and state with it (a class the JVM lacks
    # would fail the query's start), and a restart reads them back: the next run goes on
    # after the last committed batch, with the state carried over.
    counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()
              .groupBy((F.col("value") % 2).alias("k")).count())
    checkpoint = env.temp_dir / "restarted"
    first = env.start(counts, "checkpointed", trigger="available-now", output_mode="complete",
                      checkpoint=str(checkpoint))
    first.wait_finished(120)
    second = env.start(counts, "checkpointed_again", trigger="available-now", output_mode="complete",
                       checkpoint=str(checkpoint))
    second.wait_finished(120)
    assert first.error is None and second.error is None, (first.error_details, second.error_details)
    assert second.progress.records()[0].batch_id == first.progress.last_batch_id + 1
    assert sorted(map(tuple, second.result()[["k", "count"]].values.tolist())) == [(0, 2), (1, 2)]


def test_the_embedded_jvm_defers_its_optimising_compiler(spark):
    # The session's JVM was started with the workbench's JIT settings (read back from the JVM
    # itself) and the JVM took them: its own flag values are the workbench's, not Java's defaults.
    from workbench.spark.session import LOCAL_JIT_OPTIONS

    jvm = spark.sparkContext._jvm
    arguments = set(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    wanted = LOCAL_JIT_OPTIONS.split()
    assert set(wanted) <= arguments, sorted(arguments)
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    for option in wanted[1:]:
        name, value = option.removeprefix("-XX:").split("=")
        assert bean.getVMOption(name).getValue() == value, name
