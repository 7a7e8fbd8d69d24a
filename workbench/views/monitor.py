"""The live stream monitor: watermark, state, latency and rates plotted batch by batch.

:class:`StreamMonitor` is the dashboard under a stream's cell. It reads the stream's
:class:`~workbench.progress.ProgressHistory` only: it subscribes for new batches (the
listener runs on the poller's thread and just queues them), and one small refresher
thread per monitor sends the new points to its charts. The four charts are one
:class:`~workbench.views.charts.ChartGrid` widget drawn by the workbench's JupyterLab
extension (plotly.js reaches the page once, as the extension's static file); each update
carries only the batches that are new, and the page keeps the last ``window`` of them.

What the charts draw is built by ``workbench.views.monitor_charts`` and the header's text by
``workbench.views.monitor_header``; this module owns the widget, its threads and the user's
buttons. It never imports Spark: it reads the stream through ``MonitoredStream``.
"""

from __future__ import annotations

import html
import logging
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import ipywidgets as widgets

from ..errors import error_line
from ..options import check_rows, check_seconds
from ..progress.diagnosis import OutputSummary
from ..progress.input_watermarks import InputWatermark, InputWatermarkTracker
from ..progress.records import BatchProgress
from .charts import ChartGrid
from .closing import close_tree
from .monitor_charts import (
    NO_STATE, NO_WATERMARK, chart_points, chart_specs, input_traces, known_watermark, operator_traces, utc_text,
)
from .monitor_header import (
    TimerReader, caption_html, diagnosis_html, header_html, no_output_reason, standalone_page, summary_text,
)
from .pictures import grid_picture
from .protocol import MonitoredStream
from .sparkui import SparkUIButton, statistics_path, ui_port
from .static_output import StaticOutput
from .tws_charts import TimerTraces

__all__ = ["StreamMonitor"]

log = logging.getLogger(__name__)

ENDED = ("stopped", "failed", "closed")  #: statuses of an ended stream (a replay "playing" or "paused" is not)


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
    handle : MonitoredStream
        The stream to watch: a ``StreamHandle``, a watched query or a replay.
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
    preview_every : float, default 2.0
        Least seconds between two reads of the result table (each read runs two small
        Spark jobs and costs the kernel ~6 ms of CPU, so a fast stream's preview is
        refreshed at most this often, never more often than a batch outputs rows).
    caption : callable, optional
        What the line over the charts says, given the newest batch they show (None before
        the first): HTML, drawn with the batch's points in one message. Defaults to the
        batch's id, rates and watermark; a replay panel puts its counters there.

    Attributes
    ----------
    charts : ChartGrid
        The four charts, one widget: ``"watermark"``, ``"state"``, ``"latency"``, ``"rates"``.
    figures : dict of str to plotly.graph_objects.Figure
        The same charts as plotly figures holding the points drawn (a fresh copy on each
        read: export or inspect them).
    header, diagnosis, preview : ipywidgets.HTML
        The status line (name, status, sink, notes), "why no output?" and the result table.
        The newest drawn batch's id, rates and watermark are the charts' caption
        (``charts.caption``).
    stop_button : ipywidgets.Button
    pause_button : ipywidgets.ToggleButton
    spark_ui_button : SparkUIButton
        Opens the query's statistics page of the Spark UI in a JupyterLab tab.

    Notes
    -----
    Shown in a notebook, its output gains a picture of the charts and a text summary when the
    stream ends (or on :meth:`snapshot`): see ``workbench.views.static_output``.

    Examples
    --------
    >>> monitor = handle.monitor(window=30)          # doctest: +SKIP
    >>> monitor                                       # doctest: +SKIP
    >>> monitor.save_html("counts.html")              # doctest: +SKIP
    >>> monitor.close()                               # doctest: +SKIP
    """

    def __init__(
        self,
        handle: MonitoredStream,
        *,
        rows: int = 10,
        window: int = 60,
        interval: float | None = None,
        min_batches: int = 3,
        quiet_seconds: float = 10.0,
        preview_every: float = 2.0,
        caption: Callable[[BatchProgress | None], str] | None = None,
    ) -> None:
        self.rows = check_rows(rows)
        self.window = _check_positive("window", window)
        self.min_batches = _check_positive("min_batches", min_batches)
        if interval is None:
            interval = getattr(getattr(handle, "spec", None), "poll_interval", 0.5)
        interval = check_seconds("interval", interval)
        for label, seconds in (("quiet_seconds", quiet_seconds), ("preview_every", preview_every)):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
                raise ValueError(f"{label} must be a number of seconds >= 0, got {seconds!r}")
        self.preview_every = float(preview_every)
        if caption is not None and not callable(caption):
            raise TypeError(f"caption must be a function of the newest batch's progress, got {caption!r}")
        self._caption = caption or caption_html
        self._last_preview = float("-inf")  # time.monotonic() of the last read of the table
        self.handle = handle
        self.interval = float(interval)
        self.quiet_time = timedelta(seconds=quiet_seconds)
        self._lock = threading.Lock()       # guards the queue, summary and flags below
        self._draw_lock = threading.RLock()  # one writer of the charts at a time
        self._pending: list[BatchProgress] = []  # batches not yet sent to the charts
        self._last: BatchProgress | None = None
        self._summary = OutputSummary()
        self._reset_due = False  # redraw the whole window (first draw, after a pause)
        self._preview_due = False
        self._finished = False
        self._stop_error: str | None = None  # why the Stop button's stop failed, until the stream ends
        self._paused = False
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._operators: list[str] = []
        # Queries started with input_watermarks=True: one watermark lane per input, folded
        # batch by batch as records arrive (each record once, in order).
        inputs = tuple(getattr(handle, "inputs", ()) or ())
        self._tracker = (InputWatermarkTracker(inputs, getattr(handle, "watermark_policy", "min"))
                         if inputs else None)
        self._input_names = [spec.name for spec in inputs]
        self._input_lanes: dict[int, list[str | None]] = {}  # batch id -> each input's watermark it ran with
        self._input_rows: list[InputWatermark] = []  # each input after the newest batch
        #: Wall-clock times (``time.time()``) at which batch ids were sent to the page; only
        #: filled after ``_track_drawn = True`` (the benchmark's freshness probe).
        self.drawn_at: dict[int, float] = {}
        self._track_drawn = False

        # The status line changes with the stream's status and notes only; the newest batch's
        # numbers are the charts' caption, which comes with their points in one message and is
        # drawn in the same frame (a status line sent apart cost the page a message and a frame
        # per batch). It fills its row, so the buttons after it stay put when it changes.
        self.header = widgets.HTML(layout=widgets.Layout(flex="1 1 auto"))
        self.diagnosis = widgets.HTML()
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="danger",
                                          tooltip="Stop this stream")
        self.pause_button = widgets.ToggleButton(value=False, description="Pause updates", icon="pause",
                                                 tooltip="Stop redrawing the charts (batches are still recorded)")
        specs = chart_specs()
        specs[0]["traces"] += input_traces(self._input_names)
        self.charts = ChartGrid(specs, window=self.window)
        self.charts.set_caption(self._caption(None))
        self._timer_traces = TimerTraces()  # a transformWithState processor's timers and TTL
        self._timers = TimerReader(handle)  # its timers, for "why no output?"
        self.preview = widgets.HTML()
        self._has_preview = getattr(handle, "sink", None) == "memory"
        name = str(getattr(handle, "name", "stream"))
        run_id = getattr(handle, "run_id", None)
        #: Opens the query's page of the Spark UI in a JupyterLab tab (disabled without a UI).
        self.spark_ui_button = SparkUIButton(
            port=ui_port(getattr(handle, "spark_ui_url", None)),
            path=statistics_path(run_id) if run_id else "/StreamingQuery/", title=f"{name}: Spark UI",
        )
        controls = widgets.HBox([self.stop_button, self.pause_button, self.spark_ui_button],  # in a narrow output
                                layout=widgets.Layout(flex="0 1 auto", flex_flow="row wrap"))  # under the line
        row = widgets.HBox([self.header, controls], layout=widgets.Layout(flex_flow="row wrap"))
        children: list[widgets.Widget] = [row, self.diagnosis, self.charts]
        if self._has_preview:
            children.append(self.preview)
        super().__init__(children)
        self.add_class("workbench-monitor")
        self._output = StaticOutput(self, text=self.summary, after_cell=self._publish_if_ended,  # picture: header too
                                    picture=lambda: grid_picture(self.charts, header=self.summary(), note=self.diagnosis.value))
        self._output.watch_page(self.charts)
        self.charts.on_seen(self._wake.set)  # header and preview catch up once it can be seen

        self.stop_button.on_click(self._on_stop_clicked)
        self.pause_button.observe(self._on_pause_changed, names="value")
        # Subscribe first, then read what is already there (once: later updates only see new
        # batches). A batch delivered twice is skipped by id in _take.
        self._unsubscribe: Callable[[], None] | None = handle.progress.subscribe(self._take)
        with self._lock:
            existing = handle.progress.records()
            self._fold_inputs(existing)
            self._summary = OutputSummary().add(existing)
            self._last = existing[-1] if existing else None
            self._reset_due = bool(existing)
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

    # -- data in (poller thread) ------------------------------------------------------------

    def _take(self, records: list[BatchProgress]) -> None:
        """Queue new batches; runs on the poller's thread, so it only appends and wakes."""
        with self._lock:
            last = self._last.batch_id if self._last is not None else None
            fresh = [r for r in records if last is None or r.batch_id > last]
            if not fresh:
                return
            self._last = fresh[-1]
            self._fold_inputs(fresh)
            self._summary = self._summary.add(fresh)
            if self._paused:
                self._reset_due = True  # resume redraws the newest window from the model
            else:
                self._pending.extend(fresh)
            if self._has_preview and any((r.num_output_rows or 0) > 0 for r in fresh):
                self._preview_due = True
        self._wake.set()

    def _fold_inputs(self, records: list[BatchProgress]) -> None:
        """Per-input watermarks of new batches (called under the lock, each batch once, in O(batches))."""
        if self._tracker is None or not records:
            return
        rows, width = self._tracker.add(records), len(self._input_names)  # one row per batch and input, in order
        for index in range(max(0, len(records) - self.window), len(records)):  # the lanes the charts can show
            # Drawn at batch b: the watermark each input proposed after the batch before
            # (what batch b ran with), like the global watermark lane.
            before = rows[(index - 1) * width:index * width] if index else self._input_rows
            marks = {row.input: row.watermark for row in before}
            self._input_lanes[records[index].batch_id] = [utc_text(known_watermark(marks.get(name)))
                                                          for name in self._input_names]
        self._input_rows = rows[-width:]
        while len(self._input_lanes) > self.window:  # batch ids arrive in increasing order: the oldest is first
            del self._input_lanes[next(iter(self._input_lanes))]

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
                    # The last batches are drawn, the header says how it ended: the final picture.
                    if self._output.displayed:
                        self._output.publish(self._picture_key())
                    break
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
            paused = self._paused
            reset = self._reset_due and not paused
            fresh = [] if paused else self._pending
            if not paused:
                self._pending, self._reset_due = [], False
            # Nobody sees the monitor (scrolled away, a hidden tab): the charts keep their
            # points, the header and the preview wait, until it shows again or ends.
            seen = self._finished or self.charts.seen
            preview_due = (self._preview_due and not self._paused and seen
                           and (self._finished or time.monotonic() - self._last_preview >= self.preview_every))
            if preview_due:
                self._preview_due = False  # else it stays due: the thread looks again each interval
            summary, finished, taken = self._summary, self._finished, (self._last.batch_id if self._last else -1)
        if reset:  # the batches _take saw: a newer one is on its way there, to be drawn once (not twice)
            self._draw([r for r in self.handle.progress.tail(self.window) if r.batch_id <= taken], reset=True)
        elif fresh:
            self._draw(fresh[-self.window:], reset=False)
        if seen:
            self._update_header(summary, finished)
        if preview_due:
            self._update_preview()

    def _draw(self, records: list[BatchProgress], *, reset: bool) -> None:
        with self._draw_lock:
            names = max((tuple(op.operator_name for op in r.operators) for r in records), key=len, default=())
            if len(names) > len(self._operators):
                # State traces depend on how many stateful operators the query has, which
                # progress tells only with the first batch: added once, never rebuilt.
                title = f"State rows ({len(names)} operators)" if len(names) > 1 else None
                self.charts.add_traces("state", operator_traces(names, start=len(self._operators)), title=title)
                self._operators = [name or f"operator {i}" for i, name in enumerate(names)]
            if records and not self._operators:
                self.charts.set_empty_message("state", NO_STATE)
            # Spark reports a watermark (epoch 0 at first) with every batch of a query that has one.
            if records and not self._input_names and all(r.watermark is None for r in records):
                self.charts.set_empty_message("watermark", NO_WATERMARK)
            points = chart_points(records, len(self._operators))
            if self._input_names:
                x, lanes = points["watermark"]
                with self._lock:
                    values = [self._input_lanes.get(batch, [None] * len(self._input_names)) for batch in x]
                lanes += [list(column) for column in zip(*values)] if values else [[] for _ in self._input_names]
            self._timer_traces.draw(self.charts, records, points)
            caption = self._caption(records[-1]) if records else None
            if reset:
                self.charts.reset(points, caption=caption)
            else:
                self.charts.extend(points, caption=caption)
            if self._track_drawn:
                now = time.time()
                for record in records:
                    self.drawn_at.setdefault(record.batch_id, now)

    def _update_header(self, summary: OutputSummary, finished: bool) -> None:
        handle = self.handle
        status, error = ("active", None)
        if finished:
            status, error = handle.status, handle.error
        self.header.value = header_html(handle, status, error)
        if finished:
            self.stop_button.disabled = True
        message = None
        if not finished or status == "stopped":
            with self._lock:
                inputs = list(self._input_rows)
            message = no_output_reason(handle, summary, inputs, min_batches=self.min_batches,
                                       quiet_time=self.quiet_time, timers=self._timers)
        stop_error = self._stop_error
        if stop_error and not finished:
            self.diagnosis.value = f"<span style='color:#d62728'>{html.escape(stop_error)}</span>"
            return
        self.diagnosis.value = diagnosis_html(message)

    def _update_preview(self) -> None:
        # One query of the memory table per batch that output rows (at most one per
        # preview_every seconds), on this thread.
        # Only `rows` rows cross from Spark, however large the table has grown.
        self._last_preview = time.monotonic()
        try:
            shown, total = self.handle.preview(self.rows)
        except Exception as exc:  # the session went away; say so instead of failing
            self.preview.value = f"<i>results unavailable: {html.escape(error_line(exc))}</i>"
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
        self._stop_error = None
        # handle.stop() blocks until the running batch ends: keep the kernel free.
        threading.Thread(target=self._stop, daemon=True,
                         name=f"workbench-stop-{getattr(self.handle, 'name', 'stream')}").start()

    def _stop(self) -> None:
        try:
            self.handle.stop()
        except Exception as exc:  # Spark could not stop it (it still runs), or a replay that failed
            log.debug("stopping %s from its monitor failed", getattr(self.handle, "name", "?"), exc_info=True)
            self._stop_error = error_line(exc)
            self.stop_button.disabled = False  # try again
            self._wake.set()

    def _on_pause_changed(self, change: dict[str, Any]) -> None:
        paused = bool(change["new"])
        self.pause_button.description = "Resume updates" if paused else "Pause updates"
        self.pause_button.icon = "play" if paused else "pause"
        with self._draw_lock, self._lock:
            self._paused = paused
            if not paused:
                # Catch up from the model: the newest `window` batches, whatever came meanwhile.
                self._pending, self._reset_due = [], True
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

    def summary(self) -> str:
        """The monitor as plain text (name, sink, status, batches, rows, last watermark): its
        output's ``text/plain``, what a text-only notebook viewer shows."""
        with self._lock:
            summary, finished, last = self._summary, self._finished, self._last
        status, error = (self.handle.status, self.handle.error) if finished else ("active", None)
        return summary_text(self.handle, status, error, summary, last)

    @property
    def picture(self) -> bytes | None:
        """The PNG of the charts last published (stream ended, or :meth:`snapshot`), or None."""
        return self._output.picture

    def snapshot(self) -> bytes:
        """Draw the charts as they are now into the monitor's output, beside the widget; returns the PNG.

        A notebook saved or exported afterwards shows them without the kernel. The monitor
        does this by itself when its stream ends.

        Examples
        --------
        >>> png = monitor.snapshot()          # doctest: +SKIP
        """
        with self._draw_lock:
            self._output.publish(self._picture_key())
            return self._output.picture or b""

    def _picture_key(self) -> tuple[Any, ...]:
        with self._lock:
            return (self._last.batch_id if self._last else None), self._finished, len(self._operators)

    def _publish_if_ended(self) -> bool:
        """After each cell: once the stream has ended, draw what is left and publish the picture."""
        if getattr(self.handle, "status", "active") not in ENDED:
            return False  # active, or a replay that is playing or paused
        with self._lock:
            self._finished = True
        self._refresh()
        self._output.publish(self._picture_key())
        return self._output.settled  # else once more after the next cell, when that is known

    def _ipython_display_(self) -> None:
        self._output.display()

    def refresh(self) -> None:
        """Redraw now from the rolling window (normally not needed: the monitor updates itself)."""
        with self._lock:
            self._pending, self._reset_due = [], True
        self._refresh()

    @property
    def figures(self) -> dict[str, Any]:
        """The charts as plotly figures holding the points drawn, by key (fresh copies)."""
        with self._draw_lock:
            return self.charts.figures()

    def to_html(self) -> str:
        """The header and charts as one standalone HTML page (plotly.js embedded once)."""
        with self._draw_lock:
            figures, header, diagnosis = list(self.figures.values()), self.header.value, self.diagnosis.value
            caption = self.charts.caption
        preview = self.preview.value if self._has_preview else ""
        return standalone_page(str(getattr(self.handle, "name", "stream")), header, diagnosis, figures, preview,
                               caption)

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
        self._output.stop_listening()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self._detach()
        # Every widget under it, with their layouts and styles: a box left open keeps its
        # buttons, whose callbacks keep this monitor and its stream's handle alive.
        close_tree(*self.children, self.preview, self.layout)  # the preview is in them only with rows
        super().close()

    def __repr__(self) -> str:
        return f"<StreamMonitor {getattr(self.handle, 'name', '?')!r} window={self.window}>"
