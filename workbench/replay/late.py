"""Late-row forensics: which input rows arrived behind the watermark, and what became of them.

Pure rules, measured on Spark 4.3 (see the project's SPARK_FACTS):

* A row arriving in batch ``k`` is filtered against the watermark of the **previous**
  batch: the ``eventTime.watermark`` that batch ``k - 1`` reported (epoch 0 for batch 0).
  Batch ``k``'s own reported watermark, already computed from every batch before it, is
  only used to evict state, so a window can take a late row and be emitted in one batch.
* In a windowed aggregation Spark compares each **window's end** with that watermark: the
  row is dropped from every window with ``end <= watermark`` and counted in the others. With
  sliding windows a row can lose some windows and keep others (``partial``).
* A session-window aggregation compares each row's own session, ``[event_time,
  event_time + gap)``, before sessions are merged: the row is dropped when
  ``event_time + gap <= watermark``.
* In other stateful operators (aggregation without a window, deduplication) the event time
  itself is compared: ``event_time <= watermark`` is dropped.
* Stateless queries, and aggregations in complete mode (which keep every group), never drop
  rows for lateness.

Spark's own ``numRowsDroppedByWatermark`` counts late *groups* after partial aggregation
(one per window and key, per partition), not rows; :func:`late_totals` reports both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import pandas as pd

__all__ = ["WindowShape", "window_spans", "late_row_fates", "input_column", "no_late_rows", "late_totals", "LATE_COLUMNS", "FATES",
           "DROPPED_GROUPS_NOTE"]

#: Possible fates of a late row.
FATES: tuple[str, ...] = ("dropped", "partial", "counted")

#: Columns of :func:`late_row_fates` (followed by the source's other columns).
LATE_COLUMNS: tuple[str, ...] = (
    "batch", "batch_id", "value", "event_time", "watermark", "fate", "kept_windows", "dropped_windows",
)

DROPPED_GROUPS_NOTE = (
    "Spark's numRowsDroppedByWatermark counts late groups (one per window and key, per "
    "partition, after partial aggregation), not input rows, so it differs from the row count."
)


@dataclass(frozen=True)
class WindowShape:
    """Event-time windows of a windowed aggregation: ``duration``, ``slide``, ``offset``."""

    duration: timedelta
    slide: timedelta | None = None
    offset: timedelta = timedelta(0)


def window_spans(event_time: datetime, shape: WindowShape) -> list[tuple[datetime, datetime]]:
    """Every ``[start, end)`` window of ``shape`` that holds ``event_time``, oldest first.

    Examples
    --------
    >>> t = datetime(2024, 1, 1, 12, 7, tzinfo=timezone.utc)
    >>> [(s.strftime("%H:%M"), e.strftime("%H:%M"))
    ...  for s, e in window_spans(t, WindowShape(timedelta(minutes=10), timedelta(minutes=5)))]
    [('12:00', '12:10'), ('12:05', '12:15')]
    """
    slide = shape.slide or shape.duration
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    since = (event_time - epoch - shape.offset) % slide
    last_start = event_time - since
    spans = []
    start = last_start
    while start + shape.duration > event_time:
        spans.append((start, start + shape.duration))
        start -= slide
    return spans[::-1]


def input_column(name: str) -> str:
    """The column of :func:`late_row_fates`' result holding the input column ``name``.

    Examples
    --------
    >>> input_column("word"), input_column("event_time")
    ('word', 'input_event_time')
    """
    return f"input_{name}" if name in LATE_COLUMNS and name not in ("batch", "value") else name


def _other_columns(inputs: pd.DataFrame, event_time: str) -> dict[str, str]:
    # The row's time is ``event_time``: an input column named like one of the result's own
    # (``event_time`` when the watermark is on another column) comes as ``input_<name>``.
    return {c: input_column(c) for c in inputs.columns if c not in ("batch", "value", event_time)}


def no_late_rows(inputs: pd.DataFrame, event_time: str) -> pd.DataFrame:
    """:func:`late_row_fates`' result with no rows: its columns for ``inputs``."""
    return pd.DataFrame(columns=[*LATE_COLUMNS, *_other_columns(inputs, event_time).values()])


def late_row_fates(
    inputs: pd.DataFrame,
    *,
    event_time: str,
    watermarks: Sequence[datetime | None],
    batch_ids: Sequence[int] | None = None,
    window: WindowShape | None = None,
    session_gap: timedelta | None = None,
    stateful: bool = True,
) -> pd.DataFrame:
    """Every input row that arrived behind the watermark, with its fate.

    Parameters
    ----------
    inputs : pandas.DataFrame
        Input rows with a ``batch`` column (data batch index, from 0), ``value`` and the
        event-time column.
    event_time : str
        Name of the column the watermark is on; the result gives its values as ``event_time``.
    watermarks : sequence of datetime or None
        The watermark each data batch's rows were filtered against (the watermark the
        previous batch reported); None where the query has no watermark.
    batch_ids : sequence of int, optional
        Spark's batch id of each data batch (defaults to the data batch index).
    window : WindowShape, optional
        The windowed aggregation's windows; None for other operators.
    session_gap : datetime.timedelta, optional
        The gap of a session-window aggregation (``session_window(col, gap)``).
    stateful : bool, default True
        Whether the query drops late rows at all: False for stateless queries and for
        aggregations in complete mode.

    Returns
    -------
    pandas.DataFrame
        :data:`LATE_COLUMNS` then the other input columns. ``fate`` is ``dropped`` (in no
        result), ``counted`` (still aggregated) or ``partial`` (dropped from some sliding
        windows, counted in others); ``kept_windows``/``dropped_windows`` list
        ``(start, end)`` pairs for windowed aggregations (the row's own session for
        session windows).

    Examples
    --------
    The guide's donkey at 12:04 arrives when the watermark is 12:04: both its windows end
    later, so it is counted; a row at 11:58 loses the window 11:50-12:00 only.

    >>> t = lambda hm: pd.Timestamp(f"2024-01-01 {hm}", tz="UTC")
    >>> inputs = pd.DataFrame({"batch": [0, 1, 1, 1], "value": [0, 4, 5, 6],
    ...     "event_time": [t("12:21"), t("12:04"), t("11:58"), t("11:50")]})
    >>> shape = WindowShape(timedelta(minutes=10), timedelta(minutes=5))
    >>> late = late_row_fates(inputs, event_time="event_time", watermarks=[None, t("12:04")], window=shape)
    >>> list(zip(late["value"], late["fate"]))
    [(4, 'counted'), (5, 'partial'), (6, 'dropped')]

    With 5-minute sessions, the 12:04 row's session ends at 12:09, after the watermark:

    >>> late = late_row_fates(inputs, event_time="event_time", watermarks=[None, t("12:04")],
    ...                       session_gap=timedelta(minutes=5))
    >>> list(zip(late["value"], late["fate"]))
    [(4, 'counted'), (5, 'dropped'), (6, 'dropped')]
    """
    ids = list(batch_ids) if batch_ids is not None else list(range(len(watermarks)))
    others = _other_columns(inputs, event_time)
    rows: list[dict[str, Any]] = []
    for record in inputs.sort_values(["batch", "value"], kind="stable").to_dict("records"):
        batch = int(record["batch"])
        if batch >= len(watermarks) or watermarks[batch] is None:
            continue
        mark = pd.Timestamp(watermarks[batch]).tz_convert("UTC") if pd.Timestamp(watermarks[batch]).tzinfo \
            else pd.Timestamp(watermarks[batch]).tz_localize("UTC")
        when = pd.Timestamp(record[event_time])
        when = when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")
        if when > mark:
            continue
        kept: list[tuple[datetime, datetime]] = []
        dropped: list[tuple[datetime, datetime]] = []
        if window is not None:
            for start, end in window_spans(when.to_pydatetime(), window):
                (dropped if end <= mark else kept).append((start, end))
            fate = "dropped" if not kept else ("partial" if dropped else "counted")
        elif session_gap is not None:
            span = (when.to_pydatetime(), (when + session_gap).to_pydatetime())
            (dropped if span[1] <= mark else kept).append(span)
            fate = "dropped" if dropped else "counted"
        else:
            fate = "dropped" if stateful else "counted"
        if not stateful:
            kept, dropped, fate = kept + dropped, [], "counted"
        rows.append({
            "batch": batch, "batch_id": ids[batch] if batch < len(ids) else batch, "value": record["value"],
            "event_time": when, "watermark": mark, "fate": fate, "kept_windows": kept,
            "dropped_windows": dropped, **{name: record[c] for c, name in others.items()},
        })
    frame = pd.DataFrame(rows, columns=[*LATE_COLUMNS, *others.values()])
    for name in ("event_time", "watermark"):
        frame[name] = pd.to_datetime(frame[name], utc=True)
    return frame


def late_totals(late: pd.DataFrame, spark_dropped_groups: int | None) -> dict[str, Any]:
    """Late rows by fate next to Spark's ``numRowsDroppedByWatermark`` total.

    Examples
    --------
    >>> late = pd.DataFrame({"fate": ["dropped", "counted", "partial", "dropped"],
    ...                      "dropped_windows": [[1, 2], [], [3], [4, 5]]})
    >>> totals = late_totals(late, 4)
    >>> totals["late_rows"], totals["dropped"], totals["dropped_row_windows"], totals["spark_dropped_groups"]
    (4, 2, 5, 4)
    """
    counts = late["fate"].value_counts() if len(late) else pd.Series(dtype="int64")
    windows = int(late["dropped_windows"].map(len).sum()) if "dropped_windows" in late and len(late) else 0
    return {
        "late_rows": int(len(late)),
        **{fate: int(counts.get(fate, 0)) for fate in FATES},
        "dropped_row_windows": windows,
        "spark_dropped_groups": spark_dropped_groups,
        "note": DROPPED_GROUPS_NOTE,
    }
