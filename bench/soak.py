"""Soak test: four monitored streams in a real kernel for a long time; memory, batches, threads.

Run from the repository root::

    .venv/bin/python bench/soak.py --minutes 60

A Jupyter kernel (jupyter_client, no front end) starts four streams with a live monitor
each: two stateful (a windowed count with a watermark, and a running count per key in
complete mode), one console-sink stream and one replay panel playing. Every minute the
script prints, side by side:

- the kernel's RSS, measured from outside its process (psutil), and the JVM's used heap;
- per stream, the batches in its history next to the batch ids Spark ran (first to last),
  so that a missed batch shows as a gap;
- the kernel's thread count.

At the end it stops everything and prints the threads still alive in the kernel next to
those alive before the streams started. Targets: kernel RSS growth <= 30 MB after the
first 5 minutes, 0 missed batches, 0 leaked threads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP = textwrap.dedent(
    """
    import json, threading
    import workbench
    from pyspark.sql import functions as F
    from workbench.replay.columns import KeyColumn
    from workbench.replay.spec import Replay, WindowCount
    threads_before = {t.name for t in threading.enumerate()}
    spark = workbench.session()

    def rate(rows):
        return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows)
                .option("startTimestamp", 1_700_000_000_000).option("advanceMillisPerBatch", 1000).load())

    windows = rate(50).withWatermark("timestamp", "10 seconds").groupBy(F.window("timestamp", "5 seconds")).count()
    per_key = rate(50).groupBy((F.col("value") % 10).alias("k")).count()
    console_lines = []
    handles = [
        workbench.start(windows, "soak_windows", trigger="1 second"),
        workbench.start(per_key, "soak_keys", output_mode="complete", trigger="1 second"),
        workbench.start(rate(10), "soak_console", sink="console", trigger="1 second", rows=5,
                        console=lambda text: console_lines.append(len(text))),
    ]
    monitors = [h.monitor(window=60) for h in handles]
    panel = workbench.replay_panel(Replay(rows_per_batch=20, keys=(KeyColumn(cardinality=5),)),
                                   WindowCount(window="5 minutes", watermark="10 minutes", keys=("key",)),
                                   name="soak_replay", output_mode="update")
    panel.play(1.0)
    """
)

SAMPLE = textwrap.dedent(
    """
    def _ids(records):
        return [r.batch_id for r in records if not r.is_idle_report]
    _runtime = spark._jvm.java.lang.Runtime.getRuntime()
    _streams = {h.name: _ids(h.progress.records()) for h in handles}
    _streams["soak_replay"] = _ids(panel.run.progress.records())
    print(json.dumps({
        "heap_mb": (_runtime.totalMemory() - _runtime.freeMemory()) / 2**20,
        "streams": {name: [len(ids), min(ids, default=None), max(ids, default=None),
                           len(set(range(min(ids), max(ids) + 1)) - set(ids)) if ids else 0]
                    for name, ids in _streams.items()},
        "statuses": {h.name: h.status for h in handles} | {"soak_replay": panel.run.status},
        "threads": threading.active_count(),
        "console_batches": len(console_lines),
    }))
    """
)

TEARDOWN = textwrap.dedent(
    """
    panel.close()
    for m in monitors:
        m.close()
    workbench.stop_all()
    import time as _time
    _time.sleep(2)
    _left = sorted(t.name for t in threading.enumerate() if t.name not in threads_before)
    print(json.dumps({"left": _left, "workbench_left": [n for n in _left if n.startswith("workbench-")]}))
    """
)


def run_cell(client, code: str, timeout: float = 300) -> str:
    out: list[str] = []

    def hook(msg):
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            out.append("\n".join(msg["content"]["traceback"]))

    reply = client.execute_interactive(code, timeout=timeout, output_hook=hook, store_history=False)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"kernel cell failed: {reply['content'].get('evalue')}\n{''.join(out)}")
    return "".join(out)


def main() -> None:
    import psutil
    from jupyter_client.manager import start_new_kernel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    args = parser.parse_args()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(ROOT), startup_timeout=120)
    kernel = psutil.Process(manager.provisioner.process.pid)
    samples = []
    try:
        run_cell(client, SETUP)
        began = time.monotonic()
        print(f"soak: 4 monitored streams for {args.minutes:g} min, kernel pid {kernel.pid}", flush=True)
        print("minute  kernel RSS MB  JVM heap MB  threads  batches seen / batch ids (first-last), gaps", flush=True)
        while True:
            elapsed = time.monotonic() - began
            sample = json.loads(run_cell(client, SAMPLE).strip().splitlines()[-1])
            sample["minute"] = elapsed / 60
            sample["rss_mb"] = kernel.memory_info().rss / 2**20
            samples.append(sample)
            streams = "  ".join(f"{name.removeprefix('soak_')} {seen}/{(last - first + 1) if seen else 0} "
                                f"({first}-{last}) gaps {gaps}"
                                for name, (seen, first, last, gaps) in sample["streams"].items())
            print(f"{sample['minute']:6.1f}  {sample['rss_mb']:13.1f}  {sample['heap_mb']:11.1f}  "
                  f"{sample['threads']:7d}  {streams}", flush=True)
            if elapsed >= args.minutes * 60:
                break
            time.sleep(max(0.0, min(args.every, args.minutes * 60 - elapsed)))
        statuses = sample["statuses"]
        teardown = json.loads(run_cell(client, TEARDOWN).strip().splitlines()[-1])
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)

    after5 = [s for s in samples if s["minute"] >= 5]
    base = after5[0] if after5 else samples[0]
    growth = samples[-1]["rss_mb"] - base["rss_mb"]
    missed = sum(gaps for _seen, _first, _last, gaps in samples[-1]["streams"].values())
    print()
    print(f"ran {samples[-1]['minute']:.1f} min; statuses at the end: {statuses}")
    print(f"kernel RSS: {samples[0]['rss_mb']:.1f} MB at start, {base['rss_mb']:.1f} MB at minute "
          f"{base['minute']:.1f}, {samples[-1]['rss_mb']:.1f} MB at the end: growth {growth:+.1f} MB "
          f"(target <= 30 MB after the first 5 minutes: {'met' if growth <= 30 else 'NOT met'}"
          f"{'' if after5 else '; the run was shorter than 5 minutes'})")
    print(f"JVM heap used: {samples[0]['heap_mb']:.0f} MB at start, {samples[-1]['heap_mb']:.0f} MB at the end "
          f"(max {max(s['heap_mb'] for s in samples):.0f} MB)")
    print(f"missed batches: {missed} (target 0: {'met' if missed == 0 else 'NOT met'})")
    print(f"threads left after stopping everything: {len(teardown['workbench_left'])} workbench threads "
          f"{teardown['workbench_left']}, all new threads still alive: {teardown['left']} "
          f"(target 0 leaked: {'met' if not teardown['workbench_left'] else 'NOT met'})")


if __name__ == "__main__":
    sys.exit(main())
