"""The version matrix: the workbench on every pyspark and JupyterLab it declares.

``pyproject.toml`` accepts pyspark 4.0 to 4.x and JupyterLab 4.x; these sessions run the suite
on the newest patch of each pyspark minor and on the oldest and newest JupyterLab minor, each
in a virtualenv of its own under ``.nox/`` (pip's cache makes a second install quick).

``nox -l`` lists the sessions; ``nox -s NAME`` runs one; ``nox -R -s NAME`` reuses its
virtualenv when it exists. Arguments after ``--`` go to pytest, e.g.
``nox -s "smoke(pyspark='4.0.5')" -- -x``.

* ``smoke(pyspark)``: the tests that catch a broken pyspark quickly (:data:`SMOKE`);
  tagged ``ci`` on every pyspark but the newest, whose full suite ``.ci/run`` runs.
* ``spark(pyspark)``: the whole suite but the browser tests, notebooks included.
* ``browser(jupyterlab)``: the extension's and the browser tests (:data:`BROWSER`) on a JupyterLab;
  tagged ``ci`` on the oldest; the full suite covers the newest.
* ``wheel``: builds the wheel and sdist and checks them in a virtualenv without Node
  (``tests/test_wheel.py``).
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = []  # name the sessions to run: the whole matrix takes about an hour

#: The newest patch of each pyspark minor that pyproject.toml accepts, oldest first.
PYSPARK = ["4.0.5", "4.1.4", "4.2.1", "4.3.0"]
#: The oldest and the newest JupyterLab 4 minor (their newest patches).
JUPYTERLAB = ["4.0.13", "4.6.6"]

#: What a pyspark release breaks first (160 tests, no notebooks): windowed, joined and
#: deduplicating stateful streams with their history, state(), state_summary() and
#: state_changes(), the monitor, replay steps, the magics on a real shell, plain scripts
#: that must exit cleanly (pyspark's accumulator server) and leave nothing behind, and
#: what tests/test_versions.py knows to differ between releases.
SMOKE = [
    "tests/test_state.py",
    "tests/test_streams.py",
    "tests/test_replay.py",
    "tests/test_monitor.py",
    "tests/test_magics.py",
    "tests/test_versions.py",
]

#: What a JupyterLab release breaks: the extension's install (``jupyter labextension list``)
#: and the pages the browser tests drive (the quickstart's monitor, the Streams panel).
BROWSER = ["tests/test_extension.py", "tests/test_browser.py", "tests/test_browser_panel.py"]


def older_tagged_ci(versions: list[str]) -> list:
    """``versions`` as session parameters; all but the newest tagged ``ci`` (the full suite covers the newest)."""
    return [nox.param(v, tags=[] if v == versions[-1] else ["ci"]) for v in versions]


def install(session: nox.Session, *pins: str) -> None:
    """The workbench from this checkout with its test extra, and ``pins`` over its bounds."""
    session.install("-e", ".[test]", *pins)
    session.run("python", "-m", "workbench", "doctor", success_codes=[0, 1])


@nox.session
@nox.parametrize("pyspark", older_tagged_ci(PYSPARK))
def smoke(session: nox.Session, pyspark: str) -> None:
    """The smoke tier on one pyspark."""
    install(session, f"pyspark[connect]=={pyspark}")
    session.run("workbench", "test", *SMOKE, *session.posargs)


@nox.session
@nox.parametrize("pyspark", PYSPARK)
def spark(session: nox.Session, pyspark: str) -> None:
    """Everything but the browser tests on one pyspark (tests and notebooks)."""
    install(session, f"pyspark[connect]=={pyspark}")
    session.run("workbench", "test", "-m", "not browser", *session.posargs)


@nox.session
@nox.parametrize("jupyterlab", older_tagged_ci(JUPYTERLAB))
def browser(session: nox.Session, jupyterlab: str) -> None:
    """The extension's and the browser tests on one JupyterLab."""
    install(session, f"jupyterlab=={jupyterlab}")
    session.run("workbench", "test", *BROWSER, *session.posargs)


@nox.session
def wheel(session: nox.Session) -> None:
    """Build the wheel and sdist; install the wheel where no Node is; open the quickstart."""
    install(session)
    session.run("workbench", "test", "-m", "wheel", "tests/test_wheel.py", *session.posargs)
