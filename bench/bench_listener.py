"""When the kernel hears that a batch ended: the workbench's listener next to pyspark's own.

Run from the repository root::

    .venv/bin/python bench/bench_listener.py [--batches 20]

On one embedded Spark, a stateful stream (a windowed count, a batch every 0.5 s) runs
twice, each time with one extra session-wide listener filling a recorder: the one the
workbench registers (each event's JSON read with one JVM call), then pyspark's
``StreamingQueryListener`` as documented (pyspark turns each event into Python objects
first). For each batch: from its end (progress ``timestamp`` + ``batchDuration``) to the
listener hearing it, next to when ``lastProgress`` showed it (read every 10 ms), and the
kernel's CPU per batch (the whole process, both phases alike but for the listener).
"""

from __future__ import annotations

import argparse
import json
import math
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
    while handle.progress.total < 3:  # past the slow first batches
        time.sleep(0.1)
    began, first = cpu(), handle.progress.total
    while handle.progress.total < first + batches:
        time.sleep(0.1)
    spent = cpu() - began
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
    return (f"median {statistics.median(ordered) * 1000:.0f} ms, p95 {ordered[math.ceil(0.95 * len(ordered)) - 1] * 1000:.0f}"
            f" ms, max {ordered[-1] * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="batches measured per listener")
    args = parser.parse_args()
    spark = workbench.session()
    results = {}
    for label, make in (("workbench's listener (JSON, one call)", _make_listener),
                        ("pyspark's listener (objects)", pyspark_listener)):
        recorder = StampingRecorder()
        results[label] = phase(spark, make(recorder), recorder, args.batches)
    workbench.stop_all()
    print(f"batch end -> heard by the kernel, a windowed count every 0.5 s, {args.batches} batches per listener:")
    for label, r in results.items():
        print(f"  {label:40} {spread(r['heard'])};  kernel CPU per batch {r['cpu'] * 1000:.1f} ms")
        print(f"  {'  lastProgress showed it':40} {spread(r['shown'])}")


if __name__ == "__main__":
    main()
