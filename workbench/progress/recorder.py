"""Every run of every streaming query of a session, as a session-wide listener reports them.

Spark tells a ``StreamingQueryListener`` about each query start, each batch's progress and
each end, for every query of the session, whoever started it. :class:`QueryRecorder` is
what that listener writes into: one :class:`RunRecord` per run, with a
:class:`ProgressHistory` that is complete from the run's first batch when the start was
seen. A query that started before the recorder was listening is back-filled from Spark's
recent progress list, and its record says whether batches are missing.

Pure Python: the Spark side (``workbench.spark.watch``) forwards listener events here, so
the bookkeeping is tested without Spark.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping

from .history import ProgressHistory
from .records import BatchProgress, parse_spark_time

__all__ = ["QueryRecorder", "RunRecord", "HEARD_LIMIT", "HEARD_ENDED"]

#: How many of a released run's newest reports :meth:`QueryRecorder.heard` keeps for its owner:
#: beyond Spark's own recent list (100 by default), for a poll that comes after a burst. About
#: 8 KB each as Python objects, so 0.5 MB per running stream.
HEARD_LIMIT = 64
#: How many ended released runs keep their reports (their owner's last read comes soon after the end).
HEARD_ENDED = 8

log = logging.getLogger(__name__)


@dataclass
class RunRecord:
    """What the recorder knows about one run of a query.

    Attributes
    ----------
    query_id, run_id : str
        Spark's ids (the query id survives restarts from a checkpoint; the run id does not).
    name : str or None
        The query's name (``queryName``), None when it has none.
    history : ProgressHistory
        Its batches, oldest first.
    complete : bool
        True when the history holds every batch of the run (the recorder saw it start, or
        Spark's recent list still held them all).
    started_at : datetime or None
        When the run started, when the start was seen.
    ended : bool
        Whether the run has ended.
    exception : str or None
        Spark's text for a run that failed.
    """

    query_id: str
    run_id: str
    name: str | None
    history: ProgressHistory
    complete: bool = False
    started_at: datetime | None = None
    ended: bool = False
    exception: str | None = None
    first_batch_id: int | None = field(default=None)

    @property
    def missing_note(self) -> str | None:
        """One line saying which batches the history lacks, or None when it is complete.

        Examples
        --------
        >>> record = RunRecord("q", "r", "counts", ProgressHistory(), complete=False, first_batch_id=57)
        >>> record.missing_note
        'batches before 57 are missing: the query started before the workbench was watching and Spark keeps only its recent progress reports'
        """
        if self.complete:
            return None
        first = self.first_batch_id
        where = f"batches before {first}" if first is not None else "its earlier batches"
        return (
            f"{where} are missing: the query started before the workbench was watching and Spark keeps "
            "only its recent progress reports"
        )


class QueryRecorder:
    """Keeps a :class:`RunRecord` for every run a session-wide listener reports.

    Every method is quick and never blocks for long: listener callbacks run on Spark's
    listener thread, which must not be held up.

    Parameters
    ----------
    history_cap : int, default 100_000
        Most batches each run's history keeps.
    max_ended : int, default 50
        Ended runs kept (oldest forgotten first); running ones are always kept.

    Examples
    --------
    >>> recorder = QueryRecorder()
    >>> recorder.started("q1", "r1", "counts", "2024-01-01T00:00:00.000Z")
    >>> recorder.progress({"id": "q1", "runId": "r1", "batchId": 0, "numInputRows": 3,
    ...                    "durationMs": {"addBatch": 5}})
    >>> record = recorder.get("r1")
    >>> record.complete, [r.batch_id for r in record.history.records()]
    (True, [0])
    """

    def __init__(self, *, history_cap: int = 100_000, max_ended: int = 50) -> None:
        self.history_cap = history_cap
        self.max_ended = max_ended
        self._runs: OrderedDict[str, RunRecord] = OrderedDict()
        self._released: set[str] = set()
        # Released runs whose owner wants to hear when the listener reports them.
        self._wakers: dict[str, Callable[[], None]] = {}
        # Their newest reports as the listener heard them (heard()), ended runs' last.
        self._heard: OrderedDict[str, deque[Mapping[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    # -- listener events (Spark's listener thread) ---------------------------------------------

    def started(self, query_id: str, run_id: str, name: str | None, timestamp: str | None = None) -> None:
        """A run started: from now on its history is complete."""
        with self._lock:
            if run_id in self._released:
                return
            record = self._runs.get(run_id)
            if record is None:
                record = self._new(query_id, run_id, name)
            record.complete = True
            record.started_at = _time(timestamp)

    def progress(self, raw: Mapping[str, Any]) -> None:
        """A batch's progress (Spark's JSON as a dict)."""
        record_json = BatchProgress.from_json(raw)
        with self._lock:
            waker = self._wakers.get(record_json.run_id)
            heard = self._heard.get(record_json.run_id)
            if heard is not None and not record_json.is_idle_report:
                heard.append(raw)
            released = record_json.run_id in self._released
            if not released:
                record = self._runs.get(record_json.run_id)
                if record is None:  # started before the recorder was listening
                    record = self._new(record_json.query_id, record_json.run_id, record_json.name)
                if record.first_batch_id is None and not record_json.is_idle_report:
                    record.first_batch_id = record_json.batch_id
                # Under the lock, so that a history swapped in by attach() never misses a batch;
                # the history's subscribers (monitors) only queue the records.
                record.history.extend([record_json])
        if waker is not None:
            _wake(waker)

    def terminated(self, run_id: str, exception: str | None = None) -> None:
        """A run ended (``exception``: Spark's text when it failed)."""
        with self._lock:
            waker = self._wakers.pop(run_id, None)
            if run_id in self._heard:  # kept a while for the owner's last read, then dropped
                self._heard.move_to_end(run_id)
                ended = [key for key in self._heard if key not in self._wakers]
                for key in ended[: max(0, len(ended) - HEARD_ENDED)]:
                    del self._heard[key]
            record = self._runs.get(run_id)
            if record is not None:
                record.ended = True
                record.exception = exception
                self._forget_old()
        if waker is not None:
            _wake(waker)

    def release(self, run_id: str, wake: Callable[[], None] | None = None) -> Callable[[], list[Mapping[str, Any]]]:
        """Stop recording run ``run_id``: its owner keeps its own history.

        The owner is the handle of a stream the workbench started or watches: from then on its
        poller is the only writer of the run's history.

        Parameters
        ----------
        run_id : str
            The run.
        wake : callable, optional
            Called with no arguments whenever the listener reports a batch or the end of
            the run (and at once when a batch was reported before the release), on the
            listener's thread: it must return at once (a poller's ``wake``). The owner
            then reads the batch itself, instead of waiting for its next poll; :meth:`heard`
            gives it the run's newest reports as the listener heard them, for batches that
            have already left Spark's recent list when it reads.

        Returns
        -------
        callable
            ``heard`` for this run (no arguments): what the owner's poller reads besides
            Spark's recent list. Empty when released without ``wake``.

        Examples
        --------
        >>> recorder = QueryRecorder()
        >>> heard = []
        >>> reports = recorder.release("r", wake=lambda: heard.append("batch"))
        >>> recorder.started("q", "r", None)
        >>> recorder.get("r") is None
        True
        >>> recorder.progress({"id": "q", "runId": "r", "batchId": 0, "numInputRows": 1,
        ...                    "durationMs": {"addBatch": 1}})
        >>> heard, recorder.get("r") is None
        (['batch'], True)
        >>> [raw["batchId"] for raw in reports()]
        [0]
        """
        with self._lock:
            known = self._runs.pop(run_id, None)
            self._released.add(run_id)
            ended = known is not None and known.ended  # it failed at once: nothing more to wake for
            if wake is not None and not ended:
                self._wakers[run_id] = wake
                self._heard.setdefault(run_id, deque(maxlen=HEARD_LIMIT))
        if wake is not None and known is not None and len(known.history):
            _wake(wake)  # a batch ended before the owner took over
        return functools.partial(self.heard, run_id)

    # -- readers --------------------------------------------------------------------------------------

    def heard(self, run_id: str) -> list[Mapping[str, Any]]:
        """The newest reports (up to :data:`HEARD_LIMIT`) of a run released with ``wake``, oldest first.

        Spark's own recent list (``recentProgress``) keeps one report fewer than
        ``numRecentProgressUpdates`` (99 by default); a poll that comes after more batches than that ended would miss some. The
        listener hears every one: the owner reads them here too. Empty for other runs.
        """
        with self._lock:
            return list(self._heard.get(run_id, ()))

    def get(self, run_id: str) -> RunRecord | None:
        """The record of run ``run_id``, or None when none was reported."""
        with self._lock:
            return self._runs.get(run_id)

    def runs(self) -> list[RunRecord]:
        """Every record kept, oldest first."""
        with self._lock:
            return list(self._runs.values())

    def attach(
        self,
        query_id: str,
        run_id: str,
        name: str | None,
        history: ProgressHistory,
        *,
        recent: Iterable[Mapping[str, Any]] = (),
        recent_limit: int | None = None,
    ) -> RunRecord:
        """Make ``history`` the run's history from now on, merging what is already known.

        Parameters
        ----------
        query_id, run_id, name
            The run.
        history : ProgressHistory
            The history a handle reads; every later batch of the run lands in it, until
            :meth:`release` hands the run to the handle's poller.
        recent : iterable of dict
            Spark's recent progress list (``recentProgress``), to back-fill a run whose
            start the recorder did not see.
        recent_limit : int, optional
            How many entries Spark's recent list keeps at most; a list that long may have
            lost older batches, a shorter one holds the whole run.

        Returns
        -------
        RunRecord

        Examples
        --------
        >>> recorder = QueryRecorder()
        >>> batch = lambda i: {"id": "q", "runId": "r", "batchId": i, "numInputRows": 1,
        ...                    "durationMs": {"addBatch": 1}}
        >>> recorder.progress(batch(5))      # seen by the listener before anyone watched
        >>> record = recorder.attach("q", "r", None, ProgressHistory(),
        ...                          recent=[batch(i) for i in range(3, 6)], recent_limit=3)
        >>> [r.batch_id for r in record.history.records()], record.complete, record.first_batch_id
        ([3, 4, 5], False, 3)
        """
        older = [BatchProgress.from_json(raw) for raw in recent]
        recent_count = len(older)
        with self._lock:
            record = self._runs.get(run_id)
            if record is None:
                record = self._new(query_id, run_id, name)
            known = record.history.records()
            # Older batches first, so that the history (which only takes newer ids) keeps them all.
            held = {r.batch_id for r in history.records()}
            merged = sorted(
                (r for r in [*older, *known] if r.batch_id not in held), key=lambda r: r.batch_id
            )
            if history.last_batch_id is None or all(r.batch_id > history.last_batch_id for r in merged):
                history.extend(merged)
            else:
                log.debug("history of run %s already holds newer batches; back-fill skipped", run_id)
            record.history = history
            batches = [r.batch_id for r in history.records()]
            if batches:
                record.first_batch_id = batches[0]
            if not record.complete and recent_limit is not None and recent_count < recent_limit:
                record.complete = True  # Spark's list still held the whole run
            return record

    # -- internals ------------------------------------------------------------------------------------

    def _new(self, query_id: str, run_id: str, name: str | None) -> RunRecord:
        record = RunRecord(query_id, run_id, name, ProgressHistory(cap=self.history_cap))
        self._runs[run_id] = record
        return record

    def _forget_old(self) -> None:
        ended = [key for key, record in self._runs.items() if record.ended]
        for key in ended[: max(0, len(ended) - self.max_ended)]:
            del self._runs[key]


def _wake(waker: Callable[[], None]) -> None:
    # On Spark's listener thread: a failing owner must not break the listener.
    try:
        waker()
    except Exception:
        log.debug("waking a run's owner failed", exc_info=True)


def _time(text: str | None) -> datetime | None:
    try:
        return parse_spark_time(text)
    except (TypeError, ValueError):
        return None
