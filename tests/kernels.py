"""Real Jupyter kernels for the tests and the benchmarks that drive one.

A :class:`Kernel` is started by jupyter_client's ``KernelManager`` (the manager JupyterLab
uses) with its own Jupyter and IPython folders, the project on ``PYTHONPATH`` and none of the
variables that would point the workbench at a cluster or a Connect server. It records every
iopub message, so a test can read a cell's outputs after the fact.
"""

from __future__ import annotations

import json
import os
import queue
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error", "update_display_data")
#: Not passed on to a kernel: pytest's marker (ipykernel would not forward the JVM's stderr to
#: the notebook under it) and whatever would send the workbench away from its embedded Spark.
DROPPED = ("PYTEST_CURRENT_TEST", "SPARK_REMOTE", "WORKBENCH_MASTER", "WORKBENCH_CONNECT_PORT")


def kernel_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a test's kernel: Jupyter folders in ``home``, the project importable.

    Also for kernels other tools start (nbclient's ``execute(env=...)``).
    """
    home.mkdir(parents=True, exist_ok=True)
    return {
        **{k: v for k, v in os.environ.items() if k not in DROPPED},
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        **extra,
    }


class Kernel:
    """A kernel and every iopub message it sent, in arrival order."""

    def __init__(self, manager, client) -> None:
        self.manager, self.client = manager, client
        self.messages: list[dict] = []

    @classmethod
    def start(cls, home: Path, *, timeout: float = 90.0, **extra: str) -> Kernel:
        """Start a kernel whose Jupyter folders live in ``home``; ``extra`` adds environment variables.

        The kernel listens on IPC sockets in ``home``, not on TCP ports: a restart binds the
        same addresses again, and a TCP port left free for those seconds can be taken by
        another process (the other pytest worker's kernels and JVMs), whose messages the
        client would then reject as badly signed.
        """
        from jupyter_client.manager import KernelManager

        env = kernel_env(home, **extra)
        manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(home / "kernel"))
        manager.start_kernel(env=env)
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=timeout)
        except BaseException:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
            raise
        return cls(manager, client)

    def close(self) -> None:
        """End the kernel (at once) if it still runs, and its channels."""
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=True)
        self.client.stop_channels()
        self.manager.cleanup_resources()

    def send(self, code: str) -> str:
        """Start executing ``code`` and return its message id without waiting."""
        return self.client.execute(code)

    def wait(self, msg_id: str, timeout: float = 60.0, what: str = "the cell") -> dict:
        """Collect iopub until cell ``msg_id`` is idle again; return its shell reply's content."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{what} did not finish in {timeout:.0f} s"
            try:
                msg = self.client.get_iopub_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            self.messages.append(msg)
            if (msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == msg_id
                    and msg["content"]["execution_state"] == "idle"):
                break
        reply = self.client.get_shell_msg(timeout=10)
        while reply["parent_header"].get("msg_id") != msg_id:  # e.g. a late kernel_info reply
            reply = self.client.get_shell_msg(timeout=10)
        return reply["content"]

    def run(self, code: str, timeout: float = 60.0) -> str:
        """Execute ``code`` until the kernel is idle again, assert it succeeded; return the msg id."""
        msg_id = self.send(code)
        reply = self.wait(msg_id, timeout, what=f"cell {code!r}")
        errors = [m["content"] for m in self.outputs_of(msg_id) if m["msg_type"] == "error"]
        assert reply["status"] == "ok", errors or reply
        return msg_id

    def printed(self, code: str, timeout: float = 60.0) -> str:
        """What ``code`` printed on stdout (it must succeed)."""
        return self.stdout_of(self.run(code, timeout))

    def outputs_of(self, msg_id: str) -> list[dict]:
        return [m for m in self.messages
                if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] in OUTPUT_TYPES]

    def stdout_of(self, msg_id: str) -> str:
        return "".join(m["content"]["text"] for m in self.outputs_of(msg_id)
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    def text_of(self, msg_id: str) -> str:
        parts = []
        for m in self.outputs_of(msg_id):
            content = m["content"]
            parts.append(content.get("text", ""))
            parts.append(json.dumps(content.get("data", {})))
            parts.extend(content.get("traceback", []))
        return "\n".join(parts)


#: A kernel as busy as a user's: two streams (one with a Python UDF, so Spark runs Python
#: workers), their monitors and a playing replay panel; the workbench logs to a file.
BUSY_CELLS = [
    """\
%load_ext workbench
import json, logging, os, time, workbench
_log = logging.FileHandler({log!r})
_log.setFormatter(logging.Formatter('%(created).3f %(name)s %(message)s'))
logging.getLogger('workbench').addHandler(_log)
logging.getLogger('workbench').setLevel({level!r})
from pyspark.sql import functions as F
from workbench.replay.spec import Replay, WindowCount
spark = workbench.session()
rate = spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 5).load()
doubled = rate.select(F.udf(lambda v: v * 2, 'long')('value').alias('doubled'))  # Python workers
""",
    "%%stream doubled --trigger 0.3 seconds\ndoubled\n",
    "%%stream per_key --mode complete --trigger 0.3 seconds\nrate.groupBy((rate.value % 3).alias('k')).count()\n",
    """\
panel = workbench.replay_panel(Replay(rows_per_batch=5), WindowCount(window='5 minutes', watermark='10 minutes'),
                               name='replayed', output_mode='update')
display(panel)
panel.play(2.0)
deadline = time.monotonic() + 180
while (min(h.progress.total for h in workbench.spark.current_env().handles()) < 2
       or panel.run.progress.total < 2) and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({'temp_dir': str(workbench.spark.current_env().temp_dir),
                  'scratch': str(spark._workbench_scratch),
                  'batches': {h.name: h.progress.total for h in workbench.spark.current_env().handles()},
                  'replayed': panel.run.progress.total}))
""",
]


#: The same, in a kernel that never loads the magics: the streams started and shown from Python.
BUSY_CELLS_WITHOUT_MAGICS = [
    BUSY_CELLS[0].replace("%load_ext workbench\n", ""),
    "display(workbench.start(doubled, 'doubled', trigger='0.3 seconds'))\n",
    "display(workbench.start(rate.groupBy((rate.value % 3).alias('k')).count(), 'per_key', output_mode='complete',\n"
    "                        trigger='0.3 seconds'))\n",
    BUSY_CELLS[3],
]


def start_busy(kernel: Kernel, log: Path, level: str = "INFO", magics: bool = True) -> dict:
    """Run :data:`BUSY_CELLS` (:data:`BUSY_CELLS_WITHOUT_MAGICS` when not ``magics``) in
    ``kernel``; return where its folders are and how far it got.

    Every stream and the replay have run at least two batches when it returns.
    """
    facts: dict = {}
    for cell in BUSY_CELLS if magics else BUSY_CELLS_WITHOUT_MAGICS:
        printed = kernel.printed(cell.replace("{log!r}", repr(str(log))).replace("{level!r}", repr(level)), timeout=240)
        if printed.strip():
            facts = json.loads(printed.strip().splitlines()[-1])
    assert min(facts["batches"].values()) >= 2 and facts["replayed"] >= 2, facts
    return facts
