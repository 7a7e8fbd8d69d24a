"""The version matrix: the workbench on every pyspark and JupyterLab it declares.

``pyproject.toml`` accepts pyspark 4.0 to 4.x and JupyterLab 4.x; these sessions run the suite
on the newest patch of each pyspark minor and on the oldest and newest JupyterLab minor, each
in a virtualenv of its own under ``.nox/``, made by uv (its cache makes a second install quick).

``nox -l`` lists the sessions; ``nox -s NAME`` runs one; ``nox -R -s NAME`` reuses its
virtualenv when it exists. Arguments after ``--`` go to pytest, e.g.
``nox -s "smoke(pyspark='4.0.5')" -- -x``.

* ``smoke(pyspark)``: the tests that catch a broken pyspark quickly (:data:`SMOKE`);
  tagged ``ci`` on every pyspark but the newest, whose full suite ``.ci/run`` runs.
  ``smoke(python, pyspark)`` runs them with the newest pyspark on the newer Pythons
  (:data:`PYTHON`; not tagged ``ci``: each takes about 7 minutes on a busy machine).
* ``spark(pyspark)``: the whole suite but the browser tests, notebooks included.
* ``browser(jupyterlab)``: the extension's and the browser tests of :data:`BROWSER` on a JupyterLab.
* ``browser-smoke(jupyterlab)``: their quick part (:data:`BROWSER_SMOKE`); tagged ``ci`` on
  the oldest JupyterLab (the full suite covers the newest).
* ``wheel``: builds the wheel and sdist and checks them in a virtualenv without Node
  (``tests/test_wheel.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

# uv makes each session's virtualenv in seconds from its cache (pip when uv is missing).
nox.options.default_venv_backend = "uv|venv"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = []  # name the sessions to run: the whole matrix takes about an hour

#: The newest patch of each pyspark minor that pyproject.toml accepts, oldest first.
PYSPARK = ["4.0.5", "4.1.4", "4.2.1", "4.3.0"]
#: The Python minors that pyproject.toml accepts, oldest first: the suite runs on the oldest,
#: the smoke tier also on the others (with the newest pyspark).
PYTHON = ["3.11", "3.12", "3.13"]
#: The oldest and the newest JupyterLab 4 minor (their newest patches).
JUPYTERLAB = ["4.0.13", "4.6.6"]

#: What a pyspark release breaks first, one test each, chosen to be quick (19 tests, a few
#: minutes with the install): the state reader on windowed and joined state and its
#: change feed, the memory sink's history and results, the console sink, a script that must
#: exit cleanly (pyspark's accumulator server; Python 3.12 starts no thread at exit), the
#: replay's late-row fates, the monitor, a ``%%stream`` cell on a real shell, a
#: transformWithState processor's state and timers (and, on pyspark 4.0, the line naming
#: the release that added transformWithState on Rows), MemoryStream across restarts, and
#: what tests/test_versions.py knows to differ between releases (the Spark Connect gap line
#: too). ``.ci/run`` runs it on every pyspark but the newest (``nox --tags ci``).
SMOKE = [
    "tests/test_versions.py",
    "tests/test_state.py::test_windowed_state_holds_exactly_the_windows_not_yet_emitted",
    "tests/test_state.py::test_change_feed_deletes_match_num_rows_removed_and_carry_their_watermark",
    "tests/test_state.py::test_join_state_per_side",
    "tests/test_streams.py::test_memory_stream_result_and_typed_history",
    "tests/test_streams.py::test_console_sink_renders_each_batch_like_spark",
    # The case with the most left running at exit (a stream and a replay panel, nothing stopped).
    "tests/test_streams.py::test_a_plain_script_exits_cleanly_and_silently[running stream, replay panel, nothing stopped]",
    "tests/test_replay.py::test_guide_example_steps_late_fates_match_sparks_output",
    "tests/test_monitor.py::test_monitor_follows_the_history_and_stops_the_stream",
    "tests/test_magics.py::test_sql_cell_starts_a_memory_stream_and_shows_its_monitor",
    "tests/test_transform_with_state.py::test_event_time_processor_state_and_timers_batch_by_batch",
    "tests/test_transform_with_state.py::test_stream_magic_runs_a_processor_with_nothing_set_by_hand",
    "tests/test_testing.py::test_every_row_is_read_once_in_order_across_restarts",
]

#: What a JupyterLab release breaks: the extension's install (``jupyter labextension list``)
#: and the pages the browser tests drive (the quickstart's monitor, the Streams panel, the
#: quickstart without the extension and in Notebook 7, a notebook saved and reopened).
BROWSER = ["tests/test_extension.py", "tests/test_browser.py", "tests/test_browser_panel.py",
           "tests/test_browser_without_extension.py"]
#: The browser tier's quick part, which ``.ci/run`` runs on the oldest JupyterLab: the
#: extension's install and the quickstart's live charts in JupyterLab.
BROWSER_SMOKE = ["tests/test_extension.py", "tests/test_browser.py::test_quickstart_in_jupyterlab"]


def older_tagged_ci(versions: list[str]) -> list:
    """``versions`` as session parameters; all but the newest tagged ``ci`` (the full suite covers the newest)."""
    return [nox.param(v, tags=[] if v == versions[-1] else ["ci"]) for v in versions]


def interpreter(version: str) -> str:
    """The Python ``version`` (``"3.12"``) for a session: pyenv's newest patch of it when pyenv has one.

    pyenv's shims on ``PATH`` answer only for the versions pyenv has selected, so nox would
    not find the others there; elsewhere nox looks the version up itself (and uv may install it).
    """
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = [python for python in root.glob(f"versions/{version}.*/bin/python{version}") if os.access(python, os.X_OK)]
    newest = max(found, key=lambda python: int(python.parent.parent.name.rsplit(".", 1)[1]), default=None)
    return str(newest) if newest else version


def smoke_params() -> list:
    """Each pyspark on the Python nox runs on (the oldest), then the newest pyspark on each newer Python.

    The sessions are named ``smoke(pyspark='4.0.5')`` and ``smoke(python='3.12', pyspark='4.3.0')``;
    the first keep :func:`older_tagged_ci`'s tags, the newer Pythons' are not tagged ``ci``
    (each takes about 5 to 7.5 minutes on a busy machine, more than CI's budget has left).
    """
    params = [nox.param(None, param.args[0], tags=param.tags, id=f"pyspark={param.args[0]!r}")
              for param in older_tagged_ci(PYSPARK)]
    params += [nox.param(interpreter(python), PYSPARK[-1], tags=[],
                         id=f"python={python!r}, pyspark={PYSPARK[-1]!r}") for python in PYTHON[1:]]
    return params


def install(session: nox.Session, *pins: str, archive: bool = True) -> None:
    """The workbench from this checkout with its test extra, and ``pins`` over its bounds.

    ``archive``: make this virtualenv's class data archive before its tests (as `workbench
    test` makes it before a suite-wide run), about 25 s on a quiet machine and a minute on a
    busy one, once per virtualenv and checkout path; a suite that starts dozens of JVMs gains
    it back many times. Without it the sessions turn archives off (``WORKBENCH_CLASS_ARCHIVE=0``)
    rather than let the first local session start making one in the background, where it
    competes with the tests for the two cores and can outlive the session (the smokes took
    121-149 s so). The smoke tiers start a few JVMs: 76-81 s of tests with the archive made,
    83-87 s with archives off (docs/development.md), so making one costs them more than it saves.
    """
    if not archive:
        session.env["WORKBENCH_CLASS_ARCHIVE"] = "0"
    session.install("-e", ".[test]", *pins)
    session.run("python", "-m", "workbench", "doctor", success_codes=[0, 1])
    if archive:
        session.run("python", "-c", "from workbench.cli import class_archive_first; class_archive_first()")


@nox.session
@nox.parametrize(("python", "pyspark"), smoke_params())
def smoke(session: nox.Session, pyspark: str) -> None:
    """The smoke tier on one pyspark and Python (nox takes the ``python`` parameter as the interpreter)."""
    install(session, f"pyspark[connect]=={pyspark}", archive=False)
    session.run("workbench", "test", *SMOKE, *session.posargs)


@nox.session
@nox.parametrize("pyspark", PYSPARK)
def spark(session: nox.Session, pyspark: str) -> None:
    """Everything but the browser tests on one pyspark (tests and notebooks)."""
    install(session, f"pyspark[connect]=={pyspark}")
    session.run("workbench", "test", "-m", "not browser", *session.posargs)


@nox.session
@nox.parametrize("jupyterlab", JUPYTERLAB)
def browser(session: nox.Session, jupyterlab: str) -> None:
    """The extension's and the browser tests on one JupyterLab."""
    install(session, f"jupyterlab=={jupyterlab}")
    session.run("workbench", "test", *BROWSER, *session.posargs)


@nox.session(name="browser-smoke")
@nox.parametrize("jupyterlab", older_tagged_ci(JUPYTERLAB))
def browser_smoke(session: nox.Session, jupyterlab: str) -> None:
    """The browser tier's quick part on one JupyterLab (:data:`BROWSER_SMOKE`)."""
    install(session, f"jupyterlab=={jupyterlab}", archive=False)
    session.run("workbench", "test", *BROWSER_SMOKE, *session.posargs)


@nox.session
def wheel(session: nox.Session) -> None:
    """Build the wheel and sdist; install the wheel where no Node is; open the quickstart."""
    install(session)
    session.run("workbench", "test", "-m", "wheel", "tests/test_wheel.py", *session.posargs)
