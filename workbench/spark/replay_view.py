"""How a replay run is seen from outside: each step's report, the run as one monitored
stream, and the description of its query that a saved experiment keeps.

:class:`StepReport` says what one step (or one run of Play) changed. :class:`ReplayStreamView`
is the whole run, across the restarts of its query, as a
``workbench.views.protocol.MonitoredStream``: what the monitor and ``panel.handle`` read.
The view reads the :class:`~workbench.spark.replay_run.ReplayRun` that makes it (and its
``stop()`` pauses the run); neither starts a query.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from ..progress import BatchProgress, ProgressHistory
from ..replay.spec import WindowCount
from .replay_state import ReplayState

if TYPE_CHECKING:
    from .replay_run import ReplayRun

__all__ = ["StepReport", "ReplayStreamView", "query_description"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepReport:
    """What one step (or one run of Play) changed.

    Attributes
    ----------
    batch_ids : tuple of int
        Spark batch ids that ran.
    watermark_before, watermark_after : datetime or None
        The watermark the first batch used, and the one the next batch will use, as Spark
        reports them: epoch 0 (``1970-01-01``) is Spark's "no watermark yet", which the
        report's text says in words.
    rows_in : int
        Input rows (scripted rows for a Script, not padding).
    rows_out : int
        Rows the query emitted.
    late_rows : dict
        Late input rows of these batches by fate.
    state_rows : int
        State rows after the last batch.
    dropped_groups : int
        Spark's ``numRowsDroppedByWatermark`` in these batches (groups, not rows).
    """

    batch_ids: tuple[int, ...]
    watermark_before: datetime | None
    watermark_after: datetime | None
    rows_in: int
    rows_out: int
    late_rows: dict[str, int]
    state_rows: int
    dropped_groups: int

    @classmethod
    def of(cls, records: list[BatchProgress], latest: BatchProgress | None, late: pd.DataFrame,
           watermark_after: datetime | None) -> StepReport:
        """The report of the batches ``records`` (oldest first).

        ``latest`` is the run's latest batch (for a report of no batch), ``late`` the run's
        late rows so far (``ReplayRun.late_rows()``), ``watermark_after`` the watermark the
        next batch will use.
        """
        ids = {r.batch_id for r in records}
        late_now = late[late["batch_id"].isin(ids)]["fate"].value_counts().to_dict() if len(late) else {}
        last = records[-1] if records else latest
        return cls(
            batch_ids=tuple(r.batch_id for r in records),
            watermark_before=records[0].watermark if records else (last.watermark if last else None),
            watermark_after=watermark_after,
            rows_in=sum(r.num_input_rows for r in records),
            rows_out=sum(r.num_output_rows or 0 for r in records),
            late_rows={k: int(v) for k, v in late_now.items()},
            state_rows=last.state_rows_total if last else 0,
            dropped_groups=sum(r.state_rows_dropped_by_watermark for r in records),
        )

    def __str__(self) -> str:
        """One line, e.g. ``batch 0: watermark none yet -> 2024-01-01 11:58:00, 2 rows in, ...``.

        Examples
        --------
        >>> epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        >>> str(StepReport((0,), epoch, datetime(2024, 1, 1, 11, 58), 2, 0, {}, 4, 0))
        'batch 0: watermark none yet -> 2024-01-01 11:58:00, 2 rows in, 0 rows out, late rows: none, state rows 4'
        """
        def text(value: datetime | None) -> str:
            if value is None:
                return "none"
            if value.timestamp() <= 0:  # Spark's initial watermark: none yet
                return "none yet"
            return value.strftime("%Y-%m-%d %H:%M:%S")

        ids = ", ".join(map(str, self.batch_ids)) or "none"
        late = ", ".join(f"{n} {fate}" for fate, n in self.late_rows.items() if n) or "none"
        after = text(self.watermark_after) if self.watermark_after or not self.watermark_before else "unknown"
        return (f"batch {ids}: watermark {text(self.watermark_before)} -> {after}, "
                f"{self.rows_in} rows in, {self.rows_out} rows out, late rows: {late}, "
                f"state rows {self.state_rows}")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # A step as a cell's last line shows its line, not the dataclass's fields.
        printer.text(str(self))


class ReplayStreamView(ReplayState):
    """The replay's stream as a whole (every restart): what the monitor and ``panel.handle`` read.

    The monitor follows one stream until it finishes; a replay restarts its query at
    every step, so the monitor reads the run through this view (a
    ``workbench.views.protocol.MonitoredStream``), which lasts until reset. It answers
    ``result()``, ``history()`` and the state methods (``state()``, ``state_changes()``,
    ``state_summary()``, ``timers()``) for the whole run, with the same columns as a
    :class:`StreamHandle` of the same query.
    """

    def __init__(self, run: ReplayRun, progress: ProgressHistory) -> None:
        self._run = run
        self.progress = progress
        self.name = run.name
        self.sink = "memory"
        self.output_mode = run.output_mode
        self.started_at = datetime.now(timezone.utc)
        self.spec = dataclasses.make_dataclass("Spec", [("poll_interval", float)])(run.poll_interval)
        self._callbacks: list[Callable[[Any], None]] = []
        self._final: tuple[str, str | None] | None = None  # (status, error) once finished
        self._finish_lock = threading.Lock()

    @property
    def plan(self) -> Any:
        return self._run.plan

    @property
    def status(self) -> str:
        return self._run.status if self._final is None else self._final[0]

    @property
    def error(self) -> str | None:
        return self._run.error if self._final is None else self._final[1]

    def result(self) -> pd.DataFrame:
        """What the query has output, in the columns ``workbench.start(...).result()`` gives."""
        table = self._run.results()
        if table.empty and not len(table.columns):
            return pd.DataFrame(columns=self._run.result_columns)
        return table.drop(columns="batch_id").reset_index(drop=True)

    def history(self, *, operators: bool = False) -> pd.DataFrame:
        """Spark's progress of every batch since the last reset (as ``StreamHandle.history``)."""
        return self._run.raw_progress.to_frame(operators=operators)

    def _inspector(self) -> Any:
        return self._run._inspector()

    def preview(self, rows: int) -> tuple[pd.DataFrame, int]:
        return self._run.preview(rows)

    def stop(self) -> None:
        self._run.pause()

    def on_finished(self, callback: Callable[[Any], None]) -> None:
        with self._finish_lock:
            if self._final is None:
                self._callbacks.append(callback)
                return
        callback(self)

    def finish(self) -> None:
        """The run failed, was reset or closed: its monitor draws what is left and ends (once)."""
        with self._finish_lock:
            if self._final is not None:
                return
            # As it ended: failed (and why), closed, or stopped (reset; the run goes on with a
            # new view): what the run says later is the next view's.
            status = self._run.status
            self._final = (status if status in ("failed", "closed") else "stopped", self._run.error)
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                log.exception("monitor finish callback failed")

    def monitor(self, **options: Any) -> Any:
        from ..views.monitor import StreamMonitor

        return StreamMonitor(self, **options)


def query_description(run: ReplayRun) -> dict[str, Any]:
    """How ``run``'s query was built, for saved experiments (see ``ReplayRun.describe_query``)."""
    import inspect

    if isinstance(run.query, WindowCount):
        query: dict[str, Any] = {**run.query.to_dict(), "text": run.query.describe()}
    else:
        try:
            text = inspect.getsource(run.query)
        except (OSError, TypeError):
            text = None
        query = {"kind": "function", "name": getattr(run.query, "__qualname__", repr(run.query)),
                 "source": text}
    return {"name": run.name, "output_mode": run.output_mode or "append", "sink": run.sink,
            "query": query, "plan": dataclasses.asdict(run.plan) if run.plan is not None else None}
