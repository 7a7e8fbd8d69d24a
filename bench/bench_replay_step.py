"""What a replay step costs with and without a page showing the panel's State view.

A replay panel reads the state of every stateful operator after each step for its *State*
view (a Spark job per operator, per join side, per transformWithState variable) only while
a page has loaded the panel; run headless (``nbconvert --execute``, papermill, a script, the
test suite's notebooks) it skips those reads. Two queries, two arms each, in one session
and alternating rounds:

- **join**: ``notebooks/04-joins.ipynb``'s impressions-clicks stream-stream join (an inner
  and a left-outer join: two operators, four state parts);
- **window**: a windowed count over a generated replay (one operator, one part);

each stepped ``--steps`` times on a fresh panel, arm **no page** (as headless) and arm
**page** (the panel's charts told the kernel a page loaded them, the message a page sends).
Printed per arm: the median wall seconds per step, the Spark JVM's CPU seconds per step and
the Spark jobs per step (the step's batch included), counted from the job ids the Spark UI
lists (:func:`jobs_so_far`).

    .venv/bin/python bench/bench_replay_step.py [--steps 6] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from typing import Any, Callable

import psutil


def join_panel(workbench: Any, name: str) -> Any:
    from pyspark.sql import functions as F

    events = workbench.Script(
        [
            [("12:00", "impression", "ad1"), ("12:01", "impression", "ad2"), ("12:02", "impression", "ad3"),
             ("12:04", "click", "ad1")],
            [("12:09", "click", "ad2"), ("12:10", "impression", "ad4")],
            [("12:14", "click", "ad3"), ("12:15", "impression", "ad5"), ("12:16", "click", "ad4")],
            [("12:30", "impression", "ad6"), ("12:25", "click", "ad5")],
            [("12:45", "impression", "ad7")],
            [("12:46", "impression", "ad8"), ("12:47", "click", "ad7")],
            [],
        ],
        ["event_time", "kind", "ad_id"],
    )
    condition = F.expr("click_ad_id = impression_ad_id AND click_time >= impression_time AND "
                       "click_time <= impression_time + interval 10 minutes")

    def query(stream: Any) -> Any:
        impressions = (stream.where("kind = 'impression'")
                       .select(F.col("ad_id").alias("impression_ad_id"), F.col("event_time").alias("impression_time"))
                       .withWatermark("impression_time", "2 minutes"))
        clicks = (stream.where("kind = 'click'")
                  .select(F.col("ad_id").alias("click_ad_id"), F.col("event_time").alias("click_time"))
                  .withWatermark("click_time", "3 minutes"))
        inner = impressions.join(clicks, condition, "inner").withColumn("join", F.lit("inner"))
        outer = impressions.join(clicks, condition, "leftOuter").withColumn("join", F.lit("left outer"))
        return inner.unionByName(outer)

    return workbench.replay_panel(events, query, name=name)


def window_panel(workbench: Any, name: str) -> Any:
    from workbench.replay import Replay, WindowCount

    spec = Replay(rows_per_batch=20, start="2024-01-01 12:00", advance="1 minute", seed=1)
    return workbench.replay_panel(spec, WindowCount("event_time", "5 minutes", None, "2 minutes"), name=name,
                                  output_mode="append")


#: Seconds the UI's job list may take to settle after a step (Spark's listener bus updates it).
SETTLE_S = 5.0


def jobs_so_far(spark: Any) -> int:
    """The Spark jobs this application ran so far (the streaming query's batches included), from its UI.

    Spark numbers an application's jobs 0, 1, 2, ... in the order they are submitted, so the
    newest job id + 1 counts them all, however many older ones the UI has dropped (it keeps
    ``spark.ui.retainedJobs``, 1,000 by default). The list is updated from Spark's listener
    bus, after the job: it is read until two reads 0.2 s apart agree and no job in it is
    running (at most :data:`SETTLE_S` seconds, then with a warning).
    """
    context = spark.sparkContext
    url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/jobs"
    deadline = time.monotonic() + SETTLE_S
    previous = None
    while True:
        with urllib.request.urlopen(url) as answer:
            jobs = json.load(answer)
        count = 1 + max((int(job["jobId"]) for job in jobs), default=-1)
        settled = count == previous and not any(job.get("status") == "RUNNING" for job in jobs)
        if settled:
            return count
        if time.monotonic() > deadline:
            print(f"warning: the Spark UI's job list did not settle within {SETTLE_S:.0f} s; "
                  "a step's job count may be short", file=sys.stderr, flush=True)
            return count
        previous = count
        time.sleep(0.2)


def measure(workbench: Any, make: Callable[[Any, str], Any], name: str, page: bool, steps: int) -> dict[str, float]:
    from pyspark import SparkContext

    spark = workbench.session()
    jvm = psutil.Process(SparkContext._gateway.proc.pid)
    panel = make(workbench, name)
    try:
        if page:
            panel.monitor.charts._handle_custom_msg({"kind": "ready"}, [])
        panel.step()  # the first step plans the query and starts its state stores: not counted
        walls, cpus, jobs = [], [], []
        for _ in range(steps - 1):
            before_jobs = jobs_so_far(spark)
            cpu = sum(jvm.cpu_times()[:2])
            started = time.perf_counter()
            panel.step()
            walls.append(time.perf_counter() - started)
            cpus.append(sum(jvm.cpu_times()[:2]) - cpu)
            jobs.append(jobs_so_far(spark) - before_jobs)
        assert (panel.state_view.value != "") == page, "the state view was read in the wrong arm"
    finally:
        panel.close()
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "jobs": statistics.median(jobs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="steps per panel (the first is not counted)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the arms, alternating")
    args = parser.parse_args()
    if args.steps < 2 or args.rounds < 1:
        parser.error(f"--steps must be at least 2 and --rounds at least 1 (got {args.steps}, {args.rounds})")

    import workbench

    workbench.session()
    queries = {"join": join_panel, "window": window_panel}
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for round_ in range(args.rounds):
        arms = ["no page", "page"] if round_ % 2 == 0 else ["page", "no page"]
        for query, make in queries.items():
            for arm in arms:
                figures = measure(workbench, make, f"bench_{query}_{round_}_{arm.replace(' ', '_')}", arm == "page",
                                  args.steps)
                results.setdefault((query, arm), []).append(figures)
    print(f"{'':16} {'step s':>8} {'JVM CPU s':>10} {'jobs':>5}   (medians of {args.rounds} rounds, "
          f"{args.steps - 1} steps each)")
    for (query, arm), runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        jobs = statistics.median(r["jobs"] for r in runs)
        print(f"{query + ', ' + arm:16} {wall:8.2f} {cpu:10.2f} {jobs:5.0f}")
    workbench.stop_all()


if __name__ == "__main__":
    main()
