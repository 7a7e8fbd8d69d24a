"""The handle users hold for each stream the workbench started or watches.

:class:`StreamHandle` is a facade over its parts: the query's status and error (settled
once it ends), its :class:`~workbench.progress.ProgressHistory` and the poller that fills
it, the stop (:class:`~workbench.spark.stopping.Stopper`), the memory table's accounting
(:class:`~workbench.spark.memory_table.MemoryTable`), result reads
(:class:`~workbench.spark.results.TableReader`) and the state inspector. :class:`StreamSpec`
says how a query is started (see :mod:`workbench.spark.query_start`).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..options import Trigger, check_seconds
from ..progress import ProgressHistory, ProgressPoller
from ..progress.input_watermarks import InputSpec, input_watermark_frame, input_watermarks
from .memory_table import CutBatch, MemoryTable
from .progress_source import QueryProgressSource
from .results import TableReader
from .session_end import spark_is_gone
from .stopping import QueryEnd, Stopper, Worker

__all__ = ["StreamHandle", "StreamSpec"]

log = logging.getLogger(__name__)


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
        #: The batch id this run continued with, restarted from a user's checkpoint with committed batches.
        self.resumed_from: int | None = None
        #: The newer stream that took this one's name (a memory-sink one took the table too).
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
        #: False for a watched query whose output mode is unknown (Spark Connect): so is its table's size.
        self.output_mode_known = True
        # The parts the handle delegates to.
        self._end = QueryEnd(query, spark, subject=self)
        if on_event is not None:
            self._end.on_finished(on_event)
        self._memory = MemoryTable(spec.name, spec.output_mode, spec.checkpoint, spec.table_warn_rows, query, spark,
                                   self.progress)
        if self.sink == "memory":  # the batches a watched query's history holds already, then each new one
            self.progress.subscribe(self._memory.count_rows, held=True)
        self._reader = TableReader(spec.name, self._run_id, spec.sink, spec.output_mode, spark)
        self._source = QueryProgressSource(query, output_rows, spark)
        self.poller = ProgressPoller(
            self._source, self.progress, interval=spec.poll_interval,
            on_finished=self._on_poller_finished, name=f"workbench-poller-{spec.name}",
        )
        self._stopping = Stopper(spec.name, query, spark, self.poller, self._end, self._find_cut_batch)

    def learn_sink(self, description: str, kind: str) -> None:
        """A watched query's sink, unknown until a report named it (Spark Connect, before the first batch)."""
        if self.sink != "unknown":
            return
        self.sink, self.sink_description = kind, description
        self.spec = replace(self.spec, sink=self.sink)
        self._reader = TableReader(self.name, self._run_id, self.sink, self.output_mode, self._spark)
        if self.sink == "memory":  # the batches so far (this one's too), then each new one
            self.progress.subscribe(self._memory.count_rows, held=True)

    def hear_from(self, heard: Callable[[], Sequence[Mapping[str, Any]]]) -> None:
        """Let the poller also read the reports the session's listener heard for this run.

        ``heard`` returns them (what ``QueryRecorder.release`` returns for the run); a poll
        then misses no batch that left Spark's recent list before it read.
        """
        self._source.heard = heard

    # -- status --------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The query's id (stable across restarts from the same checkpoint)."""
        return self._id

    @property
    def run_id(self) -> str:
        """The id of this run of the query."""
        return self._run_id

    @property
    def spark(self) -> Any:
        """The SparkSession the query runs on."""
        return self._spark

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
        if self._end.status is not None:
            return self._end.status
        if self.spark_gone:
            return self._end.settle()
        try:
            if self.query.isActive:
                return "active"
        except Exception:
            if self.spark_gone:
                return self._end.settle()
            # A read that failed (a blip to a Spark Connect server) says nothing of the end:
            # only a query seen inactive, or a session gone, is settled (once, for good).
            log.debug("reading whether %s is active failed", self.name, exc_info=True)
            return "active"
        return self._end.settle()

    @property
    def error(self) -> str | None:
        """One readable line for a failed query (the user's own error first), else None.

        The full text is in :attr:`error_details`.
        """
        self.status  # settles a terminated query's error
        return self._end.error

    @property
    def error_details(self) -> str | None:
        """Spark's full error text for a failed query, else None.

        For a query the workbench stopped while it was healthy, whatever Spark raised while
        stopping (the status stays ``"stopped"``).
        """
        self.status
        return self._end.error_details

    @property
    def spark_gone(self) -> bool:
        """Whether the stream's Spark session stopped or its JVM died (nothing runs any more)."""
        return spark_is_gone(self._spark)

    def _on_poller_finished(self) -> None:
        self._end.settle()
        self._find_cut_batch()
        self._end.mark_finished()

    @property
    def finished(self) -> bool:
        """Whether the query has ended and its last batches are in the history."""
        return self._end.finished

    def wait_finished(self, timeout: float | None = None) -> bool:
        """Wait until the query has ended and its last batches are in the history."""
        return self._end.wait_finished(timeout)

    def on_finished(self, callback: Callable[[StreamHandle], None]) -> None:
        """Call ``callback(handle)`` once the query has ended (at once if it already has).

        After that, :attr:`status` and :attr:`error` no longer call Spark. The callback runs
        on the poller's thread (or the caller's): keep it short.
        """
        self._end.on_finished(callback)

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
        return self._memory.rows if self.sink == "memory" and self.output_mode_known else None

    @property
    def table_warning(self) -> str | None:
        """One line once the memory table has passed ``table_warn_rows`` rows, else None."""
        return self._memory.warning

    @property
    def cut_batch(self) -> CutBatch | None:
        """The batch a stop cut after its rows reached the memory table (no progress record), or None."""
        return self._memory.cut_batch

    @property
    def table_note(self) -> str | None:
        """One line when the memory table holds rows the history does not account for, else None.

        See :attr:`cut_batch`. On Spark Connect in complete mode the memory sink is out of
        reach and the table's size says nothing about which batch wrote it: when the stop
        interrupted a batch that Spark had started (it is in the checkpoint's offset log) but
        never reported, the line says that the table may hold that batch.
        """
        return self._memory.note

    @property
    def progress_note(self) -> str | None:
        """One line while reading the query's progress fails and the query still runs (the poller
        keeps trying, less often the longer it fails; the full error is in the log); else one when
        batches were never read (:attr:`ProgressHistory.skipped_note`); else None.
        """
        error = self.poller.read_error
        if error is None or self._end.status is not None:
            return self.progress.skipped_note
        return (f"Reading this stream's progress failed {self.poller.read_failures} time(s) in a row; "
                f"the query still runs and the workbench keeps trying: {error}")

    def _find_cut_batch(self) -> None:
        """After the query ended: find a batch whose rows reached the memory table without progress."""
        if self.sink == "memory":
            self._memory.find_cut_batch(replaced=self._table_taker() is not None)

    def _table_taker(self) -> str | None:  # a newer stream of the name took the table (not one without a table)
        newer = self.replaced_by
        return newer.name if newer is not None and newer.sink == "memory" else None

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
        if not isinstance(operators, bool):
            raise TypeError(f"operators must be True or False, got {operators!r}")
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
        return self._reader.result(replaced=self._table_taker())

    def preview(self, rows: int) -> tuple[pd.DataFrame, int]:
        """A few rows of the memory sink's table and its row count, without fetching it all.

        In complete mode the table is the whole result, so its first ``rows`` rows are
        returned; otherwise the newest ``rows`` rows (Spark's ``tail``).

        Returns
        -------
        (pandas.DataFrame, int)
            The rows and the number of rows in the table.
        """
        whole = self.history_note is None and not self.progress.skipped  # table_rows counts every row: no count job
        return self._reader.preview(rows, replaced=self._table_taker(), total=self.table_rows if whole else None)

    def input_watermarks(self) -> pd.DataFrame:
        """Each watermarked input's max event time and watermark, one row per batch and input.

        Only for a stream started with ``input_watermarks=True`` (``%%stream
        --input-watermarks``). Columns: ``batch_id``, ``input`` (its temp view, alias or
        source), ``max_event_time`` (the latest it has had so far), ``delay``,
        ``watermark`` (max event time minus delay: what it proposes after the batch),
        ``rows`` (in the batch), ``quiet_batches`` (batches in a row without rows) and
        ``global_watermark`` (what Spark derives from the inputs under its
        ``multipleWatermarkPolicy``; the next batch runs with it, so it is one batch ahead of
        ``history()``'s ``watermark``).

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
              side: str | None = None, variable: str | None = None) -> pd.DataFrame:
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
        variable : str, optional
            For transformWithState, which state variable (``state_summary()`` lists them):
            one row per key (value state), per element (list) or per map key (map), with
            ``expires_at`` when the variable has a TTL.

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
        >>> sessions.state(variable="events")              # doctest: +SKIP
        """
        return self._state().state(batch_id, operator, side, variable)

    def state_changes(self, start_batch: int, end_batch: int | None = None, operator: int | str | None = None,
                      side: str | None = None, variable: str | None = None) -> pd.DataFrame:
        """What changed in state from ``start_batch`` to ``end_batch`` (default: the latest), both included.

        One row per change: ``batch_id``, ``change_type`` (``update`` / ``delete``), key
        and value columns, ``watermark`` (for a delete: the watermark of that batch, which
        evicted the row) and ``partition_id``.

        Examples
        --------
        >>> handle.state_changes(0, 5).query("change_type == 'delete'")   # doctest: +SKIP
        """
        return self._state().changes(start_batch, end_batch, operator, side, variable)

    def state_summary(self) -> pd.DataFrame:
        """The query's stateful operators: name, kind, sides, batch range, partitions.

        With a transformWithState operator, a ``variables`` column lists the processor's state
        variables (name, kind, TTL) and its timers' time mode.

        Examples
        --------
        >>> handle.state_summary()[["operator", "kind", "max_batch_id"]]   # doctest: +SKIP
        """
        return self._state().summary()

    def timers(self, batch_id: int | None = None, operator: int | str | None = None) -> pd.DataFrame:
        """The timers a transformWithState processor has registered after ``batch_id`` (default: the latest).

        One row per timer: the grouping key's columns, ``expires_at``, ``time_mode``, the
        ``watermark`` that batch ran with, ``ahead_of_watermark`` (an event-time timer fires
        in the first batch whose watermark reaches its expiry) and ``fires_in_batch``: the
        first later batch in the stream's history whose watermark (the one it ran with) is at
        or past the expiry, which fires the timer; ``<NA>`` while the history does not reach
        such a batch yet, and for processing-time timers.

        Examples
        --------
        >>> sessions.timers(batch_id=2)[["user", "expires_at", "fires_in_batch"]]   # doctest: +SKIP
        """
        return self._state().timers(batch_id, operator)

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
        ValueError
            When ``grace`` is not a number of seconds >= 0 (before anything is stopped).
        StreamInterrupted
            On a KeyboardInterrupt while waiting (Spark waits for a running Python
            ``foreachBatch`` function to return). The stop goes on in the background; the
            next ``stop()`` waits for it.
        StreamStopError
            When Spark could not stop the query and it still runs (the stop call failed, as
            when a Spark Connect server is out of reach): the stream stays active, and the
            next ``stop()`` tries again.

        Examples
        --------
        >>> handle.stop()                          # doctest: +SKIP
        >>> handle.status, handle.cut_batch        # doctest: +SKIP
        ('stopped', None)
        """
        self._stopping.stop(check_seconds("grace", grace, zero_ok=True))

    def begin_stop(self, grace: float) -> Worker | None:
        """Begin stopping the query on a thread of its own (once), so that an interrupt cannot cut the stop short.

        Parameters
        ----------
        grace : float
            As for :meth:`stop`.

        Returns
        -------
        Worker or None
            The stop to wait for (``.wait()``; ``.done`` is set once it has ended), or None
            when the stop already ran on the caller's thread (or the caller is the stop's own).

        Examples
        --------
        >>> stopper = handle.begin_stop(0.0)       # doctest: +SKIP
        >>> if stopper is not None:                # doctest: +SKIP
        ...     stopper.wait()
        """
        return self._stopping.begin(grace)

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
            "output_mode": (self.output_mode or "append") if self.output_mode_known else "unknown",
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
