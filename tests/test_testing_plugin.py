"""The pytest plugin from a clean folder, and a replay saved as a test that passes, then fails when changed.

One pytest subprocess runs in an empty temporary folder (no conftest, no ini file) with
six files: a test written by hand on the plugin's fixtures, the modules ``to_test`` wrote
from the guide's replay stepped and played (and played past a script cut after its third batch),
and the first two with a 5-minute watermark. The plugin is found
the way an installed workbench offers it: through its ``pytest11`` entry point, read from
this checkout's pyproject.toml.

Two more runs have a conftest with a session of the project's own (``spark_session``, as
pytest-spark names it): built before the plugin's fixture, it keeps its settings and is not
stopped; built after, the plugin's next ``stream_test`` says why its session left UTC.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

HAND_WRITTEN = '''
def test_words(stream_test, spark):
    events = stream_test.memory_stream("word string")
    test = stream_test(events.df.groupBy("word").count(), output_mode="complete")
    test.add(events, [("dog",), ("dog",), ("owl",)]).process().check_answer([("dog", 2), ("owl", 1)])
    test.add(events, [{"word": "owl"}]).process().check_new_answer([("dog", 2), ("owl", 2)])
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
'''


def plugin_entry_point(site: Path) -> None:
    """Offer pyproject's pytest11 entry point from ``site``, as an installed package would."""
    plugins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert plugins == {"workbench": "workbench.testing.plugin"}
    installed = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    if installed.get("workbench") == plugins["workbench"]:
        return  # this environment's install has it already
    info = site / "spark_streaming_workbench_checkout-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spark-streaming-workbench-checkout\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in plugins.items()))


def play_past_the_end(panel, batches: int, path: Path) -> None:
    """Play ``panel`` until ``batches`` data batches ran, pause, save it as a test at ``path``, close it."""
    try:
        panel.play()
        wait_for(lambda: panel.run.data_batches >= batches, 120, text=lambda: f"{panel.run.data_batches} batches")
        panel.pause()
        panel.to_test(path)
    finally:
        panel.close()


@pytest.fixture
def recorded(env, tmp_path):
    """The guide's replay stepped four times and saved with the panel's "Save as test" (panel.to_test)."""
    import workbench
    import workbench.testing

    folder = tmp_path / "project"
    folder.mkdir()
    panel = workbench.replay_panel(workbench.scenarios.guide_word_count(), monitor=False)
    try:
        panel.test_button.click()  # "Save as test" runs on a background thread, as in a notebook
        assert panel.wait(60)
        assert "has run no batch yet: step it first" in panel.message.value and not list(folder.iterdir())
        for _ in range(4):
            panel.step()
        written = folder / "test_guide_word_count.py"
        panel.test_path.value = str(written)
        panel.test_button.click()
        assert panel.wait(120)
        assert panel.message.value == f"Saved the run as a test: {written}"
        # Saved again, the file (a test maybe edited since) is replaced only at a second click.
        edited = written.read_text() + "# edited\n"
        written.write_text(edited)
        panel.test_button.click()
        assert panel.wait(120)
        assert panel.message.value == f"{written} exists: click <i>Save as test</i> again to replace it"
        assert written.read_text() == edited
        panel.test_button.click()
        assert panel.wait(120)
        assert panel.message.value == f"Saved the run as a test: {written}" and written.read_text() != edited
    finally:
        panel.close()
    # The same replay played, then paused once its script (4 batches) is over: a batch of padding
    # only (no scripted rows) has run too.
    play_past_the_end(workbench.replay_panel(workbench.scenarios.guide_word_count(), name="guide_played",
                                             monitor=False), 5, folder / "test_guide_played.py")
    # A script whose last batch moves the watermark (to 12:11): the batch of padding after it
    # runs with 12:11 and emits the windows that closed, which the written test must run too.
    from workbench.replay import Script, WindowCount, scenarios

    script = Script([list(b) for b in scenarios.GUIDE_BATCHES[:3]], ["event_time", "word"], day="2024-01-01")
    play_past_the_end(workbench.replay_panel(script, WindowCount("event_time", "10 minutes", "5 minutes", "10 minutes",
                                                                 ("word",)),
                                             name="guide_cut", output_mode="append", monitor=False),
                      4, folder / "test_guide_cut.py")
    return folder, written


def test_a_clean_folder_runs_the_plugin_and_a_saved_replay(recorded, tmp_path):
    folder, written = recorded
    assert written == folder / "test_guide_word_count.py"
    text = written.read_text()
    assert "withWatermark('event_time', '10 minutes')" in text
    assert "test.check_late([\n        ('2024-01-01 12:04', 'donkey'),\n    ], fate='counted')" in text
    (folder / "test_guide_5_minutes.py").write_text(
        text.replace("'10 minutes').groupBy", "'5 minutes').groupBy").replace("def test_guide_word_count",
                                                                             "def test_guide_5_minutes"))
    played = (folder / "test_guide_played.py").read_text()
    # Played, the script's four batches are written as stepping wrote them; the batches after them add nothing.
    assert played[played.index("    # batch 0"):played.index("    # batch 4")] == text[text.index("    # batch 0"):] + "\n"
    assert "    # batch 4: no rows\n    test.add(events, [], empty_batch=True).process()\n    test.check_new_answer([])\n" \
           "    test.check_watermark('2024-01-01 12:11')\n" in played, played
    (folder / "test_guide_played_5_minutes.py").write_text(
        played.replace("'10 minutes').groupBy", "'5 minutes').groupBy").replace("def test_guide_played",
                                                                              "def test_guide_played_5"))
    cut = (folder / "test_guide_cut.py").read_text()
    assert "    # batch 3: no rows\n    test.add(events, [], empty_batch=True).process()\n    test.check_new_answer([\n" \
           in cut, cut  # the windows the moved watermark closed
    (folder / "test_words.py").write_text(HAND_WRITTEN)
    out = run_pytest(folder, tmp_path)
    assert "4 passed" in out and "2 failed" in out, out[-3000:]
    assert "FAILED test_guide_5_minutes.py::test_guide_5_minutes" in out
    assert "FAILED test_guide_played_5_minutes.py::test_guide_played_5" in out
    # The changed watermark shows in the first batch that reports it, in the StreamTest's words.
    assert out.count("AssertionError: step 9, check_watermark('2024-01-01 11:58'), batch 1, watermark 2024-01-01 "
                     "12:03: the watermark is 2024-01-01 12:03, expected 2024-01-01 11:58") >= 2, out[-3000:]
    assert "stream_test.py" not in out, "pytest showed the StreamTest's own frames"
    left = [p.name for p in (tmp_path / "temp").iterdir() if p.name.startswith("workbench-")]
    assert not left, f"the test run left these behind: {left}"


def run_pytest(folder: Path, tmp_path: Path, **extra: str) -> str:
    """Run pytest in ``folder`` in a clean environment (and ``extra``) with the plugin installed; its output."""
    site, temp = tmp_path / "site", tmp_path / "temp"
    temp.mkdir()
    plugin_entry_point(site)
    # A fresh HOME has no class data archive: off, so that no background recording (a process
    # of its own, with folders of its own in TMPDIR) runs on after the test run.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(temp), "WORKBENCH_CLASS_ARCHIVE": "0",
           "PYTHONPATH": f"{REPO}:{site}", "JAVA_HOME": os.environ.get("JAVA_HOME", ""), **extra}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
                          cwd=folder, capture_output=True, text=True, timeout=1200,
                          env={k: v for k, v in env.items() if v})
    return done.stdout


# A project's own session, built before the plugin's fixture, under pytest-spark's fixture name.
OWN_SESSION_CONFTEST = '''
import pytest
from pyspark.sql import SparkSession

SETTINGS = ["spark.sql.session.timeZone", "spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
            "spark.sql.streaming.stateStore.providerClass"]


def settings(session):
    return {key: session.conf.get(key, None) for key in SETTINGS}


@pytest.fixture(scope="session")
def spark_session():
    session = (SparkSession.builder.master("local[1]").appName("mine")
               .config("spark.sql.session.timeZone", "Europe/Paris")
               .config("spark.sql.shuffle.partitions", "7").getOrCreate())
    session.built_with = settings(session)
    yield session
    assert session.sparkContext._jsc is not None, "the session was stopped before its own fixture stopped it"
    assert settings(session) == session.built_with
    session.stop()
'''

OWN_SESSION_TESTS = '''
from conftest import settings


def test_1_mine(spark_session):
    assert settings(spark_session)["spark.sql.session.timeZone"] == "Europe/Paris"


def test_2_stream(spark_session, stream_test, spark):
    events = stream_test.memory_stream("event_time timestamp, word string")
    test = stream_test(events.df.groupBy("word").count(), output_mode="complete")
    test.add(events, [("2024-01-01 12:07", "dog")]).process().check_answer([("dog", 1)])
    assert spark is not spark_session and spark.sparkContext is spark_session.sparkContext
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"


def test_3_mine_after(spark_session):
    assert settings(spark_session) == spark_session.built_with
    assert spark_session.sparkContext._jsc is not None
'''


def run_project_with_own_session(tmp_path: Path, tests: str) -> str:
    """pytest's output on a project of ``OWN_SESSION_CONFTEST`` and the test module ``tests``."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "conftest.py").write_text(OWN_SESSION_CONFTEST)
    (folder / "test_own_session.py").write_text(tests)
    # A session the workbench did not build starts Spark's Python workers as its owner set them
    # (PYSPARK_PYTHON, else python3 on PATH): as in a project's virtualenv, this interpreter.
    return run_pytest(folder, tmp_path, PYSPARK_PYTHON=sys.executable)


def test_a_project_session_built_first_is_neither_changed_nor_stopped(tmp_path):
    out = run_project_with_own_session(tmp_path, OWN_SESSION_TESTS)
    assert re.search(r"^3 passed(, \d+ warnings?)? in ", out, re.M), out[-3000:]


# The other order: the plugin's session runs first, so the project's getOrCreate() returns it and sets
# Europe/Paris on it; the plugin's next stream_test says so instead of a bare refusal of the time zone.
PLUGIN_FIRST_TESTS = '''
def words(stream_test):
    events = stream_test.memory_stream("word string")
    test = stream_test(events.df.groupBy("word").count(), output_mode="complete")
    test.add(events, [("dog",)]).process().check_answer([("dog", 1)])


def test_1_stream(stream_test):
    words(stream_test)


def test_2_mine(spark_session):
    assert spark_session.conf.get("spark.sql.session.timeZone") == "Europe/Paris"


def test_3_stream(stream_test):
    words(stream_test)
'''


def test_a_project_session_built_after_the_plugins_is_refused_in_words(tmp_path):
    out = run_project_with_own_session(tmp_path, PLUGIN_FIRST_TESTS)
    assert "2 passed, 1 error" in out and "ERROR at setup of test_3_stream" in out, out[-3000:]
    assert ("the spark fixture's session is in time zone 'Europe/Paris', not UTC: a SparkSession.builder..."
            "getOrCreate() run after that session was built") in out, out[-3000:]
