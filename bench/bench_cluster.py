"""Benchmark: the same stateful query on local[2], on a standalone cluster and through Spark Connect.

Run from the repository root::

    .venv/bin/python bench/bench_cluster.py [--seconds 20] [--warmup 5] [--rounds 2]

Starts a standalone master with one worker (2 cores, 2 GB) and a Spark Connect server
(on ``local[2]``) from the pip package, all on 127.0.0.1, exactly as the cluster tests do
(``tests/cluster_support.py``), then runs the monitor benchmark's stateful query (5 s
windows, 10 s watermark, rate-micro-batch with 100 rows per batch, 2 partitions) in a
fresh Python process per run, since one process holds one kind of session: embedded
``local[2]``, ``WORKBENCH_MASTER=spark://...`` and ``SPARK_REMOTE=sc://...``, in rotating
order per round. Every arm gets the two settings a workbench session gives an embedded
Spark alone, so that the arms differ in where Spark runs: its JIT options
(``LOCAL_JIT_OPTIONS``, through ``SPARK_SUBMIT_OPTS``: every driver, the Connect server and,
as ``spark.executor.extraJavaOptions``, the cluster's executors) and its checkpoint file
manager (``local_checkpoint_manager()``, a session setting). What still differs is
printed. Prints, side by side:

- batches/s and rows/s over ``--seconds`` after ``--warmup`` (counted from the progress
  history, by batch start time), and the median ``triggerExecution`` of all those batches
  (runs whose window held no batch are counted and reported);
- the monitor's freshness: from a batch's end (progress ``timestamp`` + ``batchDuration``)
  to its record being in the stream's progress history, which is what the monitor draws
  from (median, p95, max), with the default 0.5 s poll interval.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_monitor import stateful_query  # noqa: E402  (the monitor benchmark's query)
from stats import p95, rotated  # noqa: E402

ARMS = ("local[2]", "cluster", "connect")
#: What still differs between the arms once they share the embedded Spark's settings.
STILL_DIFFERENT = ("still different: the cluster's master and worker daemons run with the test suite's "
                   "JVM options (tests/cluster_support.py; they schedule, the executor runs the tasks)")


def like_local_submit_options() -> str:
    """``SPARK_SUBMIT_OPTS`` with the embedded Spark's JIT options for every JVM the arms start.

    The launcher gives them to each driver's JVM and to the Connect server's (which runs the
    query on ``local[2]``); as a ``spark.*`` system property, which the driver's SparkConf
    reads, they also reach the executors the cluster's worker starts.
    """
    from workbench.spark.session import LOCAL_JIT_OPTIONS

    ours = f"{LOCAL_JIT_OPTIONS} '-Dspark.executor.extraJavaOptions={LOCAL_JIT_OPTIONS}'"
    return " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS", "").strip(), ours]))


def one_run(seconds: float, warmup: float) -> dict[str, object]:
    """In this process: run the query on whatever Spark the environment names; measure it."""
    import pandas as pd

    import workbench
    from workbench.spark import current_env
    from workbench.spark.session import CHECKPOINT_MANAGER, local_checkpoint_manager

    env = current_env()
    # The embedded Spark's checkpoint file manager on every arm (a Connect session takes it too).
    manager = local_checkpoint_manager()
    spark = workbench.session(**({CHECKPOINT_MANAGER: manager} if manager else {}))
    handle = env.start(stateful_query(spark), "bench")
    arrived: dict[int, float] = {}
    # Runs on the poller's thread as each record lands in the history.
    unsubscribe = handle.progress.subscribe(
        lambda records: arrived.update({r.batch_id: time.time() for r in records if r.batch_id not in arrived}))
    deadline = time.monotonic() + 180
    while handle.progress.total < 1 and time.monotonic() < deadline:
        time.sleep(0.1)  # batch 0 of a fresh query takes seconds
    time.sleep(warmup)
    start = pd.Timestamp.now(tz="UTC")
    time.sleep(seconds)
    end = pd.Timestamp.now(tz="UTC")
    handle.stop()
    unsubscribe()
    history = handle.history()
    # Batches that started inside the measured seconds (progress timestamps are batch starts).
    inside = history[(history["timestamp"] >= start) & (history["timestamp"] < end)]
    delays = [
        arrived[row.batch_id] - (row.timestamp.timestamp() + row.batch_duration_ms / 1000)
        for row in inside.itertuples()
        if row.batch_id in arrived and not pd.isna(row.batch_duration_ms)
    ]
    env.close()
    return {
        "batches_per_second": len(inside) / seconds,
        "rows_per_second": float(inside["num_input_rows"].sum()) / seconds,
        "delays": delays,
        "batch_ms": [float(ms) for ms in inside["trigger_execution_ms"].dropna()],
    }


def run_arm(arm: str, spark_env: dict[str, str], seconds: float, warmup: float) -> dict[str, object]:
    command = [sys.executable, __file__, "--one-run", "--seconds", str(seconds), "--warmup", str(warmup)]
    done = subprocess.run(command, env=spark_env, capture_output=True, text=True, timeout=900, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"the {arm} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds after batch 0 before measuring")
    parser.add_argument("--rounds", type=int, default=2, help="runs per arm, in rotating order")
    parser.add_argument("--one-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run:
        print(json.dumps(one_run(args.seconds, args.warmup)))
        return

    from tests.cluster_support import SparkProcesses, user_env

    # Before SparkProcesses, which hands this process's environment to the Connect server;
    # user_env passes it on to every arm's driver.
    os.environ["SPARK_SUBMIT_OPTS"] = like_local_submit_options()
    with SparkProcesses() as processes:
        started = time.monotonic()
        master = processes.start_cluster()
        cluster_up = time.monotonic() - started
        started = time.monotonic()
        remote = processes.start_connect()
        connect_up = time.monotonic() - started
        envs = {
            "local[2]": user_env(),
            "cluster": user_env(WORKBENCH_MASTER=master),
            "connect": user_env(SPARK_REMOTE=remote),
        }
        runs: dict[str, list[dict[str, object]]] = {arm: [] for arm in ARMS}
        for round_index in range(args.rounds):
            for arm in rotated(ARMS, round_index):
                run = run_arm(arm, envs[arm], args.seconds, args.warmup)
                runs[arm].append(run)
                print(f"round {round_index + 1}: {arm}: {run['batches_per_second']:.2f} batches/s",
                      file=sys.stderr, flush=True)

    print(f"stateful window query, rowsPerBatch=100, 2 partitions, append mode, {args.rounds} rounds of "
          f"{args.seconds:g} s runs after {args.warmup:g} s warm-up, poll interval 0.5 s")
    print(f"start-up: master + worker {cluster_up:.1f} s, Connect server {connect_up:.1f} s")
    print("every arm: the embedded Spark's JIT options and checkpoint file manager; " + STILL_DIFFERENT)
    print(f"{'':<10} {'batches/s':>10} {'rows/s':>8} {'batch ms':>9} {'fresh median':>13} {'p95':>7} {'max':>7}"
          f"  runs (batches/s)")
    for arm in ARMS:
        delays = [d * 1000 for run in runs[arm] for d in run["delays"]]  # type: ignore[union-attr]
        rates = [float(run["batches_per_second"]) for run in runs[arm]]  # type: ignore[arg-type]
        rows = statistics.median(float(run["rows_per_second"]) for run in runs[arm])  # type: ignore[arg-type]
        # The median of the batches of all runs; a run whose window held none adds none.
        batch_ms = [ms for run in runs[arm] for ms in run["batch_ms"]]  # type: ignore[union-attr]
        empty = sum(1 for run in runs[arm] if not run["batch_ms"])
        batch = f"{statistics.median(batch_ms):>9.0f}" if batch_ms else f"{'-':>9}"
        fresh = (f"{statistics.median(delays):>10.0f} ms {p95(delays):>4.0f} ms {max(delays):>4.0f} ms"
                 if delays else f"{'no batches':>13}")
        note = f"  {empty} of {len(runs[arm])} runs had no batch in their window" if empty else ""
        print(f"{arm:<10} {statistics.median(rates):>10.2f} {rows:>8.1f} {batch} {fresh}"
              f"  ({', '.join(f'{r:.2f}' for r in rates)}){note}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
