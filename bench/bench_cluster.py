"""Benchmark: the same stateful query on local[2], on a standalone cluster and through Spark Connect.

Run from the repository root::

    .venv/bin/python bench/bench_cluster.py [--seconds 20] [--warmup 5] [--rounds 2]

Starts a standalone master with one worker (2 cores, 2 GB) and a Spark Connect server
(on ``local[2]``) from the pip package, all on 127.0.0.1, exactly as the cluster tests do
(``tests/cluster_support.py``), then runs the monitor benchmark's stateful query (5 s
windows, 10 s watermark, rate-micro-batch with 100 rows per batch, 2 partitions) in a
fresh Python process per run, since one process holds one kind of session: embedded
``local[2]``, ``WORKBENCH_MASTER=spark://...`` and ``SPARK_REMOTE=sc://...``, in rotating
order per round. Prints, side by side:

- batches/s and rows/s over ``--seconds`` after ``--warmup`` (counted from the progress
  history, by batch start time);
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

from bench_monitor import p95, stateful_query  # noqa: E402  (the monitor benchmark's query)

ARMS = ("local[2]", "cluster", "connect")


def one_run(seconds: float, warmup: float) -> dict[str, object]:
    """In this process: run the query on whatever Spark the environment names; measure it."""
    import pandas as pd

    import workbench
    from workbench.spark import current_env

    env = current_env()
    spark = workbench.session()
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
    batch_ms = inside["trigger_execution_ms"].dropna()
    return {
        "batches_per_second": len(inside) / seconds,
        "rows_per_second": float(inside["num_input_rows"].sum()) / seconds,
        "delays": delays,
        "median_batch_ms": float(batch_ms.median()) if len(batch_ms) else float("nan"),
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
            order = ARMS[round_index % len(ARMS):] + ARMS[:round_index % len(ARMS)]
            for arm in order:
                run = run_arm(arm, envs[arm], args.seconds, args.warmup)
                runs[arm].append(run)
                print(f"round {round_index + 1}: {arm}: {run['batches_per_second']:.2f} batches/s",
                      file=sys.stderr, flush=True)

    print(f"stateful window query, rowsPerBatch=100, 2 partitions, append mode, {args.rounds} rounds of "
          f"{args.seconds:g} s runs after {args.warmup:g} s warm-up, poll interval 0.5 s")
    print(f"start-up: master + worker {cluster_up:.1f} s, Connect server {connect_up:.1f} s")
    print(f"{'':<10} {'batches/s':>10} {'rows/s':>8} {'batch ms':>9} {'fresh median':>13} {'p95':>7} {'max':>7}"
          f"  runs (batches/s)")
    for arm in ARMS:
        delays = [d * 1000 for run in runs[arm] for d in run["delays"]]  # type: ignore[union-attr]
        rates = [float(run["batches_per_second"]) for run in runs[arm]]  # type: ignore[arg-type]
        rows = statistics.median(float(run["rows_per_second"]) for run in runs[arm])  # type: ignore[arg-type]
        batch_ms = statistics.median(float(run["median_batch_ms"]) for run in runs[arm])  # type: ignore[arg-type]
        fresh = (f"{statistics.median(delays):>10.0f} ms {p95(delays):>4.0f} ms {max(delays):>4.0f} ms"
                 if delays else f"{'no batches':>13}")
        print(f"{arm:<10} {statistics.median(rates):>10.2f} {rows:>8.1f} {batch_ms:>9.0f} {fresh}"
              f"  ({', '.join(f'{r:.2f}' for r in rates)})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
