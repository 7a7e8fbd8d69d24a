"""Kernel > Interrupt (a KeyboardInterrupt) while a stream starts, a replay steps and a stream stops.

Real kernels (jupyter_client), real Spark. Each wait is made long in a way Spark really
blocks, never by replacing Spark's code:

* a start: Spark calls a listener's ``onQueryStarted`` synchronously inside
  ``DataStreamWriter.start()``, so a listener that takes a while holds the start;
* a step and a stop: a Python UDF that waits while a file exists holds the micro-batch,
  and Spark's ``query.stop()`` waits for a running Python ``foreachBatch`` (the replay's
  results writer, the console sink) to return.

Each case asserts what a user would check afterwards: the one-line message under the
interrupted cell, ``workbench.streams()``, ``spark.streams.active``, the workbench's
threads and folders, and that the next command works.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.kernels import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]  # real Jupyter kernels

SETUP = """\
%load_ext workbench
import json, os, pathlib, threading, time, workbench
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener
from workbench.replay.spec import Replay
spark = workbench.session()
MARKS = pathlib.Path({marks!r})
HOLD, ENTERED = str(MARKS / 'hold'), str(MARKS / 'entered')

class SlowStart(StreamingQueryListener):
    # Spark runs onQueryStarted inside DataStreamWriter.start(): while it sleeps, start() waits.
    armed = False
    def onQueryStarted(self, event):
        if self.armed:
            self.armed = False
            (MARKS / 'starting').touch()
            time.sleep(8)
    def onQueryProgress(self, event): pass
    def onQueryIdle(self, event): pass
    def onQueryTerminated(self, event): pass

slow_start = SlowStart()
spark.streams.addListener(slow_start)

def held(value):
    # Runs in Spark's Python workers: the batch holds while the test keeps HOLD.
    import os, pathlib, time
    pathlib.Path(ENTERED).touch()
    while os.path.exists(HOLD):
        time.sleep(0.05)
    return value

held_udf = F.udf(held, 'long')

def held_console(text):
    held(0)  # a console writer as slow as the test wants
rate = spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 3).load()

def wait_until(predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.1)
    return predicate()

def facts(name):
    env = workbench.spark.current_env()
    table = workbench.streams()
    folder = env.temp_dir / 'checkpoints'
    return json.dumps({{
        'streams': table[['name', 'status']].values.tolist(),
        'active': sorted(q.name for q in spark.streams.active),
        # The streams panel's thread lives as long as the extension; every other one belongs to a stream.
        'threads': sorted(t.name for t in threading.enumerate()
                          if t.name.startswith('workbench-') and t.name != 'workbench-streams-panel'),
        'checkpoints': sorted(p.name for p in folder.iterdir() if p.name.startswith(name + '-'))
                       if folder.exists() else [],
    }})
"""


def run_interrupted(kernel: Kernel, code: str, ready, *, after: float = 0.0, timeout: float = 240.0) -> dict:
    """Execute ``code``, send SIGINT once ``ready()`` holds (plus ``after`` seconds), return the reply.

    The reply's content, with ``outputs``: the cell's output messages.
    """
    msg_id = kernel.send(code)
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"the cell never reached the point to interrupt: {code!r}"
        time.sleep(0.05)
    time.sleep(after)
    kernel.manager.interrupt_kernel()
    reply = kernel.wait(msg_id, max(1.0, deadline - time.monotonic()), what=f"the interrupted cell {code!r}")
    return {**reply, "outputs": kernel.outputs_of(msg_id)}


def json_out(kernel: Kernel, code: str, timeout: float = 120.0) -> dict:
    return json.loads(kernel.stdout_of(kernel.run(code, timeout=timeout)).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    kernel = Kernel.start(tmp_path_factory.mktemp("jupyter"))
    kernel.marks = tmp_path_factory.mktemp("marks")
    try:
        kernel.run(SETUP.format(marks=str(kernel.marks)), timeout=240)
        yield kernel
    finally:
        kernel.close()


def one_line_error(reply: dict) -> str:
    """The interrupted cell's whole error output: one line, no traceback."""
    assert reply["status"] == "error", reply
    errors = [m["content"] for m in reply["outputs"] if m["msg_type"] == "error"]
    assert len(errors) == 1 and len(errors[0]["traceback"]) == 1, errors
    assert "Py4J" not in errors[0]["traceback"][0] and "Traceback" not in errors[0]["traceback"][0]
    return errors[0]["traceback"][0]


def start_held_console(kernel: Kernel, variable: str, name: str):
    """Start console stream ``name`` (as ``variable``) whose first batch holds; return the hold file.

    A console stream renders each batch in a Python foreachBatch, which Spark's stop waits
    for; this one's writer takes as long as the test keeps the hold file.
    """
    hold, entered = kernel.marks / "hold", kernel.marks / "entered"
    hold.touch()
    entered.unlink(missing_ok=True)
    kernel.run(f"{variable} = workbench.start(rate, {name!r}, sink='console', console=held_console)", timeout=120)
    assert _wait(entered.exists), "the held batch never started"
    return hold


def test_interrupting_a_starting_stream_leaves_no_query_and_the_next_start_works(kernel):
    kernel.run("slow_start.armed = True")
    starting = kernel.marks / "starting"
    reply = run_interrupted(
        kernel, "%%stream ticks --no-monitor --trigger '0.5 seconds'\nrate\n", starting.exists,
    )
    assert one_line_error(reply) == "interrupted: stream 'ticks' was not started (stopped the half-started query)"
    assert reply["ename"] == "StreamInterrupted"
    after = json_out(kernel, "print(facts('ticks'))")
    # Not listed, not running in Spark, no thread and no checkpoint folder of it.
    assert not [row for row in after["streams"] if row[0] == "ticks"], after
    assert after["active"] == [] and after["threads"] == [] and after["checkpoints"] == [], after

    # The same cell again starts the stream as usual.
    again = kernel.run("%%stream ticks --no-monitor --trigger '0.5 seconds'\nrate\n", timeout=120)
    assert "stream 'ticks' active" in kernel.stdout_of(again)
    ran = json_out(kernel, "ticks = workbench.stream('ticks')\n"
                           "wait_until(lambda: ticks.progress.total >= 2)\n"
                           "ticks.stop()\n"
                           "print(json.dumps({'batches': ticks.history()['batch_id'].tolist()[:2], "
                           "'status': ticks.status, 'facts': json.loads(facts('ticks'))}))")
    assert ran["batches"] == [0, 1] and ran["status"] == "stopped", ran
    assert ran["facts"]["active"] == [] and len(ran["facts"]["checkpoints"]) == 1, ran


def test_interrupting_a_step_stops_its_query_and_the_panel_steps_again(kernel):
    hold, entered = kernel.marks / "hold", kernel.marks / "entered"
    hold.touch()
    kernel.run(
        "panel = workbench.replay_panel(Replay(rows_per_batch=3), "
        "lambda df: df.select('value', held_udf('value').alias('held')), name='stepped', monitor=False)",
        timeout=120,
    )
    entered.unlink(missing_ok=True)
    reply = run_interrupted(kernel, "panel.step()", entered.exists, after=0.5)
    message = one_line_error(reply)
    assert message == ("interrupted: the step of replay 'stepped' was stopped before batch 0 was committed; "
                       "the next step runs it again")
    # The panel is usable at once: paused, its buttons enabled, the message shown.
    panel = json_out(kernel, "print(json.dumps({'status': panel.run.status, 'message': panel.message.value, "
                             "'disabled': [b.disabled for b in (panel.play_button, panel.step_button, "
                             "panel.reset_button)]}))")
    assert panel == {"status": "paused", "message": message.replace("'", "&#x27;"), "disabled": [False] * 3}

    # The batch ends once the UDF lets go; the stopped step's query is then gone.
    hold.unlink()
    settled = json_out(kernel, "wait_until(lambda: not spark.streams.active and not json.loads(facts('stepped'))['threads'])\n"
                                "print(facts('stepped'))")
    assert settled["active"] == [] and settled["threads"] == [], settled

    # The next step runs batch 0 (it was not committed) and its rows are in the results once.
    stepped = json_out(kernel, "report = panel.step()\n"
                               "print(json.dumps({'ids': list(report.batch_ids), 'rows_out': report.rows_out, "
                               "'results': panel.results()[['value', 'batch_id']].values.tolist(), "
                               "'status': panel.run.status, 'facts': json.loads(facts('stepped'))}))",
                       timeout=180)
    assert stepped["ids"] == [0] and stepped["rows_out"] == 3, stepped
    assert sorted(stepped["results"]) == [[0, 0], [1, 0], [2, 0]], stepped
    assert stepped["status"] == "paused" and stepped["facts"]["active"] == [], stepped
    kernel.run("panel.close()")


def test_interrupting_a_pause_leaves_the_replay_playing_and_pause_again_pauses_it(kernel):
    hold, entered = kernel.marks / "hold", kernel.marks / "entered"
    hold.touch()
    entered.unlink(missing_ok=True)
    kernel.run(
        "played = workbench.replay_panel(Replay(rows_per_batch=3), "
        "lambda df: df.select('value', held_udf('value').alias('held')), name='played', monitor=False)\n"
        "played.play()",
        timeout=120,
    )
    assert _wait(entered.exists), "the held batch never started"
    # A pause waits (up to 30 s) for the running batch to end: interrupted while it waits.
    reply = run_interrupted(kernel, "played.pause()", lambda: True, after=1.0)
    assert one_line_error(reply) == ("interrupted: replay 'played' still plays (it was waiting for a batch to end); "
                                     "pause() again pauses it")
    during = json_out(kernel, "print(json.dumps({'status': played.run.status, 'facts': json.loads(facts('played'))}))")
    # Not lost track of: still playing, its query still this run's, so pause and close can stop it.
    assert during["status"] == "playing" and during["facts"]["active"] == ["played"], during
    hold.unlink()
    paused = json_out(kernel, "report = played.pause()\n"
                              "print(json.dumps({'status': played.run.status, 'ids': list(report.batch_ids), "
                              "'facts': json.loads(facts('played'))}))", timeout=180)
    assert paused["status"] == "paused" and paused["ids"] and paused["ids"][0] == 0, paused
    assert paused["facts"]["active"] == [] and paused["facts"]["threads"] == [], paused
    kernel.run("played.close()")


def test_interrupting_a_stop_lets_it_finish_in_the_background_and_stop_again_works(kernel):
    hold = start_held_console(kernel, "slow", "held")
    # stop() waits its 1 s grace for the batch, then Spark's stop waits for the foreachBatch.
    reply = run_interrupted(kernel, "slow.stop()", lambda: True, after=3.0)
    assert one_line_error(reply) == (
        "interrupted: stream 'held' is still stopping in the background (Spark ends it once its running batch "
        "returns); spark.streams.active lists it until then, and stop() again waits for it"
    )
    during = json_out(kernel, "print(json.dumps({"
                              "'facts': json.loads(facts('held'))}))")
    # Spark still runs the query (its batch holds) and the stop waits for it on its own thread.
    assert during["facts"]["active"] == ["held"] and "workbench-stop-held" in during["facts"]["threads"], during

    # Once the batch lets go, the background stop completes; stop() again returns at once.
    hold.unlink()
    done = json_out(kernel, "started = time.monotonic()\n"
                            "slow.stop()\n"
                            "print(json.dumps({'seconds': time.monotonic() - started, 'status': slow.status, "
                            "'facts': json.loads(facts('held'))}))", timeout=180)
    assert done["status"] == "stopped", done
    assert ["held", "stopped"] in done["facts"]["streams"] and done["facts"]["active"] == [], done
    assert done["facts"]["threads"] == [], done

    # The next command works: a new stream starts and stops.
    kernel.run("%%stream after --no-monitor --trigger '0.5 seconds'\nrate\n", timeout=120)
    after = json_out(kernel, "after = workbench.stream('after')\n"
                             "wait_until(lambda: after.progress.total >= 1)\n"
                             "after.stop()\n"
                             "print(json.dumps({'status': after.status, 'batches': after.progress.total, "
                             "'facts': json.loads(facts('after'))}))")
    assert after["status"] == "stopped" and after["batches"] >= 1 and after["facts"]["active"] == [], after


def test_interrupting_stop_all_leaves_no_stream_running(kernel):
    # The held stream comes first: stopping one stream after another would never reach the free one.
    hold = start_held_console(kernel, "first", "held_first")
    kernel.run("free = workbench.start(rate, 'free', trigger='0.5 seconds')\n"
               "assert wait_until(lambda: free.progress.total >= 1)", timeout=120)
    reply = run_interrupted(kernel, "%stream stop --all", lambda: True, after=3.0)
    assert one_line_error(reply) == (
        "interrupted: stream 'held_first' is still stopping in the background (Spark ends each once its running "
        "batch returns); spark.streams.active lists them until then, and stopping again waits for them"
    )
    # Every stop had begun: the free stream ends while the held one's stop waits for its batch.
    during = json_out(kernel, "wait_until(lambda: [q.name for q in spark.streams.active] == ['held_first'])\n"
                              "print(json.dumps({'free': free.status, 'facts': json.loads(facts('held_first'))}))")
    assert during["free"] == "stopped" and during["facts"]["active"] == ["held_first"], during
    assert "workbench-stop-held_first" in during["facts"]["threads"], during

    # Once the batch lets go, the same command finishes and nothing is left running.
    hold.unlink()
    done = json_out(kernel, "%stream stop --all\n"
                            "print(json.dumps({'statuses': dict(workbench.streams()[['name', 'status']].values), "
                            "'facts': json.loads(facts('held_first'))}))", timeout=180)
    assert done["statuses"]["held_first"] == "stopped" and done["statuses"]["free"] == "stopped", done
    assert done["facts"]["active"] == [] and done["facts"]["threads"] == [], done


def _wait(predicate, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.1)
    return predicate()
