"""The stream monitor's text: the status line, the charts' caption and the "why no output?" note.

Pure functions of what a :class:`~workbench.views.protocol.MonitoredStream` tells (name,
status, sink, who started it, and the notes a handle may carry: a gap in its history, a
batch a stop cut, a resumed checkpoint) and of its newest batch, returning the HTML that
:class:`~workbench.views.monitor.StreamMonitor` shows. The status line changes only when
the stream's status or notes do; what changes with every batch (its id, rates and
watermark) is the charts' caption, which travels with their points.
"""

from __future__ import annotations

import html
import logging
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import pandas as pd

from ..progress.diagnosis import HeldTimers, OutputSummary, format_time, why_no_output
from ..progress.input_watermarks import InputWatermark
from ..progress.records import BatchProgress
from .monitor_charts import known_watermark
from .protocol import MonitoredStream

__all__ = ["header_html", "caption_html", "no_output_reason", "diagnosis_html", "summary_text", "standalone_page",
           "held_timers", "TimerReader", "batch_running"]

log = logging.getLogger(__name__)

#: How the header names a query the workbench did not start itself (``handle.started_by``).
_STARTED_BY = {"cell": "started by the cell's code", "user": "started by your code (watched)"}


def header_html(handle: MonitoredStream, status: str, error: str | None) -> str:
    """The monitor's status line: name, status, sink, who started it, and the handle's notes.

    Nothing in it changes with every batch (that is :func:`caption_html`'s).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> header_html(SimpleNamespace(name="counts", sink="memory"), "active", None)
    "<b>counts</b> · <span style='color:#2ca02c'><b>active</b></span> · <span title='memory'>memory sink</span>"
    """
    name = html.escape(str(getattr(handle, "name", "stream")))
    colour = {"active": "#2ca02c", "stopped": "#7f7f7f", "failed": "#d62728"}.get(status, "black")
    parts = [f"<b>{name}</b>", f"<span style='color:{colour}'><b>{status}</b></span>"]
    sink = getattr(handle, "sink", None)
    if sink:
        tooltip = html.escape(str(getattr(handle, "sink_description", None) or sink), quote=True)
        parts.append(f"<span title='{tooltip}'>{html.escape(str(sink))} sink</span>")
    started_by = getattr(handle, "started_by", "workbench")
    if started_by in _STARTED_BY:
        parts.append(_STARTED_BY[started_by])
    text = " · ".join(parts)
    resumed = getattr(handle, "resumed_from", None)
    notes = [getattr(handle, "progress_note", None), getattr(handle, "history_note", None),
             getattr(handle, "table_warning", None),
             getattr(handle, "table_note", None),
             f"Resumed from its checkpoint: continues with batch {resumed}." if resumed is not None else None]
    for note in filter(None, notes):
        text += f"<br><small>{html.escape(str(note))}</small>"
    if error:
        text += f"<br><span style='color:#d62728'>{html.escape(error)}</span>"
    return text


def caption_html(last: BatchProgress | None) -> str:
    """The line over the monitor's charts: the newest batch they show, its rates and watermark.

    Examples
    --------
    >>> record = BatchProgress.from_json({"batchId": 7, "inputRowsPerSecond": 50.0,
    ...     "processedRowsPerSecond": 1234.5, "eventTime": {"watermark": "2024-01-01T00:00:05.000Z"}})
    >>> caption_html(record)
    'batch 7 · input 50.0 rows/s · processed 1,234.5 rows/s · watermark 2024-01-01 00:00:05 UTC'
    >>> caption_html(None)
    'no batch yet'
    """
    if last is None:
        return "no batch yet"
    parts = [f"batch {last.batch_id}", f"input {_rate(last.input_rows_per_second)} rows/s",
             f"processed {_rate(last.processed_rows_per_second)} rows/s"]
    watermark = known_watermark(last.watermark)
    if watermark is not None:
        parts.append(f"watermark {html.escape(format_time(watermark))}")
    return " · ".join(parts)


def summary_text(handle: MonitoredStream, status: str, error: str | None, summary: OutputSummary,
                 last: BatchProgress | None) -> str:
    """The monitor as plain text: what a notebook viewer without widgets or pictures shows.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> record = BatchProgress.from_json({"batchId": 2, "numInputRows": 5, "durationMs": {"addBatch": 1},
    ...     "eventTime": {"watermark": "2024-01-01T00:00:05.000Z"}, "sink": {"numOutputRows": 5}})
    >>> print(summary_text(SimpleNamespace(name="numbers", sink="memory"), "stopped", None,
    ...                    OutputSummary().add([record]), record))
    Stream monitor: numbers (memory sink), stopped
    1 batch (last 2), 5 rows in, 5 rows out, last watermark 2024-01-01 00:00:05 UTC

    A sink that cannot count its rows (foreachBatch, files: Spark reports -1) says so:

    >>> unknown = BatchProgress.from_json({"batchId": 0, "numInputRows": 5, "sink": {"numOutputRows": -1}})
    >>> print(summary_text(SimpleNamespace(name="numbers", sink="foreach_batch"), "stopped", None,
    ...                    OutputSummary().add([unknown]), unknown).splitlines()[1])
    1 batch (last 0), 5 rows in, rows out unknown, last watermark none
    """
    sink = getattr(handle, "sink", None)
    lines = [f"Stream monitor: {getattr(handle, 'name', 'stream')}" + (f" ({sink} sink)" if sink else "")
             + f", {status}"]
    if last is None:
        lines.append("no batch ran")
    else:
        watermark = last.known_watermark
        out = f"{summary.output_rows:,} rows out" if summary.output_known else "rows out unknown"
        lines.append(f"{summary.batches} batch{'es' if summary.batches != 1 else ''} (last {last.batch_id}), "
                     f"{summary.input_rows:,} rows in, {out}, last watermark "
                     + (format_time(watermark) if watermark is not None else "none"))
    if error:
        lines.append(f"error: {error.splitlines()[0]}")
    return "\n".join(lines)


def held_timers(frame: pd.DataFrame) -> HeldTimers:
    """A ``timers()`` table (key columns, then ``expires_at``, ...) as "why no output?" names the timers.

    Examples
    --------
    >>> t = pd.Timestamp("2024-01-01 10:32", tz="UTC")
    >>> frame = pd.DataFrame({"user": ["alice", "bob"], "expires_at": [t + pd.Timedelta(minutes=29), t],
    ...                       "time_mode": "event time", "watermark": t - pd.Timedelta(minutes=11)})
    >>> held = held_timers(frame)
    >>> held.count, held.earliest_key, str(held.earliest_at), str(held.watermark)
    (2, 'bob', '2024-01-01 10:32:00+00:00', '2024-01-01 10:21:00+00:00')
    >>> held_timers(frame.head(0)).count
    0
    """
    if frame.empty:
        return HeldTimers(0, "none")
    keys = list(frame.columns[:list(frame.columns).index("expires_at")])
    mode = str(frame["time_mode"].iloc[0])
    first = frame.loc[frame["expires_at"].idxmin()]
    key = ", ".join(str(first[k]) for k in keys)
    watermark = first.get("watermark")
    return HeldTimers(len(frame), mode, key, first["expires_at"].to_pydatetime(),
                      None if pd.isna(watermark) else watermark.to_pydatetime())


class TimerReader:
    """The timers a stream's transformWithState processor holds, read with ``handle.timers()`` once per batch.

    "Why no output?" calls it only when its processor rule applies; a stream without
    ``timers()``, or whose timers cannot be read (no processor, several, a removed
    checkpoint), gives None and the rule rests on progress's counts.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> TimerReader(SimpleNamespace())() is None
    True
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._read: tuple[int | None, HeldTimers | None] | None = None  # (batch id, what was read after it)

    def __call__(self) -> HeldTimers | None:
        read = getattr(self._handle, "timers", None)
        progress = getattr(self._handle, "progress", None)
        if read is None or progress is None:
            return None
        batch = progress.last_batch_id
        if self._read is None or self._read[0] != batch:
            try:
                held = held_timers(read())
            except Exception:  # a stream whose timers cannot be read still gets a reason
                log.debug("timers of %s not readable", getattr(self._handle, "name", "?"), exc_info=True)
                held = None
            self._read = (batch, held)
        return self._read[1]


def no_output_reason(handle: MonitoredStream, summary: OutputSummary, inputs: Sequence[InputWatermark], *,
                     min_batches: int, quiet_time: timedelta, timers: TimerReader | None = None) -> str | None:
    """Why the stream has output nothing yet (see :func:`~workbench.progress.diagnosis.why_no_output`), or None.

    ``inputs`` are each input's watermark after the newest batch (empty unless the query
    measures them); the elapsed time runs from ``handle.started_at``; ``timers`` reads a
    transformWithState processor's timers when the rule about them applies; Spark's query
    status (``handle.query.status``, one call) is read only when no batch has finished by
    ``quiet_time``, to tell a slow first batch from a source without data.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> no_output_reason(SimpleNamespace(started_at=None), OutputSummary(), [], min_batches=3,
    ...                  quiet_time=timedelta(seconds=10)) is None
    True
    """
    started = getattr(handle, "started_at", None)
    elapsed = datetime.now(timezone.utc) - started if started is not None else None
    return why_no_output(
        summary, output_mode=getattr(handle, "output_mode", None),
        plan=getattr(handle, "plan", None), elapsed=elapsed,
        min_batches=min_batches, quiet_time=quiet_time,
        inputs=list(inputs) or None, policy=getattr(handle, "watermark_policy", "min"), timers=timers,
        batch_running=lambda: batch_running(handle),
    )


def batch_running(handle: Any) -> bool:
    """Whether Spark's query status says a micro-batch with data is running (False when it cannot tell).

    A replayed run, or a stream without a Spark query, cannot tell.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> status = {"message": "Processing new data", "isDataAvailable": True, "isTriggerActive": True}
    >>> running = SimpleNamespace(status=status)
    >>> [batch_running(SimpleNamespace(query=running)), batch_running(SimpleNamespace(query=running, spark_gone=True)),
    ...  batch_running(SimpleNamespace())]
    [True, False, False]
    """
    query = getattr(handle, "query", None)
    if query is None or getattr(handle, "spark_gone", False):  # a dead Connect server is retried for minutes
        return False
    try:
        status = query.status
    except Exception:  # Spark stopped: no batch runs
        log.debug("status of %s not readable", getattr(handle, "name", "?"), exc_info=True)
        return False
    return bool(status and status.get("isDataAvailable") and status.get("isTriggerActive"))


def diagnosis_html(message: str | None) -> str:
    """The "why no output?" note as HTML (empty without a message).

    Examples
    --------
    >>> diagnosis_html(None)
    ''
    >>> diagnosis_html("No input has arrived.")
    "<div style='color:#8a6d3b'><b>Why no output?</b> No input has arrived.</div>"
    """
    return f"<div style='color:#8a6d3b'><b>Why no output?</b> {html.escape(message)}</div>" if message else ""


def standalone_page(name: str, header: str, diagnosis: str, figures: Sequence[Any], preview: str,
                    caption: str = "") -> str:
    """The monitor as one HTML page that works offline.

    Header, note, caption, plotly figures (plotly.js once) and results.
    """
    import plotly.io as pio

    charts = [pio.to_html(fig, full_html=False, include_plotlyjs=(index == 0), config={"responsive": True})
              for index, fig in enumerate(figures)]
    title = html.escape(name)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{title}: stream monitor</title></head>\n<body style='font-family:sans-serif'>\n"
        f"<div>{header}</div>\n<div>{diagnosis}</div>\n<div>{caption}</div>\n" + "\n".join(charts)
        + f"\n{preview}\n</body></html>\n"
    )


def _rate(value: float | None) -> str:
    if value is None or value != value:  # Spark writes NaN for batches that took no time
        return "–"
    return f"{value:,.1f}"
