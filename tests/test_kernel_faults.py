"""Kernel restart and shutdown with several streams, live monitors and a replay panel running.

Real kernels (jupyter_client). Everything is checked from outside the kernel's process: the
kernel exits by itself (exit code 0, not killed), its Spark JVM and every Python worker
that the JVM started end with it, and the workbench's private temp folder is gone. A
process that has ended has no thread left either.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest

from tests.test_magics_kernel import alive, kernel  # noqa: F401  (kernel: the real-kernel fixture)

pytestmark = pytest.mark.spark

BUSY = """\
%load_ext workbench
import json, os, time, workbench
from pyspark.sql import functions as F
from workbench.replay.spec import Replay, WindowCount
spark = workbench.session()
rate = spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 5).load()
doubled = rate.select(F.udf(lambda v: v * 2, 'long')('value').alias('doubled'))  # Python workers
"""

STREAMS = """\
%%stream doubled --trigger 0.3 seconds
doubled
"""

MORE = """\
%%stream per_key --mode complete --trigger 0.3 seconds
rate.groupBy((rate.value % 3).alias('k')).count()
"""

PANEL = """\
panel = workbench.replay_panel(Replay(rows_per_batch=5), WindowCount(window='5 minutes', watermark='10 minutes'),
                               name='replayed', output_mode='update')
display(panel)
panel.play(2.0)
deadline = time.monotonic() + 120
while (min(h.progress.total for h in workbench.spark.current_env().handles()) < 2
       or panel.run.progress.total < 2) and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({'temp_dir': str(workbench.spark.current_env().temp_dir),
                  'batches': {h.name: h.progress.total for h in workbench.spark.current_env().handles()},
                  'replayed': panel.run.progress.total}))
"""


def start_everything(kernel) -> dict:
    kernel.run(BUSY, timeout=240)
    kernel.run(STREAMS, timeout=120)
    kernel.run(MORE, timeout=120)
    facts = json.loads(kernel.stdout_of(kernel.run(PANEL, timeout=240)).strip().splitlines()[-1])
    assert min(facts["batches"].values()) >= 2 and facts["replayed"] >= 2, facts
    return facts


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def wait_gone(pids: list[int], timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [pid for pid in pids if alive(pid)]


def test_restart_and_shutdown_end_spark_workers_and_temp_folder(kernel):
    facts = start_everything(kernel)
    process = kernel.manager.provisioner.process
    family = descendants(process.pid)
    names = sorted({p.name() for p in family})
    assert "java" in names and any(n.startswith("python") for n in names), names  # the JVM and UDF workers

    # A restart request, as Jupyter sends it; the manager then starts the new kernel.
    kernel.client.shutdown(restart=True)
    assert exit_code(process) == 0, "the kernel did not exit by itself soon after the restart request"
    assert wait_gone([p.pid for p in family]) == [], "Spark or a Python worker outlived the restarted kernel"
    assert not Path(facts["temp_dir"]).exists(), "the restart left the workbench's temp folder behind"
    kernel.manager.restart_kernel(now=True)

    # The restarted kernel works, and a shutdown with everything running ends it all the same.
    kernel.client.wait_for_ready(timeout=60)
    facts = start_everything(kernel)
    process = kernel.manager.provisioner.process
    family = descendants(process.pid)
    kernel.client.shutdown()
    assert exit_code(process) == 0, "the kernel did not exit by itself soon after a shutdown request"
    assert wait_gone([p.pid for p in family]) == [], "Spark or a Python worker outlived the kernel"
    assert not Path(facts["temp_dir"]).exists()


def exit_code(process, timeout: float = 20) -> int | None:
    # Jupyter servers wait 5 s (shutdown_wait_time) before killing a kernel; on this shared
    # 2-core machine a shutdown with three streams and a panel took ~7 s (see the report in
    # bench/README.md), so the test allows more and the figure is measured, not asserted.
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return process.poll()
