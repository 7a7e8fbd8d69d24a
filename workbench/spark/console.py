"""The console sink, rendered on the Python side: each micro-batch's table as Spark prints it.

Spark's own console sink prints on the JVM's stdout, which a Jupyter kernel cannot be relied
on to route to the cell that started the query. The workbench runs a ``foreachBatch``
function instead that renders the same text in Python (:func:`show_string`), frames it
(:func:`format_console_batch`) and writes it where the cell's output goes; it counts the
rows of each table it showed whole (:class:`OutputCounts`), since Spark reports none for a
``foreachBatch`` sink.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["ConsoleWriter", "OutputCounts", "console_writer", "format_console_batch", "print_console",
           "show_string"]

ConsoleWriter = Callable[[str], None]

_RULE = "-" * 43


def show_string(df: Any, rows: int, truncate: int) -> str:
    """The table ``df.show(rows, truncate)`` prints, as a string.

    pyspark has no public way to get this text: ``DataFrame.show`` prints it on the
    driver's stdout, and Spark's console sink on the JVM's, neither of which reliably lands
    under the notebook cell that started the query. So this wraps pyspark's private
    ``DataFrame._show_string`` (classic and Spark Connect DataFrames both have it), the one
    place the workbench calls it.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The frame to render (a micro-batch, for the console sink).
    rows : int
        Rows to show.
    truncate : int
        Characters past which a cell is cut (0: never), as in ``DataFrame.show``.

    Examples
    --------
    >>> print(show_string(spark.range(2), 20, 20), end="")   # doctest: +SKIP
    +---+
    | id|
    +---+
    |  0|
    |  1|
    +---+
    """
    return df._show_string(rows, truncate)


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


class OutputCounts(dict):  # type: ignore[type-arg]
    """Rows output per batch id, newest kept (the poller reads each batch within seconds).

    Examples
    --------
    >>> counts = OutputCounts(keep=2)
    >>> for batch_id in range(3):
    ...     counts.record(batch_id, 10 + batch_id)
    >>> counts
    {1: 11, 2: 12}
    """

    def __init__(self, keep: int = 1000) -> None:
        super().__init__()
        self._keep = keep

    def record(self, batch_id: int, rows: int) -> None:
        """Note that batch ``batch_id`` output ``rows`` rows (and forget the one ``keep`` batches older)."""
        # One writer (Spark's batch thread); the poller only reads with get().
        self[batch_id] = rows
        self.pop(batch_id - self._keep, None)


def console_writer(
    rows: int, truncate: bool, write: ConsoleWriter, counts: OutputCounts | None = None
) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of a console sink: each batch's table, framed, to ``write``.

    Examples
    --------
    >>> render = console_writer(20, True, print)                    # doctest: +SKIP
    >>> df.writeStream.foreachBatch(render).start()                 # doctest: +SKIP
    """

    def render(batch_df: Any, batch_id: int) -> None:
        # Every partition is computed, as Spark's own console sink does: show() alone computes
        # only those its first rows come from, and Spark fails a stateful query whose batch left
        # a partition's state uncommitted (STATE_STORE_COMMIT_VALIDATION_FAILED). Cached, the
        # batch is counted (Spark reports -1 rows for foreachBatch sinks) and shown in one pass.
        batch_df.persist()
        try:
            total = batch_df.count()
            table = show_string(batch_df, rows, 20 if truncate else 0)
        finally:
            batch_df.unpersist()
        if counts is not None:
            counts.record(batch_id, total)
        write(format_console_batch(batch_id, table))

    return render


def print_console(text: str) -> None:
    """Write console-sink text to the process's stdout (the cell's output in a notebook).

    Examples
    --------
    >>> print_console("Batch: 0\\n")
    Batch: 0
    """
    print(text, end="", flush=True)  # plain Python: the console sink's output is the point
