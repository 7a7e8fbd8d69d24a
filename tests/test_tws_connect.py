"""transformWithState through a Spark Connect server: the processor runs, its state and timers read back.

The server is a real ``SparkConnectServer`` process started with Spark's defaults (the
HDFS-backed state store), as a user's server may be (``tests.cluster_support``); the
workbench asks for RocksDB in the session's settings. A subprocess drives the workbench
with ``SPARK_REMOTE`` set, as a user's notebook would, and prints what it read as JSON.
Spark's state data source is a batch read of the checkpoint, which the server reaches
here (same machine); on a remote server the checkpoint must be where the server reads it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pyspark
import pytest

from tests.cluster_support import SPARK_PROCESSES_GROUP, REPO, user_env

pytestmark = [
    pytest.mark.cluster, pytest.mark.spark, pytest.mark.xdist_group(SPARK_PROCESSES_GROUP),
    # pyspark 4.0's Connect client has no transformWithStateInPandas (workbench.spark.version_gaps).
    pytest.mark.skipif(tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 1),
                       reason=f"pyspark {pyspark.__version__}'s Spark Connect has no transformWithStateInPandas"),
]

#: Runs in the subprocess: per key (value // 8) a count and an event-time timer at the
#: last event + 2 minutes, which emits the count and clears it.
SCRIPT = r"""
import json, time, workbench
import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

class Count(StatefulProcessor):
    def init(self, handle):
        self.handle = handle
        self.count = handle.getValueState("count", "count long")

    def handleInputRows(self, key, rows, timerValues):
        frames = list(rows)
        n = (self.count.get()[0] if self.count.exists() else 0) + sum(len(f) for f in frames)
        self.count.update((n,))
        last = max(f["timestamp"].max() for f in frames)
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        self.handle.registerTimer(int(last.timestamp() * 1000) + 120_000)
        return iter([pd.DataFrame({"k": [key[0]], "count": [n], "fired": [False]})])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        n = self.count.get()[0]
        self.count.clear()
        return iter([pd.DataFrame({"k": [key[0]], "count": [n], "fired": [True]})])

spark = workbench.session()
events = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 4).option("numPartitions", 1)
          .option("startTimestamp", 1704110400000).option("advanceMillisPerBatch", 60000).load()
          .withWatermark("timestamp", "1 minute").withColumn("k", (F.col("value") / 8).cast("long")))
query = events.groupBy("k").transformWithStateInPandas(Count(), "k long, count long, fired boolean", "Update",
                                                        "EventTime")
handle = workbench.start(query, "tws_connect", trigger="200 ms", output_mode="update")
deadline = time.time() + 300
while handle.status == "active" and time.time() < deadline and not handle.result()["fired"].any():
    time.sleep(0.2)
handle.stop()
try:
    handle.state(variable="cnt")
    bad = None
except ValueError as exc:
    bad = str(exc)
history = handle.history()
print(json.dumps({
    "kind": type(spark).__module__, "error": handle.error, "last": handle.progress.last_batch_id,
    "store": spark.conf.get("spark.sql.streaming.stateStore.providerClass"),
    "variables": handle.state_summary()["variables"].tolist(),
    "count": handle.state(variable="count")[["k", "count"]].values.tolist(),
    "timers": handle.timers()[["k", "expires_at", "time_mode", "ahead_of_watermark"]].astype(str).values.tolist(),
    "fired": handle.result().query("fired")["k"].tolist(),
    "registered": int(history["timers_registered"].sum()), "bad": bad,
}))
"""


def test_a_processor_on_spark_connect_state_and_timers_read_back(spark_processes, tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=900,
                          env=user_env(SPARK_REMOTE=spark_processes.start_connect(), TMPDIR=str(tmp_path)), cwd=REPO)
    start = done.stderr.rfind("Traceback (most recent call last)")
    assert done.returncode == 0, done.stderr[start:][:3000] if start >= 0 else done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["kind"] == "pyspark.sql.connect.session" and seen["error"] is None
    assert seen["store"].endswith("RocksDBStateStoreProvider")  # the server's default store cannot run it
    assert seen["variables"] == ["count (value); timers: event time"]
    # Key k has input in batches 2k and 2k+1 (4 rows each); its timer is due 2 minutes after its
    # last event. A key whose timer fired holds nothing; every other key holds a count and a timer.
    last, start = seen["last"], pd.Timestamp("2024-01-01 12:00", tz="UTC")
    counted = dict(map(tuple, seen["count"]))
    # State is read at the last committed batch. A stop can cut the next batch after its fired
    # row reached the table but before Spark committed it: that key still holds its count.
    fired = set(seen["fired"]) - set(counted)
    assert len(set(seen["fired"]) - fired) <= 1, seen
    held = {k: 4 * (min(last, 2 * k + 1) - 2 * k + 1) for k in range(last // 2 + 1) if k not in fired}
    assert seen["fired"] and held and counted == held
    due = {k: start + pd.Timedelta(minutes=min(last, 2 * k + 1) + 2) for k in held}
    assert [(int(k), pd.Timestamp(t)) for k, t, _, _ in seen["timers"]] == sorted(due.items())
    assert {mode for _, _, mode, _ in seen["timers"]} == {"event time"}
    assert all(pd.Timedelta(ahead) > pd.Timedelta(0) for _, _, _, ahead in seen["timers"])
    assert seen["registered"] >= len(fired) + len(held)
    assert seen["bad"] == "unknown state variable 'cnt' in stream 'tws_connect': use one of 'count'"
