"""MemoryStream and StreamTest on a standalone cluster and through a Spark Connect server.

Each Spark runs in its own processes, the suite's shared ``spark_processes``
(tests/conftest.py); a subprocess drives a StreamTest there with ``WORKBENCH_MASTER`` or
``SPARK_REMOTE`` set, as a user's test run would, and prints what it saw as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cluster_support import SPARK_PROCESSES_GROUP, REPO, user_env

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.xdist_group(SPARK_PROCESSES_GROUP)]

#: Runs in the subprocess: three adds, a restart between the second and the third, and a
#: windowed count whose state must survive the restart.
SCRIPT = r"""
import json, workbench
from pyspark.sql import functions as F
from workbench.testing import MemoryStream, StreamTest

spark = workbench.session()
events = MemoryStream(spark, "event_time timestamp, word string")
seen = {}
with StreamTest(events.df, output_mode="append") as plain:
    plain.add(events, [("2024-01-01 12:00", "a"), ("2024-01-01 12:01", "b")]).process()
    plain.add(events, [("2024-01-01 12:02", "c")]).process().restart()
    plain.add(events, [("2024-01-01 12:03", "d"), ("2024-01-01 12:04", "e")]).process()
    seen["rows"] = sorted(r[1] for r in plain.answer())
more = MemoryStream(spark, "event_time timestamp, word string")
counts = (more.df.withWatermark("event_time", "10 minutes")
          .groupBy(F.window("event_time", "10 minutes"), "word").count())
with StreamTest(counts) as test:
    test.add(more, [("2024-01-01 12:01", "dog"), ("2024-01-01 12:02", "dog")]).process().restart()
    test.add(more, [("2024-01-01 12:30", "owl")]).process()
    test.check_watermark("2024-01-01 12:20")
    test.check_answer([(("2024-01-01 12:00", "2024-01-01 12:10"), "dog", 2)])
    seen["checks"] = "passed"
print(json.dumps(seen))
"""


@pytest.mark.parametrize("kind", ["cluster", "connect"])
def test_every_row_is_read_once_across_a_restart(spark_processes, kind, tmp_path):
    if kind == "cluster":
        extra = {"WORKBENCH_MASTER": spark_processes.start_cluster()}
    else:
        extra = {"SPARK_REMOTE": spark_processes.start_connect()}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=900,
                          env=user_env(**extra, TMPDIR=str(tmp_path)), cwd=REPO)
    assert done.returncode == 0, f"the StreamTest on the {kind} failed:\n{done.stderr[-3000:]}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"rows": ["a", "b", "c", "d", "e"], "checks": "passed"}
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("workbench-")], \
        "a memory stream or StreamTest folder was left behind"


#: A MemoryStream read by Spark's memory sink through Connect: no Python worker but the source's.
MEMORY_SINK = r"""
import json, workbench
from workbench.testing import MemoryStream
spark = workbench.session()
events = MemoryStream(spark, "id int, name string")
events.add([(1, "a"), (2, "b")])
query = events.df.writeStream.format("memory").queryName("memory_stream_probe").start()
query.processAllAvailable()
events.add([(3, "c")])
query.processAllAvailable()
rows = sorted(tuple(r) for r in spark.sql("select * from memory_stream_probe").collect())
query.stop()
events.close()
print(json.dumps(rows))
"""


def test_a_memory_stream_through_connect_into_the_memory_sink(spark_processes, tmp_path):
    done = subprocess.run([sys.executable, "-c", MEMORY_SINK], capture_output=True, text=True, timeout=900,
                          env=user_env(SPARK_REMOTE=spark_processes.start_connect(), TMPDIR=str(tmp_path)), cwd=REPO)
    assert done.returncode == 0, f"the memory stream through Connect failed:\n{done.stderr[-3000:]}"
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[1, "a"], [2, "b"], [3, "c"]]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("workbench-memory-stream")], \
        "the memory stream's folder was left behind"
