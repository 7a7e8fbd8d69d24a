"""One notebook's worth of workbench use, run in a subprocess against a cluster or a Connect server.

``python -m tests.cluster_session`` drives a real IPython shell the way a user drives a
notebook (``%%stream`` with the memory and console sinks, the live monitor, a history
longer than Spark keeps, a failing query, ``%stream stop --all``, the replay panel, a
checkpoint root) on whatever Spark ``WORKBENCH_MASTER`` or ``SPARK_REMOTE`` names, and
prints one JSON report as its last line. One process per Spark, because a process holds
one kind of session; one process for all parts, because each start of a driver costs
seconds. A part that raises records its traceback instead of ending the run, so the tests
can say which part broke.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
import traceback
import warnings
from typing import Any, Callable

#: Spark keeps this many progress updates minus one (the history must keep them all).
RECENT_PROGRESS_LIMIT = 3
#: Data batches the replay comparison covers.
REPLAY_BATCHES = 6


def replay_spec() -> tuple[Any, Any]:
    """The replay compared between local[2] and elsewhere: generated late rows, a windowed count."""
    from workbench.replay import Disorder, KeyColumn, Replay, WindowCount

    spec = Replay(rows_per_batch=4, start="2024-01-01 12:00", advance="1 minute", seed=3,
                  keys=(KeyColumn("key", 3),), disorder=Disorder(0.4, "2 minutes", "6 minutes"))
    return spec, WindowCount("event_time", "2 minutes", None, "1 minute", ("key",))


def replay_digest(run: Any, batches: int = REPLAY_BATCHES) -> dict[str, Any]:
    """What a replay run shows for its first ``batches`` data batches, as plain JSON values."""
    from workbench.replay.saved import NON_TIMING_COLUMNS

    history = run.history()
    history = history[history["batch_id"] < batches][list(NON_TIMING_COLUMNS)]
    late = run.late_rows()
    late = late[late["batch_id"] < batches]
    return {
        "history": history.astype(str).values.tolist(),
        "results": {str(b): sorted(map(str, frame.astype(str).values.tolist()))
                    for b, frame in run.batch_results().items() if b < batches},
        "late": late.astype(str).values.tolist(),
        "fates": sorted(late["fate"]),
    }


class Session:
    """A real IPython shell with the workbench loaded, plus the report being built."""

    def __init__(self) -> None:
        from IPython.core.interactiveshell import InteractiveShell

        self.shell = InteractiveShell.instance()
        self.report: dict[str, Any] = {}
        self.warnings: list[warnings.WarningMessage] = []

    def run(self, cell: str) -> Any:
        """Run a cell; return its result, or raise what it raised (UsageError included)."""
        outcome = self.shell.run_cell(cell)
        error = outcome.error_before_exec or outcome.error_in_exec
        if error is not None:
            raise error
        return outcome.result

    def part(self, name: str, body: Callable[[], dict[str, Any]]) -> None:
        started = time.monotonic()
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                result = body()
            self.warnings += seen
        except BaseException:  # report it; the other parts still run
            result = {"failed": traceback.format_exc()[-4000:]}
        result["seconds"] = round(time.monotonic() - started, 1)
        self.report[name] = result

    def handle(self, name: str) -> Any:
        return self.shell.user_ns["workbench"].stream(name)

    def view(self, name: str) -> Any:
        return self.shell.magics_manager.registry["StreamMagics"].views[name]


def wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"no {what} within {timeout:g} s")


def part_session(s: Session) -> dict[str, Any]:
    s.run("%load_ext workbench")
    s.run("import workbench\nfrom pyspark.sql import functions as F\n"
          f"spark = workbench.session(**{{'spark.sql.streaming.numRecentProgressUpdates': '{RECENT_PROGRESS_LIMIT}'}})")
    spark = s.shell.user_ns["spark"]
    return {"kind": type(spark).__module__, "master": spark.conf.get("spark.master", None)}


def part_memory(s: Session) -> dict[str, Any]:
    s.run('%%stream counts --trigger "1 second" --mode complete\n'
          'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 6).option("numPartitions", 2).load()'
          '.groupBy((F.col("value") % 3).alias("k")).count()')
    handle = s.handle("counts")
    wait(lambda: handle.progress.total > RECENT_PROGRESS_LIMIT, 120, f"{RECENT_PROGRESS_LIMIT + 1} batches")
    recent = len(handle.query.recentProgress)
    s.run("%stream stop counts")
    monitor = s.view("counts")
    wait(lambda: not monitor.running, 60, "end of the monitor")
    history = s.run("%stream history counts")
    result = s.run("%stream result counts")
    latency = {trace.name: list(trace.x) for trace in monitor.figures["latency"].data}
    return {
        "recent_progress": recent,
        "batches": [int(b) for b in history["batch_id"]],
        "rows": [int(r) for r in history["num_input_rows"]],
        "state_rows": [int(r) for r in history["state_rows_total"]],
        "result": {int(k): int(c) for k, c in zip(result["k"], result["count"])},
        "monitor_batches": [int(b) for b in latency["triggerExecution"]],
        "monitor_header": monitor.header.value, "monitor_caption": monitor.charts.caption,
        "checkpoint": handle.checkpoint,
        "table_note": handle.table_note,
    }


def part_console(s: Session) -> dict[str, Any]:
    # Outside a kernel console tables go to standard output: catch them there.
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        try:
            s.run('%%stream echo --sink console --trigger "0.5 seconds" --rows 3 --no-monitor\n'
                  'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load().select("value")')
        except Exception as error:
            return {"error": f"{type(error).__name__}: {error}", "streams": list(s.run("%stream list")["name"])}
        handle = s.handle("echo")
        wait(lambda: handle.progress.total >= 2, 120, "2 batches")
        s.run("%stream stop echo")
    return {"output": text.getvalue(), "status": handle.status}


def part_failing(s: Session) -> dict[str, Any]:
    s.run('%%stream boom\n'
          '@F.udf("long")\n'
          'def check(value):\n'
          '    if value >= 7:\n'
          '        raise ValueError(f"value {value} is too big")\n'
          '    return value\n'
          'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load().select(check("value").alias("v"))')
    handle = s.handle("boom")
    if not handle.wait_finished(120):
        raise TimeoutError("the failing query did not end within 120 s")
    monitor = s.view("boom")
    wait(lambda: not monitor.running, 60, "end of the monitor")
    listed = s.run("%stream list").set_index("name")
    return {"status": handle.status, "error": handle.error, "listed_error": listed.loc["boom", "error"],
            "monitor_header": monitor.header.value, "monitor_caption": monitor.charts.caption}


def part_stop_all(s: Session) -> dict[str, Any]:
    for name in ("first", "second"):
        s.run(f'%%stream {name} --trigger "1 second" --no-monitor\n'
              'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()')
    wait(lambda: all(s.handle(n).progress.total >= 1 for n in ("first", "second")), 120, "a batch of each stream")
    s.run("%stream stop --all")
    listed = s.run("%stream list").set_index("name")
    return {"status": {n: listed.loc[n, "status"] for n in ("first", "second", "counts", "boom")},
            "active": len(s.shell.user_ns["spark"].streams.active)}


def part_replay(s: Session) -> dict[str, Any]:
    import workbench

    spec, query = replay_spec()
    panel = workbench.replay_panel(spec, query, name="replayed", output_mode="update")
    try:
        first = panel.step()
        panel.step()
        panel.play(None)
        wait(lambda: panel.run.data_batches >= REPLAY_BATCHES, 120, f"{REPLAY_BATCHES} data batches")
        panel.pause()
        digest = replay_digest(panel.run)
        panel.reset()
        emptied = panel.history().empty and panel.results().empty and panel.late_rows().empty
        panel.step()
        again = replay_digest(panel.run, 1)
        return {"digest": digest, "first_step": str(first), "emptied_by_reset": emptied,
                "after_reset": again, "checkpoint": panel.run.checkpoint}
    finally:
        panel.close()


def part_checkpoint_root(s: Session) -> dict[str, Any]:
    root = os.environ["CLUSTER_TEST_CHECKPOINT_ROOT"]
    s.run(f"workbench.session(checkpoint_root={root!r})")
    s.run('%%stream rooted --trigger once --no-monitor\n'
          'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()')
    handle = s.handle("rooted")
    if not handle.wait_finished(120):
        raise TimeoutError("the once-triggered query did not end within 120 s")
    return {"checkpoint": handle.checkpoint, "committed": os.path.isdir(os.path.join(handle.checkpoint, "commits")),
            "status": handle.status}


PARTS = {
    "session": part_session, "memory": part_memory, "console": part_console, "failing": part_failing,
    "stop_all": part_stop_all, "replay": part_replay,
}


def main() -> None:
    session = Session()
    for name, body in PARTS.items():
        session.part(name, lambda body=body: body(session))
        if name == "session" and "failed" in session.report[name]:
            break
    if os.environ.get("CLUSTER_TEST_CHECKPOINT_ROOT"):
        session.part("checkpoint_root", lambda: part_checkpoint_root(session))
    session.report["warnings"] = [
        {"category": w.category.__name__, "message": str(w.message)}
        for w in session.warnings if w.category.__name__ == "CheckpointWarning"
    ]
    session.shell.user_ns["workbench"].stop_all()
    sys.stdout.write("\n" + json.dumps(session.report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
