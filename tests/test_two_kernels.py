"""Two notebooks at once: two real kernels on one machine, each with its own Spark.

Each kernel runs monitored streams (one of the same name in both) side by side. Checked
from outside (jupyter_client, /proc, sockets): separate Spark JVMs and Spark UIs on
different ports of 127.0.0.1, separate private temp and scratch folders (mode 0700), each
kernel's ``workbench.streams()`` lists only its own streams, and restarting one kernel (the
way Jupyter does, ``KernelManager.restart_kernel()``) leaves the other's streams making
batches. With ``SPARK_REMOTE=local[2]`` each kernel starts a Spark Connect server inside
itself; a second kernel asking for the same port gets one line naming the port, the
process holding it and ``WORKBENCH_CONNECT_PORT``, and with that variable set it starts its
own server next to the first.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest

from tests.cluster_support import free_port
from tests.helpers import alive, family_of, jvms_of
from tests.kernels import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

SETUP = """\
%load_ext workbench
import json, os, time, workbench
from pyspark.sql import functions as F
spark = workbench.session()
rate = spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 5).load()
"""

# Two streams with monitors: one named the same in both kernels, one named after the kernel.
STREAMS = """\
%%stream ticks --trigger 1 second
rate
"""

OWN = """\
%%stream {name} --mode complete --trigger 1 second
rate.groupBy((rate.value % 3).alias('k')).count()
"""

REPORT = """\
deadline = time.monotonic() + 180
while (min(h.progress.total for h in workbench.spark.current_env().handles()) < {batches}
       and time.monotonic() < deadline):
    time.sleep(0.1)
env = workbench.spark.current_env()
print(json.dumps({{
    'pid': os.getpid(),
    'temp_dir': str(env.temp_dir),
    'scratch': str(getattr(spark, '_workbench_scratch', '')),
    'ui': env.ui_web_url(),
    'streams': sorted(workbench.streams()['name']),
    'active': sorted(q.name for q in spark.streams.active),
    'batches': {{h.name: h.progress.total for h in env.handles()}},
}}))
"""


@pytest.fixture
def two_kernels(tmp_path):
    """Kernels A and B, started side by side; ``extra`` environment variables go to both."""
    with ExitStack() as stack:
        def make(**extra: str) -> tuple[Kernel, Kernel]:
            kernels = []
            for name in ("a", "b"):
                kernel = Kernel.start(tmp_path / name, **extra)
                stack.callback(kernel.close)
                kernels.append(kernel)
            return kernels[0], kernels[1]

        yield make


def report(kernel: Kernel, batches: int = 2) -> dict:
    facts = json.loads(kernel.stdout_of(kernel.run(REPORT.format(batches=batches), timeout=240)).strip().splitlines()[-1])
    assert min(facts["batches"].values()) >= batches, facts
    return facts


def listening_on_loopback_only(port: int) -> bool:
    """Whether ``port`` accepts connections on 127.0.0.1 and on no other local address."""
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    others = {a.address for addrs in psutil.net_if_addrs().values() for a in addrs
              if a.family == socket.AF_INET and not a.address.startswith("127.")}
    for address in others:
        try:
            with socket.create_connection((address, port), timeout=2):
                return False
        except OSError:
            pass
    return True


def assert_not_killed(process) -> None:
    """Exited by itself, or met Jupyter's SIGTERM (sent 2.5 s after the request) but never its SIGKILL.

    On this shared 2-core machine the interpreter's own exit sometimes outlasts the 2.5 s
    after the workbench's clean-up has ended (``tests/test_kernel_faults.py`` times that
    clean-up); what the kernel leaves is checked next.
    """
    assert process.returncode in (0, -signal.SIGTERM), f"the kernel ended with {process.returncode}"


def mode(path: str) -> int:
    return os.stat(path).st_mode & 0o777


def test_two_kernels_run_streams_side_by_side_and_a_restart_leaves_the_other_alone(two_kernels):
    a, b = two_kernels()
    for kernel, name in ((a, "only_a"), (b, "only_b")):
        kernel.run(SETUP, timeout=300)
        kernel.run(STREAMS, timeout=180)
        kernel.run(OWN.format(name=name), timeout=180)
    fa, fb = report(a), report(b)

    # Each kernel lists its own streams, and only those.
    assert fa["streams"] == fa["active"] == ["only_a", "ticks"], fa
    assert fb["streams"] == fb["active"] == ["only_b", "ticks"], fb
    # Separate JVMs, UIs on different ports of the loopback address, separate private folders.
    jvms_a = jvms_of(fa["pid"])
    jvms_b = jvms_of(fb["pid"])
    assert len(jvms_a) == len(jvms_b) == 1 and jvms_a != jvms_b
    ui_a, ui_b = urlsplit(fa["ui"]), urlsplit(fb["ui"])
    assert ui_a.hostname == ui_b.hostname == "127.0.0.1" and ui_a.port != ui_b.port, (fa["ui"], fb["ui"])
    assert listening_on_loopback_only(ui_a.port) and listening_on_loopback_only(ui_b.port)
    folders = [fa["temp_dir"], fb["temp_dir"], fa["scratch"], fb["scratch"]]
    assert len(set(folders)) == 4 and all(mode(folder) == 0o700 for folder in folders), folders

    # Restarting A, as Jupyter does, ends A's Spark and folders; B's streams keep making batches.
    before = report(b)["batches"]
    old_a = a.manager.provisioner.process
    a.manager.restart_kernel()
    assert_not_killed(old_a)
    deadline = time.monotonic() + 30
    while (alive(jvms_a[0]) or Path(fa["temp_dir"]).exists() or Path(fa["scratch"]).exists()) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(jvms_a[0]) and not Path(fa["temp_dir"]).exists() and not Path(fa["scratch"]).exists()
    after = report(b, batches=max(before.values()) + 3)
    assert after["active"] == ["only_b", "ticks"] and alive(jvms_b[0]), after
    assert all(after["batches"][name] > count for name, count in before.items()), (before, after["batches"])

    # The restarted A starts again beside B, and stopping A's streams leaves B's running.
    a.client.wait_for_ready(timeout=90)
    a.run(SETUP, timeout=300)
    a.run(STREAMS, timeout=180)
    fa = report(a)
    assert fa["streams"] == ["ticks"] and urlsplit(fa["ui"]).port != ui_b.port, fa
    a.run("%stream stop --all", timeout=120)
    later = report(b, batches=max(after["batches"].values()) + 2)
    assert later["active"] == ["only_b", "ticks"], later


def run_failing(kernel: Kernel, code: str, timeout: float = 120) -> list[str]:
    """Execute ``code``, which must fail; return the error's traceback lines as the notebook shows them."""
    msg_id = kernel.client.execute(code)
    deadline = time.monotonic() + timeout
    while True:
        msg = kernel.client.get_iopub_msg(timeout=max(1.0, deadline - time.monotonic()))
        kernel.messages.append(msg)
        if (msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == msg_id
                and msg["content"]["execution_state"] == "idle"):
            break
    errors = [m["content"] for m in kernel.outputs_of(msg_id) if m["msg_type"] == "error"]
    assert len(errors) == 1, errors
    return errors[0]["traceback"]


CONNECT_REPORT = """\
deadline = time.monotonic() + 180
while workbench.stream('ticks').progress.total < 2 and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({'kind': type(spark).__module__, 'pid': os.getpid(),
                  'streams': sorted(workbench.streams()['name']),
                  'batches': workbench.stream('ticks').progress.total}))
"""


@pytest.mark.xdist_group("connect-port")  # a local Spark Connect server on port 15002
def test_a_second_local_spark_connect_server_is_one_line_then_starts_on_its_own_port(two_kernels):
    port = free_port()  # not 15002: another program on the machine may use that one
    a, b = two_kernels(SPARK_REMOTE="local[2]", WORKBENCH_CONNECT_PORT=str(port))
    a.run(SETUP, timeout=400)
    a.run("%%stream ticks --no-monitor --trigger 1 second\nrate\n", timeout=240)
    fa = json.loads(a.stdout_of(a.run(CONNECT_REPORT, timeout=240)).strip().splitlines()[-1])
    assert fa["kind"] == "pyspark.sql.connect.session" and fa["batches"] >= 2, fa
    server = jvms_of(fa["pid"])
    assert len(server) == 1 and listening_on_loopback_only(port)

    # B asks for the same: one line, before any JVM starts, naming the port, its holder and the fix.
    shown = run_failing(b, "%load_ext workbench\nimport workbench\nworkbench.session()")
    assert len(shown) == 1, shown
    line = shown[0]
    assert line.startswith(f"ConnectPortInUseError: Spark Connect port {port} is in use by another process "
                           f"(pid {server[0]}), e.g. another notebook's SPARK_REMOTE=local[2] server, which serves "
                           "only its own kernel: set WORKBENCH_CONNECT_PORT="), line
    assert line.endswith(" to start one for this kernel, or SPARK_REMOTE=sc://HOST:PORT to use a shared server"), line
    suggested = int(line.split("WORKBENCH_CONNECT_PORT=", 1)[1].split()[0])
    assert suggested != port
    b_pid = b.manager.provisioner.process.pid
    assert "java" not in family_of(b_pid).values(), "the refused kernel started a JVM"

    # With the port it suggests, B gets its own server; both stream, each lists only its own.
    b.run(f"%env WORKBENCH_CONNECT_PORT={suggested}\n" + SETUP.replace("%load_ext workbench\n", ""), timeout=400)
    b.run("%%stream ticks --no-monitor --trigger 1 second\nrate\n", timeout=240)
    b.run("%%stream only_b --no-monitor --trigger 1 second\nrate\n", timeout=240)
    fb = json.loads(b.stdout_of(b.run(CONNECT_REPORT, timeout=240)).strip().splitlines()[-1])
    assert fb["streams"] == ["only_b", "ticks"] and fb["batches"] >= 2, fb
    assert listening_on_loopback_only(suggested)
    fa = json.loads(a.stdout_of(a.run(CONNECT_REPORT, timeout=240)).strip().splitlines()[-1])
    assert fa["streams"] == ["ticks"], fa

    # Shutting A down (Jupyter's way) ends its server and leaves B's streams running.
    old_a = a.manager.provisioner.process
    a.manager.shutdown_kernel()
    assert_not_killed(old_a)
    deadline = time.monotonic() + 30
    while alive(server[0]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(server[0])
    before = fb["batches"]
    again = json.loads(b.stdout_of(b.run(CONNECT_REPORT.replace("< 2", f"< {before + 3}"), timeout=240))
                       .strip().splitlines()[-1])
    assert again["batches"] >= before + 3 and again["streams"] == ["only_b", "ticks"], again


def test_the_port_holder_named_is_the_process_that_opened_the_port():
    """A child that inherited a listening socket holds it too; the one-line error names its opener."""
    import subprocess
    import sys

    from workbench._spark_target import _opener, port_holder

    # After process ids wrap around, an inheriting descendant may have a lower id than the
    # opener, also with a process between them that does not hold the socket.
    parents = {808: 900, 900: 32672, 32672: 32601, 32601: 1}
    assert _opener({808, 32672}, parents.get) == 32672
    assert _opener({32672}, parents.get) == 32672 and _opener(set(), parents.get) is None

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=[server.fileno()])
        try:
            inode = os.stat(server.fileno()).st_ino
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(
                    os.readlink(f"/proc/{child.pid}/fd/{fd}") == f"socket:[{inode}]"
                    for fd in os.listdir(f"/proc/{child.pid}/fd")):
                time.sleep(0.05)
            assert port_holder(port) == os.getpid()
        finally:
            child.kill()
            child.wait()
