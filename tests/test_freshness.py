"""Fast from the first click: batches drawn on Spark's progress event, and the background warm-up.

The session-wide listener wakes the poller of the stream whose batch ended; the poll
stays as the fallback, and wakes are coalesced so that a fast stream is read (and drawn)
a few times a second, not once per batch. The warm-up runs a tiny query in a session of
its own, which none of the places that list a user's streams shows; the Spark UI, which
lists every query of the JVM, names it as the workbench's own.
"""

from __future__ import annotations

import threading
import urllib.request

import pytest

from workbench.progress import ProgressHistory, ProgressPoller, ProgressSource
from workbench.progress.recorder import QueryRecorder
from tests.helpers import wait_for

HOUR = 3600.0


def batch(i: int, run: str = "r") -> dict:
    return {"id": "q", "runId": run, "batchId": i, "numInputRows": 1, "durationMs": {"addBatch": 1}}


class Scripted(ProgressSource):  # hears no progress events: the poller fetches the recent list
    """A progress source whose batches the test sets; counts the cheap reads."""

    def __init__(self) -> None:
        self.recent: list[dict] = []
        self.reads = 0
        self.read = threading.Event()

    def is_active(self) -> bool:
        return True

    def last_progress(self):
        self.reads += 1
        self.read.set()
        return self.recent[-1] if self.recent else None

    def recent_progress(self):
        return list(self.recent)


@pytest.fixture
def scripted():
    pollers = []

    def make(**options):
        source, history = Scripted(), ProgressHistory()
        poller = ProgressPoller(source, history, **options)
        pollers.append(poller)
        return source, history, poller.start()

    yield make
    for poller in pollers:
        poller.stop()
    assert not any(p.running for p in pollers)


def test_a_wake_reads_the_new_batch_without_waiting_for_the_interval(scripted):
    source, history, poller = scripted(interval=HOUR)
    source.recent = [batch(0)]
    poller.wake()
    wait_for(lambda: history.last_batch_id == 0, timeout=30, message="batch 0 read on the wake")
    source.recent = [batch(0), batch(1), batch(2)]
    poller.wake()
    wait_for(lambda: history.last_batch_id == 2, timeout=30, message="batches 1 and 2 read on the next wake")
    assert [r.batch_id for r in history.records()] == [0, 1, 2]


def test_a_burst_of_wakes_is_read_in_one_tick(scripted):
    source, history, poller = scripted(interval=HOUR, min_gap=HOUR)
    source.recent = [batch(0)]
    for _ in range(50):
        poller.wake()
    assert source.read.wait(30), "the first wake did not tick"
    source.recent = [batch(i) for i in range(50)]
    for _ in range(50):  # 49 more batches end before min_gap has passed: no tick for them yet
        poller.wake()
    poller.stop()
    assert source.reads == 1
    assert [r.batch_id for r in history.records()] == [0]


def test_wakes_during_the_gap_are_read_together_after_it(scripted):
    source, history, poller = scripted(interval=HOUR, min_gap=0.2)
    source.recent = [batch(0)]
    poller.wake()
    wait_for(lambda: history.last_batch_id == 0, timeout=30, message="batch 0")
    for i in range(1, 20):
        source.recent = [batch(j) for j in range(i + 1)]
        poller.wake()
    wait_for(lambda: history.last_batch_id == 19, timeout=30, message="the burst read after the gap")
    assert [r.batch_id for r in history.records()] == list(range(20))
    assert source.reads < 20


def test_without_wakes_the_interval_still_polls(scripted):
    source, history, _ = scripted(interval=0.05)
    source.recent = [batch(0), batch(1)]
    wait_for(lambda: history.last_batch_id == 1, timeout=30, message="the interval's poll")
    assert [r.batch_id for r in history.records()] == [0, 1]


def test_a_released_run_wakes_its_owner_on_each_batch_and_at_its_end():
    recorder, heard = QueryRecorder(), []
    recorder.progress(batch(0))  # heard before the owner took over
    recorder.release("r", wake=lambda: heard.append("wake"))
    assert heard == ["wake"]
    recorder.progress(batch(1))
    recorder.terminated("r")
    recorder.progress(batch(2))  # after the end: nobody to wake
    assert heard == ["wake"] * 3
    assert recorder.get("r") is None


def test_a_failing_owner_does_not_break_the_listener():
    recorder = QueryRecorder()

    def broken() -> None:
        raise RuntimeError("boom")

    recorder.release("r", wake=broken)
    recorder.progress(batch(0))  # logged, not raised
    recorder.progress(batch(0, run="other"))
    assert [r.batch_id for r in recorder.get("other").history.records()] == [0]


# -- real Spark ------------------------------------------------------------------------------


def test_a_batch_is_drawn_on_its_progress_event_with_an_hour_long_poll(env, rate_stream):
    from workbench.views.monitor import StreamMonitor

    handle = env.start(rate_stream(), "fresh", trigger="0.2 seconds", poll_interval=HOUR)
    monitor = StreamMonitor(handle)
    try:
        # Nothing polls for an hour: only the listener's wake can bring the batches.
        x, _ = wait_for(lambda: (lambda d: d if len(d[0]) >= 3 else None)(monitor.charts.data("rates")),
                        timeout=120, message="three batches in the rates chart's data")
        assert list(x[:3]) == [0, 1, 2]
    finally:
        monitor.close()
        handle.stop()
    ids = [r.batch_id for r in handle.progress.records()]
    assert ids == list(range(len(ids)))


def test_batches_read_in_one_tick_reach_the_page_in_one_message(env, rate_stream):
    from workbench.views.monitor import StreamMonitor

    handle = env.start(rate_stream(), "burst", trigger="0.1 seconds", poll_interval=HOUR)
    # Neither the poll nor Spark's events read the batches: the test reads them, in one go.
    env.watcher.recorder.release(handle.run_id, wake=lambda: None)
    monitor = StreamMonitor(handle)
    sent: list[dict] = []
    monitor.charts.send = lambda content, buffers=None: sent.append(content)  # the page's messages

    def drawn(count: int):
        return (lambda x: x if len(x) >= count else None)(monitor.charts.data("rates")[0])

    try:
        wait_for(lambda: len(handle.query.recentProgress) >= 6, timeout=120, message="six batches run")
        wait_for(lambda: drawn(handle.progress.total) is not None, timeout=60, message="what was read before drawn")
        earlier = len(sent)
        read = handle.poller.fill()
        assert len(read) >= 5
        wait_for(lambda: drawn(handle.progress.total), timeout=60, message="the burst in the rates chart")
        burst = sent[earlier:]
    finally:
        monitor.close()
        handle.stop()
    draws = [m for m in burst if m.get("kind") == "data" and not m.get("reset")]
    assert len(draws) == 1, [m["charts"]["rates"]["x"] for m in draws]
    assert draws[0]["charts"]["rates"]["x"] == [r.batch_id for r in read]


def test_the_poll_fills_the_history_when_events_are_missed(env, rate_stream):
    handle = env.start(rate_stream(), "polled", trigger="0.2 seconds", poll_interval=0.5)
    heard = []
    # The listener's events now go elsewhere: the poller hears of no batch and must poll.
    env.watcher.recorder.release(handle.run_id, wake=lambda: heard.append(1))
    try:
        wait_for(lambda: handle.progress.total >= 5, timeout=120, message="five batches polled")
    finally:
        handle.stop()
    assert heard, "the listener heard no batch: the test did not take events away"
    ids = [r.batch_id for r in handle.progress.records()]
    assert ids == list(range(len(ids)))


# -- the warm-up -----------------------------------------------------------------------------


def test_the_warm_up_runs_its_batches_and_ends_by_itself(spark, tmp_path):
    from workbench.spark.warm_up import WarmUp

    warm = WarmUp(spark, str(tmp_path / "warm-up")).start()
    assert warm.wait(300), "the warm-up did not end"
    assert warm.seconds is not None, "the warm-up failed or was stopped"
    assert not warm.query.isActive and not warm.running
    assert (tmp_path / "warm-up" / "commits" / "1").exists()  # batches 0 and 1 ran


def test_a_running_warm_up_is_nobody_s_stream(env, spark, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    from workbench.spark.warm_up import WARM_UP_NAME, WarmUp
    from workbench.views.streams_panel import StreamsPublisher

    warm = WarmUp(spark, str(tmp_path / "warm-up"), batches=10**9).start()
    try:
        query = wait_for(lambda: warm.query, timeout=300, message="the warm-up's query")
        wait_for(lambda: query.lastProgress is not None, timeout=300, message="a warm-up batch")
        assert query.isActive and query.name == WARM_UP_NAME
        assert [q.name for q in spark.streams.active] == []
        assert env.streams().empty
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "workbench")
        try:
            assert shell.run_line_magic("stream", "list").empty
        finally:
            shell.run_line_magic("unload_ext", "workbench")
        assert StreamsPublisher(lambda: env, thread=False).snapshot()["streams"] == []
        assert all(run.name != WARM_UP_NAME for run in env.watcher.recorder.runs())
        # The Spark UI lists every query of the JVM: there it goes by the workbench's name.
        page = urllib.request.urlopen(f"{spark.sparkContext.uiWebUrl}/StreamingQuery/", timeout=60).read().decode()
        assert WARM_UP_NAME in page and str(query.runId) in page
    finally:
        warm.stop(timeout=60)
    assert not warm.running and not query.isActive
