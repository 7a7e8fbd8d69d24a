"""Starting and stopping streaming queries, and the handle users hold for each.

A :class:`StreamHandle` owns one running query: the pyspark ``StreamingQuery``, its
:class:`~workbench.progress.ProgressHistory` and the poller that fills it. The console
sink renders each micro-batch on the Python side (``foreachBatch``) so that the text
reaches the notebook cell that started the query, which the JVM's own console sink cannot
guarantee in a Jupyter kernel.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..errors import StreamStartError, refusal_line, summarize_error
from ..options import Trigger
from ..progress import ProgressHistory, ProgressPoller
from ..progress.input_watermarks import InputSpec, input_watermark_frame, input_watermarks
from .frames import flat_select, to_flat_pandas
from .plan import plan_text
from .session import is_connect
from .session import spark_is_gone

__all__ = [
    "StreamHandle", "StreamSpec", "QueryProgressSource", "CutBatch", "StreamInterrupted", "format_console_batch",
    "run_query",
]

log = logging.getLogger(__name__)

ConsoleWriter = Callable[[str], None]

_RULE = "-" * 43

#: The error of every stream whose Spark session stopped or whose JVM died under it.
SPARK_STOPPED = (
    "Spark stopped: the session or its JVM ended while the stream ran; "
    "workbench.session() or the next %%stream starts a new one"
)


def format_console_batch(batch_id: int, table: str) -> str:
    """Frame a rendered table the way Spark's console sink does.

    Examples
    --------
    >>> print(format_console_batch(0, "+---+\\n|  a|\\n+---+\\n"), end="")
    -------------------------------------------
    Batch: 0
    -------------------------------------------
    +---+
    |  a|
    +---+
    <BLANKLINE>
    """
    return f"{_RULE}\nBatch: {batch_id}\n{_RULE}\n{table.rstrip()}\n\n"


class StreamInterrupted(KeyboardInterrupt):
    """A KeyboardInterrupt (Kernel > Interrupt) that reached a start, stop or step, after clean-up.

    It is still a ``KeyboardInterrupt`` (a notebook stops running the queued cells), but
    the cell shows only its one-line message, which says what state the stream was left
    in, instead of a traceback through Py4J.

    Examples
    --------
    >>> str(StreamInterrupted("interrupted: stream 'x' was not started"))
    "interrupted: stream 'x' was not started"
    """

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback.
        return [str(self)]


@dataclass(frozen=True)
class CutBatch:
    """A batch that a stop cut after its rows reached the memory table, before Spark reported it.

    Spark writes a batch's rows to the memory sink before it commits the batch and
    reports its progress; a stop in between leaves rows in the table that no progress
    record accounts for (the batch runs again on a restart from the checkpoint).

    Attributes
    ----------
    batch_id : int
        The cut batch.
    rows : int
        Rows it wrote to the memory table.

    Examples
    --------
    >>> print(CutBatch(4, 10).note)
    The stop cut batch 4 after its sink write: its 10 rows are in the memory table, but Spark reported no \
progress for it, so the history ends at batch 3.
    """

    batch_id: int
    rows: int

    @property
    def note(self) -> str:
        """One line for the monitor's header and ``%stream list``."""
        before = f"ends at batch {self.batch_id - 1}" if self.batch_id > 0 else "has no batch"
        return (f"The stop cut batch {self.batch_id} after its sink write: its {self.rows} rows are in the memory "
                f"table, but Spark reported no progress for it, so the history {before}.")


@dataclass(frozen=True)
class StreamSpec:
    """Everything needed to start one query, already validated."""

    name: str
    sink: str
    output_mode: str | None
    trigger: Trigger
    checkpoint: str
    rows: int = 20
    truncate: bool = True
    poll_interval: float = 0.5
    history_cap: int = 100_000
    #: Rows in a memory sink's table past which the handle warns (0: never).
    table_warn_rows: int = 1_000_000


class QueryProgressSource:
    """Adapts a pyspark ``StreamingQuery`` (classic or Spark Connect) to the poller's source.

    ``output_rows`` maps batch ids to the rows a Python-side sink wrote (the console
    sink counts them); Spark reports ``numOutputRows = -1`` for ``foreachBatch`` sinks.
    With ``spark``, a session whose JVM has gone ends the poller at once.
    """

    def __init__(self, query: Any, output_rows: Mapping[int, int] | None = None, spark: Any = None) -> None:
        self._query = query
        self._output_rows = output_rows
        self._spark = spark

    def is_active(self) -> bool:
        if self._spark is not None and spark_is_gone(self._spark):
            # Ends the poller at once, without a failing (and loudly logged) py4j call.
            raise RuntimeError(SPARK_STOPPED)
        return bool(self._query.isActive)

    def last_progress(self) -> Mapping[str, Any] | None:
        progress = self._query.lastProgress
        return self._with_rows(progress_json(progress)) if progress else None

    def recent_progress(self) -> Sequence[Mapping[str, Any]]:
        return [self._with_rows(progress_json(p)) for p in self._query.recentProgress]

    def _with_rows(self, raw: dict[str, Any]) -> dict[str, Any]:
        count = self._output_rows.get(raw.get("batchId", -1)) if self._output_rows is not None else None
        if count is not None:
            raw["sink"] = {**(raw.get("sink") or {}), "numOutputRows": count}
        return raw


class StreamHandle:
    """A streaming query started by the workbench.

    Use :func:`workbench.start` to get one. The handle keeps the query's complete
    per-batch progress history (not just Spark's last 99 entries) and reports the query's
    status and error in readable form.

    Attributes
    ----------
    name : str
        The stream's name (also the memory sink's table name).
    query : pyspark.sql.streaming.StreamingQuery
        The underlying query.
    progress : ProgressHistory
        The live progress model that the monitor reads.
    sink, output_mode, trigger, checkpoint
        How the query was started.

    Examples
    --------
    >>> handle = workbench.start(df, "counts")        # doctest: +SKIP
    >>> handle.status                                  # doctest: +SKIP
    'active'
    >>> handle.history()[["batch_id", "num_input_rows"]].tail(2)   # doctest: +SKIP
    """

    def __init__(
        self,
        spec: StreamSpec,
        query: Any,
        spark: Any,
        on_event: Callable[[StreamHandle], None] | None = None,
        history: ProgressHistory | None = None,
        output_rows: Mapping[int, int] | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.sink = spec.sink
        self.output_mode = spec.output_mode
        self.trigger = spec.trigger.text
        self.checkpoint = spec.checkpoint
        self.query = query
        self.started_at = datetime.now(timezone.utc)
        self.progress = history if history is not None else ProgressHistory(cap=spec.history_cap)
        self._spark = spark
        # Read once: after the JVM dies, streams() and repr must still answer without Spark.
        self._id, self._run_id = str(query.id), str(query.runId)
        #: Facts from the query plan (``PlanFacts``) for the monitor, or None when unknown.
        self.plan: Any = None
        #: The batch id this run continued with when it restarted from a user's checkpoint
        #: that already held committed batches (the monitor can say "resumed from batch N").
        self.resumed_from: int | None = None
        #: The newer stream that took this one's name (and with it the memory sink's table).
        self.replaced_by: StreamHandle | None = None
        #: The query's output columns (names the state inspector's grouping keys).
        self.output_columns: tuple[str, ...] = ()
        #: The observed watermarked inputs (``input_watermarks=True``), else empty.
        self.inputs: tuple[InputSpec, ...] = ()
        #: Spark's ``multipleWatermarkPolicy`` when the stream started.
        self.watermark_policy = "min"
        #: Who started the query: ``"workbench"`` (``start``/``%%stream``), ``"cell"`` (the code of a
        #: ``%%stream`` cell) or ``"user"`` (any other code; the handle only watches it).
        self.started_by = "workbench"
        #: Spark's description of the sink (e.g. ``FileSink[/data/out]``), when known.
        self.sink_description: str | None = None
        #: Which batches the history lacks (a query watched after it started), or None.
        self.history_note: str | None = None
        #: The batch a stop cut after its rows reached the memory table (no progress record), or None.
        self.cut_batch: CutBatch | None = None
        #: A doubt the stop left about the memory table that no check could settle (see table_note).
        self._table_doubt: str | None = None
        self._reconciled = False
        self._stopper: _Worker | None = None
        self._lock = threading.Lock()
        self._final_status: str | None = None
        self._error: str | None = None
        self._error_details: str | None = None
        self._finish_callbacks: list[Callable[[StreamHandle], None]] = []
        self._table: Any = None  # the memory sink's table as a DataFrame, for previews
        if on_event is not None:
            self._finish_callbacks.append(on_event)
        self._finished = threading.Event()
        self._table_rows = 0
        self._table_warning: str | None = None
        if self.sink == "memory":
            self.progress.subscribe(self._count_table_rows)
        self.poller = ProgressPoller(
            QueryProgressSource(query, output_rows, spark), self.progress, interval=spec.poll_interval,
            on_finished=self._on_poller_finished, name=f"workbench-poller-{spec.name}",
        )

    # -- status --------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The query's id (stable across restarts from the same checkpoint)."""
        return self._id

    @property
    def run_id(self) -> str:
        """The id of this run of the query."""
        return self._run_id

    @functools.cached_property
    def spark_ui_url(self) -> str | None:
        """The Spark UI of the query's session (``sparkContext.uiWebUrl``); None on Spark Connect."""
        try:
            return self._spark.sparkContext.uiWebUrl
        except Exception:  # Spark Connect sessions have no SparkContext, and no UI here
            return None

    @property
    def status(self) -> str:
        """``"active"``, ``"stopped"`` or ``"failed"``."""
        if self._final_status is not None:
            return self._final_status
        if self.spark_gone:
            return self._settle()
        try:
            if self.query.isActive:
                return "active"
        except Exception:  # the session is gone
            return self._settle()
        return self._settle()

    @property
    def error(self) -> str | None:
        """One readable line for a failed query (the user's own error first), else None.

        The full text is in :attr:`error_details`.
        """
        self.status  # settles a terminated query's error
        return self._error

    @property
    def error_details(self) -> str | None:
        """Spark's full error text for a failed query, else None."""
        self.status
        return self._error_details

    def _settle(self) -> str:
        """Record how a query that is no longer active ended (once)."""
        with self._lock:
            if self._final_status is not None:
                return self._final_status
            if self.spark_gone:
                self._error = self._error_details = SPARK_STOPPED
                self._final_status = "failed"
                return self._final_status
            try:
                exc = self.query.exception()
            except Exception:  # the session is gone: nothing more to learn
                exc = None
                if spark_is_gone(self._spark, wait=2.0):  # a JVM that was killed may still be exiting
                    self._error = self._error_details = SPARK_STOPPED
                    self._final_status = "failed"
                    return self._final_status
            if exc is not None:
                self._error_details = str(exc)
                self._error = summarize_error(self._error_details)
                self._final_status = "failed"
            else:
                self._final_status = "stopped"
            return self._final_status

    @property
    def spark_gone(self) -> bool:
        """Whether the stream's Spark session stopped or its JVM died (nothing runs any more)."""
        return spark_is_gone(self._spark)

    def _check_spark(self) -> None:
        if self.spark_gone:
            raise RuntimeError(f"stream {self.name!r} has no table any more: {SPARK_STOPPED}")

    def _on_poller_finished(self) -> None:
        self._settle()
        self._find_cut_batch()
        self._mark_finished()

    def _mark_finished(self) -> None:
        with self._lock:
            if self._finished.is_set():
                return
            self._finished.set()
            callbacks = list(self._finish_callbacks)
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                log.exception("stream-finished callback failed")

    @property
    def finished(self) -> bool:
        """Whether the query has ended and its last batches are in the history."""
        return self._finished.is_set()

    def wait_finished(self, timeout: float | None = None) -> bool:
        """Wait until the query has ended and its last batches are in the history."""
        return self._finished.wait(timeout)

    def on_finished(self, callback: Callable[[StreamHandle], None]) -> None:
        """Call ``callback(handle)`` once the query has ended (at once if it already has).

        After that, :attr:`status` and :attr:`error` no longer call Spark. The callback runs
        on the poller's thread (or the caller's): keep it short.
        """
        with self._lock:
            if not self._finished.is_set():
                self._finish_callbacks.append(callback)
                return
        callback(self)

    def monitor(self, **options: Any) -> Any:
        """The live dashboard of this stream (an ipywidgets widget); see ``StreamMonitor``."""
        from ..views.monitor import StreamMonitor

        return StreamMonitor(self, **options)

    # -- memory table ------------------------------------------------------------------------

    @property
    def table_rows(self) -> int | None:
        """Rows in the memory sink's table, counted from the progress history (no Spark job).

        The table lives in the driver's memory and Spark never trims it: in append and
        update mode it grows by every batch's output. None for other sinks.

        Examples
        --------
        >>> handle.table_rows                                    # doctest: +SKIP
        12500
        """
        return self._table_rows if self.sink == "memory" else None

    @property
    def table_warning(self) -> str | None:
        """One line once the memory table has passed ``table_warn_rows`` rows, else None."""
        return self._table_warning

    @property
    def table_note(self) -> str | None:
        """One line when the memory table holds rows the history does not account for, else None.

        See :attr:`cut_batch`. On Spark Connect in complete mode the memory sink is out of
        reach and the table's size says nothing about which batch wrote it: when the stop
        interrupted a batch that Spark had started (it is in the checkpoint's offset log) but
        never reported, the line says that the table may hold that batch.
        """
        if self.cut_batch is not None:
            return self.cut_batch.note
        return self._table_doubt

    def _find_cut_batch(self) -> None:
        """After the query ended: find a batch whose rows reached the memory table without progress.

        Classic sessions ask the memory sink which batch it holds last (and how many rows
        that batch wrote); on Spark Connect, where the sink is out of reach, the table's row
        count is compared with the history's in append and update mode, and in complete mode
        a batch started (in the checkpoint's offset log) but never reported leaves a doubt
        that :attr:`table_note` states.
        """
        with self._lock:
            if self._reconciled or self.sink != "memory":
                return
            self._reconciled = True
        if self.spark_gone:
            return
        try:
            cut = self._sink_latest_batch()
        except Exception:
            log.debug("reading the memory sink of %s failed", self.name, exc_info=True)
            return
        last = self.progress.last_batch_id
        if (cut is None and getattr(self.query, "_jsq", None) is None and self.output_mode == "complete"
                and self.replaced_by is None):
            started = _newest_planned_batch(self.checkpoint)
            if started is not None and (last is None or started > last) and not self._ended_with_error():
                self._table_doubt = (
                    f"The stop interrupted batch {started}, which Spark never reported; on Spark Connect the "
                    "workbench cannot tell whether it wrote the memory table first, so the table may hold "
                    f"batch {started}'s result while the history "
                    + (f"ends at batch {last}." if last is not None else "has no batch.")
                )
                log.info(self._table_doubt)
            return
        if cut is None or (last is not None and cut[0] <= last):
            return
        self.cut_batch = CutBatch(*cut)
        self._table_rows = cut[1] if self.output_mode == "complete" else self._table_rows + cut[1]
        log.info(self.cut_batch.note)

    def _ended_with_error(self) -> bool:
        """Whether the ended query failed (its last batch then failed rather than being cut)."""
        try:
            return self.query.exception() is not None
        except Exception:
            return True  # unknown: claim nothing

    def _sink_latest_batch(self) -> tuple[int, int] | None:
        """(batch id, rows) of the newest batch in the memory sink, or None when unknown."""
        jsq = getattr(self.query, "_jsq", None)
        if jsq is not None:
            sink = jsq.streamingQuery().sink()
            latest = sink.latestBatchId()
            if not latest.isDefined():
                return None
            return int(latest.get()), int(sink.latestBatchData().size())
        if self.output_mode == "complete" or self.replaced_by is not None:
            return None  # the table's size says nothing about which batch wrote it
        extra = int(self._spark.table(f"`{self.name}`").count()) - self._table_rows
        if extra <= 0:
            return None
        last = self.progress.last_batch_id
        return (0 if last is None else last + 1), extra

    def _count_table_rows(self, records: Sequence[Any]) -> None:
        # Runs on the poller's thread for each batch added: arithmetic only.
        limit = self.spec.table_warn_rows
        for record in records:
            rows = record.num_output_rows or 0
            # In complete mode the memory sink replaces its table with each batch's output.
            self._table_rows = rows if self.output_mode == "complete" else self._table_rows + rows
            if limit and self._table_rows >= limit and self._table_warning is None:
                self._table_warning = (
                    f"stream {self.name!r} keeps {self._table_rows:,} rows in its memory table, in the Spark "
                    "driver's memory, and the table grows with every batch: stop the stream when done, or use "
                    "sink='console' for a long run (WORKBENCH_TABLE_WARN_ROWS sets this limit)"
                )
                log.warning(self._table_warning)

    # -- data ------------------------------------------------------------------------------

    def history(self, *, operators: bool = False) -> pd.DataFrame:
        """Every batch since the stream started, one row per batch (see ``HISTORY_COLUMNS``).

        Parameters
        ----------
        operators : bool, default False
            One row per batch and stateful operator instead of state summed over operators.

        Examples
        --------
        >>> handle.history()[["batch_id", "watermark", "state_rows_total"]]   # doctest: +SKIP
        """
        return self.progress.to_frame(operators=operators)

    def result(self) -> pd.DataFrame:
        """The memory sink's table as a pandas DataFrame (what the query has output so far).

        Struct columns are split (``window`` becomes ``window_start`` and ``window_end``)
        and times are UTC, as in a replay panel's results.

        Raises
        ------
        ValueError
            For a console-sink stream, which keeps no table.
        """
        if self.sink != "memory":
            raise ValueError(
                f"stream {self.name!r} writes to the {self.sink} sink, which keeps no table: "
                "start it with sink='memory' to read results"
            )
        self._check_not_replaced()
        self._check_spark()
        return to_flat_pandas(self._spark.sql(f"SELECT * FROM `{self.name}`"))

    def _check_not_replaced(self) -> None:
        # The memory sink's table is found by the stream's name, which now means the newer stream.
        if self.replaced_by is not None:
            raise ValueError(
                f"stream {self.name!r} (run {self.run_id}) was replaced by a newer stream of the same name, "
                f"whose table now holds {self.name!r}: read it with workbench.stream({self.name!r}).result()"
            )

    def preview(self, rows: int) -> tuple[pd.DataFrame, int]:
        """A few rows of the memory sink's table and its row count, without fetching it all.

        In complete mode the table is the whole result, so its first ``rows`` rows are
        returned; otherwise the newest ``rows`` rows (Spark's ``tail``).

        Returns
        -------
        (pandas.DataFrame, int)
            The rows and the number of rows in the table.
        """
        if self.sink != "memory":
            raise ValueError(f"stream {self.name!r} writes to the {self.sink} sink, which keeps no table")
        self._check_not_replaced()
        self._check_spark()
        if self._table is None:
            # Resolved once (the columns of result()): every action on it reads the sink's
            # rows as they are then.
            self._table = flat_select(self._spark.table(f"`{self.name}`"))
        table = self._table
        total = table.count()
        if self.output_mode == "complete":
            return table.limit(rows).toPandas(), total
        picked = table.tail(rows)
        return pd.DataFrame([r.asDict() for r in picked], columns=table.columns), total

    def input_watermarks(self) -> pd.DataFrame:
        """Each watermarked input's max event time and watermark, one row per batch and input.

        Only for a stream started with ``input_watermarks=True`` (``%%stream
        --input-watermarks``). Columns: ``batch_id``, ``input`` (its temp view, alias or
        source), ``max_event_time`` (the latest it has had so far), ``delay``,
        ``watermark`` (max event time minus delay: what it proposes after the batch),
        ``rows`` (in the batch), ``quiet_batches`` (batches in a row without rows) and
        ``global_watermark`` (what Spark derives from the inputs under its
        ``multipleWatermarkPolicy``; the next batch runs with it).

        Raises
        ------
        ValueError
            For a stream started without ``input_watermarks=True``.

        Examples
        --------
        >>> joined = workbench.start(clicks.join(views, "ad_id"), "joined", input_watermarks=True)  # doctest: +SKIP
        >>> joined.input_watermarks().query("batch_id == 3")                                        # doctest: +SKIP
        """
        if not self.inputs:
            raise ValueError(f"stream {self.name!r} was started without input_watermarks=True: start it with "
                             "workbench.start(..., input_watermarks=True) or %%stream --input-watermarks")
        rows = input_watermarks(self.progress.records(), self.inputs, self.watermark_policy)
        return input_watermark_frame(rows)

    # -- state: thin wrappers over workbench.spark.state ------------------------------------

    def state(self, batch_id: int | None = None, operator: int | str | None = None,
              side: str | None = None) -> pd.DataFrame:
        """The state rows the query holds after batch ``batch_id`` (default: the latest committed).

        Parameters
        ----------
        batch_id : int, optional
            A committed batch id.
        operator : int or str, optional
            The stateful operator, by id or name (``state_summary()`` lists them); needed
            only when the query has several.
        side : {"left", "right"}, optional
            For a stream-stream join, which input's buffered rows.

        Returns
        -------
        pandas.DataFrame
            Readable key columns (e.g. ``window_start``, ``window_end``, ``word``), value
            columns (e.g. ``count``) and ``partition_id``.

        Raises
        ------
        ValueError
            Unknown operator or side, a batch not in the checkpoint, a stateless query or
            a removed checkpoint.

        Examples
        --------
        >>> handle.state(batch_id=3)                        # doctest: +SKIP
        >>> joined.state(side="left")                      # doctest: +SKIP
        """
        return self._state().state(batch_id, operator, side)

    def state_changes(self, start_batch: int, end_batch: int | None = None, operator: int | str | None = None,
                      side: str | None = None) -> pd.DataFrame:
        """What changed in state from ``start_batch`` to ``end_batch`` (default: the latest), both included.

        One row per change: ``batch_id``, ``change_type`` (``update`` / ``delete``), key
        and value columns, ``watermark`` (for a delete: the watermark of that batch, which
        evicted the row) and ``partition_id``.

        Examples
        --------
        >>> handle.state_changes(0, 5).query("change_type == 'delete'")   # doctest: +SKIP
        """
        return self._state().changes(start_batch, end_batch, operator, side)

    def state_summary(self) -> pd.DataFrame:
        """The query's stateful operators: name, kind, sides, batch range, partitions.

        Examples
        --------
        >>> handle.state_summary()[["operator", "kind", "max_batch_id"]]   # doctest: +SKIP
        """
        return self._state().summary()

    def _state(self) -> Any:
        from .state import inspector_for

        return inspector_for(self._spark, self.checkpoint, name=self.name, progress=self.progress,
                             result_columns=self.output_columns)

    def stop(self, grace: float = 1.0) -> None:
        """Stop the query and its poller; the history keeps every batch that ran.

        Parameters
        ----------
        grace : float, default 1.0
            Seconds to wait for a running micro-batch to end before interrupting it.
            Interrupting a batch is safe (it runs again on restart from the checkpoint)
            but makes Spark print an interruption trace to the process's stderr. A batch
            interrupted after its sink write leaves its rows in the memory table without
            a progress record (Spark never reported it): :attr:`cut_batch` then names it
            and :attr:`table_rows` counts its rows. With the default trigger batches run
            back to back, so that can happen whatever the grace.

        Raises
        ------
        StreamInterrupted
            On a KeyboardInterrupt while waiting (Spark waits for a running Python
            ``foreachBatch`` function to return). The stop goes on in the background; the
            next ``stop()`` waits for it.

        Examples
        --------
        >>> handle.stop()                          # doctest: +SKIP
        >>> handle.status, handle.cut_batch        # doctest: +SKIP
        ('stopped', None)
        """
        stopper = self._begin_stop(grace)
        if stopper is None:
            return
        try:
            stopper.wait()
        except KeyboardInterrupt:
            raise StreamInterrupted(
                f"interrupted: stream {self.name!r} is still stopping in the background (Spark ends it once its "
                "running batch returns); spark.streams.active lists it until then, and stop() again waits for it"
            ) from None

    def _begin_stop(self, grace: float) -> _Worker | None:
        """Start stopping on a thread of its own (once), so that an interrupt cannot cut the stop short.

        Returns the stopper to wait for, or None when the stop already ran on the caller's thread.
        """
        with self._lock:
            stopper = self._stopper
            if stopper is None:
                stopper = self._stopper = _Worker(functools.partial(self._stop_now, grace),
                                                  f"workbench-stop-{self.name}")
                try:
                    stopper.start()
                except RuntimeError:  # no new threads at interpreter shutdown: stop right here
                    self._stopper = None
                    stopper = None
        if stopper is None:
            self._stop_now(grace)
            return None
        if stopper.thread is threading.current_thread():
            return None
        return stopper

    def _stop_now(self, grace: float) -> None:
        try:
            gone = self.spark_gone
            if not gone:
                self._wait_between_batches(grace)
                try:
                    self.query.stop()
                except Exception:
                    log.debug("stopping %s failed", self.name, exc_info=True)
            self.poller.stop()
            if gone:
                self._settle()
                self._mark_finished()
            elif not self._finished.is_set():
                # The poller was stopped before it noticed the end: read the last batches here.
                try:
                    self.poller.fill()
                except Exception:
                    log.debug("final progress read for %s failed", self.name, exc_info=True)
                self._settle()
                self._find_cut_batch()
                self._mark_finished()
        finally:
            with self._lock:
                self._stopper = None

    def _wait_between_batches(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        try:
            while time.monotonic() < deadline and self.query.isActive and self.query.status.get("isTriggerActive"):
                time.sleep(0.002)
        except Exception:
            log.debug("reading the status of %s failed", self.name, exc_info=True)

    def summary(self) -> dict[str, Any]:
        """One row of :func:`workbench.streams`."""
        last = self.progress.last()
        status = self.status
        return {
            "name": self.name,
            "id": self.id,
            "run_id": self.run_id,
            "status": status,
            "sink": self.sink,
            "output_mode": self.output_mode or "append",
            "trigger": self.trigger,
            "batches": self.progress.total,
            "last_batch_id": last.batch_id if last else None,
            "watermark": last.watermark if last else None,
            "input_rows_per_second": last.input_rows_per_second if last else None,
            "processed_rows_per_second": last.processed_rows_per_second if last else None,
            "error": self.error,
            "started_by": self.started_by,
            "table_rows": self.table_rows,
            "cut_batch": self.cut_batch.batch_id if self.cut_batch is not None else None,
        }

    def __repr__(self) -> str:
        return f"<StreamHandle {self.name!r} {self.status} sink={self.sink} batches={self.progress.total}>"


def shown_rows(table: str) -> int | None:
    """How many rows a table from ``DataFrame.show`` holds, or None when it was cut short.

    Examples
    --------
    >>> shown_rows("+---+\\n|  a|\\n+---+\\n|  1|\\n|  2|\\n+---+\\n")
    2
    >>> shown_rows("+---+\\n|  a|\\n+---+\\n|  1|\\n+---+\\nonly showing top 1 row\\n") is None
    True
    """
    if "only showing top" in table:
        return None
    return max(sum(1 for line in table.splitlines() if line.startswith("|")) - 1, 0)


class _OutputCounts(dict):  # type: ignore[type-arg]
    """Rows output per batch id, newest kept (the poller reads each batch within seconds)."""

    def __init__(self, keep: int = 1000) -> None:
        super().__init__()
        self._keep = keep

    def record(self, batch_id: int, rows: int) -> None:
        # One writer (Spark's batch thread); the poller only reads with get().
        self[batch_id] = rows
        self.pop(batch_id - self._keep, None)


def _console_writer_fn(
    spec: StreamSpec, write: ConsoleWriter, counts: _OutputCounts | None = None
) -> Callable[[Any, int], None]:
    rows, truncate = spec.rows, spec.truncate

    def render(batch_df: Any, batch_id: int) -> None:
        table = batch_df._show_string(rows, 20 if truncate else 0)
        if counts is not None:
            # Spark reports -1 rows for foreachBatch sinks. A table shown whole gives the count
            # for free; counting a cut one would cost a second Spark job per batch (measured:
            # addBatch 190 -> 1,030 ms on a busy 2-core machine), so it stays unknown.
            shown = shown_rows(table)
            if shown is not None:
                counts.record(batch_id, shown)
        write(format_console_batch(batch_id, table))

    return render


def run_query(
    spark: Any,
    df: Any,
    spec: StreamSpec,
    *,
    console: ConsoleWriter | None = None,
    on_event: Callable[[StreamHandle], None] | None = None,
    history: ProgressHistory | None = None,
    foreach_batch: Callable[[Any, int], None] | None = None,
) -> StreamHandle:
    """Start ``df`` as described by ``spec`` and return its running handle.

    ``foreach_batch``, when given, is the sink (``DataStreamWriter.foreachBatch``).

    Raises
    ------
    StreamStartError
        When Spark refuses the query (unsupported output mode, analysis error); the message
        is one line, ``.details`` holds Spark's full text.
    """
    # On Spark Connect the console function runs on the server, where counts would stay.
    counts = _OutputCounts() if foreach_batch is None and spec.sink == "console" and not is_connect() else None
    writer = df.writeStream.queryName(spec.name).option("checkpointLocation", spec.checkpoint)
    if spec.output_mode:
        writer = writer.outputMode(spec.output_mode)
    trigger = spec.trigger.writer_kwargs()
    if trigger:
        writer = writer.trigger(**trigger)
    if foreach_batch is not None:
        writer = writer.foreachBatch(foreach_batch)
    elif spec.sink == "memory":
        writer = writer.format("memory")
    else:
        writer = writer.foreachBatch(_console_writer_fn(spec, console or _print, counts))
    try:
        query = _start_writer(writer, spec.name, spark)
    except StreamInterrupted:
        raise
    except Exception as exc:  # Spark's analysis errors arrive as py4j-captured exceptions
        details = str(exc)
        raise StreamStartError(
            f"Spark cannot start stream {spec.name!r}: {refusal_line(details, plan_text(df))}", details
        ) from None
    handle = StreamHandle(spec, query, spark, on_event=on_event, history=history, output_rows=counts)
    handle.output_columns = tuple(df.columns)
    handle.poller.start()
    return handle


def _newest_planned_batch(checkpoint: str | None) -> int | None:
    """The newest batch id in a local checkpoint's offset log (Spark writes it as a batch starts)."""
    if not checkpoint:
        return None
    path = checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint
    if "://" in path:
        return None  # on a cluster file system: out of this process's reach
    try:
        ids = [int(entry.name) for entry in os.scandir(os.path.join(path, "offsets")) if entry.name.isdigit()]
    except OSError:
        return None
    return max(ids, default=None)


class _Worker:
    """A call on a daemon thread of its own, waited for through an Event.

    An interrupt must not cut a start or a stop of a query short: a KeyboardInterrupt that
    reaches the Python side of a Py4J call leaves the JVM going on with the call, unknown to
    the workbench. Run on a thread, the call always completes, and the caller decides what
    to do once it has. (Waiting with ``Thread.join`` is no good: in CPython before 3.13 an
    interrupted ``join`` marks the thread as ended while it still runs.)
    """

    def __init__(self, target: Callable[[], Any], name: str, session: Any = None) -> None:
        self._target = target
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        if session is None:
            self.thread = threading.Thread(target=self._run, daemon=True, name=name)
        else:
            from pyspark.util import InheritableThread

            # A query started from the notebook's thread inherits its local properties (such as
            # spark.scheduler.pool): pyspark's InheritableThread passes them on.
            self.thread = InheritableThread(self._run, session=session, daemon=True, name=name)

    def _run(self) -> None:
        try:
            self.result = self._target()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def start(self) -> _Worker:
        self.thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the call to end (interruptible); True once it has and its thread is gone."""
        if not self.done.wait(timeout):
            return False
        self.thread.join(1.0)  # the call has returned: the thread is only ending
        return True


#: Seconds an interrupted start may still take before it is left to stop its query by itself.
START_PATIENCE = 60.0


def _start_writer(writer: Any, name: str, spark: Any) -> Any:
    """``writer.start()``; on a KeyboardInterrupt, undo the start and raise :class:`StreamInterrupted`."""
    lock = threading.Lock()
    abandoned = False

    def start() -> Any:
        query = writer.start()
        with lock:
            stop_now = abandoned
        if stop_now:  # the caller gave up waiting: nobody else will stop it
            _stop_quietly(query)
        return query

    worker = _Worker(start, f"workbench-start-{name}", spark).start()
    interrupted = False
    deadline = None
    while not worker.done.is_set():
        try:
            worker.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        except KeyboardInterrupt:
            interrupted = True  # a start cannot be called off: wait for it, then undo it
        if interrupted and deadline is None:
            deadline = time.monotonic() + START_PATIENCE
        if deadline is not None and time.monotonic() >= deadline:
            break
    if not interrupted:
        if worker.error is not None:
            raise worker.error
        return worker.result
    with lock:
        abandoned = True
        finished = worker.done.is_set()
    if not finished:
        raise StreamInterrupted(
            f"interrupted: stream {name!r} is still starting in Spark; the workbench stops it as soon as it has "
            "started"
        )
    if worker.error is not None or worker.result is None:
        raise StreamInterrupted(f"interrupted: stream {name!r} was not started")
    _stop_quietly(worker.result)
    raise StreamInterrupted(f"interrupted: stream {name!r} was not started (stopped the half-started query)")


def _stop_quietly(query: Any) -> None:
    try:
        query.stop()
    except Exception:
        log.debug("stopping an interrupted start failed", exc_info=True)


def _print(text: str) -> None:
    print(text, end="", flush=True)  # plain Python: the console sink's output is the point


def progress_json(progress: Any) -> dict[str, Any]:
    """Spark's progress JSON as a plain dict, from pyspark's ``StreamingQueryProgress``."""
    text = getattr(progress, "json", None)
    if isinstance(text, str):
        return json.loads(text)
    return dict(progress)
