"""The live stream monitor: watermark, state, latency and rates plotted batch by batch.

:class:`StreamMonitor` is the dashboard under a stream's cell. It reads the stream's
:class:`~workbench.progress.ProgressHistory` only: it subscribes for new batches (the
listener runs on the poller's thread and just queues them), and one small refresher
thread per monitor redraws the charts from a rolling window of the last ``window``
batches, so an update costs the same after ten batches or a hundred thousand. Figures
are plotly ``FigureWidget``s built once and updated in place inside ``batch_update()``.

The view never imports Spark: the handle it is given (duck-typed) provides ``progress``,
``on_finished``, ``status``/``error``, ``stop()`` and, for the memory sink, ``preview(rows)``.
"""

from __future__ import annotations

import html
import logging
import threading
import time
from collections import deque
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from ..progress.diagnosis import EPOCH, OutputSummary, format_time, why_no_output
from ..progress.records import DURATION_PARTS, BatchProgress

__all__ = ["StreamMonitor", "chart_columns"]

log = logging.getLogger(__name__)

_TIME_HOVER = "%{y|%Y-%m-%d %H:%M:%S.%L}"
_STATE_METRICS = (
    ("total", "num_rows_total"), ("updated", "num_rows_updated"),
    ("removed", "num_rows_removed"), ("dropped by watermark", "num_rows_dropped_by_watermark"),
)
_FIGURE_HEIGHT = 300
#: Charts are drawn at this fixed width: the widget cannot follow its cell's width (plotly's
#: FigureWidget never learns it), so the grid wraps to one column when two do not fit.
_FIGURE_WIDTH = 560


def _utc_naive(value: datetime | None) -> datetime | None:
    # plotly.js has no time zones: give it UTC wall-clock values and say "UTC" on the axis.
    if value is None:
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def _watermark(value: datetime | None) -> datetime | None:
    # Spark's initial watermark is epoch 0, meaning "none yet": plotting 1970 next to
    # today's event times would flatten the chart, so it is left out.
    return None if value is None or value <= EPOCH else value


def _times(values: list[datetime | None]) -> np.ndarray:
    return np.array([np.datetime64(v, "us") if v is not None else np.datetime64("NaT", "us") for v in values],
                    dtype="datetime64[us]")


def _numbers(values: list[float | int | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype="float64")


def chart_columns(records: Sequence[BatchProgress]) -> dict[str, np.ndarray]:
    """The values the monitor plots for ``records``, one array per series, in batch order.

    Times are naive UTC ``datetime64`` (plotly shows them as they are; NaT where Spark gave
    none), Spark's initial epoch-0 watermark is NaT, numbers are floats with NaN for
    missing values (numpy arrays keep plotly's validation cheap). The gap is max event
    time minus watermark, in seconds.

    Examples
    --------
    >>> record = BatchProgress.from_json({"batchId": 4, "numInputRows": 3,
    ...     "durationMs": {"addBatch": 20, "triggerExecution": 50},
    ...     "eventTime": {"max": "2024-01-01T12:00:10.000Z", "watermark": "2024-01-01T12:00:00.000Z"}})
    >>> columns = chart_columns([record])
    >>> columns["batch_id"].tolist(), columns["gap_seconds"].tolist(), columns["add_batch_ms"].tolist()
    ([4], [10.0], [20.0])
    """
    watermarks = [_watermark(r.watermark) for r in records]
    columns: dict[str, np.ndarray] = {
        "batch_id": np.array([r.batch_id for r in records], dtype="int64"),
        "event_time_min": _times([_utc_naive(r.event_time_min) for r in records]),
        "event_time_max": _times([_utc_naive(r.event_time_max) for r in records]),
        "watermark": _times([_utc_naive(w) for w in watermarks]),
        "gap_seconds": _numbers([
            (r.event_time_max - w).total_seconds() if w is not None and r.event_time_max is not None else None
            for r, w in zip(records, watermarks)
        ]),
        "trigger_execution_ms": _numbers([r.trigger_execution_ms for r in records]),
        "input_rows_per_second": _numbers([r.input_rows_per_second for r in records]),
        "processed_rows_per_second": _numbers([r.processed_rows_per_second for r in records]),
        "num_input_rows": _numbers([r.num_input_rows for r in records]),
    }
    for attr in DURATION_PARTS.values():
        columns[attr] = _numbers([getattr(r, attr) for r in records])
    return columns


def _check_positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    return value


class StreamMonitor(widgets.VBox):
    """Live dashboard of one stream: header, watermark lane, state, latency, rates, results.

    Normally built by ``handle.monitor(...)`` (and shown by ``%%stream``). It updates
    itself after every micro-batch while no cell runs, and stops updating (ending its
    thread) when the stream ends or :meth:`close` is called.

    Parameters
    ----------
    handle : StreamHandle
        The stream to watch.
    rows : int, default 10
        Rows of the result preview (memory sink): the latest rows, or the head of a
        complete-mode table.
    window : int, default 60
        Batches shown in the charts (the history keeps them all).
    interval : float, optional
        Seconds between header refreshes while no batch arrives (the elapsed-time rules of
        "why no output?"); defaults to the stream's poll interval. New batches are drawn
        as soon as they arrive.
    min_batches : int, default 3
        Batches to wait before explaining why an append-mode stream outputs nothing.
    quiet_seconds : float, default 10.0
        Seconds to wait for a first batch before saying that no input arrives.
    preview_every : float, default 1.0
        Least seconds between two reads of the result table (each read is a small Spark
        job, so a fast stream's preview is refreshed at most this often, never more often
        than a batch outputs rows).

    Attributes
    ----------
    figures : dict of str to plotly.graph_objects.FigureWidget
        ``"watermark"``, ``"state"``, ``"latency"``, ``"rates"``.
    header, diagnosis, preview : ipywidgets.HTML
    stop_button : ipywidgets.Button
    pause_button : ipywidgets.ToggleButton

    Examples
    --------
    >>> monitor = handle.monitor(window=30)          # doctest: +SKIP
    >>> monitor                                       # doctest: +SKIP
    >>> monitor.save_html("counts.html")              # doctest: +SKIP
    >>> monitor.close()                               # doctest: +SKIP
    """

    def __init__(
        self,
        handle: Any,
        *,
        rows: int = 10,
        window: int = 60,
        interval: float | None = None,
        min_batches: int = 3,
        quiet_seconds: float = 10.0,
        preview_every: float = 1.0,
    ) -> None:
        self.rows = _check_positive("rows", rows)
        self.window = _check_positive("window", window)
        self.min_batches = _check_positive("min_batches", min_batches)
        if interval is None:
            interval = getattr(getattr(handle, "spec", None), "poll_interval", 0.5)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        if isinstance(quiet_seconds, bool) or not isinstance(quiet_seconds, (int, float)) or quiet_seconds < 0:
            raise ValueError(f"quiet_seconds must be a number of seconds >= 0, got {quiet_seconds!r}")
        if isinstance(preview_every, bool) or not isinstance(preview_every, (int, float)) or preview_every < 0:
            raise ValueError(f"preview_every must be a number of seconds >= 0, got {preview_every!r}")
        self.preview_every = float(preview_every)
        self._last_preview = float("-inf")  # time.monotonic() of the last read of the table
        self.handle = handle
        self.interval = float(interval)
        self.quiet_time = timedelta(seconds=quiet_seconds)
        self._lock = threading.Lock()       # guards the queue, summary and flags below
        self._draw_lock = threading.RLock()  # one writer of the figures at a time
        self._recent: deque[BatchProgress] = deque(maxlen=self.window)
        self._summary = OutputSummary()
        self._dirty = False
        self._preview_due = False
        self._finished = False
        self._paused = False
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._operators: list[str] = []
        #: Wall-clock times (``time.time()``) at which batch ids reached the figures; only
        #: filled after ``_track_drawn = True`` (the benchmark's freshness probe).
        self.drawn_at: dict[int, float] = {}
        self._track_drawn = False

        self.header = widgets.HTML()
        self.diagnosis = widgets.HTML()
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="danger",
                                          tooltip="Stop this stream")
        self.pause_button = widgets.ToggleButton(value=False, description="Pause updates", icon="pause",
                                                 tooltip="Stop redrawing the charts (batches are still recorded)")
        self.figures = {
            "watermark": self._watermark_figure(),
            "state": self._state_figure(),
            "latency": self._latency_figure(),
            "rates": self._rates_figure(),
        }
        self.preview = widgets.HTML()
        self._has_preview = getattr(handle, "sink", None) == "memory"
        controls = widgets.HBox([self.stop_button, self.pause_button])
        charts = widgets.GridBox(
            list(self.figures.values()),
            layout=widgets.Layout(grid_template_columns=f"repeat(auto-fill, {_FIGURE_WIDTH}px)", grid_gap="4px",
                                  width="100%"),
        )
        children: list[widgets.Widget] = [widgets.HBox([self.header, controls]), self.diagnosis, charts]
        if self._has_preview:
            children.append(self.preview)
        super().__init__(children)
        self.add_class("workbench-monitor")

        self.stop_button.on_click(self._on_stop_clicked)
        self.pause_button.observe(self._on_pause_changed, names="value")
        # Subscribe first, then read what is already there (once: later updates only see new
        # batches). A batch delivered twice is skipped by id in _take.
        self._unsubscribe: Callable[[], None] | None = handle.progress.subscribe(self._take)
        with self._lock:
            existing = handle.progress.records()
            self._summary = OutputSummary().add(existing)
            self._recent.extend(existing[-self.window:])
            self._dirty = True
            # The first preview is read on the monitor's thread, never on the caller's.
            initial_preview = self._has_preview and any((r.num_output_rows or 0) > 0 for r in existing)
        self._refresh()
        self._thread = threading.Thread(
            target=self._run, name=f"workbench-monitor-{getattr(handle, 'name', 'stream')}", daemon=True
        )
        self._thread.start()
        if initial_preview:
            with self._lock:
                self._preview_due = True
            self._wake.set()
        handle.on_finished(self._on_finished)

    # -- figures (built once) -------------------------------------------------------------

    @staticmethod
    def _layout(fig: go.Figure, title: str) -> None:
        fig.update_layout(
            title=dict(text=title, x=0.02, font=dict(size=14)), height=_FIGURE_HEIGHT, width=_FIGURE_WIDTH,
            margin=dict(l=60, r=20, t=40, b=40), hovermode="x unified",
            legend=dict(orientation="h", y=-0.2, font=dict(size=10)), template="plotly_white",
        )

    def _watermark_figure(self) -> go.FigureWidget:
        fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.06)
        fig.add_scatter(name="event time min", mode="lines", line=dict(width=0.5, color="#9ecae1"),
                        hovertemplate=f"min event time {_TIME_HOVER}<extra></extra>", row=1, col=1)
        fig.add_scatter(name="event time max", mode="lines", line=dict(width=0.5, color="#9ecae1"),
                        fill="tonexty", fillcolor="rgba(158,202,225,0.45)",
                        hovertemplate=f"max event time {_TIME_HOVER}<extra></extra>", row=1, col=1)
        fig.add_scatter(name="watermark", mode="lines+markers", line=dict(shape="hv", width=2, color="#d62728"),
                        marker=dict(size=4), hovertemplate=f"watermark {_TIME_HOVER}<extra></extra>",
                        row=1, col=1)
        fig.add_scatter(name="gap (s)", mode="lines", line=dict(shape="hv", color="#7f7f7f"),
                        hovertemplate="gap %{y:.3f} s<extra></extra>", row=2, col=1)
        self._layout(fig, "Watermark and event time (UTC)")
        fig.update_yaxes(title_text="UTC", type="date", tickformat="%H:%M:%S", row=1, col=1)
        fig.update_yaxes(title_text="gap s", rangemode="tozero", row=2, col=1)
        fig.update_xaxes(title_text="batch", row=2, col=1)
        return go.FigureWidget(fig)

    def _state_figure(self) -> go.FigureWidget:
        fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.06)
        self._layout(fig, "State rows")
        fig.update_yaxes(title_text="rows", rangemode="tozero", row=1, col=1)
        fig.update_yaxes(title_text="memory", rangemode="tozero", ticksuffix="B", row=2, col=1)
        fig.update_xaxes(title_text="batch", row=2, col=1)
        return go.FigureWidget(fig)

    def _add_operator_traces(self, names: list[str]) -> None:
        # State traces depend on how many stateful operators the query has, which progress
        # tells only with the first batch: they are added once, never rebuilt.
        fig = self.figures["state"]
        for index in range(len(self._operators), len(names)):
            label = names[index] or f"operator {index}"
            prefix = f"{index}:{label} " if len(names) > 1 else ""
            for metric, _ in _STATE_METRICS:
                fig.add_scatter(name=f"{prefix}{metric}", mode="lines", row=1, col=1,
                                hovertemplate=f"{prefix}{metric} %{{y}}<extra></extra>")
            fig.add_scatter(name=f"{prefix}memory", mode="lines", line=dict(dash="dot"), row=2, col=1,
                            hovertemplate=f"{prefix}memory %{{y:,}} B<extra></extra>")
            self._operators.append(label)
        if len(names) > 1:
            fig.layout.title.text = f"State rows ({len(names)} operators)"

    def _latency_figure(self) -> go.FigureWidget:
        fig = go.Figure()
        for key in DURATION_PARTS:
            fig.add_bar(name=key, hovertemplate=f"{key} %{{y}} ms<extra></extra>")
        fig.add_scatter(name="triggerExecution", mode="lines+markers", line=dict(color="black", width=1.5),
                        marker=dict(size=4), hovertemplate="triggerExecution %{y} ms<extra></extra>")
        self._layout(fig, "Batch duration (ms)")
        fig.update_layout(barmode="stack", bargap=0.1)
        fig.update_yaxes(title_text="ms", rangemode="tozero")
        fig.update_xaxes(title_text="batch")
        return go.FigureWidget(fig)

    def _rates_figure(self) -> go.FigureWidget:
        fig = go.Figure()
        fig.add_scatter(name="input rows/s", mode="lines+markers", marker=dict(size=4),
                        hovertemplate="input %{y:.1f} rows/s<extra></extra>")
        fig.add_scatter(name="processed rows/s", mode="lines+markers", marker=dict(size=4),
                        hovertemplate="processed %{y:.1f} rows/s<extra></extra>")
        self._layout(fig, "Rows per second")
        fig.update_yaxes(title_text="rows/s", rangemode="tozero")
        fig.update_xaxes(title_text="batch")
        return go.FigureWidget(fig)

    # -- data in (poller thread) ------------------------------------------------------------

    def _take(self, records: list[BatchProgress]) -> None:
        """Queue new batches; runs on the poller's thread, so it only appends and wakes."""
        with self._lock:
            last = self._recent[-1].batch_id if self._recent else None
            fresh = [r for r in records if last is None or r.batch_id > last]
            if not fresh:
                return
            self._recent.extend(fresh)
            self._summary = self._summary.add(fresh)
            self._dirty = True
            if self._has_preview and any((r.num_output_rows or 0) > 0 for r in fresh):
                self._preview_due = True
        self._wake.set()

    def _on_finished(self, _handle: Any) -> None:
        with self._lock:
            self._finished = True
        self._wake.set()

    # -- refresher thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._closed.is_set():
                self._wake.wait(self.interval)
                self._wake.clear()
                if self._closed.is_set():
                    break
                with self._lock:
                    finished = self._finished
                self._refresh()
                if finished:
                    break  # the last batches are drawn and the header says how it ended
        except Exception:
            log.exception("monitor of %s stopped on an error", getattr(self.handle, "name", "?"))
        finally:
            self._detach()

    def _detach(self) -> None:
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()

    def _refresh(self) -> None:
        """Redraw what changed: charts (unless paused), header, diagnosis, preview."""
        # The draw lock is held from reading the flags to the last trace written, so a pause
        # that returns has no draw still in flight.
        with self._draw_lock:
            self._refresh_locked()

    def _refresh_locked(self) -> None:
        with self._lock:
            dirty = self._dirty and not self._paused
            records = list(self._recent) if dirty else []
            if dirty:
                self._dirty = False
            preview_due = (self._preview_due and not self._paused
                           and (self._finished or time.monotonic() - self._last_preview >= self.preview_every))
            if preview_due:
                self._preview_due = False  # else it stays due: the thread looks again each interval
            summary, finished = self._summary, self._finished
            last = self._recent[-1] if self._recent else None
        if dirty:
            self._draw(records)
        self._update_header(summary, finished, last)
        if preview_due:
            self._update_preview()

    def _draw(self, records: list[BatchProgress]) -> None:
        columns = chart_columns(records)
        x = columns["batch_id"]
        with self._draw_lock:
            _restyle(self.figures["watermark"], x, [columns[key] for key in
                     ("event_time_min", "event_time_max", "watermark", "gap_seconds")])
            names = max((tuple(op.operator_name for op in r.operators) for r in records), key=len, default=())
            if len(names) > len(self._operators):
                self._add_operator_traces(list(names))
            if self._operators:
                state = []
                for index in range(len(self._operators)):
                    state += [_numbers([_operator_value(r, index, attr) for r in records])
                              for _, attr in (*_STATE_METRICS, ("memory", "memory_used_bytes"))]
                _restyle(self.figures["state"], x, state)
            _restyle(self.figures["latency"], x,
                     [columns[attr] for attr in (*DURATION_PARTS.values(), "trigger_execution_ms")])
            _restyle(self.figures["rates"], x,
                     [columns["input_rows_per_second"], columns["processed_rows_per_second"]])
            if self._track_drawn:
                now = time.time()
                for batch_id in x.tolist():
                    self.drawn_at.setdefault(batch_id, now)

    def _update_header(self, summary: OutputSummary, finished: bool, last: BatchProgress | None) -> None:
        handle = self.handle
        status, error = ("active", None)
        if finished:
            status, error = handle.status, handle.error
        name = html.escape(str(getattr(handle, "name", "stream")))
        colour = {"active": "#2ca02c", "stopped": "#7f7f7f", "failed": "#d62728"}.get(status, "black")
        parts = [f"<b>{name}</b>", f"<span style='color:{colour}'><b>{status}</b></span>"]
        if last is not None:
            parts.append(f"batch {last.batch_id}")
            parts.append(f"input {_rate(last.input_rows_per_second)} rows/s")
            parts.append(f"processed {_rate(last.processed_rows_per_second)} rows/s")
            watermark = _watermark(last.watermark)
            if watermark is not None:
                parts.append(f"watermark {html.escape(format_time(watermark))}")
        else:
            parts.append("no batch yet")
        text = " · ".join(parts)
        if error:
            text += f"<br><span style='color:#d62728'>{html.escape(error)}</span>"
        self.header.value = text
        if finished:
            self.stop_button.disabled = True
        message = None
        if not finished or status == "stopped":
            started = getattr(handle, "started_at", None)
            elapsed = datetime.now(timezone.utc) - started if started is not None else None
            message = why_no_output(
                summary, output_mode=getattr(handle, "output_mode", None),
                plan=getattr(handle, "plan", None), elapsed=elapsed,
                min_batches=self.min_batches, quiet_time=self.quiet_time,
            )
        self.diagnosis.value = (
            f"<div style='color:#8a6d3b'><b>Why no output?</b> {html.escape(message)}</div>" if message else ""
        )

    def _update_preview(self) -> None:
        # One query of the memory table per batch that output rows (at most one per
        # preview_every seconds), on this thread.
        # Only `rows` rows cross from Spark, however large the table has grown.
        self._last_preview = time.monotonic()
        try:
            shown, total = self.handle.preview(self.rows)
        except Exception as exc:  # the session went away; say so instead of failing
            self.preview.value = f"<i>results unavailable: {html.escape(str(exc).splitlines()[0])}</i>"
            return
        mode = getattr(self.handle, "output_mode", None) or "append"
        which = "table" if mode == "complete" else "latest rows"
        self.preview.value = (
            f"<div><b>Result</b> ({which}, {len(shown)} of {total})</div>"
            + shown.to_html(index=False, max_rows=self.rows, border=0, classes="workbench-result")
        )

    # -- user actions -----------------------------------------------------------------------

    def _on_stop_clicked(self, _button: Any) -> None:
        self.stop_button.disabled = True
        # handle.stop() blocks until the running batch ends: keep the kernel free.
        threading.Thread(target=self.handle.stop, daemon=True,
                         name=f"workbench-stop-{getattr(self.handle, 'name', 'stream')}").start()

    def _on_pause_changed(self, change: dict[str, Any]) -> None:
        paused = bool(change["new"])
        self.pause_button.description = "Resume updates" if paused else "Pause updates"
        self.pause_button.icon = "play" if paused else "pause"
        with self._draw_lock, self._lock:
            self._paused = paused
            if not paused:
                # Catch up from the model: the newest `window` batches, whatever came meanwhile.
                self._recent.clear()
                self._recent.extend(self.handle.progress.tail(self.window))
                self._dirty = True
                self._preview_due = self._has_preview
        if not paused:
            if self._thread.is_alive():
                self._wake.set()
            else:  # the stream has ended: one catch-up, still off the caller's thread
                threading.Thread(target=self._refresh, daemon=True,
                                 name=f"workbench-monitor-resume-{getattr(self.handle, 'name', 'stream')}").start()

    # -- public ------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        """Whether chart updates are paused."""
        return self._paused

    @property
    def running(self) -> bool:
        """Whether the monitor still follows its stream (its thread is alive)."""
        return self._thread.is_alive()

    def refresh(self) -> None:
        """Redraw now from the rolling window (normally not needed: the monitor updates itself)."""
        with self._lock:
            self._dirty = True
        self._refresh()

    def to_html(self) -> str:
        """The header and charts as one standalone HTML page (plotly.js embedded once)."""
        with self._draw_lock:
            charts = [
                pio.to_html(fig, full_html=False, include_plotlyjs=(index == 0), config={"responsive": True})
                for index, fig in enumerate(self.figures.values())
            ]
            header, diagnosis = self.header.value, self.diagnosis.value
        preview = self.preview.value if self._has_preview else ""
        title = html.escape(str(getattr(self.handle, "name", "stream")))
        return (
            "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
            f"<title>{title}: stream monitor</title></head>\n<body style='font-family:sans-serif'>\n"
            f"<div>{header}</div>\n<div>{diagnosis}</div>\n" + "\n".join(charts) + f"\n{preview}\n</body></html>\n"
        )

    def save_html(self, path: str | Path) -> Path:
        """Write the charts as a standalone HTML page that works offline; returns the path.

        Examples
        --------
        >>> monitor.save_html("counts.html")     # doctest: +SKIP
        PosixPath('counts.html')
        """
        target = Path(path)
        if target.is_dir():
            raise ValueError(f"save_html needs a file path, got the folder {str(target)!r}")
        target.write_text(self.to_html(), encoding="utf-8")
        return target

    def close(self) -> None:
        """Stop following the stream, end the monitor's thread and close its widgets."""
        if not hasattr(self, "_thread"):  # construction failed (bad options): nothing runs
            super().close()
            return
        self._closed.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self._detach()
        for child in [self.header, self.diagnosis, self.stop_button, self.pause_button, self.preview,
                      *self.figures.values(), *self.children]:
            child.close()
        super().close()

    def __repr__(self) -> str:
        return f"<StreamMonitor {getattr(self.handle, 'name', '?')!r} window={self.window}>"


def _restyle(fig: go.FigureWidget, x: np.ndarray, ys: list[np.ndarray]) -> None:
    # One restyle message per figure, like batch_update() but without plotly validating
    # every value again: the arrays are already clean, and this is 5x cheaper per update.
    fig.plotly_restyle({"x": [x] * len(ys), "y": ys}, trace_indexes=list(range(len(ys))))


def _operator_value(record: BatchProgress, index: int, attr: str) -> int | None:
    if index >= len(record.operators):
        return None
    return getattr(record.operators[index], attr)


def _rate(value: float | None) -> str:
    if value is None or value != value:  # Spark writes NaN for batches that took no time
        return "–"
    return f"{value:,.1f}"
