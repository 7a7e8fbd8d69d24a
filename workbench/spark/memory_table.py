"""The memory sink's table of one stream: how many rows it holds, and what a stop left in it.

Spark's memory sink keeps every row it is given in the driver's memory and never trims it.
:class:`MemoryTable` counts the table's rows from the progress history (no Spark job), warns
once past a limit, and after the query ends finds a :class:`CutBatch`: a batch whose rows
reached the table before a stop cut it, so that no progress record accounts for them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from ..progress import ProgressHistory
from .checkpoint_log import batch_ids
from .progress_source import jvm_query
from .session_end import spark_is_gone

__all__ = ["CutBatch", "MemoryTable", "newest_planned_batch"]

log = logging.getLogger(__name__)


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


class MemoryTable:
    """The row accounting of one stream's memory-sink table (a part of its ``StreamHandle``).

    :meth:`count_rows` subscribes to the stream's progress history; :meth:`find_cut_batch`
    runs once the query has ended.

    Attributes
    ----------
    rows : int
        Rows in the table, counted from the history (plus a cut batch's).
    warning : str or None
        One line once the table has passed ``warn_rows`` rows.
    cut_batch : CutBatch or None
        The batch a stop cut after its rows reached the table.
    doubt : str or None
        What the stop left unknown about the table (Spark Connect in complete mode).

    Examples
    --------
    >>> table = MemoryTable("counts", "append", "/tmp/cp", 0, query, spark, handle.progress)   # doctest: +SKIP
    >>> handle.progress.subscribe(table.count_rows)                                           # doctest: +SKIP
    """

    def __init__(self, name: str, output_mode: str | None, checkpoint: str, warn_rows: int, query: Any,
                 spark: Any, progress: ProgressHistory) -> None:
        self._name = name
        self._output_mode = output_mode
        self._checkpoint = checkpoint
        self._warn_rows = warn_rows
        # The query and its session, for the memory sink; the history, for the batches it reported.
        self._query, self._spark, self._progress = query, spark, progress
        self.rows = 0
        self.warning: str | None = None
        self.cut_batch: CutBatch | None = None
        self.doubt: str | None = None
        self._reconciled = False
        self._lock = threading.Lock()

    @property
    def note(self) -> str | None:
        """One line when the table holds rows the history does not account for, else None."""
        if self.cut_batch is not None:
            return self.cut_batch.note
        return self.doubt

    def count_rows(self, records: Sequence[Any]) -> None:
        """Add the output of each new batch (a progress-history subscriber)."""
        # Runs on the poller's thread for each batch added: arithmetic only.
        limit = self._warn_rows
        with self._lock:
            for record in records:
                rows = record.num_output_rows or 0
                # In complete mode the memory sink replaces its table with each batch's output.
                self.rows = rows if self._output_mode == "complete" else self.rows + rows
                self._warn(limit)  # the rows as the batch that crossed the limit left them

    def _warn(self, limit: int) -> None:
        if limit and self.rows >= limit and self.warning is None:
            self.warning = (
                f"stream {self._name!r} keeps {self.rows:,} rows in its memory table, in the Spark "
                "driver's memory, and the table grows with every batch: stop the stream when done, or use "
                "sink='console' for a long run (WORKBENCH_TABLE_WARN_ROWS sets this limit)"
            )
            log.warning(self.warning)

    def find_cut_batch(self, replaced: bool) -> None:
        """After the query ended (once): find a batch whose rows reached the table without progress.

        Classic sessions ask the memory sink which batch it holds last (and how many rows
        that batch wrote); on Spark Connect, where the sink is out of reach, the table's row
        count is compared with the history's in append and update mode, and in complete mode
        a batch started (in the checkpoint's offset log) but never reported leaves a
        :attr:`doubt`. ``replaced``: a newer stream took the name, and with it the table.
        """
        with self._lock:
            if self._reconciled:
                return
            self._reconciled = True
        if spark_is_gone(self._spark):
            return
        try:
            cut = self._sink_latest_batch(replaced)
        except Exception:
            log.debug("reading the memory sink of %s failed", self._name, exc_info=True)
            return
        last = self._progress.last_batch_id
        if cut is None and jvm_query(self._query) is None and self._output_mode == "complete" and not replaced:
            started = newest_planned_batch(self._checkpoint)
            if started is not None and (last is None or started > last) and not self._ended_with_error():
                self.doubt = (
                    f"The stop interrupted batch {started}, which Spark never reported; on Spark Connect the "
                    "workbench cannot tell whether it wrote the memory table first, so the table may hold "
                    f"batch {started}'s result while the history "
                    + (f"ends at batch {last}." if last is not None else "has no batch.")
                )
                log.info(self.doubt)
            return
        if cut is None or (last is not None and cut[0] <= last):
            return
        self.cut_batch = CutBatch(*cut)
        with self._lock:
            self.rows = cut[1] if self._output_mode == "complete" else self.rows + cut[1]
        log.info(self.cut_batch.note)

    def _ended_with_error(self) -> bool:
        """Whether the ended query failed (its last batch then failed rather than being cut)."""
        try:
            return self._query.exception() is not None
        except Exception:
            return True  # unknown: claim nothing

    def _sink_latest_batch(self, replaced: bool) -> tuple[int, int] | None:
        """(batch id, rows) of the newest batch in the memory sink, or None when unknown."""
        jsq = jvm_query(self._query)
        if jsq is not None:
            sink = jsq.streamingQuery().sink()
            latest = sink.latestBatchId()
            if not latest.isDefined():
                return None
            return int(latest.get()), int(sink.latestBatchData().size())
        if self._output_mode == "complete" or replaced:
            return None  # the table's size says nothing about which batch wrote it
        extra = int(self._spark.table(f"`{self._name}`").count()) - self.rows
        if extra <= 0:
            return None
        last = self._progress.last_batch_id
        return (0 if last is None else last + 1), extra



def newest_planned_batch(checkpoint: str | None) -> int | None:
    """The newest batch id in a local checkpoint's offset log (Spark writes it as a batch starts).

    Examples
    --------
    >>> newest_planned_batch(None) is None
    True
    >>> newest_planned_batch("s3a://bucket/checkpoint") is None   # out of this process's reach
    True
    """
    return max(batch_ids(checkpoint, "offsets"), default=None)
