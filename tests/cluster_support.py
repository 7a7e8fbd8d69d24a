"""Separate Spark processes for the cluster tests and the cluster benchmark.

:class:`SparkProcesses` starts, from the pip-installed pyspark alone, a standalone master
with one worker (``spark-class ...Master`` / ``...Worker``: the pip package ships no
``start-master.sh``) and a Spark Connect server (``spark-submit --class
...SparkConnectServer``), each in its own process group, everything bound to 127.0.0.1 on
free ports, their work folders and logs in one private temporary folder (mode 0700).
:meth:`SparkProcesses.close` ends each group (the worker's executors and their Python
workers included) and removes the folder, whatever state the tests left them in.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.suite import TEST_JVM_OPTIONS

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[1]

#: Most seconds a process may take to start listening (cold JVMs on a busy 2-core machine).
START_TIMEOUT = 120.0
#: The pytest-xdist group of every module that uses the ``spark_processes`` fixture
#: (tests/conftest.py): one worker runs them all, so the processes start once per run.
SPARK_PROCESSES_GROUP = "spark-processes"


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment as a user's shell would have it, plus ``extra``.

    Nothing the daemons need (``SPARK_HOME``, ``SPARK_LOCAL_IP``) leaks into the workbench's
    own processes: they must find their way with ``WORKBENCH_MASTER`` or ``SPARK_REMOTE`` alone.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER", "SPARK_LOCAL_IP")}
    return {**env, **extra, "PYTHONPATH": str(REPO)}


class SparkStartError(RuntimeError):
    """A Spark process did not come up; the message names it and ends with its log."""


#: Ports handed out by :func:`free_port`: below Linux's ephemeral range (32768-60999), so no
#: other process's outgoing connection or port-0 listener takes one between the probe and
#: the server that binds it (seen: a Spark of another test worker took a probed port).
_PORTS = range(20000, 32000)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now and the kernel never hands out itself."""
    import random

    picker = random.Random(f"{os.getpid()}-{time.monotonic_ns()}")
    for _ in range(200):
        port = picker.choice(_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_PORTS}")


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class SparkProcesses:
    """A standalone master + worker and a Spark Connect server, started on demand.

    Examples
    --------
    >>> spark = SparkProcesses()                          # doctest: +SKIP
    >>> spark.master_url                                  # doctest: +SKIP
    'spark://127.0.0.1:40123'
    >>> spark.close()                                     # doctest: +SKIP
    """

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="spark-cluster-")))
    processes: list[_Process] = field(default_factory=list)
    #: Every port given to a process (the tests check that none listens after close).
    ports: list[int] = field(default_factory=list)
    master_url: str | None = None
    master_ui: str | None = None
    connect_url: str | None = None

    def __post_init__(self) -> None:
        os.chmod(self.root, 0o700)
        conf_dir = self.root / "conf"
        conf_dir.mkdir(exist_ok=True)
        # An empty conf folder, so that no spark-defaults.conf or spark-env.sh of the
        # machine changes what the tests start.
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER", "PYSPARK_SUBMIT_ARGS")},
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(self.root / "local"),
            "PYSPARK_PYTHON": sys.executable,
            # The daemons' own heap: small, they only schedule; their JIT as the suite's JVMs'.
            "SPARK_DAEMON_MEMORY": "512m",
            "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_OPTIONS,
        }

    # -- starting ---------------------------------------------------------------------------------

    def _port(self) -> int:
        port = free_port()
        self.ports.append(port)
        return port

    def _spawn(self, name: str, command: list[str]) -> _Process:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            # Own process group: the JVM, and everything it spawns (executors, Python
            # workers), can be ended together with one signal.
            popen = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=self.env, cwd=self.root, start_new_session=True, preexec_fn=_end_with_parent,
            )
        process = _Process(name, popen, log)
        self.processes.append(process)
        return process

    def _await(self, process: _Process, port: int, ready: str | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                raise SparkStartError(
                    f"the Spark {process.name} exited with {process.popen.returncode} before listening on "
                    f"127.0.0.1:{port}; its log ends:\n{process.tail()}"
                )
            if listening(port) and (ready is None or ready in process.log.read_text(errors="replace")):
                return
            time.sleep(0.25)
        raise SparkStartError(
            f"the Spark {process.name} did not listen on 127.0.0.1:{port} within {START_TIMEOUT:.0f} s; "
            f"its log ends:\n{process.tail()}"
        )

    def start_cluster(self, cores: int = 2, memory: str = "2g") -> str:
        """Start the master and one worker (once); return the master URL."""
        if self.master_url is not None:
            return self.master_url
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        port, ui_port = self._port(), self._port()
        master = self._spawn("master", [
            spark_class, "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port),
        ])
        self._await(master, port)
        url = f"spark://127.0.0.1:{port}"
        work_dir = self.root / "worker"
        work_dir.mkdir()
        worker = self._spawn("worker", [
            spark_class, "org.apache.spark.deploy.worker.Worker", url,
            "--host", "127.0.0.1", "--port", str(self._port()), "--webui-port", str(self._port()),
            "--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir),
        ])
        # Listening is not enough: a driver that comes before the worker registered waits.
        self._await(worker, port, ready="Successfully registered with master")
        self.master_url, self.master_ui = url, f"http://127.0.0.1:{ui_port}"
        return url

    def start_connect(self, master: str = "local[2]") -> str:
        """Start a Spark Connect server (once) on a free port; return its ``sc://`` URL."""
        if self.connect_url is not None:
            return self.connect_url
        port = self._port()
        server = self._spawn("connect server", [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--name", "workbench test Connect server",
            "--master", master,
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", f"spark.ui.port={self._port()}",
            "--conf", "spark.sql.shuffle.partitions=2",
            "--conf", "spark.sql.adaptive.enabled=false",
            "--conf", f"spark.sql.warehouse.dir={self.root / 'warehouse'}",
            "--conf", "spark.ui.showConsoleProgress=false",
        ])
        self._await(server, port)
        self.connect_url = f"sc://127.0.0.1:{port}"
        return self.connect_url

    # -- ending -----------------------------------------------------------------------------------

    def close(self) -> None:
        """End every process group (TERM, then KILL after 20 s) and remove the folder."""
        for process in reversed(self.processes):
            _end_group(process.popen)
        self.processes.clear()
        self.master_url = self.connect_url = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SparkProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _end_with_parent() -> None:
    # A safety net for a killed test run, which never reaches close(): Linux sends the
    # daemon SIGTERM when this process ends, and a worker ends its executors on SIGTERM.
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _end_group(popen: subprocess.Popen, grace: float = 20.0) -> None:
    try:
        os.killpg(popen.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        popen.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    # The group may outlive its leader (an executor the worker started): kill what is left.
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if popen.poll() is None:
        popen.wait(10)
