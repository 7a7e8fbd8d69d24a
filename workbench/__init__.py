"""Spark Streaming Workbench: run, watch and replay Structured Streaming queries in Jupyter.

The public API. In a notebook, ``%load_ext workbench`` adds the ``%%stream`` magic; from
Python:

>>> import workbench                                           # doctest: +SKIP
>>> spark = workbench.session()                                # doctest: +SKIP
>>> df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).load()  # doctest: +SKIP
>>> handle = workbench.start(df, "numbers")                    # doctest: +SKIP
>>> handle.history()                                           # doctest: +SKIP
>>> workbench.stop_all()                                       # doctest: +SKIP

Importing this package does not import pyspark; the first call that needs Spark does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ._lazy import lazy_attributes

__version__ = "0.1.0"

__all__ = [
    "session", "spark_log", "start", "stream", "streams", "stop_all", "watch", "load_ipython_extension",
    "unload_ipython_extension", "StreamHandle", "CheckpointWarning",
    "Replay", "Script", "replay_stream", "ReplayPanel", "replay_panel", "compare", "scenarios",
]

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .spark.handle import StreamHandle

# Public names that live in submodules, imported on first use so that `import workbench`
# (and the command line) stays fast and free of pyspark.
_LAZY = {
    "StreamHandle": ("workbench.spark.handle", "StreamHandle"),
    "CheckpointWarning": ("workbench.errors", "CheckpointWarning"),
    "Replay": ("workbench.replay.spec", "Replay"),
    "Script": ("workbench.replay.spec", "Script"),
    "ReplayPanel": ("workbench.views.replay_panel", "ReplayPanel"),
    "replay_stream": ("workbench.replay_api", "replay_stream"),
    "replay_panel": ("workbench.replay_api", "replay_panel"),
    "compare": ("workbench.replay_api", "compare"),
    "scenarios": ("workbench.replay", "scenarios"),
}


__getattr__ = lazy_attributes(__name__, _LAZY)


def _env() -> Any:
    from .magics import hook_kernel_shutdown
    from .spark import current_env

    hook_kernel_shutdown()  # in a Jupyter kernel, its shutdown ends the streams and Spark first
    return current_env()


def session(checkpoint_root: str | os.PathLike[str] | None = None, **conf: Any) -> Any:
    """Return the workbench's SparkSession, starting an embedded local Spark on first call.

    The session is tuned for interactive streaming on one machine: 2 shuffle partitions,
    adaptive execution off, driver and UI on 127.0.0.1, quiet logs, UTC session time zone,
    and a private temporary folder for checkpoints that is removed at exit. Calling it
    again returns the same session.

    Set ``WORKBENCH_MASTER`` (e.g. ``spark://host:7077``) to use a cluster, or
    ``SPARK_REMOTE`` (e.g. ``sc://host:15002``) to use a Spark Connect server. A malformed
    URL, or one where nothing answers, raises a one-line error within seconds.

    Parameters
    ----------
    checkpoint_root : str or path, optional
        Where streams started without a checkpoint keep theirs (a folder or a URI such as
        ``hdfs://nn/ckpt``, reachable by every executor; kept at exit). Also read from
        ``WORKBENCH_CHECKPOINT_ROOT``. Without it they go to the private temporary folder,
        and on a cluster the first such start warns that only this machine can reach it.
    **conf
        Spark settings, e.g. ``**{"spark.sql.shuffle.partitions": "4"}``; they win over the
        workbench's defaults. On a running session only runtime settings can change.

    Returns
    -------
    pyspark.sql.SparkSession

    Examples
    --------
    >>> spark = workbench.session()                          # doctest: +SKIP
    >>> spark.conf.get("spark.sql.shuffle.partitions")       # doctest: +SKIP
    '2'
    >>> spark = workbench.session(checkpoint_root="hdfs://namenode/checkpoints")  # doctest: +SKIP
    """
    return _env().session(checkpoint_root, **conf)


def spark_log() -> Path | None:
    """The file holding what the Spark JVM writes to stderr, or None when it has no such file.

    The JVM's start-up lines, Spark's error log and stack traces, and the output of the
    Python workers it runs go there instead of under a notebook cell; the workbench reports
    a failing query itself, as one line. The file lives in the session's private folder and
    is removed with it when the kernel shuts down. None before :func:`session` and on a
    Spark Connect server elsewhere (its own log is on its machine).

    Examples
    --------
    >>> spark = workbench.session()                          # doctest: +SKIP
    >>> print(workbench.spark_log().read_text())             # doctest: +SKIP
    WARNING: Using incubator modules: jdk.incubator.vector
    ...
    """
    return _env().spark_log


def start(
    df: Any,
    name: str,
    *,
    sink: str = "memory",
    output_mode: str | None = None,
    trigger: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    rows: int = 20,
    truncate: bool = True,
    console: Callable[[str], None] | None = None,
    poll_interval: float | None = None,
    input_watermarks: bool = False,
) -> StreamHandle:
    """Start a streaming query and return its :class:`StreamHandle`.

    Starting a name that is already active replaces that stream (stop, then start).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        A streaming DataFrame (built from ``spark.readStream``).
    name : str
        The stream's name: letters, digits and underscores. The memory sink's table has
        this name, so ``spark.sql("select * from name")`` reads it.
    sink : {"memory", "console"}, default "memory"
        ``console`` prints each micro-batch as Spark's console sink does; in a notebook the
        tables appear under the cell that started the stream.
    output_mode : {"append", "update", "complete"}, optional
        Spark's default (append) when left out.
    trigger : str, optional
        ``"1 second"``, ``"500 ms"``, ``"once"``, ``"available-now"``; back-to-back
        batches when left out.
    checkpoint : str or path, optional
        Checkpoint folder; a fresh private temporary one when left out.
    rows : int, default 20
        Rows shown per console batch.
    truncate : bool, default True
        Truncate long cells in console tables, as Spark does.
    console : callable, optional
        Where console text goes (called with each batch's text). Defaults to an output
        area under the current notebook cell, or standard output outside notebooks.
    poll_interval : float, optional
        Seconds between progress polls (default 0.5).
    input_watermarks : bool, default False
        Measure each watermarked input's max event time and watermark per batch (for
        joins and unions, whose progress shows only the global watermark); read them
        with ``handle.input_watermarks()``. Off by default: it adds an observation per
        input to the query. Classic Spark only (not Spark Connect).

    Returns
    -------
    StreamHandle

    Raises
    ------
    TypeError, ValueError
        For a bad argument, before Spark starts anything.
    workbench.errors.StreamStartError
        When Spark refuses the query; one line, with ``.details`` holding Spark's text.

    Examples
    --------
    >>> spark = workbench.session()                                          # doctest: +SKIP
    >>> df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()  # doctest: +SKIP
    >>> handle = workbench.start(df, "numbers", trigger="1 second")          # doctest: +SKIP
    >>> handle.result().shape                                                # doctest: +SKIP
    """
    if console is None and sink == "console":
        from .views.console import cell_console

        console = cell_console()
    return _env().start(
        df, name, sink=sink, output_mode=output_mode, trigger=trigger, checkpoint=checkpoint,
        rows=rows, truncate=truncate, console=console, poll_interval=poll_interval,
        input_watermarks=input_watermarks,
    )


def stream(name: str) -> StreamHandle:
    """The :class:`StreamHandle` of the stream called ``name``.

    Examples
    --------
    >>> workbench.stream("numbers").status                   # doctest: +SKIP
    'active'
    """
    return _env().get(name)


def watch(query: Any) -> StreamHandle:
    """Watch a streaming query the workbench did not start, e.g. a plain ``df.writeStream...start()``.

    Returns a :class:`StreamHandle` with the same history, status, error and monitor as a
    started stream. Watching never stops or restarts the query; ``handle.stop()`` stops it
    when called. Once the workbench's session is up (``workbench.session()``, or any
    start), a listener records every query's batches from its first one; a query that was
    already running is back-filled from Spark's recent progress reports, and
    ``handle.history_note`` says which batches are missing. The sink is in ``handle.sink``
    (``"file"``, ``"kafka"``, ``"memory"``, ...); only a memory sink has a result preview.

    Parameters
    ----------
    query : StreamingQuery or str
        A pyspark ``StreamingQuery`` (classic or Spark Connect), or the name, id or run id
        of an active query of the session.

    Returns
    -------
    StreamHandle
        The same handle each time for the same run (a started stream's own handle).

    Raises
    ------
    TypeError
        For anything but a query or a string.
    ValueError
        When no active query has that name or id; the message lists the active ones.

    Examples
    --------
    >>> query = df.writeStream.format("parquet").option("path", "/tmp/out") \\
    ...     .option("checkpointLocation", "/tmp/ckpt").start()   # doctest: +SKIP
    >>> handle = workbench.watch(query)                           # doctest: +SKIP
    >>> handle.monitor()                                          # doctest: +SKIP
    >>> handle.history()[["batch_id", "num_input_rows"]]          # doctest: +SKIP
    """
    return _env().watch(query)


def streams() -> pd.DataFrame:
    """A table of every stream of this process, one row each: started, watched, or active.

    Every active query of the session is listed (and watched), whoever started it.
    Columns: name, id, run_id, status (active / stopped / failed), sink, output_mode,
    trigger, batches, last_batch_id, watermark, input_rows_per_second,
    processed_rows_per_second, error, started_by (``workbench``; ``cell`` for a query a
    ``%%stream`` cell's code started itself; ``user`` for any other).

    Examples
    --------
    >>> workbench.streams()[["name", "status", "batches"]]   # doctest: +SKIP
    """
    return _env().streams()


def stop_all() -> None:
    """Stop every stream and its progress poller. Also runs at interpreter exit.

    Every stream's stop begins at once, each on its own thread, and this waits for them all.

    Raises
    ------
    StreamInterrupted
        On a KeyboardInterrupt while waiting: the stops go on in the background (no stream
        is left running), and the message names the streams still stopping.

    Examples
    --------
    >>> workbench.stop_all()                                  # doctest: +SKIP
    """
    _env().stop_all()


def load_ipython_extension(ipython: Any) -> None:
    """Register the workbench magics (``%load_ext workbench``)."""
    from .magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Stop every stream when the extension is unloaded."""
    from .magics import unload_ipython_extension as unload

    unload(ipython)
