"""The per-stream progress history: every batch since the stream started, bounded by a cap.

A :class:`ProgressHistory` is the model the views read. The poller is its only writer;
views subscribe to be told about new batches and read rolling windows with :meth:`tail`,
so the cost of an update does not grow with the length of the history.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Callable, Iterable

import pandas as pd

from .records import BatchProgress

__all__ = ["ProgressHistory", "HISTORY_COLUMNS", "OPERATOR_COLUMNS", "records_to_frame"]

log = logging.getLogger(__name__)

#: Columns of :meth:`ProgressHistory.to_frame`, one row per batch.
HISTORY_COLUMNS: tuple[str, ...] = (
    "batch_id", "timestamp", "batch_duration_ms", "num_input_rows",
    "input_rows_per_second", "processed_rows_per_second",
    "add_batch_ms", "get_batch_ms", "latest_offset_ms", "query_planning_ms",
    "trigger_execution_ms", "wal_commit_ms", "commit_offsets_ms",
    "event_time_min", "event_time_max", "event_time_avg", "watermark",
    "state_rows_total", "state_rows_updated", "state_rows_removed",
    "state_rows_dropped_by_watermark", "state_memory_bytes", "num_output_rows",
    # transformWithState (0 for other queries).
    "state_variables", "timers_registered", "timers_deleted", "timers_expired", "state_values_removed_by_ttl",
)

#: Columns of ``to_frame(operators=True)``, one row per batch and stateful operator.
OPERATOR_COLUMNS: tuple[str, ...] = (
    "batch_id", "timestamp", "operator_index", "operator_name", "state_rows_total",
    "state_rows_updated", "state_rows_removed", "state_rows_dropped_by_watermark",
    "state_memory_bytes", "num_shuffle_partitions", "num_state_store_instances",
)

_TIME_COLUMNS = ("timestamp", "event_time_min", "event_time_max", "event_time_avg", "watermark")
_NULLABLE_INT_COLUMNS = (
    "batch_duration_ms", "add_batch_ms", "get_batch_ms", "latest_offset_ms",
    "query_planning_ms", "trigger_execution_ms", "wal_commit_ms", "commit_offsets_ms",
    "num_output_rows", "num_shuffle_partitions", "num_state_store_instances",
)

Listener = Callable[[list[BatchProgress]], None]


def records_to_frame(records: Iterable[BatchProgress], *, operators: bool = False) -> pd.DataFrame:
    """Turn progress records into a DataFrame with :data:`HISTORY_COLUMNS`.

    Parameters
    ----------
    records : iterable of BatchProgress
        Records in batch order.
    operators : bool, default False
        One row per batch and stateful operator (:data:`OPERATOR_COLUMNS`) instead of
        one row per batch with state columns summed over operators.

    Returns
    -------
    pandas.DataFrame
        Times are timezone-aware UTC timestamps (NaT where Spark gave none); durations
        and counts that Spark may omit are nullable integers. ``watermark`` is NaT while
        the query has no watermark yet: Spark reports epoch 0 (``1970-01-01 00:00:00``)
        then, which the table shows as missing; the value as Spark reported it stays on
        each record, ``BatchProgress.watermark`` (``BatchProgress.known_watermark`` is
        the table's value).

    Examples
    --------
    >>> from workbench.progress import BatchProgress
    >>> frame = records_to_frame([BatchProgress.from_json({"batchId": 0, "numInputRows": 5})])
    >>> int(frame.loc[0, "num_input_rows"]), frame.loc[0, "watermark"] is pd.NaT
    (5, True)
    >>> first = BatchProgress.from_json({"batchId": 0, "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}})
    >>> records_to_frame([first]).loc[0, "watermark"] is pd.NaT, first.watermark.year
    (True, 1970)
    """
    if operators:
        rows = [
            {
                "batch_id": r.batch_id, "timestamp": r.timestamp, "operator_index": i,
                "operator_name": op.operator_name, "state_rows_total": op.num_rows_total,
                "state_rows_updated": op.num_rows_updated,
                "state_rows_removed": op.num_rows_removed,
                "state_rows_dropped_by_watermark": op.num_rows_dropped_by_watermark,
                "state_memory_bytes": op.memory_used_bytes,
                "num_shuffle_partitions": op.num_shuffle_partitions,
                "num_state_store_instances": op.num_state_store_instances,
            }
            for r in records
            for i, op in enumerate(r.operators)
        ]
        columns = OPERATOR_COLUMNS
    else:
        # Spark's initial epoch-0 watermark means "none yet": missing, like the charts show it.
        rows = [{name: r.known_watermark if name == "watermark" else getattr(r, name) for name in HISTORY_COLUMNS}
                for r in records]
        columns = HISTORY_COLUMNS
    frame = pd.DataFrame(rows, columns=list(columns))
    for name in columns:
        if name in _TIME_COLUMNS:
            frame[name] = utc_time_column(frame[name])
        elif name in _NULLABLE_INT_COLUMNS:
            frame[name] = frame[name].astype("Int64")
        elif name.endswith("_per_second"):
            frame[name] = frame[name].astype("float64")
    return frame


def utc_time_column(column: pd.Series) -> pd.Series:
    """``column``'s datetimes (None: NaT) as pandas times in UTC, in nanoseconds where they fit.

    Times past 2262 (where nanoseconds end: event times in milliseconds read as seconds,
    say) make the column microseconds instead, which reach any year Python has.

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> utc_time_column(pd.Series([datetime(2024, 1, 1, tzinfo=timezone.utc), None])).dtype
    datetime64[ns, UTC]
    >>> utc_time_column(pd.Series([datetime(9999, 1, 1, tzinfo=timezone.utc)])).dtype
    datetime64[us, UTC]
    """
    try:
        return pd.to_datetime(column, utc=True)
    except pd.errors.OutOfBoundsDatetime:
        return column.astype("datetime64[us, UTC]")


class ProgressHistory:
    """Every micro-batch of one stream, in batch order, bounded by ``cap``.

    Thread-safe: the poller appends from its thread while views and users read.
    Spark's idle re-reports are refused, so every record is a batch that ran.

    Parameters
    ----------
    cap : int, default 100_000
        Most batches kept; the oldest are dropped first once it is reached.

    Examples
    --------
    >>> from workbench.progress import BatchProgress
    >>> history = ProgressHistory(cap=2)
    >>> added = history.extend(BatchProgress.from_json(
    ...     {"batchId": i, "numInputRows": 1, "durationMs": {"addBatch": 1}}) for i in range(3))
    >>> [r.batch_id for r in history.records()], history.dropped
    ([1, 2], 1)
    """

    def __init__(self, cap: int = 100_000) -> None:
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ValueError(f"history cap must be a positive whole number of batches, got {cap!r}")
        self._records: deque[BatchProgress] = deque(maxlen=cap)
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._total = 0
        self._last_batch_id: int | None = None
        self._skipped = 0
        self._last_gap: tuple[int, int] | None = None

    @property
    def cap(self) -> int:
        """Most batches kept."""
        return self._records.maxlen or 0

    @property
    def last_batch_id(self) -> int | None:
        """Id of the newest batch seen, or None before the first one."""
        return self._last_batch_id

    @property
    def total(self) -> int:
        """Batches recorded since the stream started, including any dropped by the cap."""
        return self._total

    @property
    def dropped(self) -> int:
        """Oldest batches dropped because the cap was reached."""
        return self._total - len(self._records)

    @property
    def skipped(self) -> int:
        """Batches that ran but never reached the history: ids missing between two it holds.

        Spark keeps only its last ``spark.sql.streaming.numRecentProgressUpdates`` (100)
        reports: a reader that falls further behind (a long pause in reading) finds the batches
        before them gone.
        """
        return self._skipped

    @property
    def skipped_note(self) -> str | None:
        """One line saying how many batches the history skipped (and the last such gap), or None.

        Examples
        --------
        >>> from workbench.progress import BatchProgress
        >>> history = ProgressHistory()
        >>> added = history.extend(BatchProgress.from_json({"batchId": i, "numInputRows": 1}) for i in (0, 1, 152))
        >>> history.skipped_note
        "150 batches were never read (the last: 2-151): Spark keeps only its recent progress reports and reading them fell behind; the history's totals leave them out"
        """
        if not self._skipped or self._last_gap is None:
            return None
        first, last = self._last_gap
        return (f"{self._skipped} batch{'es were' if self._skipped > 1 else ' was'} never read (the last: "
                f"{first}{'' if first == last else f'-{last}'}): Spark keeps only its recent progress reports and "
                "reading them fell behind; the history's totals leave them out")

    def __len__(self) -> int:
        return len(self._records)

    def extend(self, records: Iterable[BatchProgress]) -> list[BatchProgress]:
        """Add batches newer than the newest one held; return those actually added.

        Idle re-reports and batches already seen are ignored, so callers may pass
        overlapping lists. Subscribers are called with the added records, outside the lock.
        """
        added: list[BatchProgress] = []
        with self._lock:
            for record in sorted(records, key=lambda r: r.batch_id):
                if record.is_idle_report:
                    continue
                if self._last_batch_id is not None and record.batch_id <= self._last_batch_id:
                    continue
                if self._last_batch_id is not None and record.batch_id > self._last_batch_id + 1:
                    self._skipped += record.batch_id - self._last_batch_id - 1
                    self._last_gap = (self._last_batch_id + 1, record.batch_id - 1)
                self._records.append(record)
                self._last_batch_id = record.batch_id
                self._total += 1
                added.append(record)
            listeners = list(self._listeners)
        if added:
            for listener in listeners:
                try:
                    listener(added)
                except Exception:  # a broken view must not stop the poller
                    log.exception("progress listener %r failed", listener)
        return added

    def records(self) -> list[BatchProgress]:
        """All batches held, oldest first."""
        with self._lock:
            return list(self._records)

    def tail(self, n: int) -> list[BatchProgress]:
        """The newest ``n`` batches, oldest first; costs O(n), not O(history)."""
        with self._lock:
            count = min(n, len(self._records))
            return [self._records[i] for i in range(len(self._records) - count, len(self._records))]

    def last(self) -> BatchProgress | None:
        """The newest batch, or None."""
        with self._lock:
            return self._records[-1] if self._records else None

    def subscribe(self, listener: Listener, *, held: bool = False) -> Callable[[], None]:
        """Call ``listener(new_records)`` after every batch added; returns an unsubscribe function.

        The listener runs on the poller's thread: it must be quick and must not block.
        ``held``: first call it with the batches held now, in the same step, so that each
        batch reaches it once and in order, however other threads add batches meanwhile.
        """
        with self._lock:
            self._listeners.append(listener)
            if held and self._records:
                listener(list(self._records))

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def to_frame(self, *, operators: bool = False) -> pd.DataFrame:
        """The history as a DataFrame; see :func:`records_to_frame`."""
        return records_to_frame(self.records(), operators=operators)
