"""Safe by default, checked from outside the processes: loopback only, private folders.

The listening sockets of the test process and of its Spark JVM are read from the operating
system (psutil, as ``ss -ltnp`` does) while a stream runs, so the Spark driver, its block
manager, its UI and pyspark's own servers are all covered, whatever port they chose.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from tests.helpers import wait_for

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent


def listening(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every TCP socket listening in these processes."""
    found = []
    for pid in pids:
        for conn in psutil.Process(pid).net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN:
                found.append((pid, conn.laddr.ip, conn.laddr.port))
    return found


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)  # Java reports IPv4 sockets as ::ffff:127.0.0.1
    return (mapped or ip).is_loopback


def session_jvm(spark) -> int:
    """The pid of the session's own JVM (other JVMs, e.g. a test cluster's, may run beside it)."""
    return spark.sparkContext._gateway.proc.pid


def mode(path) -> str:
    return oct(stat.S_IMODE(os.stat(path).st_mode))


def test_nothing_listens_outside_loopback_and_folders_are_private(env, spark, rate_stream):
    handle = env.start(rate_stream(), "safe", trigger="0.2 seconds")
    wait_for(lambda: handle.progress.total >= 1, message="a first batch")
    jvm = session_jvm(spark)
    assert psutil.Process(jvm).name() == "java"
    sockets = listening([os.getpid(), jvm])
    # Spark's driver RPC, block manager and UI, and py4j's gateway at least.
    assert len([s for s in sockets if s[0] == jvm]) >= 3, sockets
    assert [s for s in sockets if not is_loopback(s[1])] == []
    ui = spark.sparkContext.uiWebUrl
    assert ui is None or "127.0.0.1" in ui

    # The workbench's private folder and each stream's checkpoint.
    assert mode(env.temp_dir) == "0o700"
    assert mode(handle.checkpoint) == "0o700"
    assert mode(os.path.dirname(handle.checkpoint)) == "0o700"
    # Spark's scratch folder (shuffle and block files: the stream's data) is private and in use.
    scratch = spark._workbench_scratch
    assert mode(scratch) == "0o700" and spark.sparkContext.getConf().get("spark.local.dir") == str(scratch)
    assert any(entry.name.startswith("blockmgr-") for entry in scratch.iterdir()), list(scratch.iterdir())
    handle.stop()


#: A notebook's first cell in a process of its own: a local session, and what listens where then.
LOCAL_SESSION = textwrap.dedent("""
    import json, os
    import workbench
    from tests.test_safety import listening, session_jvm

    spark = workbench.session()
    print(json.dumps({"sockets": listening([os.getpid(), session_jvm(spark)]), "jvm": session_jvm(spark),
                      "ui": spark.sparkContext.uiWebUrl, "after": os.environ.get("SPARK_LOCAL_IP")}))
    spark.stop()
""")


@pytest.mark.kernel
def test_an_exported_spark_local_ip_does_not_take_the_local_spark_off_loopback():
    """A ``SPARK_LOCAL_IP`` exported for a cluster (this machine's network address) is overridden, in one line."""
    address = next((found.address for addresses in psutil.net_if_addrs().values() for found in addresses
                    if found.family == socket.AF_INET and not is_loopback(found.address)), None)
    if address is None:
        pytest.skip("this machine has no network address but loopback")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER")}
    done = subprocess.run([sys.executable, "-c", LOCAL_SESSION], capture_output=True, text=True, timeout=240, cwd=REPO,
                          env={**env, "SPARK_LOCAL_IP": address, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    sockets = report["sockets"]
    assert len([s for s in sockets if s[0] == report["jvm"]]) >= 3, sockets  # the UI among them
    assert [s for s in sockets if not is_loopback(s[1])] == []
    assert report["ui"] is None or "127.0.0.1" in report["ui"]
    assert report["after"] == address  # given back: what the kernel starts later (spark-submit) keeps it
    warned = [line for line in done.stderr.splitlines() if "SPARK_LOCAL_IP" in line]
    assert warned == [f"SPARK_LOCAL_IP={address} is not a loopback address: the embedded Spark binds 127.0.0.1 "
                      "instead, so that its driver and UI stay on this machine"], done.stderr[-3000:]
