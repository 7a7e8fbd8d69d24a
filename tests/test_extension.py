"""The JupyterLab extension as shipped, and the kernel side of the Streams panel and Spark UI.

* The built extension (``workbench/labextension``) and the installed copy JupyterLab loads
  were built from the sources now in ``extensions/`` (the build records their hash; here it
  is recomputed in Python), and ``jupyter labextension list`` shows it enabled and OK.
* ``package.json`` keeps the choices the page depends on: plotly.js pinned to the version
  plotly.py ships and built as a chunk of its own, ``@jupyter-widgets/base`` shared.
* Pure tests of the Spark UI button model and helpers, of the ``workbench.streams`` comm's
  messages, its throttle (injected clock) and its stop command; one snapshot of a real
  stream on Spark.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import _labext
from workbench.views.sparkui import NO_UI_REASON, SparkUIButton, statistics_path, ui_port

REPO = Path(__file__).resolve().parent.parent
EXTENSIONS = REPO / "extensions"
PLOTLY_JS = "4.1.1"  # what plotly.py 7.1 ships; the extension must use the same

# ---------------------------------------------------------------------------------------------
# The build and the installed copy
# ---------------------------------------------------------------------------------------------


def test_build_matches_its_sources():
    recorded = _labext.recorded_hash(_labext.BUILD_DIR)
    assert recorded is not None, f"no built extension in {_labext.BUILD_DIR}: {_labext.REBUILD_HINT}"
    assert recorded == _labext.source_hash(EXTENSIONS), (
        f"{_labext.BUILD_DIR} was built from other sources than extensions/ holds: {_labext.REBUILD_HINT}"
    )


def test_installed_copy_is_current_and_enabled():
    status = _labext.labextension_status()
    assert status.installed, f"JupyterLab finds no {_labext.LABEXTENSION_NAME} extension: {_labext.REBUILD_HINT}"
    assert status.enabled, f"the extension is disabled: jupyter labextension enable {_labext.LABEXTENSION_NAME}"
    assert status.version == json.loads((EXTENSIONS / "package.json").read_text())["version"]
    assert status.stale is False, f"{status.path} is stale: {_labext.REBUILD_HINT}"


def test_jupyter_labextension_list_shows_it_enabled():
    done = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                          capture_output=True, text=True, timeout=60, check=False)
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert re.search(r"spark-streaming-workbench v0\.1\.0 enabled\s+OK \(python, spark-streaming-workbench\)", text), text


def test_source_hash_follows_every_source_file(tmp_path):
    copy = tmp_path / "extensions"
    for name in _labext.source_files(EXTENSIONS):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EXTENSIONS / name, copy / name)
    assert _labext.source_hash(copy) == _labext.source_hash(EXTENSIONS)
    assert {"package.json", "package-lock.json", "src/index.ts", "schema/streams.json", "style/base.css"} <= set(
        _labext.source_files(copy))
    (copy / "style" / "base.css").write_text("/* changed */", encoding="utf-8")
    assert _labext.source_hash(copy) != _labext.source_hash(EXTENSIONS)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed")
def test_node_and_python_compute_the_same_source_hash():
    done = subprocess.run(["node", str(EXTENSIONS / "scripts" / "source-hash.mjs")],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split()[0] == _labext.source_hash(EXTENSIONS)


def test_doctor_line_and_disabled_extension(tmp_path):
    data, config = tmp_path / "data", tmp_path / "config"
    assert not _labext.labextension_status([str(data)], [str(config)]).installed
    target = data / "labextensions" / _labext.LABEXTENSION_NAME
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps({"version": "0.1.0"}))
    status = _labext.labextension_status([str(data)], [str(config)], source_dir=tmp_path / "none")
    assert (status.installed, status.enabled, status.version, status.stale) == (True, True, "0.1.0", None)
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {_labext.LABEXTENSION_NAME: True}}))
    status = _labext.labextension_status([str(data)], [str(config)], source_dir=EXTENSIONS)
    assert not status.enabled and status.stale is True  # no build-source.json: not built from these sources
    line = _labext.doctor_line(status)
    assert "disabled (jupyter labextension enable spark-streaming-workbench)" in line
    assert "rebuild with" in line


def test_package_json_choices():
    package = json.loads((EXTENSIONS / "package.json").read_text())
    assert (package["name"], package["version"]) == ("spark-streaming-workbench", "0.1.0")
    assert package["dependencies"]["plotly.js-dist-min"] == PLOTLY_JS
    lab = package["jupyterlab"]
    assert lab["outputDir"] == "../workbench/labextension"
    assert lab["sharedPackages"]["@jupyter-widgets/base"] == {"bundled": False, "singleton": True}
    lock = json.loads((EXTENSIONS / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/plotly.js-dist-min"]["version"] == PLOTLY_JS


def test_plotly_js_matches_plotly_py():
    import plotly

    bundled = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    head = bundled.read_text(encoding="utf-8", errors="replace")[:300]
    assert f"v{PLOTLY_JS}" in head, f"plotly.py ships another plotly.js: {head[:120]!r}"


def test_plotly_js_is_a_chunk_of_its_own():
    static = _labext.BUILD_DIR / "static"
    package = json.loads((_labext.BUILD_DIR / "package.json").read_text())
    entry = static / Path(package["jupyterlab"]["_build"]["load"]).name
    chunks = {path: path.read_text(encoding="utf-8", errors="replace") for path in static.glob("*.js")}
    plotly_chunks = [path for path, text in chunks.items() if f'version="{PLOTLY_JS}"' in text]
    assert len(plotly_chunks) == 1, f"plotly.js {PLOTLY_JS} is in {len(plotly_chunks)} chunks"
    plotly_chunk = plotly_chunks[0]
    assert plotly_chunk != entry
    assert "workbench:open-spark-ui" not in chunks[plotly_chunk], "plotly.js is bundled with the plugins"
    assert plotly_chunk.stat().st_size > 3_000_000


# ---------------------------------------------------------------------------------------------
# The Spark UI button's model and helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "port"), [
    ("http://127.0.0.1:4040", 4040), ("http://localhost:4041/", 4041), (" http://[::1]:4050 ", 4050),
    (None, 0), ("", 0), ("http://127.0.0.1", 0), ("http://host:99999", 0), ("not a url", 0),
])
def test_ui_port(url, port):
    assert ui_port(url) == port


def test_statistics_path_quotes_the_run_id():
    assert statistics_path("a b/c") == "/StreamingQuery/statistics/?id=a%20b%2Fc"


def test_spark_ui_button_model():
    button = SparkUIButton()
    state = button.get_state()
    assert state["_model_module"] == "anywidget" and "needs JupyterLab" in state["_esm"]
    assert len(state["_esm"]) < 4_000  # the button alone; the Spark UI tab is the extension's
    assert (state["port"], state["path"], state["reason"]) == (0, "/", NO_UI_REASON)
    button.port, button.path = 4040, statistics_path("r")
    assert button.get_state()["path"] == "/StreamingQuery/statistics/?id=r"
    with pytest.raises(ValueError, match="TCP port"):
        button.port = 70000
    with pytest.raises(ValueError, match="must start with '/'"):
        button.path = "StreamingQuery/"
    button.close()


# ---------------------------------------------------------------------------------------------
# The kernel side of the Streams panel: the workbench.streams comm
# ---------------------------------------------------------------------------------------------

import threading  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402

from workbench.progress import BatchProgress, ProgressHistory  # noqa: E402
from workbench.views.streams_panel import (  # noqa: E402
    COMM_TARGET, GAP_POINTS, StreamsPublisher, current_cell_id, gap_seconds,
)

STREAM_KEYS = {"name", "id", "run_id", "status", "batches", "last_batch_id", "watermark",
               "input_rows_per_second", "gap_seconds", "error", "sink", "cell_id", "spark_ui"}
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def batch(batch_id: int, gap: float | None = 10.0, rate: float = 5.0) -> BatchProgress:
    """A progress record whose newest event time is ``gap`` seconds past its watermark."""
    newest = T0 + timedelta(seconds=batch_id)
    event_time = {"max": newest.isoformat().replace("+00:00", "Z")}
    event_time["watermark"] = ("1970-01-01T00:00:00.000Z" if gap is None
                               else (newest - timedelta(seconds=gap)).isoformat().replace("+00:00", "Z"))
    return BatchProgress.from_json({"batchId": batch_id, "numInputRows": 5, "inputRowsPerSecond": rate,
                                    "durationMs": {"triggerExecution": 10}, "eventTime": event_time})


class RecordedStream:
    """A stream known only by its recorded progress: the StreamLike protocol, without Spark.

    ``status`` and ``error`` refuse to be read before the stream has finished, as reading
    them then would ask Spark.
    """

    def __init__(self, name: str, sink: str = "memory") -> None:
        self.name, self.sink = name, sink
        self.id, self.run_id = f"{name}-id", f"{name}-run"
        self.progress = ProgressHistory()
        self._final: tuple[str, str | None] | None = None
        self._callbacks: list = []
        self.stop_threads: list[str] = []
        self.stop_error: Exception | None = None  # what stop() raises (Spark could not stop it)
        self.release = threading.Event()
        self.release.set()

    @property
    def finished(self) -> bool:
        return self._final is not None

    @property
    def status(self) -> str:
        assert self._final is not None, "status read while the stream runs (that would call Spark)"
        return self._final[0]

    @property
    def error(self) -> str | None:
        assert self._final is not None, "error read while the stream runs (that would call Spark)"
        return self._final[1]

    def on_finished(self, callback) -> None:
        if self._final is not None:  # as a StreamHandle: at once when it has already ended
            callback(self)
            return
        self._callbacks.append(callback)

    def finish(self, status: str = "stopped", error: str | None = None) -> None:
        self._final = (status, error)
        for callback in self._callbacks:
            callback(self)

    def stop(self) -> None:
        self.stop_threads.append(threading.current_thread().name)
        self.release.wait(10)
        if self.stop_error is not None:
            raise self.stop_error
        self.finish()


class Streams:
    """Workbench state holding recorded streams (the EnvLike protocol)."""

    def __init__(self, *streams: RecordedStream, ui_url: str | None = "http://127.0.0.1:4040") -> None:
        self.streams = {s.name: s for s in streams}
        self.on_stream_started: list = []
        self.ui_url = ui_url

    def handles(self):
        return list(self.streams.values())

    def get(self, name):
        if name not in self.streams:
            raise ValueError(f"no stream named {name!r} (streams: {', '.join(self.streams) or 'none'})")
        return self.streams[name]

    def ui_web_url(self):
        return self.ui_url

    def start(self, stream: RecordedStream) -> None:
        self.streams[stream.name] = stream
        for callback in list(self.on_stream_started):
            callback(stream)


class RecordingComm:
    """Records what the kernel sends, and when (by ``clock``)."""

    def __init__(self, clock=None) -> None:
        self.sent: list[dict] = []
        self.times: list[float] = []
        self.clock = clock or (lambda: 0.0)
        self.closed = False
        self.on_msg_callback = self.on_close_callback = None

    def send(self, data) -> None:
        self.sent.append(data)
        self.times.append(self.clock())

    def on_msg(self, callback) -> None:
        self.on_msg_callback = callback

    def on_close(self, callback) -> None:
        self.on_close_callback = callback

    def close(self) -> None:
        self.closed = True

    def receive(self, data: dict) -> None:
        self.on_msg_callback({"content": {"data": data}})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def publisher_for(env: Streams, clock: Clock | None = None, cell: str | None = None) -> StreamsPublisher:
    return StreamsPublisher(lambda: env, clock=clock or Clock(), cell_id=lambda: cell, thread=False)


def test_snapshot_message_shape():
    stream = RecordedStream("numbers")
    stream.progress.extend([batch(0, gap=None)] + [batch(i, gap=float(i)) for i in range(1, 40)])
    env = Streams(stream)
    publisher, comm = publisher_for(env), RecordingComm()
    publisher.attach(comm)
    assert publisher.pump() is not None
    (message,) = comm.sent
    assert set(message) == {"kind", "streams", "spark_ui_port"}
    assert (message["kind"], message["spark_ui_port"]) == ("streams", 4040)
    (info,) = message["streams"]
    assert set(info) == STREAM_KEYS
    assert info["status"] == "active" and info["error"] is None  # read without asking Spark
    assert (info["name"], info["id"], info["run_id"], info["sink"]) == ("numbers", "numbers-id", "numbers-run", "memory")
    assert (info["batches"], info["last_batch_id"], info["input_rows_per_second"]) == (40, 39, 5.0)
    assert info["watermark"] == "2024-01-01T00:00:00Z"  # batch 39: event time 00:00:39, gap 39 s
    assert info["gap_seconds"] == [float(i) for i in range(10, 40)] and len(info["gap_seconds"]) == GAP_POINTS
    assert info["spark_ui"] == {"port": 4040, "path": "/StreamingQuery/statistics/?id=numbers-run"}
    assert json.loads(json.dumps(message)) == message  # plain JSON
    publisher.close()


def test_snapshot_of_a_failed_stream_without_spark_ui():
    stream = RecordedStream("broken")
    stream.finish("failed", "ZeroDivisionError: division by zero")
    publisher, comm = publisher_for(Streams(stream, ui_url=None)), RecordingComm()
    publisher.attach(comm)
    publisher.pump()
    (info,) = comm.sent[0]["streams"]
    assert (info["status"], info["error"], info["batches"], info["watermark"], info["spark_ui"]) == (
        "failed", "ZeroDivisionError: division by zero", 0, None, None)
    assert info["gap_seconds"] == [] and comm.sent[0]["spark_ui_port"] == 0
    publisher.close()


def test_gap_seconds_treats_the_initial_watermark_as_unknown():
    assert gap_seconds([batch(0, gap=None), batch(1, gap=2.5), batch(2, gap=0.0)]) == [None, 2.5, 0.0]


def test_snapshots_are_coalesced_to_two_a_second():
    stream = RecordedStream("fast")
    clock = Clock()
    publisher, comm = publisher_for(Streams(stream), clock), RecordingComm(clock)
    publisher.attach(comm)
    start = clock.now
    for batch_id in range(300):  # 100 batches a second for 3 s, pumped after every batch
        stream.progress.extend([batch(batch_id)])
        publisher.pump()
        clock.now += 0.01
    per_second = [sum(1 for t in comm.times if start + s <= t < start + s + 1) for s in range(3)]
    assert per_second == [2, 2, 2], per_second
    # The newest state always arrives: one more pump after the interval sends batch 299.
    clock.now += 0.5
    publisher.pump()
    assert comm.sent[-1]["streams"][0]["batches"] == 300
    # Nothing changed: nothing is sent, however often it is pumped.
    count = len(comm.sent)
    for _ in range(10):
        clock.now += 1.0
        publisher.pump()
    assert len(comm.sent) == count
    publisher.close()


def test_new_streams_and_refresh_wake_the_publisher():
    env = Streams()
    clock = Clock()
    publisher, comm = publisher_for(env, clock, cell="cell-7"), RecordingComm(clock)
    publisher.attach(comm)
    publisher.pump()
    assert comm.sent[-1]["streams"] == []
    env.start(RecordedStream("late"))  # the env tells the publisher, which records the cell
    clock.now += 1
    publisher.pump()
    assert [(s["name"], s["cell_id"]) for s in comm.sent[-1]["streams"]] == [("late", "cell-7")]
    count = len(comm.sent)
    clock.now += 1
    comm.receive({"kind": "refresh"})
    publisher.pump()
    assert len(comm.sent) == count + 1 and comm.sent[-1] == comm.sent[-2]  # sent again on request
    comm.receive({"kind": "something else"})  # ignored
    publisher.close()


def test_a_page_whose_panel_is_hidden_hears_of_streams_not_of_batches():
    numbers = RecordedStream("numbers")
    env = Streams(numbers)
    clock = Clock()
    publisher = publisher_for(env, clock)
    hidden, shown, old = RecordingComm(clock), RecordingComm(clock), RecordingComm(clock)
    for comm in (hidden, shown, old):
        publisher.attach(comm)
    publisher.pump()  # each comm's first snapshot
    hidden.receive({"kind": "detail", "on": False})
    shown.receive({"kind": "detail", "on": True})  # `old` never says: an older page
    for batch_id in range(10):  # ten batches, one a second
        numbers.progress.extend([batch(batch_id)])
        clock.now += 1.0
        publisher.pump()
    assert [len(c.sent) for c in (hidden, shown, old)] == [1, 11, 11]
    # A stream that starts, and one that ends, reach the hidden panel's page (its status bar counts them).
    letters = RecordedStream("letters")
    env.start(letters)
    clock.now += 1.0
    publisher.pump()
    letters.finish("failed", "boom")
    clock.now += 1.0
    publisher.pump()
    assert [[(s["name"], s["status"]) for s in m["streams"]] for m in hidden.sent[1:]] == [
        [("numbers", "active"), ("letters", "active")], [("numbers", "active"), ("letters", "failed")]]
    # Shown again: the newest batch with the next snapshot, however little changed since.
    numbers.progress.extend([batch(10)])
    clock.now += 1.0
    publisher.pump()
    assert len(hidden.sent) == 3
    hidden.receive({"kind": "detail", "on": True})
    clock.now += publisher.min_interval  # the throttle still holds
    publisher.pump()
    assert len(hidden.sent) == 4 and hidden.sent[-1]["streams"][0]["batches"] == 11
    hidden.receive({"kind": "detail", "on": "yes"})  # not a message of this protocol: ignored
    numbers.progress.extend([batch(11)])
    clock.now += 1.0
    publisher.pump()
    assert hidden.sent[-1]["streams"][0]["batches"] == 12
    publisher.close()


def test_stop_from_the_page_runs_off_the_kernel_thread():
    stream = RecordedStream("numbers")
    stream.release.clear()  # stop() blocks until released, like a batch that takes its time
    publisher, comm = publisher_for(Streams(stream)), RecordingComm()
    publisher.attach(comm)
    before = threading.active_count()
    comm.receive({"kind": "stop", "name": "numbers"})  # returns at once
    assert not stream.finished
    assert threading.active_count() == before + 1
    stream.release.set()
    from .helpers import wait_for
    wait_for(lambda: stream.finished, 10, message="the stream to stop")
    assert stream.stop_threads == ["workbench-stop-numbers"]
    comm.receive({"kind": "stop", "name": "nope"})
    assert comm.sent[-1] == {"kind": "error", "name": "nope",
                             "message": "cannot stop 'nope': no stream named 'nope' (streams: numbers)"}
    # A stop Spark refuses: its one line on the page, not Spark's whole text.
    stream.stop_error = RuntimeError("[STREAM_FAILED] could not stop numbers SQLSTATE: XXKST\n\tat org.apache...")
    comm.receive({"kind": "stop", "name": "numbers"})
    wait_for(lambda: comm.sent[-1].get("kind") == "error" and "numbers'" in comm.sent[-1]["message"], 10,
             message="the failed stop's message")
    assert comm.sent[-1]["message"] == "cannot stop 'numbers': could not stop numbers"
    publisher.close()


def test_close_lets_go_of_everything():
    stream = RecordedStream("numbers")
    env = Streams(stream)

    class Manager:
        def __init__(self):
            self.targets = {}

        def register_target(self, name, callback):
            self.targets[name] = callback

        def unregister_target(self, name, _callback):
            self.targets.pop(name)

    manager = Manager()
    publisher = StreamsPublisher(lambda: env, min_interval=0.05)  # with its own thread
    publisher._target_manager = manager
    manager.register_target(COMM_TARGET, publisher.attach)
    comm = RecordingComm()
    publisher.attach(comm)
    from .helpers import live_threads, wait_for
    wait_for(lambda: comm.sent, 5, message="a first snapshot from the publisher's thread")
    assert [t.name for t in live_threads("workbench-streams-panel")] == ["workbench-streams-panel"]
    assert stream.progress._listeners and env.on_stream_started
    publisher.close()
    assert comm.closed and manager.targets == {} and not env.on_stream_started
    assert not stream.progress._listeners
    assert not live_threads("workbench-streams-panel")
    late = RecordingComm()
    publisher.attach(late)  # a comm opened after closing is closed at once
    assert late.closed and publisher.comms == 0


def test_a_page_back_from_a_lost_connection_has_one_comm():
    # The page forgets a comm when its connection to the server drops and opens another when
    # it is back; the kernel never heard the first closed and sent every snapshot twice.
    stream, clock = RecordedStream("numbers"), Clock()
    publisher = publisher_for(Streams(stream), clock)

    class Manager:  # the kernel's comm manager
        def __init__(self):
            self.unregistered = []

        def unregister_comm(self, comm):
            self.unregistered.append(comm)

        def unregister_target(self, name, callback):
            pass

    publisher._target_manager = manager = Manager()
    first, other_page, again = RecordingComm(), RecordingComm(), RecordingComm()
    publisher.attach(first, page="page-1")
    publisher.attach(other_page, page="page-2")
    publisher.attach(RecordingComm())  # an older extension names no page: nothing replaces it
    publisher.pump()
    publisher.attach(again, page="page-1")
    # The old comm is dropped from the kernel's comm manager, not closed: a close goes to every
    # page on the kernel, and each page that never had that comm logs "Comm not found".
    assert manager.unregistered == [first] and first._closed
    assert not first.closed and not other_page.closed and not again.closed
    assert publisher.comms == 3
    stream.progress.extend([batch(0)])
    clock.now += 1
    publisher.pump()
    assert len(first.sent) == 1 and len(again.sent) == 1 and len(other_page.sent) == 2
    publisher.close()


def test_the_publisher_goes_on_after_a_snapshot_that_failed(caplog):
    # One bad snapshot (a stream whose state cannot be read) ended the publisher's thread for
    # the kernel's life: the panel kept its stale rows and the status bar its count.
    stream = RecordedStream("numbers")

    class Flaky(Streams):
        failures = 2

        def handles(self):
            if self.failures:
                self.failures -= 1
                raise RuntimeError("cannot read the streams")
            return super().handles()

    env = Flaky(stream)
    publisher = StreamsPublisher(lambda: env, min_interval=0.05)  # with its own thread
    comm = RecordingComm()
    from .helpers import wait_for
    with caplog.at_level(logging.ERROR, logger="workbench.views.streams_panel"):
        publisher.attach(comm)
        wait_for(lambda: comm.sent, 20, message="a snapshot after the failed ones")
    assert comm.sent[-1]["streams"][0]["name"] == "numbers"
    assert caplog.text.count("the Streams panel publisher failed; trying again") == 1  # not at every try
    publisher.close()


def test_an_ended_stream_is_let_go():
    # The publisher follows each stream's history until the stream ends, then lets go of it:
    # a stream replaced by a cell run again is not kept, with its history, for the kernel's life.
    stream = RecordedStream("numbers")
    env, clock = Streams(stream), Clock()
    publisher, comm = publisher_for(env, clock), RecordingComm(clock)
    publisher.attach(comm)
    publisher.pump()
    assert stream.progress._listeners
    stream.finish()
    assert not stream.progress._listeners
    ended = RecordedStream("ended")
    ended.finish()
    env.start(ended)  # already over when the publisher first hears of it
    clock.now += 1
    publisher.pump()
    assert not ended.progress._listeners
    assert [(s["name"], s["status"]) for s in comm.sent[-1]["streams"]] == [("numbers", "stopped"), ("ended", "stopped")]
    publisher.close()


def test_publisher_rejects_a_bad_interval():
    with pytest.raises(ValueError, match="positive number of seconds"):
        StreamsPublisher(lambda: Streams(), min_interval=0)


class Kernel:
    def __init__(self, parent):
        self.parent = parent

    def get_parent(self, channel=None):
        return self.parent


class Shell:
    def __init__(self, parent):
        self.kernel = Kernel(parent)


def test_current_cell_id():
    execute = {"header": {"msg_type": "execute_request"}, "metadata": {"cellId": "abc-1"}}
    assert current_cell_id(Shell(execute)) == "abc-1"
    assert current_cell_id(Shell({"header": {"msg_type": "comm_msg"}, "metadata": {"cellId": "x"}})) is None
    assert current_cell_id(Shell({"header": {"msg_type": "execute_request"}, "metadata": {}})) is None
    assert current_cell_id(Shell({})) is None
    assert current_cell_id(object()) is None  # a shell without a kernel
    found = []
    worker = threading.Thread(target=lambda: found.append(current_cell_id(Shell(execute))))
    worker.start()
    worker.join()
    assert found == [None]  # a background thread runs no cell


@pytest.mark.spark
def test_snapshot_of_a_real_stream(env, spark, rate_stream):
    from workbench.views.sparkui import ui_port as port_of
    from .helpers import wait_for

    clock = Clock()
    publisher = StreamsPublisher(lambda: env, clock=clock, cell_id=lambda: "cell-1", thread=False)
    comm = RecordingComm(clock)
    publisher.attach(comm)
    handle = env.start(rate_stream(rows_per_batch=5), "panel_numbers", trigger="0.2 seconds")
    wait_for(lambda: handle.progress.total >= 3, 60, message="three batches")
    publisher.pump()
    (info,) = comm.sent[-1]["streams"]
    assert set(info) == STREAM_KEYS
    assert (info["name"], info["id"], info["run_id"], info["status"], info["cell_id"]) == (
        "panel_numbers", handle.id, handle.run_id, "active", "cell-1")
    assert info["batches"] >= 3 and info["last_batch_id"] == handle.progress.last_batch_id
    port = port_of(spark.sparkContext.uiWebUrl)
    assert port > 0 and comm.sent[-1]["spark_ui_port"] == port
    assert info["spark_ui"] == {"port": port, "path": f"/StreamingQuery/statistics/?id={handle.run_id}"}
    comm.receive({"kind": "stop", "name": "panel_numbers"})
    wait_for(lambda: handle.finished, 30, message="the stream to stop")
    clock.now += 1
    publisher.pump()
    (info,) = comm.sent[-1]["streams"]
    assert (info["status"], info["error"]) == ("stopped", None)
    assert info["batches"] == handle.progress.total
    publisher.close()


@pytest.mark.spark
def test_a_stream_replaced_while_the_panel_pumps_does_not_hang(env, rate_stream, request):
    # Replacing a stream holds the registry's lock while the old one stops, and its end is
    # reported on the stopping thread; the publisher, pumping on its own thread, reads the
    # registry under its own lock. The end's callback must not wait for that lock (it did:
    # a re-run %%stream cell hung while the Streams panel was open).
    from .helpers import wait_for

    publisher = StreamsPublisher(lambda: env, min_interval=0.05)  # with its own thread
    publisher.attach(RecordingComm())
    try:
        for run in range(4):
            started: list = []

            def start() -> None:
                try:
                    started.append(env.start(rate_stream(rows_per_batch=5), "panel_again", trigger="0.1 seconds"))
                except BaseException as exc:  # a start that failed is a failure, not a deadlock
                    started.append(exc)

            starter = threading.Thread(target=start, daemon=True)
            starter.start()
            starter.join(60)
            if starter.is_alive():  # deadlocked: nothing could end this run (its session's teardown waits too)
                request.config.pluginmanager.getplugin("capturemanager").suspend_global_capture(in_=False)
                print(f"run {run}: a stream replacing the previous one did not start in 60 s: deadlocked",
                      file=sys.stderr, flush=True)
                faulthandler.dump_traceback(sys.stderr)
                os._exit(3)
            if isinstance(started[0], BaseException):
                raise started[0]
            wait_for(lambda: started[0].progress.total >= 2, 60, message="two batches")
        env.stop("panel_again")
    finally:
        publisher.close()


# ---------------------------------------------------------------------------------------------
# The server's Spark UI check (what the tab asks before it shows the proxied page)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def http_server():
    """A local HTTP server answering GET /jobs/ with 200, / with 302 and anything else with 404."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            code = {"/jobs/": 200, "/": 302}.get(self.path, 404)
            self.send_response(code)
            if code == 302:
                self.send_header("Location", "/jobs/")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_check_spark_ui(http_server):
    import asyncio

    from workbench._server import check_spark_ui

    from .cluster_support import free_port

    def check(port, path="/"):
        return asyncio.run(check_spark_ui(port, path, timeout=5))

    assert check(http_server) == {"port": http_server, "answers": True, "status": 302, "reason": "Found"}
    assert check(http_server, "jobs/")["status"] == 200
    assert check(http_server, "/nothing") == {"port": http_server, "answers": False, "status": 404,
                                              "reason": "Not Found"}
    closed = free_port()
    refused = check(closed)
    assert (refused["answers"], refused["status"]) == (False, None) and refused["reason"]
    assert check(0) == {"port": 0, "answers": False, "status": None, "reason": "no Spark UI port"}
