"""A replay run's results: one parquet folder per batch id, written by ``foreachBatch``.

:func:`results_writer` is the ``foreachBatch`` function a replay starts its query with;
:class:`BatchResults` reads back what committed batches wrote: each batch's output, the
query's whole result so far, the newest rows a monitor shows, and each batch's row count.
A batch interrupted by a pause is not committed: Spark runs it again on the next start
and overwrites its folder, so a folder past the last committed batch id is a leftover,
never a result.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..progress import ProgressHistory
from .frames import flat_select, utc_times

__all__ = ["BatchResults", "results_writer"]

log = logging.getLogger(__name__)


def results_writer(folder: str, console: Callable[[str], None] | None) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function writing each batch to ``folder/batch_id=N`` (and ``console``).

    The batch's rows come to the function's process as Arrow and are written there, as one
    parquet file: the folder is the driver's (or, under Spark Connect, the server's), also
    when the executors run on other machines, and a fresh JVM's first batch does not pay
    for Spark's file writer (0.3-0.5 s of the first replay step, measured). A folder
    appears whole (written aside, then renamed); a batch run again after a pause replaces it.
    """
    # Only a path is captured, so the function also runs server-side under Spark Connect.
    def write(batch_df: Any, batch_id: int) -> None:
        import os
        import shutil

        import pyarrow.parquet as pq

        table = flat_select(batch_df).toArrow()
        final = os.path.join(folder, f"batch_id={batch_id}")
        aside = os.path.join(folder, f".batch_id={batch_id}.{os.getpid()}")
        shutil.rmtree(aside, ignore_errors=True)
        os.makedirs(aside)
        pq.write_table(table, os.path.join(aside, "part-0.parquet"))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(aside, final)
        if console is not None:
            from .console import format_console_batch, show_string

            console(format_console_batch(batch_id, show_string(batch_df, 20, 20)))

    return write


def _read_batch(folder: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    return utc_times(pq.read_table(str(folder)).to_pandas(coerce_temporal_nanoseconds=True))


class BatchResults:
    """The results folders of one replay run (from one reset to the next), read back.

    Parameters
    ----------
    folder : Path
        Holds one ``batch_id=N`` parquet folder per batch (local: this process reads it).
    output_mode : str or None
        The query's output mode; in complete mode each batch holds the whole table.
    raw_progress : ProgressHistory
        Spark's progress: its last batch id is the last committed batch.
    progress : ProgressHistory
        The run's progress with output rows counted from the folders (for table sizes).

    Examples
    --------
    >>> results = BatchResults(run.results_dir, "append", run.raw_progress, run.progress)   # doctest: +SKIP
    >>> results.preview(5)                                                                 # doctest: +SKIP
    """

    def __init__(self, folder: Path, output_mode: str | None, raw_progress: ProgressHistory,
                 progress: ProgressHistory) -> None:
        self.folder = folder
        self.output_mode = output_mode
        self._raw_progress = raw_progress
        self._progress = progress

    def output_rows(self, batch_id: int) -> int | None:
        """Rows batch ``batch_id`` emitted, from its results folder's parquet footers.

        The foreachBatch sink reports ``numOutputRows`` as -1, and the folder is complete
        before Spark reports the batch's progress.
        """
        import pyarrow.parquet as pq

        folder = self.folder / f"batch_id={batch_id}"
        try:
            return sum(pq.ParquetFile(str(f)).metadata.num_rows for f in folder.glob("*.parquet"))
        except Exception:
            log.debug("cannot count output rows of batch %s", batch_id, exc_info=True)
            return None

    def batch_results(self) -> dict[int, pd.DataFrame]:
        """Each committed batch's output, by batch id (complete mode: the whole table)."""
        committed = self._raw_progress.last_batch_id
        out: dict[int, pd.DataFrame] = {}
        if committed is None:
            return out
        for folder in sorted(self.folder.glob("batch_id=*"), key=lambda p: int(p.name.split("=")[1])):
            batch_id = int(folder.name.split("=")[1])
            if batch_id <= committed:  # a batch cut off by a pause runs again; ignore its leftovers
                out[batch_id] = _read_batch(folder)
        return out

    def _committed_folders(self) -> list[tuple[int, Path]]:
        """The results folders of committed batches, newest first."""
        committed = self._raw_progress.last_batch_id
        if committed is None:
            return []
        folders = ((int(p.name.split("=")[1]), p) for p in self.folder.glob("batch_id=*"))
        # A batch cut off by a pause runs again: its leftovers are not results.
        return sorted(((b, p) for b, p in folders if b <= committed), reverse=True)

    def preview(self, rows: int) -> tuple[pd.DataFrame, int]:
        """The rows a monitor shows and the table's size, reading only the batches needed.

        Append and update mode: the newest ``rows`` rows (with ``batch_id``), read from the
        newest batches back; the size is the sum of the batches' output rows. Complete mode:
        the first ``rows`` rows of the latest table and its size. Unlike :meth:`results`, the
        cost does not grow with the number of batches run.

        Examples
        --------
        >>> run.step(); run.preview(5)       # doctest: +SKIP
        """
        folders = self._committed_folders()
        if not folders:
            return pd.DataFrame(), 0
        if self.output_mode == "complete":
            batch_id, folder = folders[0]
            table = _read_batch(folder).assign(batch_id=batch_id)
            return table.head(rows), len(table)
        picked: list[pd.DataFrame] = []
        have = 0
        for batch_id, folder in folders:
            if have >= rows and picked:
                break
            table = _read_batch(folder)
            if len(table) or not picked:
                picked.append(table.assign(batch_id=batch_id))
                have += len(table)
        shown = pd.concat(picked[::-1], ignore_index=True).tail(rows)
        total = sum(r.num_output_rows or 0 for r in self._progress.records())
        return shown, total

    def results(self) -> pd.DataFrame:
        """What the query has output: every emitted row with its ``batch_id`` (append and
        update mode), or the latest complete table (complete mode)."""
        tables = self.batch_results()
        if not tables:
            return pd.DataFrame()
        if self.output_mode == "complete":
            batch_id = max(tables)
            return tables[batch_id].assign(batch_id=batch_id)
        frames = [t.assign(batch_id=b) for b, t in tables.items() if len(t)]
        if not frames:
            return next(iter(tables.values())).assign(batch_id=pd.Series(dtype="int64"))
        return pd.concat(frames, ignore_index=True)
