"""``%%stream --sink console`` in a real Jupyter kernel (a separate process, driven by jupyter_client).

What a user sees, and how the test observes it: the starting cell displays an ipywidgets
``Output`` widget (a ``display_data`` message whose parent is that cell's execute request,
carrying the widget's model id). Every micro-batch is appended to that widget, which the
kernel sends as ``comm_msg`` ``update`` messages carrying the widget's whole ``outputs``
list. Jupyter front ends render a widget where its view was displayed, whatever the
parent of later ``comm_msg`` updates, so the text belongs to the starting cell. The test
therefore asserts that

* the Output widget displayed by the starting cell receives every ``Batch: N`` table, in
  order, including the batches that ran while a later cell was sleeping;
* nothing that the front end would put under the later cells (``stream``,
  ``display_data``, ``execute_result`` or ``error`` messages whose parent is one of
  them) contains ``Batch:``,
  and no ``stream`` message anywhere does (the JVM's console sink would print there);
* shutting the kernel down ends the process by itself, its Spark JVM with it, and the
  workbench's exit hook runs (its temporary folder is gone).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.helpers import alive
from tests.kernels import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

@pytest.fixture
def kernel(tmp_path):
    kernel = Kernel.start(tmp_path / "jupyter")
    try:
        yield kernel
    finally:
        kernel.close()


def widget_model_ids(messages: list[dict]) -> list[str]:
    return [m["content"]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
            for m in messages
            if "application/vnd.jupyter.widget-view+json" in m["content"].get("data", {})]


def output_updates(messages: list[dict], model_id: str) -> list[tuple[int, str, int]]:
    """(arrival index, text shown, message size) for every children update of the console box ``model_id``.

    Each batch arrives as its own ``Output`` widget (opened with just that batch's text); the box's
    update lists the batches shown, so the text shown is theirs in that order.
    """
    texts: dict[str, str] = {}
    updates = []
    for index, m in enumerate(messages):
        content = m["content"]
        state = content.get("data", {}).get("state", {})
        if m["msg_type"] == "comm_open" and state.get("_model_name") == "OutputModel":
            texts[content["comm_id"]] = "".join(o.get("text", "") for o in state.get("outputs", []))
        elif m["msg_type"] == "comm_msg" and content.get("comm_id") == model_id and "children" in state:
            text = "".join(texts.get(child.removeprefix("IPY_MODEL_"), "") for child in state["children"])
            updates.append((index, text, len(json.dumps(content))))
    return updates


def batch_widget_texts(messages: list[dict]) -> list[str]:
    """The text each new per-batch Output widget was opened with."""
    return ["".join(o.get("text", "") for o in m["content"]["data"]["state"].get("outputs", []))
            for m in messages
            if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "jupyter.widget"
            and m["content"]["data"]["state"].get("_model_name") == "OutputModel"]


def batch_ids(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^Batch: (\d+)$", text, flags=re.MULTILINE)]


def test_console_batches_stay_under_the_starting_cell_and_shutdown_stops_everything(kernel):
    setup = kernel.run(
        "%load_ext workbench\n"
        "import os, workbench\n"
        "spark = workbench.session()\n"
        "temp_dir = str(workbench.spark.current_env().temp_dir)\n"
        "def _children(pid):\n"
        "    found = []\n"
        "    for entry in os.listdir('/proc'):\n"
        "        try:\n"
        "            stat = open(f'/proc/{entry}/stat').read()\n"
        "        except OSError:\n"
        "            continue\n"
        "        if entry.isdigit() and stat.rsplit(')', 1)[1].split()[1] == str(pid):\n"
        "            found.append(int(entry))\n"
        "    return found\n"
        "print(json.dumps({'temp_dir': temp_dir, 'children': _children(os.getpid())}))"
        .replace("import os, workbench", "import json, os, workbench"),
        timeout=90,
    )
    facts = json.loads(kernel.stdout_of(setup).strip().splitlines()[-1])
    assert facts["children"], "the kernel should have started a Spark JVM"

    start = kernel.run(
        "%%stream ticks --sink console --rows 3 --trigger 0.3 seconds --no-monitor\n"
        "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 3).load()\n",
        timeout=60,
    )
    models = widget_model_ids(kernel.outputs_of(start))
    assert len(models) == 1, "the starting cell displays one console widget"
    console = models[0]
    opened = [m for m in kernel.messages if m["msg_type"] == "comm_open" and m["content"]["comm_id"] == console]
    assert opened and opened[0]["content"]["data"]["state"]["_model_name"] == "VBoxModel"
    status = kernel.stdout_of(start)
    assert "stream 'ticks' active: console sink" in status

    # The first micro-batch of a fresh JVM takes seconds: wait for it, then sleep through more.
    waiter = kernel.run(
        "import time\n"
        "deadline = time.monotonic() + 60\n"
        "while workbench.stream('ticks').progress.total < 1 and time.monotonic() < deadline:\n"
        "    time.sleep(0.1)\n",
        timeout=70,
    )
    before_sleep = len(kernel.messages)
    # A busy cell while more batches arrive (waiting on batches, not a fixed time: a loaded
    # machine runs fewer batches per second).
    sleeper = kernel.run(
        "deadline = time.monotonic() + 90\n"
        "while workbench.stream('ticks').progress.total < 6 and time.monotonic() < deadline:\n"
        "    time.sleep(0.1)\n",
        timeout=100,
    )
    stop = kernel.run(
        "%stream stop --all\n"
        "print(json.dumps({'statuses': sorted(set(workbench.streams()['status'])), "
        "'active': len(spark.streams.active)}))",
        timeout=60,
    )
    after_stop = json.loads(kernel.stdout_of(stop).strip().splitlines()[-1])
    assert after_stop == {"statuses": ["stopped"], "active": 0}

    # Every batch is in the starting cell's Output widget, in order, with --rows 3.
    updates = output_updates(kernel.messages, console)
    assert updates, "no console text reached the Output widget"
    final = updates[-1][1]
    ids = batch_ids(final)
    assert ids == list(range(len(ids))) and len(ids) >= 5, ids
    for _, text, _ in updates:  # each update extends the previous text: batches arrive in order
        assert final.startswith(text)
    # Only the new batch travels: each batch widget holds one table, and the box's updates stay
    # small instead of re-sending every earlier table (they grew from 279 to 7,938 bytes before).
    assert all(len(batch_ids(text)) == 1 for text in batch_widget_texts(kernel.messages))
    assert all(size < 500 + 60 * len(batch_ids(text)) for _, text, size in updates), [u[2] for u in updates]
    batch_1 = final.split("Batch: 1\n", 1)[1].split("Batch: 2\n", 1)[0]
    assert re.search(r"\|\s+3\|", batch_1) and re.search(r"\|\s+5\|", batch_1)
    # Batches kept arriving in cell 1's widget while cell 2 ran.
    during_sleep = [text for index, text, _ in updates if index > before_sleep and
                    index < next(i for i, m in enumerate(kernel.messages)
                                 if m["parent_header"].get("msg_id") == stop)]
    assert during_sleep and len(batch_ids(during_sleep[-1])) - len(batch_ids(updates[0][1])) >= 3

    # Nothing under the sleeping cell, and no console text printed as plain stream output. After
    # a cell the console's own output (by its display id) gains the batches as text, for
    # viewers without the widget: an update of the starting cell's output, not under this one.
    [shown] = [m for m in kernel.outputs_of(start) if m["msg_type"] == "display_data"]
    for cell in (sleeper, waiter):
        updates_after = [m for m in kernel.outputs_of(cell) if m["msg_type"] == "update_display_data"]
        assert all(m["content"]["transient"]["display_id"] == shown["content"]["transient"]["display_id"]
                   for m in updates_after)
        under = [m for m in kernel.outputs_of(cell) if m["msg_type"] != "update_display_data"]
        assert not under and "Batch:" not in json.dumps([m["content"] for m in under])
    assert not any("Batch:" in m["content"].get("text", "") for m in kernel.messages if m["msg_type"] == "stream")

    # Stopping a console stream mid-batch often makes the JVM print a ~1,000-line
    # StackOverflowError to its stderr (not every time: after four tries the JVM writes a line
    # of its own to its stderr instead): it goes to the JVM's log, none of it reaches the
    # notebook, and the kernel's own stderr lines still do.
    walls = kernel.run(
        "import sys, time\n"
        "noise = sys.stderr._workbench_noise\n"
        "for attempt in range(4):\n"
        "    fast = workbench.start(spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 50).load(),\n"
        "                           'fast', sink='console', console=lambda text: None)\n"
        "    deadline = time.monotonic() + 60\n"
        "    while fast.progress.total < 2 and time.monotonic() < deadline:\n"
        "        time.sleep(0.05)\n"
        "    fast.stop(grace=0)\n"
        "    time.sleep(1)\n"
        "    if 'StackOverflowError' in workbench.spark_log().read_text():\n"
        "        break\n"
        "else:\n"
        "    spark.sparkContext._jvm.java.lang.System.err.println('java.lang.StackOverflowError (a JVM stderr line)')\n"
        "    time.sleep(1)\n"
        "print('a real error line', file=sys.stderr)\n"
        "print(json.dumps({'in_log': 'StackOverflowError' in workbench.spark_log().read_text(),\n"
        "                  'dropped': noise.dropped, 'watching': sys.stderr._fid is not None,\n"
        "                  'pytest': 'PYTEST_CURRENT_TEST' in os.environ}))",
        timeout=300,
    )
    report = json.loads(kernel.stdout_of(walls).strip().splitlines()[-1])
    assert report["in_log"], report
    stderr_texts = [m["content"]["text"] for m in kernel.messages
                    if m["msg_type"] == "stream" and m["content"].get("name") == "stderr"]
    assert "a real error line" in "".join(stderr_texts)
    assert not any("StackOverflowError" in text or "java.util.regex" in text for text in stderr_texts)

    # Running a console cell again replaces its console: the replaced one's widgets close and
    # it no longer runs after every cell (each run used to leave its widgets and two hooks).
    counting = ("from ipywidgets.widgets import widget as _widget\n"
                "from workbench.views.static_output import StaticOutput\n"
                "_hooks = get_ipython().events.callbacks['post_execute']\n"
                "print(json.dumps({'widgets': len(_widget._instances), 'hooks': len(_hooks),\n"
                "                  'outputs': sum(isinstance(getattr(h, '__self__', None), StaticOutput)\n"
                "                                 for h in _hooks)}))")
    # As on a page that draws the widgets (this harness has none, so a console would keep its
    # hook to bring its view back once one does).
    kernel.run("from workbench.views.static_output import StaticOutput\nStaticOutput.page_seen_in_process = True")
    counts = []
    for _ in range(3):
        kernel.run("%%stream ticks --sink console --trigger once --no-monitor\n"
                   "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 3).load()\n", timeout=60)
        kernel.run("assert workbench.stream('ticks').wait_finished(60)", timeout=70)
        counts.append(json.loads(kernel.stdout_of(kernel.run(counting, timeout=30)).strip().splitlines()[-1]))
    assert counts[0] == counts[1] == counts[2], counts
    # Nor does a console whose stream has ended: the cell after the end publishes its text once more.
    assert counts[0]["outputs"] == 0, counts

    # A stream still running at shutdown: the kernel exits by itself and takes Spark along.
    kernel.run(
        "%%stream again --trigger 0.3 seconds --no-monitor\n"
        "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 3).load()\n",
        timeout=60,
    )
    # Jupyter servers kill a kernel that has not exited a few seconds after the request
    # (shutdown_wait_time, 5 s by default), and then no exit hook runs. Without the
    # workbench's shutdown hook ipykernel waited ~29 s here for the unreaped Spark JVM.
    process = kernel.manager.provisioner.process
    kernel.client.shutdown()
    deadline = time.monotonic() + 10
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process.poll() == 0, "the kernel did not exit cleanly by itself soon after a shutdown request"
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in facts["children"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in facts["children"]), "the Spark JVM outlived its kernel"
    assert not Path(facts["temp_dir"]).exists(), "the workbench's exit hook did not run"
