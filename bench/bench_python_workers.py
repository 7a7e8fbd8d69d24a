"""Spark's Python workers with the installed pyspark against pyspark's zip, side by side.

Run from the repository root::

    .venv/bin/python bench/bench_python_workers.py [--rounds 3] [--streams 5]

Spark puts ``SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's path, and
Python compiles what it imports from a zip from source in every process; the workbench's
local sessions start workers through a script that drops that entry, so they import the
installed pyspark and its cached bytecode (``workbench/spark/python_workers.py``). Each
measurement is a fresh Python process with a fresh embedded Spark, the two variants one
after the other in every round (the machine is noisy):

- **installed pyspark**: the session as users get it (``PYSPARK_PYTHON`` unset);
- **pyspark.zip**: ``WORKBENCH_PYTHON_WORKERS=0``, the workers started as before the change
  (and as with a ``PYSPARK_PYTHON`` of the user's own, which is kept as it is).

After ``workbench.session()``: the first Python UDF query (the worker daemon starts), then
``--streams`` MemoryStream queries one after the other (each a Python streaming source, so a
reader process of its own: start, one batch, stop). Printed: the seconds each took and the
machine's busy CPU seconds over them (every process: the JVM, the workers, this one).
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

VARIANTS = ("installed pyspark", "pyspark.zip")


def child(streams: int) -> None:
    """One measurement in this process."""
    from machine_cpu import busy_seconds

    import workbench
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    from workbench.testing import MemoryStream

    spark = workbench.session()
    result: dict[str, float] = {}
    cpu = busy_seconds()
    begun = time.monotonic()
    plus_one = F.udf(lambda value: value + 1, LongType())
    spark.range(4).select(plus_one("id")).collect()
    result["first udf"] = time.monotonic() - begun
    begun = time.monotonic()
    for number in range(streams):
        events = MemoryStream(spark, "word string")
        events.add([("dog",), ("owl",)])
        query = events.df.writeStream.format("memory").queryName(f"words_{number}").start()
        query.processAllAvailable()
        query.stop()
        events.close()
    result["streams"] = time.monotonic() - begun
    result["cpu"] = busy_seconds() - cpu
    workbench.stop_all()
    print(json.dumps(result))


def measure(variant: str, streams: int) -> dict[str, float]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYSPARK_PYTHON", "WORKBENCH_PYTHON_WORKERS")}
    if variant == "pyspark.zip":
        env["WORKBENCH_PYTHON_WORKERS"] = "0"
    done = subprocess.run([sys.executable, __file__, "--child", "--streams", str(streams)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=5, help="MemoryStream queries per measurement")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.streams)
        return
    results: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
    for _ in range(args.rounds):
        for variant in VARIANTS:
            results[variant].append(measure(variant, args.streams))
            print(f"  {variant}: {json.dumps(results[variant][-1])}", flush=True)
    print(f"fresh process and JVM each, {args.rounds} rounds, {args.streams} MemoryStream queries; "
          "median over the rounds (each round)")
    keys = ("first udf", "streams", "cpu")
    print(f"{'':20}" + "".join(f"{key + (' (CPU-s)' if key == 'cpu' else ' (s)'):>28}" for key in keys))
    for variant in VARIANTS:
        cells = []
        for key in keys:
            values = [r[key] for r in results[variant]]
            cells.append(f"{statistics.median(values):6.2f} ({' '.join(f'{v:.1f}' for v in values)})")
        print(f"{variant:20}" + "".join(f"{cell:>28}" for cell in cells))


if __name__ == "__main__":
    main()
