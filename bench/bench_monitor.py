"""Benchmark of the live monitor on the embedded Spark: overhead, freshness, responsiveness.

Run from the repository root::

    .venv/bin/python bench/bench_monitor.py [--seconds 12] [--rounds 6]

Prints, measured side by side in one run:

- overhead: rows/s of the same stateful query without a monitor, with a monitor drawing
  its charts but never reading the result table, and with the full monitor, in rounds of
  one run each (order rotating); the target is on the median of the rounds' full/without
  ratios (>= 0.97), shown with their spread because one run varies by +-15% here;
- freshness: delay from a batch's end (progress ``timestamp`` + ``batchDuration``) to its
  point being in the figure data (target p95 <= poll interval + 100 ms);
- responsiveness: round trip of a trivial cell in a real kernel (jupyter_client) while 4
  monitors update, next to the same kernel before any stream (target p95 <= 50 ms);
- messages: comm messages (widget state and chart data) the same kernel sends per second
  while its 4 streams run as fast as Spark can, against the batches they run: bursts of
  batches are drawn together, so the messages do not follow the batch rate.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import p95, rotated  # noqa: E402

START_MS = 1_700_000_000_000


def stateful_query(spark, rows_per_batch: int = 100):
    from pyspark.sql import functions as F

    return (
        spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", 2).option("startTimestamp", START_MS).option("advanceMillisPerBatch", 1000)
        .load()
        .withColumn("event", F.col("timestamp") - F.make_interval(secs=(F.col("value") % 5).cast("int")))
        .withWatermark("event", "10 seconds")
        .groupBy(F.window("event", "5 seconds"))
        .count()
    )


#: The overhead arms: monitor options, or None for no monitor.
ARMS: dict[str, dict[str, float] | None] = {
    "without monitor": None,
    "charts only": {"preview_every": float("inf")},  # never reads the result table
    "full monitor": {},
}


def one_run(env, spark, *, monitor_options: dict[str, float] | None, seconds: float,
            warmup: float) -> tuple[float, list[float]]:
    """Rows/s of the query over ``seconds`` after ``warmup``; freshness delays if monitored."""
    handle = env.start(stateful_query(spark), "bench")
    monitor = None
    if monitor_options is not None:
        monitor = handle.monitor(window=60, **monitor_options)
        monitor._track_drawn = True
    deadline = time.monotonic() + 180
    while handle.progress.total < 1 and time.monotonic() < deadline:
        time.sleep(0.1)  # batch 0 of a fresh query can take seconds on a busy machine
    time.sleep(warmup + seconds)
    handle.stop()
    history = handle.history()
    if monitor is not None:
        monitor.close()
    start = history["timestamp"].iloc[0] + pd.Timedelta(seconds=warmup)
    end = start + pd.Timedelta(seconds=seconds)
    inside = history[(history["timestamp"] >= start) & (history["timestamp"] < end)]
    rate = float(inside["num_input_rows"].sum()) / seconds
    delays: list[float] = []
    if monitor is not None:
        for row in inside.itertuples():
            drawn = monitor.drawn_at.get(row.batch_id)
            if drawn is not None and not pd.isna(row.batch_duration_ms):
                batch_end = row.timestamp.timestamp() + row.batch_duration_ms / 1000
                delays.append(drawn - batch_end)
    return rate, delays


def overhead_and_freshness(seconds: float, rounds: int, warmup: float) -> dict[str, object]:
    import workbench
    from workbench.spark import current_env

    spark = workbench.session()
    env = current_env()
    # One throwaway run: the first query in a fresh JVM is much slower than later ones.
    one_run(env, spark, monitor_options=None, seconds=3, warmup=3)
    rates: dict[str, list[float]] = {arm: [] for arm in ARMS}
    delays: list[float] = []
    for index in range(rounds):
        for arm in rotated(list(ARMS), index):
            rate, run_delays = one_run(env, spark, monitor_options=ARMS[arm], seconds=seconds, warmup=warmup)
            rates[arm].append(rate)
            if arm == "full monitor":
                delays.extend(run_delays)
    env.close()
    return {"rates": rates, "delays": delays, "interval": env.poll_interval}


KERNEL_SETUP = textwrap.dedent(
    """
    import workbench
    from pyspark.sql import functions as F
    spark = workbench.session()
    def make(i):
        df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 20)
              .option("startTimestamp", 1_700_000_000_000).option("advanceMillisPerBatch", 1000).load()
              .withWatermark("timestamp", "10 seconds").groupBy(F.window("timestamp", "5 seconds")).count())
        return workbench.start(df, f"kernel_bench_{i}")
    handles = [make(i) for i in range(4)]
    """
)

#: Counts every comm message the kernel publishes (widget state and custom messages, all widgets).
KERNEL_COUNT_MESSAGES = textwrap.dedent(
    """
    import collections, time as _time
    _sent = collections.Counter()
    _Comm = type(monitors[0].charts.comm)
    _publish = _Comm.publish_msg
    def _counting(self, msg_type, *args, **kwargs):
        _sent[msg_type] += 1
        return _publish(self, msg_type, *args, **kwargs)
    _Comm.publish_msg = _counting
    _began, _batches = _time.monotonic(), sum(h.progress.total for h in handles)
    """
)

#: Prints comm messages, batches and seconds since KERNEL_COUNT_MESSAGES, as JSON.
KERNEL_MESSAGES_SINCE = ("import json; print(json.dumps([_sent['comm_msg'], sum(h.progress.total for h in handles)"
                         " - _batches, _time.monotonic() - _began])); _Comm.publish_msg = _publish")

KERNEL_MONITORS = textwrap.dedent(
    """
    monitors = [h.monitor(window=60) for h in handles]
    for m in monitors:
        display(m)
    """
)


def round_trips(client, count: int) -> list[float]:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        reply = client.execute_interactive("1 + 1", store_history=False, timeout=30, output_hook=lambda msg: None)
        times.append(time.perf_counter() - began)
        assert reply["content"]["status"] == "ok"
        time.sleep(0.05)
    return times


def responsiveness(count: int, settle: float, message_seconds: float = 10.0) -> dict[str, Any]:
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(ROOT))
    try:
        idle = round_trips(client, count)
        reply = client.execute_interactive(KERNEL_SETUP, timeout=180, output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"kernel setup failed: {reply['content'].get('evalue')}")
        time.sleep(settle)  # past the slow first batches
        streams_only = round_trips(client, count)
        client.execute_interactive(KERNEL_MONITORS, timeout=60, output_hook=lambda msg: None)
        time.sleep(3)
        busy = round_trips(client, count)
        client.execute_interactive(KERNEL_COUNT_MESSAGES, timeout=30, output_hook=lambda msg: None)
        time.sleep(message_seconds)  # the streams run as fast as Spark can; the kernel counts
        counted: list[str] = []
        client.execute_interactive(KERNEL_MESSAGES_SINCE, timeout=30, output_hook=lambda msg: counted.append(
            msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None)
        messages, batches, seconds = json.loads("".join(counted))
        client.execute_interactive(
            "print(sum(h.progress.total for h in handles), sum(m.running for m in monitors))",
            timeout=30, output_hook=lambda msg: print("  kernel: batches, live monitors =",
                                                      msg["content"].get("text", "").strip())
            if msg["msg_type"] == "stream" else None,
        )
        client.execute_interactive("workbench.stop_all()", timeout=60, output_hook=lambda msg: None)
        return {"idle": idle, "streams": streams_only, "busy": busy,
                "messages": {"messages": messages, "batches": batches, "seconds": seconds}}
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=12.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds skipped at each run's start")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of one run per arm, rotating order")
    parser.add_argument("--round-trips", type=int, default=60, help="cells timed in the kernel, per phase")
    args = parser.parse_args()

    result = overhead_and_freshness(args.seconds, args.rounds, args.warmup)
    rates = result["rates"]
    plain = rates["without monitor"]
    print("overhead: stateful window query, rowsPerBatch=100, 2 partitions, "
          f"{args.rounds} rounds of {args.seconds:.0f} s runs")
    for arm, values in rates.items():
        print(f"  {arm + ':':<17}{statistics.median(values):8.1f} rows/s  (runs: {', '.join(f'{v:.0f}' for v in values)})")
    for arm in ("charts only", "full monitor"):
        ratios = sorted(w / p for w, p in zip(rates[arm], plain))
        ratio = statistics.median(ratios)
        verdict = f"  (target >= 0.97: {'met' if ratio >= 0.97 else 'NOT met'})" if arm == "full monitor" else ""
        print(f"  {arm}/without per round: median {ratio:.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}{verdict}")

    delays = result["delays"]
    target = result["interval"] + 0.100
    print(f"freshness: batch end -> point in figure data, {len(delays)} batches, poll interval {result['interval']} s")
    print(f"  median {statistics.median(delays) * 1000:.0f} ms, p95 {p95(delays) * 1000:.0f} ms, "
          f"max {max(delays) * 1000:.0f} ms  (target p95 <= {target * 1000:.0f} ms: "
          f"{'met' if p95(delays) <= target else 'NOT met'})")

    trips = responsiveness(args.round_trips, settle=15.0)
    idle, streams_only, busy = trips["idle"], trips["streams"], trips["busy"]
    print(f"responsiveness: '1 + 1' round trip in a real kernel, {args.round_trips} cells per phase")
    print(f"  no stream:         median {statistics.median(idle) * 1000:.1f} ms, p95 {p95(idle) * 1000:.1f} ms")
    print(f"  4 streams:         median {statistics.median(streams_only) * 1000:.1f} ms, "
          f"p95 {p95(streams_only) * 1000:.1f} ms")
    print(f"  + 4 live monitors:   median {statistics.median(busy) * 1000:.1f} ms, p95 {p95(busy) * 1000:.1f} ms"
          f"  (target p95 <= 50 ms: {'met' if p95(busy) <= 0.050 else 'NOT met'})")
    sent = trips["messages"]
    rate = sent["messages"] / sent["seconds"]
    print(f"messages: comm messages the kernel sent while 4 streams ran as fast as Spark can, with 4 live monitors, "
          f"over {sent['seconds']:.1f} s")
    print(f"  {sent['batches'] / sent['seconds']:.1f} batches/s in all, {rate:.1f} messages/s in all, "
          f"{rate / 4:.1f} per monitor per second, {sent['messages'] / max(1, sent['batches']):.2f} per batch")


if __name__ == "__main__":
    main()
