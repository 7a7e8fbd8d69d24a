"""When the kernel hears that a batch ended: the workbench's listener next to pyspark's own.

Run from the repository root::

    .venv/bin/python bench/bench_listener.py [--batches 20] [--rounds 2]

On one embedded Spark, a stateful stream (a windowed count, a batch every 0.5 s) runs
once per listener and round, each time with one extra session-wide listener filling a
recorder: the one the workbench registers (each event's JSON read with one JVM call), and
pyspark's ``StreamingQueryListener`` as documented (pyspark turns each event into Python
objects first), the order rotating from round to round. For each batch: from its end
(progress ``timestamp`` + ``batchDuration``) to the listener hearing it, next to when
``lastProgress`` showed it (read every 10 ms), and the kernel's CPU per batch: the whole
Python process's, every thread (the ``lastProgress`` reader too), both phases alike but for
the listener; the Spark JVM's is not in it.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import workbench  # noqa: E402
from workbench.progress.recorder import QueryRecorder  # noqa: E402
from workbench.spark.watch import _guarded, _make_listener  # noqa: E402

from bench.stats import p95, rotated  # noqa: E402

#: Most seconds a stream may take to run the batches waited for (a busy machine's first batches take long).
DEADLINE_S = 300.0


class StampingRecorder(QueryRecorder):
    """A recorder that notes when each batch was heard."""

    def __init__(self) -> None:
        super().__init__()
        self.heard: dict[int, float] = {}

    def progress(self, raw: Any) -> None:
        self.heard.setdefault(int(raw["batchId"]), time.time())
        super().progress(raw)


def pyspark_listener(recorder: QueryRecorder) -> Any:
    from pyspark.sql.streaming import StreamingQueryListener

    class Converted(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            _guarded(lambda: recorder.progress(json.loads(event.progress.json)))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return Converted()


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wait_for_batches(handle: Any, total: int) -> None:
    """Wait until ``handle``'s stream has run ``total`` batches; raise a one-line error if it stops or is late."""
    deadline = time.monotonic() + DEADLINE_S
    while handle.progress.total < total:
        status = handle.status
        if status != "active":
            why = f": {handle.error}" if handle.error else ""
            raise RuntimeError(f"stream {handle.name!r} {status} after {handle.progress.total} of {total} "
                               f"batches{why}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"stream {handle.name!r} ran {handle.progress.total} of {total} batches in "
                               f"{DEADLINE_S:.0f} s (status {status})")
        time.sleep(0.1)


def phase(spark: Any, listener: Any, recorder: StampingRecorder, batches: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    spark.streams.addListener(listener)
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 20).load()
          .withWatermark("timestamp", "5 seconds").groupBy(F.window("timestamp", "10 seconds")).count())
    handle = workbench.start(df, f"listener_{id(listener)}", output_mode="append", trigger="0.5 seconds")
    shown: dict[int, float] = {}
    done = threading.Event()

    def watch_last() -> None:
        while not done.is_set():
            last = handle.query.lastProgress
            if last is not None:
                shown.setdefault(int(last["batchId"]), time.time())
            time.sleep(0.01)

    watcher = threading.Thread(target=watch_last, daemon=True)
    watcher.start()
    try:
        wait_for_batches(handle, 3)  # past the slow first batches
        began, first = cpu(), handle.progress.total
        wait_for_batches(handle, first + batches)
        spent = cpu() - began
    finally:
        done.set()
        watcher.join()
        handle.stop()
        spark.streams.removeListener(listener)
    heard, seen = [], []
    for record in handle.progress.records()[first:]:
        end = record.timestamp.timestamp() + (record.batch_duration_ms or 0) / 1000
        if record.batch_id in recorder.heard:
            heard.append(recorder.heard[record.batch_id] - end)
        if record.batch_id in shown:
            seen.append(shown[record.batch_id] - end)
    return {"heard": heard, "shown": seen, "cpu": spent / batches}


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "no batches"
    return (f"median {statistics.median(ordered) * 1000:.0f} ms, p95 {p95(ordered) * 1000:.0f}"
            f" ms, max {ordered[-1] * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="batches measured per listener and round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the listeners, the order rotating")
    args = parser.parse_args()
    if args.batches < 1 or args.rounds < 1:
        parser.error(f"--batches and --rounds must be at least 1 (got {args.batches}, {args.rounds})")
    listeners = {"workbench's listener (JSON, one call)": _make_listener,
                 "pyspark's listener (objects)": pyspark_listener}
    spark = workbench.session()
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in listeners}
    try:
        for round_index in range(args.rounds):
            for label in rotated(list(listeners), round_index):
                recorder = StampingRecorder()
                results[label].append(phase(spark, listeners[label](recorder), recorder, args.batches))
    finally:
        workbench.stop_all()
    print(f"batch end -> heard by the kernel, a windowed count every 0.5 s, {args.rounds} rounds of "
          f"{args.batches} batches per listener:")
    for label, runs in results.items():
        heard = [delay for run in runs for delay in run["heard"]]
        shown = [delay for run in runs for delay in run["shown"]]
        per_batch = " ".join(f"{run['cpu'] * 1000:.1f}" for run in runs)
        print(f"  {label:40} {spread(heard)};  whole-process CPU per batch {per_batch} ms (each round)")
        print(f"  {'  lastProgress showed it':40} {spread(shown)}")


if __name__ == "__main__":
    main()
