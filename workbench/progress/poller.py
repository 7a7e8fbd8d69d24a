"""The progress poller: reads a query's progress cheaply and keeps its history complete.

Reading ``lastProgress`` costs well under a millisecond while fetching ``recentProgress``
(up to 99 entries through py4j) costs ~0.14 s, so each tick reads the former and fetches
the latter only when batches were missed. A tick comes every ``interval`` seconds, or
sooner when :meth:`ProgressPoller.wake` says a batch has ended (Spark's progress event):
then the batch reaches the history within milliseconds instead of up to an interval later.
Wakes are coalesced (at most one tick per ``min_gap`` seconds), so a fast stream does not
mean a tick, and a redraw, per batch. A source that also hears Spark's progress events
(``heard_after(batch_id)``, see :class:`ProgressSource`) spares a tick that
finds several new batches the fetch: what the listener heard is read instead, when it
continues the history without a gap. The poller knows nothing of Spark: it reads a :class:`ProgressSource`, so its logic
is tested with scripted progress.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping, Protocol, Sequence

from ..errors import summarize_error
from ..options import check_seconds
from .history import ProgressHistory
from .records import BatchProgress

__all__ = ["ProgressSource", "ProgressPoller", "SourceGone"]

log = logging.getLogger(__name__)

#: Most seconds between two tries of a read that keeps failing while the query runs.
MAX_RETRY = 30.0
#: Failed tries of the last read of a query that has ended before the poller ends without it.
ENDED_TRIES = 3


class SourceGone(RuntimeError):
    """Raised by a :class:`ProgressSource` whose query can never report again (its session is gone).

    The poller then ends at once; any other error of a source is a failed read, tried again.
    """


class ProgressSource(Protocol):
    """Where a poller reads progress from (a running query, or a script in tests)."""

    def is_active(self) -> bool:
        """Whether the query still runs; raises :class:`SourceGone` when it never can again."""

    def last_progress(self) -> Mapping[str, Any] | None:
        """The newest progress dictionary (cheap)."""

    def recent_progress(self) -> Sequence[Mapping[str, Any]]:
        """The recent progress dictionaries, oldest first (expensive)."""

    def heard_after(self, batch_id: int) -> Sequence[Mapping[str, Any]] | None:
        """The progress of the batches after ``batch_id`` that the source heard of without
        asking (Spark's progress events), oldest first, when they start at batch_id + 1
        without a gap; None when it cannot say, or hears nothing (the poller then fetches
        the recent list). A source that subclasses this protocol hears nothing unless it
        says otherwise."""
        return None


class ProgressPoller:
    """Feeds a :class:`ProgressHistory` from a :class:`ProgressSource` on a daemon thread.

    Parameters
    ----------
    source : ProgressSource
        What to read.
    history : ProgressHistory
        What to fill.
    interval : float, default 0.5
        Seconds between ticks.
    min_gap : float, default 0.25
        Least seconds from a tick that brought batches to one that :meth:`wake` asks for:
        a burst of batches is read (and drawn) together, at most ``1 / min_gap`` times a
        second, besides the interval's own ticks.
    on_finished : callable, optional
        Called once, with no arguments, on the poller's thread when the poller ends by
        itself: the query stopped (its last batches were read) or the source is gone
        (:class:`SourceGone`). A read that fails while the query runs is tried again, ever
        less often (at most every ``MAX_RETRY`` seconds), and noted in :attr:`read_error`.
        Not called after :meth:`stop`: the caller that stops the poller finishes the job.
    name : str, optional
        Thread name, for debugging.

    Examples
    --------
    A source that reports batch 0, then batch 2 (batch 1 is only in the recent list):

    >>> class Scripted(ProgressSource):   # hears no progress events (heard_after: None)
    ...     def __init__(self): self.last = None; self.recent = []
    ...     def is_active(self): return True
    ...     def last_progress(self): return self.last
    ...     def recent_progress(self): return self.recent
    >>> batch = lambda i: {"batchId": i, "numInputRows": 1, "durationMs": {"addBatch": 1}}
    >>> source, history = Scripted(), ProgressHistory()
    >>> poller = ProgressPoller(source, history)
    >>> source.last = batch(0); source.recent = [batch(0)]
    >>> [r.batch_id for r in poller.poll_once()]
    [0]
    >>> source.last = batch(2); source.recent = [batch(0), batch(1), batch(2)]
    >>> [r.batch_id for r in poller.poll_once()]
    [1, 2]
    """

    def __init__(
        self,
        source: ProgressSource,
        history: ProgressHistory,
        *,
        interval: float = 0.5,
        min_gap: float = 0.25,
        on_finished: Callable[[], None] | None = None,
        name: str = "workbench-poller",
    ) -> None:
        self.source = source
        self.history = history
        self.interval = check_seconds("poll interval", interval)
        self.min_gap = check_seconds("min_gap", min_gap, zero_ok=True)
        self._woken = threading.Event()
        self._on_finished = on_finished
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._name = name
        #: How many times the expensive ``recent_progress`` was fetched (for benchmarks).
        self.recent_fetches = 0
        #: Reads in a row that failed while the query still ran (0 once one works again).
        self.read_failures = 0
        #: The last such failure in one line, or None once a read works again.
        self.read_error: str | None = None
        # The idle report's id (the next batch's) when a fetch found no batch before it.
        self._none_before: int | None = None

    # -- pure logic -------------------------------------------------------------------

    def poll_once(self) -> list[BatchProgress]:
        """Read the source once and add any new batches to the history; return them."""
        raw = self.source.last_progress()
        if not raw:
            return []
        latest = BatchProgress.from_json(raw)
        known = self.history.last_batch_id
        # An idle re-report carries the id of the batch that has not run yet.
        newest_run = latest.batch_id - 1 if latest.is_idle_report else latest.batch_id
        if known is not None and newest_run <= known:
            return []
        if not latest.is_idle_report and latest.batch_id == (0 if known is None else known + 1):
            # The next batch, or a run's very first one: nothing can be missing before it.
            return self.history.extend([latest])
        if known is None and latest.is_idle_report and latest.batch_id == self._none_before:
            return []  # no batch has run since a fetch found none: not every tick again
        heard = self._heard_after(known)
        if heard:
            # The batches the events told of, from the one after the history's newest: any
            # newer ones come with their own events, which wake the next tick.
            return self.history.extend(heard)
        added = self.fill()
        if not added and known is None and latest.is_idle_report:
            self._none_before = latest.batch_id
        return added

    def _heard_after(self, known: int | None) -> list[BatchProgress]:
        """What the source heard after batch ``known``, when it continues the history without a gap."""
        if known is None:  # a run's first batches may predate what was heard
            return []
        records = [BatchProgress.from_json(raw) for raw in self.source.heard_after(known) or ()]
        ids = [record.batch_id for record in records]
        return records if ids and ids == list(range(known + 1, known + 1 + len(ids))) else []

    def fill(self) -> list[BatchProgress]:
        """Fetch the recent progress list and add every batch missing from the history."""
        self.recent_fetches += 1
        records = [BatchProgress.from_json(raw) for raw in self.source.recent_progress()]
        return self.history.extend(records)

    # -- thread -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the polling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> ProgressPoller:
        """Start polling on a daemon thread; returns self."""
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Tick soon: a batch has ended (called from Spark's listener thread; returns at once).

        The tick comes at once, or ``min_gap`` seconds after the previous tick that brought
        batches when that was more recent, so that a burst of batches is read in one go.
        """
        self._woken.set()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the thread to stop and wait for it (not when called from the thread itself)."""
        self._stop.set()
        self._woken.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _wait_for_tick(self, due: float, earliest: float) -> bool:
        """Wait for the next tick: at ``due``, or on a wake but not before ``earliest``; False when stopped."""
        if self._woken.wait(max(0.0, due - time.monotonic())):
            if self._stop.is_set():
                return False
            gap = earliest - time.monotonic()
            if gap > 0 and self._stop.wait(gap):
                return False
        # Cleared before reading: a batch that ends from here on wakes the next tick.
        self._woken.clear()
        return not self._stop.is_set()

    def _read_failed(self, exc: BaseException) -> float:
        """Note a failed read of a query that still runs; the seconds until the next try."""
        self.read_failures += 1
        self.read_error = summarize_error(f"{type(exc).__name__}: {exc}")
        if self.read_failures == 1:
            # Info, not a warning: the stream's status line says so (progress_note), and at a
            # script's exit the JVM going first must print nothing.
            log.info("reading the progress of %s failed; retrying: %s", self._name, self.read_error)
        log.debug("progress read %d of %s failed", self.read_failures, self._name, exc_info=True)
        # Back off (1, 2, 4 ... intervals, at most MAX_RETRY seconds): a read that keeps failing
        # costs little, and wakes cannot hurry it.
        doubled = self.interval * 2 ** min(self.read_failures - 1, 30)  # capped: 2 ** 1024 overflows a float
        return min(doubled, max(self.interval, MAX_RETRY))

    def _read_ok(self) -> None:
        if self.read_failures:
            log.info("reading the progress of %s works again after %d failed reads", self._name, self.read_failures)
            self.read_failures, self.read_error = 0, None

    def _run(self) -> None:
        try:
            now = time.monotonic()
            due, earliest = now + self.interval, now  # the first wake ticks at once
            while self._wait_for_tick(due, earliest):
                tick = time.monotonic()
                due = tick + self.interval
                ended = False  # True once this tick has seen the query inactive
                try:
                    ended = not self.source.is_active()
                    if ended:
                        # The query ended between ticks: read what it did before it stopped.
                        self.fill()
                        break
                    brought = self.poll_once()
                except SourceGone:
                    raise
                except Exception as exc:
                    # Not an end: a read that failed (a network blip to a cluster, a progress
                    # report this version cannot read) is tried again; the last read of a
                    # query that has ended, a few times only.
                    wait = self._read_failed(exc)
                    if ended and self.read_failures >= ENDED_TRIES:
                        break
                    due = earliest = tick + wait  # a wake does not hurry the next try
                    continue
                self._read_ok()
                if brought:
                    # Only a tick that brought batches (and so a redraw) holds the next wake back.
                    earliest = tick + self.min_gap
            else:
                return  # stopped from outside: whoever stopped us finishes the job
        except Exception:
            # The session went away under us (SourceGone), or the poller broke; the history keeps what it has.
            log.debug("progress poller %s stopped on an error", self._name, exc_info=True)
        self._stop.set()
        if self._on_finished is not None:
            try:
                self._on_finished()
            except Exception:
                log.exception("poller finish callback failed")
