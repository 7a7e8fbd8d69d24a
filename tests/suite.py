"""How the suite runs (a pytest plugin, ``-p tests.suite`` in pyproject's addopts).

* xdist groups: every test file and every notebook stays on one pytest-xdist worker, the
  long groups first, by the seconds each file took in a measured run
  (``tests/file_seconds.json``; see :func:`pytest_collection_modifyitems`).
* The JVMs the suite starts (each worker's session, every kernel's, notebook's and script's
  Spark, local Spark Connect servers, a test cluster's daemons and executors) compile with
  the JIT's first tier only and one GC thread: about 40 short-lived JVMs spend a quarter
  less CPU that way on this 2-core machine kind (``bench/README.md`` has the measurement). Spark behaves the same; only
  how much the JVM optimises its own code changes. Users' sessions are untouched.

It is a plugin rather than a ``conftest.py`` hook so that it also applies when only
notebooks are collected (``workbench test notebooks/02-output-modes.ipynb``), where
``tests/conftest.py`` is never loaded.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

#: JVM options for the suite's short-lived JVMs (read by spark-submit from SPARK_SUBMIT_OPTS).
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: What SPARK_SUBMIT_OPTS gets: the options for the driver's JVM, and (as a ``spark.*`` system
#: property, which the driver's SparkConf reads) for the executors a standalone cluster's
#: worker starts for it, which live as briefly (``bench/README.md``: the cluster tests spend
#: 13 % less CPU so).
SUBMIT_OPTIONS = f"{TEST_JVM_OPTIONS} '-Dspark.executor.extraJavaOptions={TEST_JVM_OPTIONS}'"


def pytest_configure(config):
    # Before any worker, kernel or script starts, so that all of them inherit it.
    options = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if SUBMIT_OPTIONS not in options:
        os.environ["SPARK_SUBMIT_OPTS"] = f"{options} {SUBMIT_OPTIONS}".strip()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Keep each test file (and each notebook) on one pytest-xdist worker, in order.

    ``workbench test`` runs the suite on two workers with ``--dist loadgroup``. A notebook's
    cells share one kernel and must run in order on one worker; a file's module-scoped
    fixtures (a cluster, a kernel, a JupyterLab server) are then built once. Tests that
    need a machine-wide resource carry an explicit ``xdist_group`` (e.g. ``connect-port``:
    a local Spark Connect server on the fixed port 15002) and keep it.
    """
    groups: dict[str, str] = {}
    for item in items:  # every item, notebooks' cells included (not only those under tests/)
        mark = item.get_closest_marker("xdist_group")
        if mark is None:
            # Dots would make pytest's reports read the group name as part of the test id.
            group = item.path.relative_to(config.rootpath).as_posix().replace(".", "_")
            item.add_marker(pytest.mark.xdist_group(group))
        else:
            group = mark.args[0]
        groups[item.nodeid] = group
    # Workers take groups in collection order, as each finishes one: the longest go first
    # (longest-processing-time first), so that no worker is left with a long group at the
    # end while the other idles. Order within a group stays.
    weights = group_weights(items, groups, config.rootpath)
    items.sort(key=lambda item: -weights[groups[item.nodeid]])


#: Seconds each test file (or notebook) took in a measured full run, for the order above.
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")
#: A file the measured run did not have: heavy (kernels, a cluster, a browser, a notebook) or not.
UNMEASURED_SECONDS = {True: 60.0, False: 5.0}


def group_weights(items: list[pytest.Item], groups: dict[str, str], root: Path) -> dict[str, float]:
    """Each xdist group's expected seconds: the sum of its files' measured seconds.

    Files missing from :data:`FILE_SECONDS` count as :data:`UNMEASURED_SECONDS`.
    """
    try:
        measured = json.loads(FILE_SECONDS.read_text())
    except (OSError, ValueError):
        measured = {}
    files: dict[str, dict[str, float]] = defaultdict(dict)
    for item in items:
        path = item.path.relative_to(root).as_posix()
        seconds = measured.get(path, UNMEASURED_SECONDS[_is_heavy(item)])
        files[groups[item.nodeid]][path] = float(seconds)
    return {group: sum(by_file.values()) for group, by_file in files.items()}


def _is_heavy(item: pytest.Item) -> bool:
    """A test that starts processes of its own (kernels, a cluster, a browser) or a notebook cell."""
    return item.path.suffix == ".ipynb" or any(
        item.get_closest_marker(name) for name in ("kernel", "cluster", "browser"))


def pytest_addoption(parser):
    parser.addoption("--record-file-seconds", action="store_true", default=False,
                     help=f"write the seconds each test file took to {FILE_SECONDS.name} (after a full run)")


_file_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    # On the controller, every worker's reports arrive here: setup, call and teardown.
    _file_seconds[report.nodeid.split("::")[0]] += report.duration


def pytest_sessionfinish(session):
    config = session.config
    if config.getoption("--record-file-seconds") and not hasattr(config, "workerinput") and _file_seconds:
        seconds = {path: round(value, 1) for path, value in sorted(_file_seconds.items())}
        FILE_SECONDS.write_text(json.dumps(seconds, indent=1) + "\n")


#: A checked notebook cell's reference outputs for older pyspark releases, in its metadata:
#: ``{"workbench": {"outputs_on": [{"pyspark": "<4.2", "outputs": [...]}]}}``. The cell's
#: own outputs are those of the newest pyspark; ``tests/notebook_outputs.py`` records these.
OUTPUTS_ON = "outputs_on"


@pytest.hookimpl(trylast=True)
def pytest_itemcollected(item):
    """Compare a notebook cell with the outputs recorded for the pyspark under test, if it has some.

    A few checked cells show facts of a pyspark release (an error's wording, a metric that
    a later release counts differently). Their stored outputs are the newest release's; the
    ones recorded for older releases (see :data:`OUTPUTS_ON`) replace them when such a
    release runs the notebook, so that every release's run is checked, not skipped.
    """
    cell = getattr(item, "cell", None)
    if cell is None or item.path.suffix != ".ipynb":
        return
    choices = cell.get("metadata", {}).get("workbench", {}).get(OUTPUTS_ON)
    if not choices:
        return
    outputs = outputs_for(choices, _pyspark_version())
    if outputs is not None:
        import nbformat

        cell.outputs = [nbformat.from_dict(output) for output in outputs]


def outputs_for(choices: list[dict], version: str) -> list[dict] | None:
    """The first recorded outputs whose ``pyspark`` specifier admits ``version``, or None.

    >>> outputs_for([{"pyspark": "<4.1", "outputs": ["a"]}, {"pyspark": "<4.2", "outputs": ["b"]}], "4.1.4")
    ['b']
    >>> outputs_for([{"pyspark": "<4.2", "outputs": ["b"]}], "4.3.0") is None
    True
    """
    from packaging.specifiers import SpecifierSet

    for choice in choices:
        if SpecifierSet(choice["pyspark"]).contains(version):
            return choice["outputs"]
    return None


def _pyspark_version() -> str:
    from importlib.metadata import version

    return version("pyspark")
