"""The embedded Spark's JIT settings against Java's defaults and C1 alone, side by side.

Run from the repository root::

    .venv/bin/python bench/bench_local_jit.py [--rounds 3] [--heavy-rows 40000000]

Each measurement is a fresh Python process with a fresh Spark JVM (``SPARK_SUBMIT_OPTS``
cleared), the variants one after the other in every round (the machine is noisy), their
order rotating from round to round:

- **java defaults**: the workbench's session with Java's own JIT (tiered, C2 at Java's counts);
- **workbench**: the session as users get it (``LOCAL_JIT_OPTIONS`` in
  ``workbench/spark/session.py``: C2 at ten to twenty-five times the counts);
- **C1 only**: ``-XX:TieredStopAtLevel=1``, what the test suite's short-lived JVMs use.

What a new user waits for: ``workbench.session()``, a replay panel of the guide's word count,
its first and second step (the first is the fresh JVM's first stateful micro-batch), and the
process's CPU (user + system, all its children). Then, once per variant and round, a heavy
batch query (``--heavy-rows`` rows hashed and grouped, three runs in one session): what a
long-running local job gets from each JIT.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import rotated  # noqa: E402

VARIANTS = ("java defaults", "workbench", "C1 only")


def java_options(variant: str) -> str:
    """The driver's Java options of a variant (the workbench's without or with its JIT settings)."""
    from workbench.spark.session import LOCAL_JIT_OPTIONS, default_conf

    options = default_conf("local[2]", "/tmp/unused")["spark.driver.extraJavaOptions"]
    plain = options.replace(LOCAL_JIT_OPTIONS, "").strip()
    return {"java defaults": plain, "workbench": options, "C1 only": f"{plain} -XX:TieredStopAtLevel=1"}[variant]


def child(variant: str, heavy_rows: int) -> None:
    """One measurement in this process: the first steps, or (heavy_rows > 0) the heavy query."""
    started = time.monotonic()
    import workbench

    spark = workbench.session(**{"spark.driver.extraJavaOptions": java_options(variant)})
    result: dict[str, object] = {"session": time.monotonic() - started}
    if heavy_rows > 0:
        from pyspark.sql import functions as F

        runs = []
        for _ in range(3):
            begun = time.monotonic()
            (spark.range(0, heavy_rows, numPartitions=4)
             .selectExpr("id % 1000 as k", "id * 3 as v", "sha2(cast(id % 97 as string), 256) as h")
             .groupBy("k").agg(F.sum("v"), F.countDistinct("h")).collect())
            runs.append(time.monotonic() - begun)
        result["heavy"] = runs
    else:
        begun = time.monotonic()
        panel = workbench.replay_panel(workbench.scenarios.guide_word_count())
        result["panel"] = time.monotonic() - begun
        for step in ("step 1", "step 2"):
            begun = time.monotonic()
            panel.step()
            result[step] = time.monotonic() - begun
        panel.close()
    workbench.stop_all()
    print(json.dumps(result))


def measure(variant: str, heavy_rows: int) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_SUBMIT_OPTS"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, __file__, "--child", variant, "--heavy-rows", str(heavy_rows)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heavy-rows", type=int, default=40_000_000, help="rows of the heavy query (0: none)")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.heavy_rows)
        return
    steps: dict[str, list[dict[str, object]]] = {variant: [] for variant in VARIANTS}
    heavy: dict[str, list[dict[str, object]]] = {variant: [] for variant in VARIANTS}
    for round_index in range(args.rounds):
        for variant in rotated(VARIANTS, round_index):
            steps[variant].append(measure(variant, 0))
            print(f"  {variant}: {json.dumps(steps[variant][-1])}", flush=True)
        if args.heavy_rows > 0:
            for variant in rotated(VARIANTS, round_index):
                heavy[variant].append(measure(variant, args.heavy_rows))
                print(f"  {variant}, heavy: {json.dumps(heavy[variant][-1])}", flush=True)
    print(f"fresh process and JVM each, {args.rounds} rounds; seconds, median over the rounds (each round)")
    keys = ("session", "panel", "step 1", "step 2", "cpu")
    print(f"{'':16}" + "".join(f"{key:>22}" for key in keys))
    for variant in VARIANTS:
        cells = []
        for key in keys:
            values = [float(r[key]) for r in steps[variant]]
            cells.append(f"{statistics.median(values):6.2f} ({' '.join(f'{v:.1f}' for v in values)})")
        print(f"{variant:16}" + "".join(f"{cell:>22}" for cell in cells))
    if args.heavy_rows > 0:
        print(f"heavy query ({args.heavy_rows:,} rows hashed and grouped), three runs in one session, each round:")
        for variant in VARIANTS:
            runs = "; ".join(" ".join(f"{v:.1f}" for v in r["heavy"]) for r in heavy[variant])
            third = statistics.median(float(r["heavy"][-1]) for r in heavy[variant])
            print(f"  {variant:16} {runs}   third run median {third:.1f} s")


if __name__ == "__main__":
    main()
