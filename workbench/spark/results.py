"""Reading what a stream has output: its memory sink's table, whole or as a preview.

:class:`TableReader` is the part of a ``StreamHandle`` behind ``result()`` and
``preview()``: it refuses with the fix when there is no table to read (a console sink, a
name a newer stream took over, a Spark that has gone) and returns flat pandas frames.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .frames import flat_select, rows_to_pandas, times_as_micros, to_flat_pandas
from .progress_source import SPARK_STOPPED
from .session_end import spark_is_gone

__all__ = ["TableReader"]


class TableReader:
    """Reads of one stream's memory-sink table (found by the stream's name).

    Examples
    --------
    >>> reader = TableReader("counts", handle.run_id, "memory", "complete", spark)   # doctest: +SKIP
    >>> reader.preview(5, replaced=False)                                             # doctest: +SKIP
    """

    def __init__(self, name: str, run_id: str, sink: str, output_mode: str | None, spark: Any) -> None:
        self._name = name
        self._run_id = run_id
        self._sink = sink
        self._output_mode = output_mode
        self._spark = spark
        self._table: Any = None  # the memory sink's table as a DataFrame, for previews

    def result(self, replaced: bool | str) -> pd.DataFrame:
        """The whole table as a flat pandas DataFrame (see ``StreamHandle.result``).

        ``replaced``: a newer stream took the name, and with it the table (its name, when
        it differs in case only).
        """
        if self._sink != "memory":
            raise ValueError(
                f"stream {self._name!r} writes to the {self._sink} sink, which keeps no table: "
                "start it with sink='memory' to read results"
            )
        self._check_not_replaced(replaced)
        self._check_spark()
        return to_flat_pandas(self._spark.sql(f"SELECT * FROM `{self._name}`"))

    def preview(self, rows: int, replaced: bool | str, total: int | None = None) -> tuple[pd.DataFrame, int]:
        """A few rows of the table and its row count (see ``StreamHandle.preview``).

        The rows have the columns, dtypes and times of :meth:`result`'s rows: the first
        ``rows`` in complete mode, otherwise the newest ``rows`` (Spark's ``tail``).

        Parameters
        ----------
        rows : int
            How many rows to return at most.
        replaced : bool or str
            As for :meth:`result`.
        total : int or None, default None
            The table's row count when the caller knows it (a handle counts it from the
            progress history): returned as it is, which spares Spark a count over the
            whole table. None: Spark counts the rows.
        """
        if self._sink != "memory":
            raise ValueError(f"stream {self._name!r} writes to the {self._sink} sink, which keeps no table")
        self._check_not_replaced(replaced)
        self._check_spark()
        if self._table is None:
            # Resolved once (the columns of result()); never acted on itself. Spark plans a
            # memory sink's table as a scan of the rows the sink holds *when planned*, and a
            # DataFrame keeps its first plan: an action on this one (tail) would show the
            # same rows forever. Each read below acts on a new DataFrame over it instead,
            # planned afresh, so it sees the rows as they are now.
            self._table = flat_select(self._spark.table(f"`{self._name}`"))
        table = self._table
        if total is None:
            total = table.count()  # a new DataFrame (an aggregate over the table): planned now
        if self._output_mode == "complete":
            return to_flat_pandas(table.limit(rows)), total
        # Collected as the instants themselves (not wall-clock times) and as tuples, which
        # keep every column even where names repeat.
        return rows_to_pandas(times_as_micros(table).tail(rows), table.schema), total

    def _check_not_replaced(self, replaced: bool | str) -> None:
        # The memory sink's table is found by the stream's name, which now means the newer stream.
        if not replaced:
            return
        newer = replaced if isinstance(replaced, str) else self._name
        if newer != self._name:  # Spark's table names ignore case
            raise ValueError(
                f"stream {self._name!r} (run {self._run_id}) was replaced by the newer stream {newer!r}: Spark's "
                f"memory tables ignore case, so its table now holds {newer!r}'s rows: read them with "
                f"workbench.stream({newer!r}).result()"
            )
        raise ValueError(
            f"stream {self._name!r} (run {self._run_id}) was replaced by a newer stream of the same name, "
            f"whose table now holds {self._name!r}: read it with workbench.stream({self._name!r}).result()"
        )

    def _check_spark(self) -> None:
        if spark_is_gone(self._spark):
            raise RuntimeError(f"stream {self._name!r} has no table any more: {SPARK_STOPPED}")
