"""Shared fixtures: one local Spark session for the whole run, a fresh workbench per test.

Spark tests take ``spark`` (the session) and ``env`` (a clean :class:`Workbench` whose
streams are all stopped after the test, and checked to be).
"""

from __future__ import annotations

import sys
import time

import pytest


@pytest.fixture(autouse=True)
def _page_seen_flag_per_test():
    """Each test starts as a new kernel does: no page has loaded a workbench chart yet.

    ``StaticOutput.page_seen_in_process`` is process-wide (a kernel learns it once); a test
    that plays a page's ``ready`` would otherwise leave it set for the later tests of its worker.
    """
    yield
    module = sys.modules.get("workbench.views.static_output")  # not imported: nothing to reset
    if module:
        module.StaticOutput.page_seen_in_process = False


@pytest.fixture(scope="module")
def playwright():
    """The browser module's Playwright, for every page it opens (those of its module-scoped
    fixtures and its tests' own alike): the sync API allows one live Playwright at a time in a
    thread, so a module that started a second one beside the first would fail."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="session")
def spark():
    """The one local SparkSession of the test run (workbench defaults)."""
    import workbench
    from workbench.spark import current_env

    session = workbench.session()
    yield session
    current_env().close()
    session.stop()


@pytest.fixture(scope="session")
def spark_processes():
    """A standalone cluster and a Spark Connect server, each started when a test first asks.

    Shared by every module that needs one (``tests/cluster_support.py``); those modules carry
    the ``xdist_group`` ``SPARK_PROCESSES_GROUP``, so that the processes start once per run, on
    one worker. Ended, and checked to be, after the run.
    """
    from tests.cluster_support import SparkProcesses, listening

    processes = SparkProcesses()
    yield processes
    ports = list(processes.ports)
    processes.close()
    still = [port for port in ports if listening(port)]
    assert not still, f"Spark processes still listen on {still} after the run"
    assert not processes.root.exists(), f"{processes.root} was not removed"


@pytest.fixture
def env(spark):
    """A fresh workbench for one test; afterwards no stream, poller or temp folder remains."""
    from workbench.spark import new_env

    workbench_env = new_env()
    yield workbench_env
    temp = workbench_env._temp_dir
    pollers = [h.poller for h in workbench_env.handles()]
    workbench_env.close()
    assert not spark.streams.active, "a test left streaming queries running"
    assert not any(p.running for p in pollers), "a test left a poller thread running"
    if temp is not None and temp.exists():
        # The state store's maintenance thread can write a stopped query's last snapshot into
        # its removed checkpoint; the workbench removes such a folder again (sweep_removed),
        # which it does only for folders it removed.
        from workbench.spark.private_folders import sweep_removed

        deadline = time.monotonic() + 10
        while temp.exists() and time.monotonic() < deadline:
            sweep_removed()
            time.sleep(0.2)
    assert temp is None or not temp.exists(), "a test left the workbench temp folder behind"


@pytest.fixture
def rate_stream(spark):
    """Factory for a deterministic rate-micro-batch streaming DataFrame."""

    def make(rows_per_batch: int = 10, partitions: int = 1, start_ms: int = 0, advance_ms: int = 1000):
        return (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", rows_per_batch)
            .option("numPartitions", partitions)
            .option("startTimestamp", start_ms)
            .option("advanceMillisPerBatch", advance_ms)
            .load()
        )

    return make
