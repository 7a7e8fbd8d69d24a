"""What the test suite's JVM options save: CPU and wall time of the same tests, side by side.

The suite starts some 40 short-lived Spark JVMs (each xdist worker's session, kernels,
notebooks, scripts). ``tests/suite.py`` gives them ``-XX:TieredStopAtLevel=1
-XX:+UseSerialGC``. This runs one notebook and one Spark test file with the JVM's defaults
and with those options, the first of a round changing from round to round, and prints the
machine's CPU time (all processes, from /proc/stat, so the JVMs that kernels start count
too) and the wall time of each run.

``--cluster`` runs the tests on a standalone cluster and a Spark Connect server instead
(``-m cluster``), with the options for the drivers only against the options for the drivers
and, through ``spark.executor.extraJavaOptions``, the executors the cluster's worker starts
(``tests.suite.SUBMIT_OPTIONS``, what the suite uses).

    .venv/bin/python bench/bench_test_jvm.py [--rounds 2] [--cluster]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from machine_cpu import busy_seconds  # noqa: E402
from stats import rotated  # noqa: E402
from tests.suite import SUBMIT_OPTIONS, TEST_JVM_OPTIONS  # noqa: E402

TESTS = ["notebooks/04-joins.ipynb", "tests/test_streams.py", "-m", "not kernel"]
CLUSTER_TESTS = ["tests/test_cluster.py", "tests/test_testing_remote.py", "-m", "cluster"]


def run(options: str, tests: list[str]) -> tuple[float, float]:
    env = {**os.environ, "SPARK_SUBMIT_OPTS": options}
    # -p no:tests.suite: the plugin would add the options to the baseline arm too.
    command = [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
               "-p", "no:tests.suite", *tests]
    cpu, wall = busy_seconds(), time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the tests failed with {options!r}:\n{done.stdout[-2000:]}")
    return busy_seconds() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cluster", action="store_true", help="the cluster tests, executors' options on and off")
    args = parser.parse_args()
    if args.cluster:
        tests = CLUSTER_TESTS
        arms = {"drivers only": TEST_JVM_OPTIONS, "and executors": SUBMIT_OPTIONS}
    else:
        tests = TESTS
        arms = {"JVM defaults": "", "suite options": TEST_JVM_OPTIONS}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
    for round_index in range(args.rounds):
        for name in rotated(list(arms), round_index):
            figures[name].append(run(arms[name], tests))
            cpu, wall = figures[name][-1]
            print(f"  {name}: CPU {cpu:.1f} s, wall {wall:.1f} s", flush=True)
    print(f"{' '.join(tests)}, {args.rounds} runs each, the order rotating")
    print(f"{'arm':<15} {'CPU s (median)':>15} {'wall s (median)':>16}")
    for name, runs in figures.items():
        print(f"{name:<15} {statistics.median(c for c, _ in runs):>15.1f} {statistics.median(w for _, w in runs):>16.1f}")


if __name__ == "__main__":
    main()
