"""A watermark per input: each watermarked input's max event time and watermark, batch by batch.

Spark's progress reports only the global watermark of a query with several watermarked
inputs (a stream-stream join, a union). When asked (``input_watermarks=True``), the Spark
layer observes each input's event times (``Dataset.observe``, reported in progress as
``observedMetrics``); this module turns those figures into the watermark Spark derives
per input, following Spark's ``WatermarkTracker`` (4.x):

* after each batch, an input that had rows proposes ``max event time - delay`` and keeps
  the largest value proposed so far; an input that has had no rows yet stands at epoch 0;
* the global watermark is the minimum over the inputs (policy ``min``, the default of
  ``spark.sql.streaming.multipleWatermarkPolicy``) or the maximum (``max``), and never
  goes back. The next batch runs with it (progress reports it one batch later).

Pure Python: no Spark, no views.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from .history import utc_time_column

__all__ = ["InputSpec", "InputWatermark", "InputWatermarkTracker", "INPUT_WATERMARK_COLUMNS", "input_watermarks",
           "input_watermark_frame", "POLICIES"]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: Values of ``spark.sql.streaming.multipleWatermarkPolicy``.
POLICIES = ("min", "max")

#: Columns of :func:`input_watermark_frame` (and ``handle.input_watermarks()``).
INPUT_WATERMARK_COLUMNS: tuple[str, ...] = (
    "batch_id", "input", "max_event_time", "delay", "watermark", "rows", "quiet_batches", "global_watermark",
)


@dataclass(frozen=True)
class InputSpec:
    """One watermarked input of a query, as the Spark layer observes it.

    Attributes
    ----------
    name : str
        Readable name: the temp view or alias it is read through, else the source's name.
    observation : str
        The name of its ``observe`` metrics in progress ``observedMetrics``.
    column : str
        Its event-time column.
    delay : timedelta
        Its ``withWatermark`` delay.
    """

    name: str
    observation: str
    column: str
    delay: timedelta


@dataclass(frozen=True)
class InputWatermark:
    """One input after one batch.

    Attributes
    ----------
    batch_id : int
    input : str
    max_event_time : datetime or None
        The latest event time this input has had so far (None before its first row).
    delay : timedelta
    watermark : datetime
        The watermark this input proposes after the batch (epoch 0 before its first row).
    rows : int
        Rows this input had in the batch.
    quiet_batches : int
        Batches in a row, up to this one, in which the input had no rows.
    global_watermark : datetime
        The global watermark Spark derives after the batch: the next batch runs with it, so
        it is one batch ahead of progress's (and ``history()``'s) ``watermark``, which is the
        one the batch ran with.
    """

    batch_id: int
    input: str
    max_event_time: datetime | None
    delay: timedelta
    watermark: datetime
    rows: int
    quiet_batches: int
    global_watermark: datetime


def _figures(observed: Mapping[str, Any], spec: InputSpec) -> tuple[int, datetime | None]:
    """Rows and max event time of one input in one batch, from progress ``observedMetrics``."""
    metrics = observed.get(spec.observation) or {}
    rows = int(metrics.get("rows") or 0)
    micros = metrics.get("max_event_time_us")
    if not rows or micros is None:
        return 0, None
    return rows, EPOCH + timedelta(microseconds=int(micros))


class InputWatermarkTracker:
    """Folds batches into per-input watermarks as they arrive (Spark's ``WatermarkTracker`` rules).

    A live view adds each new batch once, so an update costs O(inputs), not O(history).

    Parameters
    ----------
    inputs : sequence of InputSpec
    policy : {"min", "max"}, default "min"
        Spark's ``multipleWatermarkPolicy``.

    Examples
    --------
    >>> tracker = InputWatermarkTracker([InputSpec("clicks", "o0", "t", timedelta(minutes=2))])
    >>> from workbench.progress import BatchProgress
    >>> [row] = tracker.add([BatchProgress.from_json({"batchId": 0, "durationMs": {"addBatch": 1},
    ...     "observedMetrics": {"o0": {"rows": 3, "max_event_time_us": 600_000_000}}})])
    >>> row.input, row.watermark.strftime("%H:%M"), row.global_watermark.strftime("%H:%M")
    ('clicks', '00:08', '00:08')
    """

    def __init__(self, inputs: Sequence[InputSpec], policy: str = "min") -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown watermark policy {policy!r}: use 'min' or 'max'")
        self.inputs = tuple(inputs)
        self.policy = policy
        self._latest: dict[str, datetime | None] = {spec.name: None for spec in self.inputs}
        self._marks: dict[str, datetime] = {}
        self._quiet = {spec.name: 0 for spec in self.inputs}
        self._global = EPOCH

    def add(self, records: Iterable[Any]) -> list[InputWatermark]:
        """Each input after each of ``records`` (newer batches, in order)."""
        out: list[InputWatermark] = []
        for record in records:
            batch: list[tuple[InputSpec, int]] = []
            for spec in self.inputs:
                rows, max_time = _figures(getattr(record, "observed_metrics", {}) or {}, spec)
                if rows and max_time is not None:
                    seen = self._latest[spec.name]
                    self._latest[spec.name] = max_time if seen is None else max(seen, max_time)
                    proposed = max_time - spec.delay
                    if spec.name not in self._marks or proposed > self._marks[spec.name]:
                        self._marks[spec.name] = proposed
                    self._quiet[spec.name] = 0
                else:
                    self._marks.setdefault(spec.name, EPOCH)  # Spark: an input with no data yet stands at 0
                    self._quiet[spec.name] += 1
                batch.append((spec, rows))
            if self._marks:
                values = self._marks.values()
                self._global = max(self._global, min(values) if self.policy == "min" else max(values))
            out += [InputWatermark(record.batch_id, spec.name, self._latest[spec.name], spec.delay,
                                   self._marks[spec.name], rows, self._quiet[spec.name], self._global)
                    for spec, rows in batch]
        return out


def input_watermarks(records: Iterable[Any], inputs: Sequence[InputSpec], policy: str = "min") -> list[InputWatermark]:
    """Each input's watermark after each batch, from progress records with observed metrics.

    Parameters
    ----------
    records : iterable of BatchProgress
        The stream's batches in order (``observed_metrics`` holds the inputs' figures).
    inputs : sequence of InputSpec
    policy : {"min", "max"}
        Spark's ``multipleWatermarkPolicy``.

    Examples
    --------
    >>> from workbench.progress import BatchProgress
    >>> spec = [InputSpec("clicks", "o0", "t", timedelta(minutes=2)), InputSpec("views", "o1", "t", timedelta(0))]
    >>> minute = 60_000_000
    >>> batch = lambda i, clicks, views: BatchProgress.from_json({"batchId": i, "durationMs": {"addBatch": 1},
    ...     "observedMetrics": {"o0": {"rows": clicks and 1, "max_event_time_us": clicks},
    ...                         "o1": {"rows": views and 1, "max_event_time_us": views}}})
    >>> rows = input_watermarks([batch(0, 10 * minute, None), batch(1, 12 * minute, 11 * minute)], spec)
    >>> [(r.batch_id, r.input, r.watermark.strftime("%H:%M"), r.global_watermark.strftime("%H:%M")) for r in rows]
    [(0, 'clicks', '00:08', '00:00'), (0, 'views', '00:00', '00:00'), (1, 'clicks', '00:10', '00:10'), (1, 'views', '00:11', '00:10')]
    """
    return InputWatermarkTracker(inputs, policy).add(records)


def input_watermark_frame(rows: Sequence[InputWatermark]) -> pd.DataFrame:
    """:func:`input_watermarks` as a table with :data:`INPUT_WATERMARK_COLUMNS`.

    A batch's ``global_watermark`` is the watermark derived after it (the next batch's),
    one batch ahead of ``history()``'s ``watermark``.

    Examples
    --------
    >>> input_watermark_frame([]).columns.tolist()[:5]
    ['batch_id', 'input', 'max_event_time', 'delay', 'watermark']
    """
    frame = pd.DataFrame([{name: getattr(r, name) for name in INPUT_WATERMARK_COLUMNS} for r in rows],
                         columns=list(INPUT_WATERMARK_COLUMNS))
    for name in ("max_event_time", "watermark", "global_watermark"):
        frame[name] = utc_time_column(frame[name])
    frame["delay"] = pd.to_timedelta(frame["delay"])
    for name in ("batch_id", "rows", "quiet_batches"):
        frame[name] = frame[name].astype("int64")
    return frame
