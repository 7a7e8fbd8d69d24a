"""Pointing the workbench elsewhere: ``WORKBENCH_MASTER`` and ``SPARK_REMOTE`` (Spark Connect).

Each case runs in its own Python process, since one process holds one kind of session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, time
    import workbench
    spark = workbench.session()
    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    # A trigger interval leaves time between batches; a batch the stop still cuts after its
    # sink write is named by handle.cut_batch.
    handle = workbench.start(df, "elsewhere", trigger="0.5 seconds")
    deadline = time.time() + 60
    while handle.progress.total < 3 and time.time() < deadline:
        time.sleep(0.2)
    # Sockets listening outside loopback in this process or its JVMs (a Connect server too).
    import ipaddress, os, psutil
    def exposed(address):
        ip = ipaddress.ip_address(address)
        return not (getattr(ip, "ipv4_mapped", None) or ip).is_loopback
    me = psutil.Process(os.getpid())
    from tests.helpers import jvms_of
    procs = [me, *(psutil.Process(pid) for pid in jvms_of(me.pid))]
    listening = [(p.pid, c.laddr.ip, c.laddr.port) for p in procs for c in p.net_connections(kind="tcp")
                 if c.status == psutil.CONN_LISTEN]
    handle.stop()
    history = handle.history()
    # A stop inside a running batch of a complete-mode stream, its batch held by a Python UDF
    # (which runs in the server's Python workers under Spark Connect).
    from pyspark.sql import functions as F
    def slow(v):
        import time
        time.sleep(0.6)
        return v
    held = workbench.start(df.select(F.udf(slow, "long")("value").alias("v")).groupBy((F.col("v") % 2).alias("k"))
                           .count(), "held", output_mode="complete")
    deadline = time.time() + 120
    while held.progress.total < 2 and time.time() < deadline:
        time.sleep(0.1)
    while not held.query.status["isTriggerActive"] and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # inside a batch (each takes over a second: 5 rows of 0.6 s on 2 cores)
    held.stop(grace=0)
    print(json.dumps({
        "held_batches": held.history()["batch_id"].tolist(), "held_note": held.table_note,
        "held_counted": int(held.result()["count"].sum()), "held_status": held.status,
        "exposed": [s for s in listening if exposed(s[1])], "listening": len(listening),
        "kind": type(spark).__module__,
        "master": spark.conf.get("spark.master", None),
        "partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "batches": history["batch_id"].tolist(),
        "rows": history["num_input_rows"].tolist(),
        "result": len(handle.result()),
        "status": handle.status,
        "table_rows": handle.table_rows,
        "cut": [handle.cut_batch.batch_id, handle.cut_batch.rows] if handle.cut_batch else None,
    }))
    """
)


def run(extra_env: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER")}
    env.update(extra_env, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=240, env=env)
    # Spark's server log fills stderr: show the script's own traceback when there is one.
    start = done.stderr.rfind("Traceback (most recent call last)")
    assert done.returncode == 0, done.stderr[start:][:3000] if start >= 0 else done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_table_matches_history(report: dict) -> None:
    """The table's rows are the history's, plus those of a batch the stop cut after its sink write."""
    cut_rows = 0
    if report["cut"] is not None:
        cut_id, cut_rows = report["cut"]
        assert cut_id == report["batches"][-1] + 1 and cut_rows == 5, report
    assert report["result"] == report["table_rows"] == sum(report["rows"]) + cut_rows, report


def test_workbench_master_chooses_the_master():
    report = run({"WORKBENCH_MASTER": "local[1]"})
    assert report["master"] == "local[1]" and report["partitions"] == "2"
    assert report["batches"][:3] == [0, 1, 2] and report["status"] == "stopped"
    assert_table_matches_history(report)
    # A classic session reads the memory sink itself: no doubt, only a named cut batch if any.
    batches = report["held_batches"]
    assert report["held_status"] == "stopped" and len(batches) >= 2, report
    if report["held_note"] is None:
        assert report["held_counted"] == 5 * len(batches), report
    else:
        assert report["held_note"].startswith(f"The stop cut batch {len(batches)} after its sink write"), report
    assert report["exposed"] == [] and report["listening"] >= 3


@pytest.mark.xdist_group("connect-port")  # a local Spark Connect server on port 15002
def test_spark_connect_streams_and_history(tmp_path):
    # pyspark starts a local Spark Connect server for "local[...]" remotes.
    report = run({"SPARK_REMOTE": "local[2]"})
    assert report["kind"].startswith("pyspark.sql.connect")
    assert report["batches"][:3] == [0, 1, 2] and set(report["rows"]) == {5}
    assert_table_matches_history(report)
    assert report["status"] == "stopped"
    assert report["exposed"] == [] and report["listening"] >= 2  # the Connect server's gRPC port among them
    # The Python UDF ran in the server's workers (this environment's interpreter), and the
    # interrupted batch, whose sink write the client cannot see, is not passed over in silence.
    batches = report["held_batches"]
    assert report["held_status"] == "stopped" and len(batches) >= 2, report
    assert report["held_counted"] in (5 * len(batches), 5 * (len(batches) + 1)), report
    assert report["held_note"] == (
        f"The stop interrupted batch {len(batches)}, which Spark never reported; on Spark Connect the workbench "
        f"cannot tell whether it wrote the memory table first, so the table may hold batch {len(batches)}'s result "
        f"while the history ends at batch {len(batches) - 1}."
    ), report
