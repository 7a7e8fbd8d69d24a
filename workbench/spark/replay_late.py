"""Which of a replay run's input rows were late, what became of each, and the next watermark.

:func:`classify_late_rows` joins what Spark reported (each batch's watermark and operators)
and what the plan says (window shape, session gap) to the run's input rows, and hands them
to the rules of :mod:`workbench.replay.late`. It decides which watermark each data batch
filtered its rows against; the rules themselves stay pure Python. :func:`next_watermark`
applies Spark's rule for the watermark the next batch will use.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pandas as pd

from ..progress import BatchProgress
from ..replay.late import WindowShape, late_row_fates

__all__ = ["classify_late_rows", "filtering_watermarks", "next_watermark"]


def filtering_watermarks(records: dict[int, BatchProgress], batch_ids: list[int]) -> list[datetime | None]:
    """The watermark each of ``batch_ids`` filtered late rows against (None: no watermark).

    Measured: batch b filters late rows against the watermark batch b - 1 reported (b's own
    reported watermark is only used for eviction); batch 0 against epoch 0.
    """
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    watermarks: list[datetime | None] = []
    for b in batch_ids:
        own = records.get(b)
        if own is None or own.watermark is None:
            watermarks.append(None)  # no watermark in this query (or the record is gone)
        elif b == 0:
            watermarks.append(epoch)
        else:
            previous = records.get(b - 1)
            watermarks.append(previous.watermark if previous is not None else None)
    return watermarks


def classify_late_rows(inputs: pd.DataFrame, *, event_time: str, records: list[BatchProgress],
                       data_batches: list[int], plan: Any, output_mode: str | None) -> pd.DataFrame:
    """Every input row that arrived behind the watermark, with its fate.

    Parameters
    ----------
    inputs : pandas.DataFrame
        The input rows of every data batch so far.
    event_time : str
        The event-time column of ``inputs``.
    records : list of BatchProgress
        Spark's progress, batch by batch (padding rows counted).
    data_batches : list of int
        The batch ids that read input rows, in order.
    plan : PlanFacts or None
        What the query's plan says (window shape, session gap).
    output_mode : str or None
        The query's output mode.

    Examples
    --------
    >>> classify_late_rows(run.inputs(), event_time="timestamp", records=run.raw_progress.records(),
    ...                    data_batches=[0, 1], plan=run.plan, output_mode="append")   # doctest: +SKIP
    """
    by_id = {r.batch_id: r for r in records}
    ids = list(data_batches)
    watermarks = filtering_watermarks(by_id, ids)
    window = None
    if plan is not None and plan.window_duration is not None:
        window = WindowShape(plan.window_duration, plan.window_slide, plan.window_offset)
    # Complete mode keeps every group, so Spark aggregates late rows too (measured).
    drops = any(r.operators for r in by_id.values()) and output_mode != "complete"
    gap = plan.session_gap if plan is not None else None
    return late_row_fates(inputs, event_time=event_time, watermarks=watermarks,
                          batch_ids=ids, window=window, session_gap=gap, stateful=drops)


def next_watermark(last: BatchProgress | None, plan: Any) -> datetime | None:
    """The watermark the batch after ``last`` will use (Spark reports it one batch late).

    ``max(last watermark, latest max event time - delay)``: Spark's rule for one
    watermark; None when the query has none, no batch ran, or ``plan`` has several
    watermarks (Spark then takes the minimum over the inputs, whose own maximum event times
    progress does not report).

    Examples
    --------
    >>> next_watermark(None, None) is None
    True
    """
    delay = getattr(plan, "watermark_delay", None)
    if last is None or last.watermark is None or getattr(plan, "watermarks", 1) > 1:
        return None
    if delay is None:
        return last.watermark
    candidates = [last.watermark]
    if last.event_time_max is not None:
        candidates.append(last.event_time_max - delay)
    return max(candidates)
