"""A memory-sink table grows in the driver: the handle counts its rows and warns in time.

Spark's memory sink keeps every row it is given in the driver's memory and offers no way to
trim it, so the workbench counts the table's rows from the progress history (no Spark job)
and warns once, with the fix, past ``WORKBENCH_TABLE_WARN_ROWS`` rows.
"""

from __future__ import annotations

import logging

import pytest

from tests.helpers import wait_for

pytestmark = pytest.mark.spark


def test_memory_table_rows_are_counted_and_a_big_table_warns(env, rate_stream, monkeypatch, caplog):
    monkeypatch.setenv("WORKBENCH_TABLE_WARN_ROWS", "120")
    caplog.set_level(logging.WARNING, logger="workbench.spark.memory_table")
    df = rate_stream(rows_per_batch=50)
    growing = env.start(df, "growing", trigger="0.2 seconds")
    counts = env.start(df.groupBy((df.value % 4).alias("k")).count(), "per_key", output_mode="complete",
                       trigger="0.2 seconds")
    wait_for(lambda: growing.progress.total >= 4 and counts.progress.total >= 4, message="4 batches each")
    growing.stop()
    counts.stop()

    # Append mode: the table holds every batch's rows; complete mode: only the last result.
    batches = growing.progress.total
    assert growing.table_rows == len(growing.result())
    if growing.table_rows != 50 * batches:
        # The stop cut the next batch after its sink write: its rows count too, and the
        # handle's note names the batch.
        assert growing.table_rows == 50 * (batches + 1), (growing.table_rows, batches)
        assert growing.table_note and f"batch {batches}" in growing.table_note, growing.table_note
    assert counts.table_rows == len(counts.result()) == 4
    assert growing.table_warning == (
        "stream 'growing' keeps 150 rows in its memory table, in the Spark driver's memory, and the table grows "
        "with every batch: stop the stream when done, or use sink='console' for a long run "
        "(WORKBENCH_TABLE_WARN_ROWS sets this limit)"
    )
    assert counts.table_warning is None
    warnings = [r.getMessage() for r in caplog.records if "memory table" in r.getMessage()]
    assert warnings == [growing.table_warning]  # once, not at every batch
    table = env.streams().set_index("name")
    assert table.loc["growing", "table_rows"] == growing.table_rows and table.loc["per_key", "table_rows"] == 4
