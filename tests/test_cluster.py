"""The workbench on a standalone Spark cluster and on a separately started Spark Connect server.

The cluster (a master and one worker) and the Connect server are real Spark processes on
127.0.0.1, started from the pip package once per test run and only when a test here needs
them (``tests/cluster_support.py``). Each Spark is driven by one subprocess running a real
IPython shell through everything a notebook user does (``tests/cluster_session.py``); the
tests below read its report. Bad URLs, the checkpoint root and ``workbench doctor`` need no
cluster and run in seconds.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import warnings
from importlib import metadata

import pytest

from tests.cluster_session import RECENT_PROGRESS_LIMIT, REPLAY_BATCHES, replay_digest, replay_spec
from tests.cluster_support import SPARK_HOME, SPARK_PROCESSES_GROUP, REPO, free_port, user_env
from workbench._spark_target import (ConnectPortInUseError, SparkURLError, connect_port, parse_master, parse_remote,
                                     require_free_connect_port, spark_home_line, spark_target, unreachable)

# -- the Spark processes and one session report per Spark ---------------------------------------
# The processes are the suite's shared ``spark_processes`` (tests/conftest.py).
pytestmark = pytest.mark.xdist_group(SPARK_PROCESSES_GROUP)


def on_spark_processes(test):
    """Mark a test that needs the cluster and Connect server (``-m "not cluster"`` skips them)."""
    return pytest.mark.cluster(pytest.mark.spark(test))


def run_session(extra_env: dict[str, str]) -> dict:
    """Run ``tests/cluster_session.py`` with ``extra_env`` and return its JSON report."""
    done = subprocess.run([sys.executable, "-m", "tests.cluster_session"], capture_output=True, text=True,
                          timeout=900, env=user_env(**extra_env), cwd=REPO)
    assert done.returncode == 0, f"the session subprocess failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=["cluster", "connect"])
def where(request, spark_processes, tmp_path_factory):
    """(kind, Spark URL, report): the same notebook run on the cluster and through Connect."""
    root = tmp_path_factory.mktemp(f"{request.param}-checkpoints")
    if request.param == "cluster":
        url = spark_processes.start_cluster()
        # The checkpoint root is set from the notebook, after the warning has had its chance.
        extra = {"WORKBENCH_MASTER": url, "CLUSTER_TEST_CHECKPOINT_ROOT": str(root)}
    else:
        url = spark_processes.start_connect()
        extra = {"SPARK_REMOTE": url, "WORKBENCH_CHECKPOINT_ROOT": str(root)}
    return request.param, url, run_session(extra), root


def part(report: dict, name: str) -> dict:
    found = report[name]
    if "failed" in found:
        pytest.fail(f"the {name!r} part of the session failed:\n{found['failed']}")
    return found


@on_spark_processes
def test_the_session_runs_where_the_url_says(where):
    kind, url, report, _root = where
    session = part(report, "session")
    if kind == "cluster":
        assert session["kind"] == "pyspark.sql.session" and session["master"] == url
    else:
        # A Connect client; the server's own master runs the queries.
        assert session["kind"] == "pyspark.sql.connect.session" and session["master"] == "local[2]"


@on_spark_processes
def test_memory_sink_monitor_and_a_history_past_sparks_limit(where):
    _kind, _url, report, _root = where
    memory = part(report, "memory")
    batches = memory["batches"]
    # Spark kept only the last few progress updates; the history has every batch.
    assert memory["recent_progress"] <= RECENT_PROGRESS_LIMIT - 1
    assert batches == list(range(len(batches))) and len(batches) > RECENT_PROGRESS_LIMIT
    assert set(memory["rows"]) == {6} and set(memory["state_rows"]) == {3}
    # Complete mode: the table holds every row counted, values 0..6n-1 split over 3 keys...
    expected = {str(k): 2 * len(batches) for k in range(3)}
    if memory["result"] != expected:
        # ...or, when the stop cut the next batch after its sink write, that batch's too, and
        # never silently: the handle's table note (the monitor header's) names the batch.
        assert memory["result"] == {str(k): 2 * (len(batches) + 1) for k in range(3)}, memory
        assert memory["table_note"] and f"batch {len(batches)}" in memory["table_note"], memory
    assert memory["monitor_batches"] == batches
    assert "<b>stopped</b>" in memory["monitor_header"] and memory["monitor_caption"].startswith(f"batch {batches[-1]} ·")


@on_spark_processes
def test_console_sink(where):
    kind, url, report, _root = where
    console = part(report, "console")
    if kind == "connect":
        # Spark Connect runs foreachBatch on the server: say so instead of printing nothing.
        assert console["error"] == (
            f"UsageError: %%stream echo: the console sink cannot print here: under Spark Connect ({url}) it "
            "would run on the server and print each batch into the server's log; use the memory sink and "
            "read the table instead (%stream result echo, or workbench.stream('echo').result())"
        )
        assert "echo" not in console["streams"]
        return
    rule = "-" * 43
    for batch, values in ((0, (0, 1)), (1, (2, 3))):
        table = "\n".join(["+-----+", "|value|", "+-----+", *(f"|{v:>5}|" for v in values), "+-----+"])
        assert f"{rule}\nBatch: {batch}\n{rule}\n{table}\n\n" in console["output"]
    assert console["status"] == "stopped"


@on_spark_processes
def test_a_failing_query_reads_as_its_own_error(where):
    _kind, _url, report, _root = where
    failing = part(report, "failing")
    assert failing["status"] == "failed"
    assert re.fullmatch(r"ValueError: value \d+ is too big", failing["error"]), failing["error"]
    assert failing["listed_error"] == failing["error"]
    assert "<b>failed</b>" in failing["monitor_header"] and failing["error"] in failing["monitor_header"]


@on_spark_processes
def test_stop_all_stops_every_query(where):
    _kind, _url, report, _root = where
    stopped = part(report, "stop_all")
    assert stopped["status"] == {"first": "stopped", "second": "stopped", "counts": "stopped", "boom": "failed"}
    assert stopped["active"] == 0


@pytest.fixture(scope="module")
def local_replay(spark):
    """The replay of ``cluster_session`` on the test run's local[2] session, stepped batch by batch."""
    from workbench.spark import new_env
    from workbench.spark.replay_run import ReplayRun

    env = new_env()
    spec, query = replay_spec()
    run = ReplayRun(spec, query, name="local_replay", output_mode="update", env=env)
    try:
        for _ in range(REPLAY_BATCHES):
            run.step()
        return replay_digest(run)
    finally:
        run.close()
        env.close()


@on_spark_processes
def test_replay_step_play_reset_match_local(where, local_replay):
    _kind, _url, report, root = where
    replay = part(report, "replay")
    digest = replay["digest"]
    # Two steps, then play, give the same batches, results and late-row fates as local[2].
    assert digest["history"] == local_replay["history"]
    assert digest["results"] == local_replay["results"] and len(digest["results"]) == REPLAY_BATCHES
    assert digest["late"] == local_replay["late"]
    assert {"counted", "dropped"} <= set(digest["fates"])
    assert replay["first_step"].startswith("batch 0: watermark none yet -> 2024-01-01 11:59:41, 4 rows in")
    assert replay["emptied_by_reset"]
    # After a reset the first step is batch 0 again, exactly as before.
    assert replay["after_reset"]["history"] == local_replay["history"][:1]
    assert replay["after_reset"]["results"] == {"0": local_replay["results"]["0"]}


@on_spark_processes
def test_checkpoints_warning_and_root(where):
    kind, url, report, root = where
    if kind == "cluster":
        # Streams without a checkpoint on a cluster: said once, naming both ways out.
        (warning,) = report["warnings"]
        assert warning["message"].startswith(f"Spark runs at {url}, but streams started without a checkpoint keep it")
        for fix in ("--checkpoint DIR", "checkpoint=DIR", "checkpoint_root=DIR", "WORKBENCH_CHECKPOINT_ROOT=DIR"):
            assert fix in warning["message"]
        assert part(report, "memory")["checkpoint"].startswith("/tmp/workbench-")
        rooted = part(report, "checkpoint_root")
        assert rooted["checkpoint"].startswith(f"{root}/workbench-") and rooted["committed"]
        assert rooted["status"] == "stopped"
    else:
        # WORKBENCH_CHECKPOINT_ROOT: every checkpoint under it, so no warning.
        assert report["warnings"] == []
        assert part(report, "memory")["checkpoint"].startswith(f"{root}/workbench-")
        assert part(report, "replay")["checkpoint"].startswith(f"{root}/workbench-")
    # The folders under a root are the user's: kept after the session ends.
    assert any(root.iterdir())


@on_spark_processes
@pytest.mark.parametrize("kind", ["cluster", "connect"])
def test_doctor_reaches_the_cluster_and_the_connect_server(spark_processes, kind):
    if kind == "cluster":
        url = spark_processes.start_cluster()
        env, expected = {"WORKBENCH_MASTER": url}, f"spark       cluster {url} (from WORKBENCH_MASTER): reachable"
    else:
        url = spark_processes.start_connect()
        env, expected = {"SPARK_REMOTE": url}, f"spark       Spark Connect server {url} (from SPARK_REMOTE): reachable"
    done = doctor(env)
    assert expected in done.stdout.splitlines(), done.stdout


# -- bad input, doctor, checkpoint root: no cluster needed -------------------------------------------


def doctor(extra: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "doctor"], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=user_env(**extra))


def test_doctor_says_what_it_cannot_reach_and_what_is_malformed():
    port = free_port()
    done = doctor({"WORKBENCH_MASTER": f"spark://127.0.0.1:{port}"})
    assert done.returncode == 1
    assert (f"spark       cluster spark://127.0.0.1:{port} (from WORKBENCH_MASTER): cannot reach "
            f"spark://127.0.0.1:{port}: connection refused") in done.stdout.splitlines()
    done = doctor({"SPARK_REMOTE": "127.0.0.1:15002"})
    assert done.returncode == 1
    assert ("spark       SPARK_REMOTE='127.0.0.1:15002' is not a Spark Connect URL: use sc://HOST:PORT "
            "(e.g. sc://127.0.0.1:15002) or local[N]") in done.stdout.splitlines()
    done = doctor({})
    assert "spark       embedded local[2] (started in the notebook kernel)" in done.stdout.splitlines()


def fake_spark_home(folder, version: str, *, release: bool) -> str:
    """A folder with ``bin/spark-submit`` and the files that say its Spark version (``RELEASE`` or the core jar)."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    if release:
        (folder / "RELEASE").write_text(f"Spark {version} built for Hadoop 3.4.1\nBuild flags: -B\n")
    else:
        (folder / "jars").mkdir()
        (folder / "jars" / f"spark-core_2.13-{version}.jar").write_text("")
    return str(folder)


def test_doctor_fails_for_a_spark_home_sessions_cannot_start_spark_from(tmp_path):
    pyspark_version = metadata.version("pyspark")
    fix = f"unset SPARK_HOME, or point it at the Spark of pyspark's version ({pyspark_version})"
    done = doctor({"SPARK_HOME": str(tmp_path / "nonexistent")})
    assert done.returncode == 1
    assert (f"SPARK_HOME  {tmp_path / 'nonexistent'} has no bin/spark-submit, which sessions start Spark with: "
            f"{fix}") in done.stdout.splitlines()
    other = fake_spark_home(tmp_path / "spark-3.5.1", "3.5.1", release=True)
    done = doctor({"SPARK_HOME": other})
    assert done.returncode == 1
    assert f"SPARK_HOME  {other} holds Spark 3.5.1, not pyspark's {pyspark_version}: {fix}" in done.stdout.splitlines()
    same = fake_spark_home(tmp_path / "spark", pyspark_version, release=False)
    assert spark_home_line({"SPARK_HOME": same}, pyspark_version) == (
        f"SPARK_HOME  {same}: Spark {pyspark_version}", True)
    assert spark_home_line({"SPARK_HOME": other, "SPARK_REMOTE": "sc://127.0.0.1:15002"}, pyspark_version) == (
        f"SPARK_HOME  {other} (not used: sessions connect to SPARK_REMOTE)", True)
    assert spark_home_line({}, pyspark_version) == (None, True)
    # Another patch release of the same Spark works with it: said, not failed.
    patch = fake_spark_home(tmp_path / "spark-4.3.9", "4.3.9", release=True)
    assert spark_home_line({"SPARK_HOME": patch}, "4.3.0") == (
        f"SPARK_HOME  {patch}: Spark 4.3.9 (pyspark 4.3.0: another patch release of the same Spark)", True)
    pip_spark = str(SPARK_HOME)  # pip's pyspark: no RELEASE, its version in the core jar's name
    assert spark_home_line({"SPARK_HOME": pip_spark}, pyspark_version) == (
        f"SPARK_HOME  {pip_spark}: Spark {pyspark_version}", True)


def test_doctor_makes_the_checks_of_a_session_that_starts_a_connect_server():
    done = doctor({"SPARK_REMOTE": "local[2]", "WORKBENCH_CONNECT_PORT": "http"})
    with pytest.raises(SparkURLError) as raised:
        connect_port({"WORKBENCH_CONNECT_PORT": "http"})  # what the session raises
    assert done.returncode == 1
    assert f"spark       {raised.value}" in done.stdout.splitlines()
    port = free_port()
    done = doctor({"SPARK_REMOTE": "local[2]", "WORKBENCH_CONNECT_PORT": str(port)})
    assert ("spark       embedded local[2] (a local Spark Connect server started by pyspark)"
            in done.stdout.splitlines()), done.stdout
    with socket.create_server(("127.0.0.1", port)):  # another process's server holds the port
        done = doctor({"SPARK_REMOTE": "local[2]", "WORKBENCH_CONNECT_PORT": str(port)})
        with pytest.raises(ConnectPortInUseError) as raised:
            require_free_connect_port(port, "local[2]")
    assert done.returncode == 1
    [line] = [line for line in done.stdout.splitlines() if line.startswith("spark ")]
    # The same line, but for the free port it suggests, looked for again.
    assert line.partition("WORKBENCH_CONNECT_PORT=")[0] == f"spark       {raised.value}".partition(
        "WORKBENCH_CONNECT_PORT=")[0]
    assert line.startswith(f"spark       Spark Connect port {port} is in use by another process (pid {os.getpid()})")


NOTEBOOK = textwrap.dedent(
    """
    import time
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext workbench")
    started = time.monotonic()
    shell.run_cell("import workbench\\nspark = workbench.session()")
    shell.run_cell("%%stream numbers\\nselect * from range(3)")
    from pyspark import SparkContext
    print(f"took {time.monotonic() - started:.1f} s; JVM started: {SparkContext._gateway is not None}")
    """
)


def notebook_with(extra: dict[str, str]) -> tuple[list[str], float]:
    """Run a notebook's first cells with ``extra`` set; every line it printed, and the seconds taken."""
    done = subprocess.run([sys.executable, "-c", NOTEBOOK], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env=user_env(**extra))
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    took = re.fullmatch(r"took ([\d.]+) s; JVM started: False", lines[-1])
    assert took, lines
    return lines[:-1], float(took.group(1))


@pytest.mark.parametrize("variable, scheme, server", [
    ("WORKBENCH_MASTER", "spark", "master"),
    ("SPARK_REMOTE", "sc", "Spark Connect server"),
])
def test_an_unreachable_url_is_one_line_within_seconds(variable, scheme, server):
    url = f"{scheme}://127.0.0.1:{free_port()}"
    lines, took = notebook_with({variable: url})
    expected = f"SparkUnreachableError: cannot reach {url}: connection refused (is the {server} running? {variable} names it)"
    # The session cell and the %%stream cell (which needs the session) say the same one line.
    assert lines == [expected, expected]
    assert took < 30


def test_a_port_that_is_no_connect_server_is_one_line_within_seconds():
    # A master's port, or a web UI's, accepts the connection: pyspark's client then retried for
    # about ten minutes before it said anything.
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # accepts TCP connections (the kernel's backlog) and never answers
        url = f"sc://127.0.0.1:{listener.getsockname()[1]}"
        lines, took = notebook_with({"SPARK_REMOTE": url})
    expected = (f"SparkUnreachableError: {url} accepts connections but does not answer as a Spark Connect server "
                "within 5 s (a master's port, 7077, or a web UI's, 8080?): SPARK_REMOTE names the Connect server, by "
                "default on port 15002")
    assert lines == [expected, expected]
    assert took < 30


@pytest.mark.parametrize("variable, value, message", [
    ("WORKBENCH_MASTER", "spark:/127.0.0.1:7077", "is not a Spark master URL"),
    ("WORKBENCH_MASTER", "spark://127.0.0.1", "has no port"),
    ("SPARK_REMOTE", "sc://127.0.0.1:port", "has a bad port 'port'"),
])
def test_a_malformed_url_is_refused_before_anything_starts(variable, value, message):
    lines, took = notebook_with({variable: value})
    assert len(lines) == 2 and lines[0] == lines[1], lines
    assert lines[0].startswith(f"SparkURLError: {variable}={value!r} {message}: use ")
    assert took < 10


@pytest.mark.parametrize("variable, value, kind, endpoints", [
    ("WORKBENCH_MASTER", "local[*]", "embedded", ()),
    ("WORKBENCH_MASTER", "local-cluster[2,1,1024]", "embedded", ()),
    ("WORKBENCH_MASTER", "spark://a:7077,b:7078", "cluster", (("a", 7077), ("b", 7078))),
    ("WORKBENCH_MASTER", "yarn", "cluster", ()),
    ("WORKBENCH_MASTER", "k8s://https://kube:6443", "cluster", (("kube", 6443),)),
    ("SPARK_REMOTE", "sc://host", "connect", (("host", 15002),)),
    ("SPARK_REMOTE", "sc://host:1234/;token=abc", "connect", (("host", 1234),)),
    ("SPARK_REMOTE", "local[2]", "embedded", ()),
])
def test_urls_are_read_as_spark_reads_them(variable, value, kind, endpoints):
    target = spark_target({variable: value})
    assert (target.kind, target.url, target.endpoints, target.source) == (kind, value, endpoints, variable)


@pytest.mark.parametrize("value", ["spark://:7077", "spark://host:0", "spark://host:99999", "mesos://x:5050",
                                   "local[two]", "spark://host:7077/path"])
def test_malformed_masters(value):
    with pytest.raises(SparkURLError, match=re.escape(f"WORKBENCH_MASTER={value!r} ")):
        parse_master(value)


def test_connect_wins_and_an_explicit_master_beats_the_variable():
    assert spark_target({"SPARK_REMOTE": "sc://h", "WORKBENCH_MASTER": "spark://m:1"}).kind == "connect"
    target = spark_target({"WORKBENCH_MASTER": "spark://m:1"}, "local[1]")
    assert (target.url, target.source) == ("local[1]", "spark.master")
    with pytest.raises(SparkURLError, match="spark.master='nowhere'"):
        spark_target({}, "nowhere")


def test_unreachable_says_why():
    assert unreachable(parse_remote(f"sc://127.0.0.1:{free_port()}")) == "connection refused"
    assert unreachable(parse_master("spark://nonexistent.invalid:7077")).startswith("unknown host nonexistent.invalid")
    assert unreachable(parse_master("local[2]")) is None


@pytest.mark.spark
def test_checkpoint_root_from_the_session_or_the_environment(env, rate_stream, tmp_path, monkeypatch):
    from workbench.spark import CheckpointWarning, new_env

    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)  # local Spark: nothing to warn about
        env.session(checkpoint_root=tmp_path / "mine")
        handle = env.start(rate_stream(), "rooted", trigger="once")
        assert handle.wait_finished(60) and handle.status == "stopped"
    assert handle.checkpoint.startswith(f"{tmp_path}/mine/workbench-")
    assert os.path.isfile(os.path.join(handle.checkpoint, "commits", "0"))
    assert env.new_checkpoint("x").startswith(f"{tmp_path}/mine/workbench-")
    env.close()
    assert (tmp_path / "mine").is_dir(), "a checkpoint root is the user's: it stays"
    monkeypatch.setenv("WORKBENCH_CHECKPOINT_ROOT", "s3a://bucket/ckpt/")
    other = new_env()
    try:
        assert re.fullmatch(r"s3a://bucket/ckpt/workbench-[0-9a-f]{8}/x-1", other.new_checkpoint("x"))
        with pytest.raises(ValueError, match="checkpoint_root is empty"):
            other.session(checkpoint_root=" ")
    finally:
        other.close()
