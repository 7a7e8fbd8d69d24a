"""How an embedded Spark writes its checkpoints: Hadoop's FileContext API against its FileSystem API.

The workbench's local sessions write checkpoints with Spark's ``FileSystem``-based checkpoint
file manager (``workbench.spark.session.local_checkpoint_manager``); Spark's default goes
through Hadoop's ``FileContext`` API, which on a local disk without Hadoop's native library
starts ``readlink`` processes from the JVM for every rename. This runs the same stateful
stream (a 10-second windowed count with a watermark over ``rate-micro-batch``, 100 rows a
batch, batches back to back) in a fresh process per arm, the arms' order rotating from round
to round, and prints per batch (batches 5 on, medians over the rounds): the trigger's whole
time, its ``walCommit``, ``commitOffsets`` and ``addBatch`` parts, the processes and threads
the machine started (``forks``: ``/proc/stat``'s ``processes``), and the machine's CPU time.

    .venv/bin/python bench/bench_checkpoint_files.py [--rounds 3] [--batches 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: One arm, in a process of its own: argv[1] is the manager class ("" for the workbench's).
ARM = r'''
import json, sys, time
from pathlib import Path
sys.path.insert(0, "bench")
import workbench
from machine_cpu import busy_seconds
from pyspark.sql import functions as F
from workbench.spark.session import CHECKPOINT_MANAGER

def machine():
    forks = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("processes"))
    return busy_seconds(), int(forks.split()[1])

manager, batches = sys.argv[1], int(sys.argv[2])
spark = workbench.session(**({CHECKPOINT_MANAGER: manager} if manager else {}))
used = spark.conf.get(CHECKPOINT_MANAGER)
counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 100)
          .option("advanceMillisPerBatch", 1000).load()
          .withWatermark("timestamp", "10 seconds").groupBy(F.window("timestamp", "10 seconds")).count())
query = counts.writeStream.format("memory").queryName("bench").outputMode("append").trigger(processingTime="0 seconds").start()
try:
    while query.lastProgress is None or query.lastProgress["batchId"] < 4:
        time.sleep(0.05)
    cpu0, forks0 = machine()
    start = query.lastProgress["batchId"]
    while query.lastProgress["batchId"] < start + batches:
        time.sleep(0.05)
    cpu1, forks1 = machine()
    done = [p for p in query.recentProgress if start < p["batchId"] <= start + batches]
finally:
    query.stop()
def median(key):
    values = [p["durationMs"].get(key, 0) for p in done if p.get("numInputRows")]
    return sorted(values)[len(values) // 2]
print(json.dumps({"manager": used, "batches": len(done),
                  "trigger": median("triggerExecution"), "wal": median("walCommit"),
                  "commit": median("commitOffsets"), "add": median("addBatch"),
                  "forks": (forks1 - forks0) / len(done), "cpu": (cpu1 - cpu0) / len(done) * 1000}))
'''


def run(manager: str, batches: int) -> dict:
    done = subprocess.run([sys.executable, "-c", ARM, manager, str(batches)], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "WORKBENCH_WARM_UP": "0"}, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the arm {manager or 'workbench'} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=40)
    options = parser.parse_args()
    from stats import rotated
    from workbench.spark.session import local_checkpoint_manager

    ours = local_checkpoint_manager()
    if ours is None:
        raise SystemExit("this pyspark has no FileSystem-based checkpoint file manager to compare")
    # Spark's default on a local disk lives next to it, in whichever package this Spark has.
    default = ours.replace("FileSystemBased", "FileContextBased")
    arms = {"FileContext (Spark's default)": default, "FileSystem (the workbench's)": ""}
    figures: dict[str, list[dict]] = {name: [] for name in arms}
    for round_index in range(options.rounds):
        for name in rotated(list(arms), round_index):
            figures[name].append(run(arms[name], options.batches))
    print(f"a windowed count over rate-micro-batch, {options.batches} batches back to back, "
          f"{options.rounds} fresh processes per arm, the order rotating; per batch, medians:")
    columns = [("trigger", "trigger ms"), ("wal", "walCommit ms"), ("commit", "commitOffsets ms"),
               ("add", "addBatch ms"), ("forks", "forks"), ("cpu", "machine CPU ms")]
    print(f"{'':<30}" + "".join(f"{title:>18}" for _, title in columns))
    for name, runs in figures.items():
        print(f"{name:<30}" + "".join(f"{statistics.median(r[key] for r in runs):>18.1f}" for key, _ in columns))
    print("managers used:", "; ".join(sorted({r["manager"] for runs in figures.values() for r in runs})))


if __name__ == "__main__":
    main()
