"""Faults on real Spark: the Spark JVM dies under running streams.

The case kills a real JVM, so it runs in its own Python process (one process holds one
session) and the test run's own session is never touched. The child prints one JSON
report; the test asserts what a user would see in it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import wait_for

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]

JVM_DIES = textwrap.dedent(
    """
    import json, os, threading, time
    import psutil
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    import workbench
    from tests.helpers import jvms_of
    from workbench.spark.progress_source import SPARK_STOPPED

    def wait(predicate, timeout=240):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise SystemExit("timed out")
            time.sleep(0.05)

    spark = workbench.session()
    rate = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    plain = workbench.start(rate, "plain", trigger="0.2 seconds")
    counts = workbench.start(rate.groupBy((rate.value % 3).alias("k")).count(), "counts",
                             output_mode="complete", trigger="0.2 seconds")
    monitor = counts.monitor()
    wait(lambda: plain.progress.total >= 2 and counts.progress.total >= 2)
    [jvm] = [psutil.Process(pid) for pid in jvms_of(os.getpid())]
    jvm.kill()
    killed = time.monotonic()
    wait(lambda: plain.finished and counts.finished, timeout=30)
    settled_after = time.monotonic() - killed

    started = time.monotonic()
    table = workbench.streams()
    streams_seconds = time.monotonic() - started
    started = time.monotonic()
    stop_error = None
    try:
        plain.stop()
    except Exception as exc:
        stop_error = repr(exc)
    stop_seconds = time.monotonic() - started
    try:
        counts.result()
        result_error = None
    except Exception as exc:
        result_error = f"{type(exc).__name__}: {exc}"
    try:
        workbench.start(rate, "again")
        stale_error = None
    except Exception as exc:
        stale_error = f"{type(exc).__name__}: {exc}"
    wait(lambda: not [t for t in threading.enumerate() if t.name.startswith("workbench-")], timeout=15)

    # The next %%stream, whose body uses the notebook's (dead) `spark`, builds a new session.
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    shell.user_ns["spark"] = spark
    with capture_output() as captured:
        shell.run_cell_magic(
            "stream", "again --no-monitor --trigger '0.2 seconds'",
            "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 5).load()",
        )
    again = workbench.stream("again")
    wait(lambda: again.progress.total >= 2)
    again.stop()
    new_jvms = jvms_of(os.getpid())
    print(json.dumps({
        "statuses": table.set_index("name")["status"].to_dict(),
        "errors": table.set_index("name")["error"].to_dict(),
        "spark_stopped": SPARK_STOPPED,
        "settled_after": settled_after,
        "streams_seconds": streams_seconds,
        "stop_error": stop_error, "stop_seconds": stop_seconds,
        "result_error": result_error,
        "stale_error": stale_error,
        "monitor_thread_alive": bool(monitor._thread and monitor._thread.is_alive()),
        "old_jvm": jvm.pid, "new_jvms": new_jvms,
        "magic_output": captured.stdout,
        "again": {"status": again.status, "batches": again.history()["batch_id"].tolist()[:2],
                  "rows": len(again.result())},
        "new_session_is_new": shell.user_ns["spark"] is not spark,
        "scratch": [str(spark._workbench_scratch), str(shell.user_ns["spark"]._workbench_scratch)],
    }))
    """
)


def run_script(script: str, timeout: float = 600, extra: dict[str, str] | None = None) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER")}
    env.update(extra or {}, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.kernel  # a Python process with a Spark of its own
def test_jvm_death_fails_every_stream_and_the_next_stream_gets_a_new_session():
    report, stderr = run_script(JVM_DIES)
    assert report["statuses"] == {"plain": "failed", "counts": "failed"}
    assert report["errors"] == {"plain": report["spark_stopped"], "counts": report["spark_stopped"]}
    assert report["spark_stopped"].startswith("Spark stopped: ")
    # No hang: the pollers notice within a few ticks, and the table answers without Spark.
    assert report["settled_after"] < 10 and report["streams_seconds"] < 1
    assert report["stop_error"] is None and report["stop_seconds"] < 1
    assert report["result_error"] == f"RuntimeError: stream 'counts' has no table any more: {report['spark_stopped']}"
    assert report["stale_error"] == (
        "ValueError: this DataFrame belongs to a Spark session that has stopped: "
        "build it again from workbench.session()"
    )
    assert not report["monitor_thread_alive"]
    # A new JVM (the old one is gone), and a stream on it that works.
    assert report["new_jvms"] and report["old_jvm"] not in report["new_jvms"]
    assert report["new_session_is_new"]
    assert report["again"] == {"status": "stopped", "batches": [0, 1], "rows": report["again"]["rows"]}
    assert report["again"]["rows"] >= 10
    assert "again" in report["magic_output"]
    # No wall of py4j connection tracebacks reaches the user.
    assert "ConnectionRefusedError" not in stderr and "Py4JNetworkError" not in stderr
    # Both JVMs' private scratch folders (the dead one's too) went with the process (handed to
    # a detached `rm -rf` as it exits: give it a moment).
    old_scratch, new_scratch = map(Path, report["scratch"])
    assert old_scratch != new_scratch
    wait_for(lambda: not old_scratch.exists() and not new_scratch.exists(), timeout=10,
             text=lambda: f"scratch folders left: {[str(p) for p in (old_scratch, new_scratch) if p.exists()]}")


ADOPTED_JVM_DIES = textwrap.dedent(
    """
    import json, logging
    from pyspark.sql import SparkSession
    import workbench
    from tests.helpers import kill_jvm_after

    logging.basicConfig()  # as a notebook's kernel shows warnings and errors
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    query = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
             .writeStream.format("noop").queryName("mine").trigger(processingTime="0.2 seconds").start())
    handle = workbench.watch(query)
    kill_jvm_after(handle)
    handle.wait_finished(30)
    print(json.dumps({"status": handle.status, "error": handle.error}))
    """
)


@pytest.mark.kernel  # a Python process with a Spark of its own
def test_a_jvm_that_dies_under_the_users_own_session_leaves_no_py4j_traceback():
    # The quieting of py4j's connection errors came only with the workbench's own sessions.
    report, stderr = run_script(ADOPTED_JVM_DIES)
    assert report["status"] == "failed" and report["error"].startswith("Spark stopped: "), report
    assert "ConnectionResetError" not in stderr and "Py4JNetworkError" not in stderr, stderr[-3000:]
    assert "Exception while sending command" not in stderr, stderr[-3000:]


LOCAL_CONNECT_SERVER_DIES = textwrap.dedent(
    """
    import json, os, time
    import workbench
    from tests.helpers import kill_jvm_after

    spark = workbench.session()  # SPARK_REMOTE=local[1]: a Spark Connect server in this process's JVM
    handle = workbench.start(spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load(), "nums",
                             trigger="0.2 seconds")
    kill_jvm_after(handle)
    killed = time.monotonic()
    status = handle.status  # asked Spark Connect's client, which retried the dead server for minutes
    seconds = time.monotonic() - killed
    again = workbench.session()  # pyspark handed out the dead client, failing with NO_ACTIVE_SESSION
    print(json.dumps({"kind": type(spark).__module__, "status": status, "error": handle.error, "seconds": seconds,
                      "new_session": again is not spark, "count": again.range(4).count()}), flush=True)
    """
)


@pytest.mark.kernel  # a Python process with a Spark of its own
def test_a_local_connect_servers_death_fails_its_streams_at_once_and_the_next_session_works():
    from tests.cluster_support import free_port

    # The script ends by itself (pyspark's threads retrying the dead server held its exit for minutes).
    report, _ = run_script(LOCAL_CONNECT_SERVER_DIES, timeout=240, extra={"SPARK_REMOTE": "local[1]",
                                                                          "WORKBENCH_CONNECT_PORT": str(free_port())})
    assert report["kind"].startswith("pyspark.sql.connect"), report
    assert report["status"] == "failed" and report["error"].startswith("Spark stopped: "), report
    assert report["seconds"] < 10, report
    # The next workbench.session() starts a new server and works.
    assert report["new_session"] and report["count"] == 4, report


def test_a_memory_append_stream_is_not_replaced_by_a_start_spark_would_refuse(env, rate_stream, tmp_path):
    # Spark's memory sink restarts from a checkpoint in complete mode only: re-running an append
    # stream's cell on its checkpoint stopped the running stream, then failed in Spark.
    checkpoint = tmp_path / "rows"
    df = rate_stream(rows_per_batch=3)
    running = env.start(df, "appending", trigger="0.3 seconds", checkpoint=checkpoint)
    wait_for(lambda: running.progress.total >= 1, message="a batch")
    with pytest.raises(ValueError) as refused:
        env.start(df, "appending", trigger="0.3 seconds", checkpoint=checkpoint)
    assert str(refused.value) == (
        f"stream 'appending' cannot restart from checkpoint {str(checkpoint)!r}: Spark's memory sink restarts from "
        "a checkpoint in complete mode only, and this one is append; give a new folder, or leave --checkpoint "
        "(checkpoint=) out for a fresh temporary one")
    assert running.status == "active" and env.get("appending") is running
    running.stop()
    with pytest.raises(TypeError, match="^operators must be True or False, got 'no'$"):
        running.history(operators="no")  # a non-empty string read as True


def test_a_checkpoint_root_that_cannot_take_a_checkpoint_leaves_the_running_stream(env, rate_stream, tmp_path):
    # The new checkpoint was made after the old stream stopped: a root under a file stopped it,
    # then failed with a bare NotADirectoryError.
    df = rate_stream(rows_per_batch=3)
    running = env.start(df, "rooted", trigger="0.3 seconds")
    (tmp_path / "file").write_text("x")
    env.checkpoint_root = str(tmp_path / "file" / "root")
    try:
        with pytest.raises(ValueError) as refused:
            env.start(df, "rooted", trigger="0.3 seconds")
    finally:
        env.checkpoint_root = None
    assert str(refused.value) == (
        f"cannot make a checkpoint under checkpoint_root {str(tmp_path / 'file' / 'root')!r}: Not a directory; give a "
        "folder you can write (workbench.session(checkpoint_root=...) or WORKBENCH_CHECKPOINT_ROOT)")
    assert running.status == "active" and env.get("rooted") is running
    running.stop()


def test_a_checkpoint_root_on_a_remote_connect_server_is_the_servers_path(env, tmp_path, monkeypatch):
    # /data/ck on the server was made (or refused) on this machine's disk.
    import workbench.spark.environment as environment
    from workbench._spark_target import parse_remote

    monkeypatch.setattr(environment, "session_target", lambda spark: parse_remote("sc://spark.example.org:15002"))
    (tmp_path / "file").write_text("x")
    root = tmp_path / "file" / "ck"  # cannot be made here
    env.checkpoint_root = str(root)
    try:
        checkpoint = env.new_checkpoint("remote")
    finally:
        env.checkpoint_root = None
    assert re.fullmatch(rf"{re.escape(str(root))}/workbench-[^/]+/remote-\d+", checkpoint), checkpoint
    monkeypatch.setattr(environment, "session_target", lambda spark: parse_remote("sc://127.0.0.1:15002"))
    env.checkpoint_root = str(root)
    try:
        with pytest.raises(ValueError, match="cannot make a checkpoint under checkpoint_root"):
            env.new_checkpoint("local")  # a server on this machine shares its disk: checked here
    finally:
        env.checkpoint_root = None


def test_a_checkpoint_under_home_is_the_home_folders(env, rate_stream, tmp_path, monkeypatch):
    # "~/ck" went to Spark as written: a folder named "~" in the kernel's working folder.
    monkeypatch.setenv("HOME", str(tmp_path))
    handle = env.start(rate_stream(rows_per_batch=3), "at_home", trigger="once", checkpoint="~/ck")
    assert handle.wait_finished(60) and handle.status == "stopped"
    assert handle.checkpoint == str(tmp_path / "ck") and (tmp_path / "ck" / "commits").is_dir()


def test_restart_from_a_checkpoint_continues_with_the_next_batch(env, rate_stream, tmp_path):
    checkpoint = tmp_path / "counts"
    df = rate_stream(rows_per_batch=6)
    query = df.groupBy((df.value % 3).alias("k")).count()
    first = env.start(query, "resumable", output_mode="complete", trigger="0.3 seconds", checkpoint=checkpoint)
    wait_for(lambda: first.progress.total >= 3, message="3 batches")
    first.stop()
    ran = first.history()["batch_id"].tolist()
    assert first.resumed_from is None

    # As after a kernel restart: a new start on the same checkpoint.
    second = env.start(query, "resumable", output_mode="complete", trigger="0.3 seconds", checkpoint=checkpoint)
    wait_for(lambda: second.progress.total >= 2, message="2 more batches")
    second.stop()
    again = second.history()["batch_id"].tolist()
    # Spark goes on after the last batch it committed: the last one reported, or one the
    # first stop cut after its sink write and its commit (the first handle names it).
    assert second.resumed_from == again[0]
    cut = first.cut_batch.batch_id if first.cut_batch is not None else None
    assert second.resumed_from == ran[-1] + 1 or (cut == ran[-1] + 1 and second.resumed_from == cut + 1), (
        ran, first.cut_batch, second.resumed_from)
    monitor = second.monitor()  # the monitor says where the stream took up again
    assert f"Resumed from its checkpoint: continues with batch {second.resumed_from}." in monitor.header.value
    monitor.close()
    assert again == list(range(again[0], again[0] + len(again)))  # no batch repeated, none missing
    # Complete mode: the table holds the counts of every row of every batch of both runs, up to
    # the batch a stop may have cut after its sink write (named by the handle).
    table = second.result()
    last = second.cut_batch.batch_id if second.cut_batch is not None else again[-1]
    assert second.cut_batch is None or second.cut_batch.batch_id == again[-1] + 1
    assert int(table["count"].sum()) == 6 * (last + 1) and second.table_rows == len(table) == 3
