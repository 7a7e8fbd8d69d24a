"""The replay panel: Play, Pause, Step, Reset, speed, counters and the live monitor.

The panel drives a replay controller passed in (duck-typed like ``workbench.spark.replay_run.ReplayRun``:
``step``, ``play``, ``pause``, ``reset``, ``late_rows``, ``late_summary``, ``stream``, ``progress``,
``on_report``, ``on_failed``, ``on_reset``); it never calls Spark itself. Button clicks run the
controller's action on a background thread so that the kernel's comm handler is never blocked,
and the buttons are disabled while an action runs.
"""

from __future__ import annotations

import html
import logging
import os
import threading
import time
from typing import Any, Callable

import ipywidgets as widgets
import pandas as pd

from ..errors import error_line
from .charts import ChartGrid, figure_spec
from .closing import close_tree
from .pictures import figures_picture, grid_picture
from .static_output import StaticOutput, widget_front_end_connected

__all__ = ["ReplayPanel", "comparison_figure", "Comparison", "state_view_html"]

log = logging.getLogger(__name__)

#: Speed choices: (label, batches per second or None for as fast as possible).
SPEEDS: tuple[tuple[str, float | None], ...] = (
    ("as fast as possible", None), ("0.5 batch/s", 0.5), ("1 batch/s", 1.0), ("2 batches/s", 2.0),
    ("5 batches/s", 5.0),
)


def _time(value: Any) -> str:
    if value is None or value is pd.NaT:
        return "none"
    if pd.Timestamp(value).timestamp() <= 0:  # Spark's initial watermark, epoch 0
        return "none yet"
    return pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S")


#: While a panel plays, the cells that end publish its picture at most this often (seconds).
PLAYING_PICTURE_EVERY_S = 10.0


class ReplayPanel(widgets.VBox):
    """Controls and live monitor of one replay experiment.

    Build it with ``workbench.replay_panel(...)``. The methods do what the buttons do, synchronously.

    Parameters
    ----------
    run : ReplayRun
        The controller.
    monitor : bool, default True
        Embed the live stream monitor; the line over its charts shows the counters (the
        newest batch, data batches, the watermark before and after, rows in and emitted),
        drawn with each batch's points. Without one they follow the name and status.

    Notes
    -----
    Step restarts the query for one batch on its checkpoint. A query with several watermarks
    (a stream-stream join) keeps only the global watermark across restarts, not each input's
    maximum event time, so a step whose batch has rows on one input only cannot move the
    watermark (with the default ``min`` policy) where playing would (the step report then says
    the next watermark is ``unknown``).
    ``late_rows()`` follows Spark's rules for windowed, session-window and plain
    aggregations and for deduplication (none are dropped in complete mode); for joins and
    ``applyInPandasWithState`` it applies the plain rule (event time behind the watermark).

    Shown in a notebook, the panel's output also gains a picture of its charts and its counters
    as text, for a saved notebook and front ends without widgets: after each cell (or button)
    that stepped, paused or reset the run; while it plays, at most every
    :data:`PLAYING_PICTURE_EVERY_S` seconds (a picture costs the kernel about 0.4 s of CPU, and
    a page without the workbench's extension a new view of the panel).

    Examples
    --------
    >>> panel = workbench.replay_panel(workbench.scenarios.guide_word_count())  # doctest: +SKIP
    >>> panel.step()                                 # doctest: +SKIP
    >>> panel.late_rows()                            # doctest: +SKIP
    """

    def __init__(self, run: Any, *, monitor: bool = True) -> None:
        self._panel_closed = False
        self.run = run
        self._busy = threading.Lock()
        self._worker: threading.Thread | None = None
        self.play_button = widgets.Button(description="Play", icon="play", tooltip="Run batches continuously")
        self.pause_button = widgets.Button(description="Pause", icon="pause", tooltip="Stop; state is kept")
        self.step_button = widgets.Button(description="Step", icon="step-forward", tooltip="Run one more micro-batch")
        self.reset_button = widgets.Button(description="Reset", icon="undo", button_style="warning",
                                           tooltip="Start over: fresh checkpoint, history and results")
        # index=0, not value=None: None is the first choice's value, and a Dropdown given
        # value=None shows no choice at all.
        self.speed = widgets.Dropdown(options=list(SPEEDS), index=0, description="Speed",
                                      layout=widgets.Layout(width="260px"))
        self.counters = widgets.HTML()
        self.late = widgets.HTML()
        self.message = widgets.HTML()
        self._with_monitor = monitor
        self.monitor: Any = None
        self.monitor_box = widgets.Box()
        buttons = widgets.HBox([self.play_button, self.pause_button, self.step_button, self.reset_button, self.speed],
                              layout=widgets.Layout(flex_flow="row wrap"))  # onto more lines in a narrow output
        #: The file "Save as test" writes (see :meth:`to_test`); empty: ``test_<name>.py`` here.
        self.test_path = widgets.Text(placeholder=f"test_{run.name}.py", description="Test file",
                                      layout=widgets.Layout(width="420px"))
        self.test_button = widgets.Button(description="Save as test", icon="save",
                                          tooltip="Write this run as a pytest module that repeats it batch by batch")
        saving = widgets.HBox([self.test_path, self.test_button], layout=widgets.Layout(flex_flow="row wrap"))
        self._replace: str | None = None  # the existing file a second click on "Save as test" replaces
        super().__init__([buttons, saving, self.counters, self.late, self.message, self.monitor_box])
        self.add_class("workbench-replay-panel")
        #: The "State" view, beside the monitor's results: refreshed after every step and pause
        #: while a page shows the panel (see :meth:`_update_state`).
        self.state_view = widgets.HTML()
        self._state_lock = threading.Lock()
        self._state_stale = False
        self.children = (*self.children, self.state_view)
        self.play_button.on_click(lambda _b: self._in_background(self.play))
        self.pause_button.on_click(lambda _b: self._in_background(self.pause))
        self.step_button.on_click(lambda _b: self._in_background(self.step))
        self.reset_button.on_click(lambda _b: self._in_background(self.reset))
        self.test_button.on_click(lambda _b: self._in_background(self._save_test))
        self._unsubscribe: Callable[[], None] | None = None
        # Shown in a notebook, the output also holds a picture of the monitor's charts (without a
        # monitor: text only) and the counters as text, published after the cell (or the
        # button's action) that moved the run.
        self._output = StaticOutput(self, text=self.summary, picture=self._picture if monitor else None,
                                    after_cell=self._publish_due)
        self._published: Any = None
        self._published_at = 0.0
        self._output.on_page(self._on_page_loaded)
        run.on_reset.append(self._attach)
        run.on_failed.append(self._on_failed)
        self._attach()

    # -- wiring ---------------------------------------------------------------------------

    def _attach(self) -> None:
        """(Re)build what follows the run's history: a reset gives it a fresh one."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = self.run.progress.subscribe(lambda _records: self._update_counters())
        if self._with_monitor:
            old, self.monitor = self.monitor, self.run.stream.monitor(caption=self._caption)
            self.monitor_box.children = (self.monitor,)
            self._output.watch_page(self.monitor.charts)
            if old is not None:
                old.close()
        self._update_counters()
        self.late.value = self.message.value = ""  # a reset's output says nothing of the run before
        with self._state_lock:
            self.state_view.value = ""
            self._state_stale = False

    def _on_failed(self, message: str) -> None:
        """The play run failed by itself (its poller's thread): say why; Play, Step and Pause go disabled."""
        self.message.value = f"<span style='color:#d62728'>{html.escape(message)}</span>"
        self._update_counters()
        self._set_buttons(busy=self._busy.locked())

    def _in_background(self, action: Callable[[], Any]) -> None:
        if not self._busy.acquire(blocking=False):
            return  # an action is still running: the buttons are disabled anyway

        def work() -> None:
            try:
                self._set_buttons(busy=True)
                self.message.value = ""
                action()
                self._publish_due()
            except Exception as exc:
                log.debug("replay action failed", exc_info=True)
                self.message.value = f"<span style='color:#d62728'>{html.escape(error_line(exc))}</span>"
            finally:
                self._busy.release()
                self._set_buttons(busy=False)

        self._worker = threading.Thread(target=work, daemon=True, name=f"workbench-replay-{self.run.name}")
        self._worker.start()

    def _set_buttons(self, *, busy: bool) -> None:
        status = self.run.status
        playing = status == "playing"
        dead = status in ("failed", "closed")
        self.play_button.disabled = busy or playing or dead
        self.step_button.disabled = busy or dead
        self.pause_button.disabled = busy or not playing
        self.reset_button.disabled = busy or status == "closed"
        self.test_button.disabled = busy or status == "closed"

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a button's action to finish; True if none is running."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
            return not worker.is_alive()
        return True

    # -- display ----------------------------------------------------------------------------

    def _counters(self) -> str:
        """The counters line after the name and status (plain text)."""
        records = self.run.progress.records()
        last = records[-1] if records else None
        rows_in, rows_out = sum(r.num_input_rows for r in records), sum(r.num_output_rows or 0 for r in records)
        before = last.watermark if last else None
        after = self.run.next_watermark()  # None after a watermark: several inputs' (the step report's "unknown")
        return (f"batch {last.batch_id if last else '–'} ({self.run.data_batches} data batches) · "
                f"watermark {_time(before)} → {_time(after) if after is not None or before is None else 'unknown'} · "
                f"rows in {rows_in} · rows emitted {rows_out}")

    def _update_counters(self, report: Any = None) -> None:
        line = f"<b>{html.escape(self.run.name)}</b> · {html.escape(self.run.status)}"
        if self.monitor is None:  # else the counters are the monitor's caption (:meth:`_caption`)
            line += " · " + html.escape(self._counters())
        self.counters.value = line

    def _caption(self, last: Any) -> str:
        """The line over the monitor's charts: the counters, drawn with each batch's points.

        One message and one frame of the page per batch, where a counters line of its own
        cost a second of each (``bench/README.md``, "The replay panel's counters over its charts").
        """
        return html.escape(self._counters()) if last is not None else "no batch yet"

    def summary(self) -> str:
        """The panel as plain text: name, status, counters and the last step's report."""
        lines = [f"Replay panel: {self.run.name}, {self.run.status}", self._counters()]
        if last := self.message.value:  # a failure's line is a red span: an error line, as a monitor's summary has
            lines.append(html.unescape(f"error: {last.split('>', 1)[1].rsplit('</', 1)[0]}" if last.startswith("<") else last))
        return "\n".join(lines)

    def _picture(self) -> bytes:
        if self.monitor is None:
            return b""
        return grid_picture(self.monitor.charts, header=self.summary())  # its text over the charts: all some viewers show

    def _publish_due(self) -> bool:
        """Publish the picture when the run moved since the last one (after a cell or an action).

        A reset publishes too: the output then shows the fresh run, not the one before.
        """
        last = self.run.progress.last_batch_id
        if not self._output.displayed or (last is None and self._published is None):
            return False  # nothing ran yet: the output as displayed says so
        key = (id(self.monitor), last, self.run.status)
        if key == self._published:
            return False
        still_playing = key[2] == "playing" and self._published is not None and self._published[2] == "playing"
        if still_playing and time.monotonic() - self._published_at < PLAYING_PICTURE_EVERY_S:
            return False  # the newer picture comes with a later cell, or the pause
        if self.monitor is not None:
            self.monitor.refresh()
        self._output.publish(key)
        self._published, self._published_at = key, time.monotonic()
        return False  # the panel lives on: keep publishing after later cells

    def _ipython_display_(self) -> None:
        self._output.display()

    def _update_late(self) -> None:
        summary = self.run.late_summary()
        self.late.value = (
            f"Late rows: {summary['late_rows']} ({summary['dropped']} dropped, {summary['partial']} partial, "
            f"{summary['counted']} counted) · Spark's numRowsDroppedByWatermark: "
            f"{summary['spark_dropped_groups']} <span title='{html.escape(summary['note'])}'>ⓘ</span>"
            f"<br><small>{html.escape(summary['note'])}</small>"
        )
        self._mark_late_rows()

    def _mark_late_rows(self) -> None:
        """Mark late rows on the monitor's watermark lane, one trace per fate."""
        monitor = self.monitor
        if monitor is None:
            return
        late = self.run.late_rows()
        colours = {"dropped": "#d62728", "partial": "#ff7f0e", "counted": "#2ca02c"}
        traces = []
        for fate, colour in colours.items():
            rows = late[late["fate"] == fate]
            traces.append({
                "type": "scatter", "name": f"late: {fate}", "mode": "markers",
                "x": [int(b) for b in rows["batch_id"]],
                "y": [t.tz_convert("UTC").strftime("%Y-%m-%d %H:%M:%S.%f") for t in rows["event_time"]],
                "marker": {"color": colour, "symbol": "x", "size": 9},
                "hovertemplate": f"late row ({fate}) %{{y}}<extra></extra>",
            })
        monitor.charts.set_overlays("watermark", traces)

    # -- actions ------------------------------------------------------------------------------

    def play(self, speed: float | None | str = "control") -> None:
        """Play at ``speed`` batches per second (default: the speed control's value)."""
        self.run.play(self.speed.value if speed == "control" else speed)
        self._set_buttons(busy=False)
        self._update_counters()

    def pause(self) -> Any:
        """Pause; returns what the play run did."""
        report = self.run.pause()
        self._after(report)
        return report

    def step(self) -> Any:
        """Run exactly one more data batch; returns the step's report.

        An interrupt (KeyboardInterrupt) stops the step's query and leaves the panel
        paused, its buttons usable; the message line says what became of the batch.
        """
        try:
            report = self.run.step()
        except KeyboardInterrupt as exc:
            self.message.value = html.escape(str(exc))
            self._set_buttons(busy=False)
            self._update_counters()
            raise
        self._after(report)
        return report

    def reset(self) -> None:
        """Start over with a fresh checkpoint, history and results."""
        self.run.reset()
        self._set_buttons(busy=False)

    def _after(self, report: Any) -> None:
        self._update_counters()
        if report is not None:
            self.message.value = html.escape(str(report))
        self._update_late()
        if self.monitor is not None:
            self.monitor.refresh()
        self._update_state()

    def _update_state(self) -> None:
        """The "State" view: what each stateful operator holds after the latest batch.

        Read only while a page can show it: reading the state is a Spark job per operator (per
        join side, per transformWithState variable), a third to a half of a step's Spark work.
        Where no page has loaded the panel (``nbconvert --execute``, papermill, a script, a
        panel never displayed) the view is left stale, and read once when a page loads it
        (its monitor's charts say ``ready``). :meth:`state` reads on demand either way.
        """
        with self._state_lock:
            if not self._page_shows_panel():
                self._state_stale = True
                return
            self._state_stale = False
            self.state_view.value = state_view_html(self.run)

    def _page_shows_panel(self) -> bool:
        """Whether a page loaded this panel (its monitor's charts said ``ready``); without a
        monitor, whether a page that draws widgets is connected to the kernel at all."""
        if self.monitor is not None:
            return self._output.seen_by_page
        return widget_front_end_connected()

    def _on_page_loaded(self) -> None:
        # A page loaded the panel's charts after steps it did not see (a cell that stepped
        # before the panel was shown, Run All): bring its state view up to date once.
        if self._state_stale:
            try:
                self._update_state()
            except Exception:  # the view must not break the page's message handling
                log.debug("refreshing the state view failed", exc_info=True)

    @property
    def handle(self) -> Any:
        """The replay's stream across every step and play (until reset).

        It answers like a ``StreamHandle``: ``result()`` (the same columns as
        ``workbench.start`` of the same query), ``history()``, ``state()``,
        ``state_changes()``, ``state_summary()`` and ``timers()``.
        """
        return self.run.stream

    def state(self, batch_id: int | None = None, operator: int | str | None = None,
              side: str | None = None, variable: str | None = None) -> pd.DataFrame:
        """The state rows held after batch ``batch_id`` (default: the latest); see ``StreamHandle.state``.

        Examples
        --------
        >>> panel.step(); panel.state()           # doctest: +SKIP
        >>> panel.state(variable="count")         # doctest: +SKIP
        """
        return self.run.state(batch_id, operator, side, variable)

    def late_rows(self) -> pd.DataFrame:
        """Every input row that arrived behind the watermark, with its fate."""
        return self.run.late_rows()

    def results(self) -> pd.DataFrame:
        """Everything the query emitted (with ``batch_id``)."""
        return self.run.results()

    def history(self) -> pd.DataFrame:
        """Every batch since the last reset (scripted input rows)."""
        return self.run.history()

    def save(self, folder: Any) -> Any:
        """Write spec, query description, history, results and late rows to ``folder``."""
        from ..replay.saved import save_run

        return save_run(self.run, folder)

    def to_test(self, path: Any, **options: Any) -> Any:
        """Write a pytest module that replays this run batch by batch and checks what it showed.

        See :func:`workbench.testing.to_test` (``options``: ``query_source``, ``name``, ``overwrite``).

        Examples
        --------
        >>> panel.step(); panel.step()                         # doctest: +SKIP
        >>> panel.to_test("tests/test_my_replay.py")           # doctest: +SKIP
        PosixPath('tests/test_my_replay.py')
        """
        from ..testing.recording import to_test

        return to_test(self.run, path, **options)

    def _save_test(self) -> None:
        """"Save as test": the run written to the box's file (one that exists, at a second click)."""
        path = self.test_path.value.strip() or self.test_path.placeholder
        replace, self._replace = self._replace == path, None
        if not replace and os.path.isfile(path):
            self._replace = path
            self.message.value = f"{html.escape(path)} exists: click <i>Save as test</i> again to replace it"
            return
        written = self.to_test(path, overwrite=replace)
        self.message.value = f"Saved the run as a test: {html.escape(str(written))}"

    def close(self) -> None:
        """Stop playing, end the run, close the monitor and the widgets (all of it even when Spark
        could not stop the run's query: its error is raised afterwards, and close() again tries to
        stop it again). The widgets close once: ipywidgets closes a widget again when collected."""
        if self._panel_closed:
            self.run.close()  # nothing to do unless a query Spark could not stop still runs
            return
        self._panel_closed = True
        try:
            self.run.close()
        finally:
            self._output.stop_listening()
            if self._unsubscribe is not None:
                self._unsubscribe()
            if self.monitor is not None:
                self.monitor.close()
            close_tree(*self.children, self.layout)
            super().close()

    def __repr__(self) -> str:
        return f"<ReplayPanel {self.run.name!r} {self.run.status}>"


def state_view_html(run: Any, rows: int = 12) -> str:
    """HTML of what each stateful operator (each side of a join, each variable and the timers of a
    transformWithState processor) holds after the latest batch.

    Empty for a stateless query or before the first batch; a state that cannot be read
    gives one line saying why, never an exception (the view must not break a step).
    """
    if not any(r.operators for r in run.raw_progress.tail(1)):
        return ""
    try:
        parts = []
        for title, batch_id, read in run.state_parts():
            table = read().drop(columns="partition_id")
            shown = table.head(rows).to_html(index=False, border=0, na_rep="")
            more = f" (first {rows})" if len(table) > rows else ""
            parts.append(f"<b>State: {html.escape(title)}</b> · {len(table)} rows held after batch "
                         f"{batch_id}{more}{shown}")
        return "<div class='workbench-state-view'>" + "".join(parts) + "</div>"
    except Exception as exc:
        log.debug("reading the state failed", exc_info=True)
        return f"<i>State: {html.escape(error_line(exc))}</i>"


def comparison_figure(histories: dict[str, pd.DataFrame], late: dict[str, pd.DataFrame]) -> Any:
    """Overlay runs batch by batch: watermark, state rows, cumulative late rows dropped or partial."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("watermark", "state rows", "late rows dropped or partial (cumulative)"))
    for label, frame in histories.items():
        fig.add_scatter(x=frame["batch_id"], y=frame["watermark"].dt.tz_convert(None), name=f"{label}: watermark",
                        mode="lines+markers", row=1, col=1, legendgroup=label)
        fig.add_scatter(x=frame["batch_id"], y=frame["state_rows_total"], name=f"{label}: state rows",
                        mode="lines+markers", row=2, col=1, legendgroup=label)
        rows = late.get(label)
        dropped = (rows[rows["fate"] != "counted"].groupby("batch_id").size()
                   if rows is not None and len(rows) else pd.Series(dtype="int64"))
        cumulative = frame["batch_id"].map(dropped).fillna(0).cumsum()
        fig.add_scatter(x=frame["batch_id"], y=cumulative, name=f"{label}: dropped/partial rows",
                        mode="lines+markers", row=3, col=1, legendgroup=label)
    fig.update_layout(height=650, template="plotly_white", hovermode="x unified")
    fig.update_xaxes(title_text="batch", row=3, col=1)
    return fig


class Comparison:
    """Two (or more) runs side by side: ``table`` (metrics) and ``figure`` (overlaid).

    In a notebook the figure is drawn by the workbench's chart widget, so plotly.js reaches
    the page once, as for the monitors, and a saved notebook stays small.
    """

    def __init__(self, table: pd.DataFrame, figure: Any) -> None:
        self.table = table
        self.figure = figure

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.table)
        chart = self.chart()
        # The chart's output also holds its picture (drawn after the cell), so a saved or
        # exported notebook shows the comparison without the kernel.
        output = StaticOutput(chart, text=self.summary,
                              picture=self.picture, after_cell=lambda: self._after_cell(output))
        output.watch_page(chart)
        output.display()

    @staticmethod
    def _after_cell(output: StaticOutput) -> bool:
        output.publish("static")
        return output.settled

    def summary(self) -> str:
        """The chart in words: which runs it overlays, and what."""
        return (f"Comparison of {', '.join(map(str, self.table.columns))}: watermark, state rows and late rows "
                "dropped or partial (cumulative), batch by batch")

    def picture(self) -> bytes:
        """The figure as a PNG (what a notebook keeps of the chart for viewers without widgets)."""
        return figures_picture([figure_spec("comparison", self.figure)], columns=1)

    def chart(self) -> ChartGrid:
        """The figure as the workbench's chart widget (what a notebook shows)."""
        return ChartGrid([figure_spec("comparison", self.figure)])

    def __repr__(self) -> str:
        return f"<Comparison\n{self.table.to_string()}\n>"
