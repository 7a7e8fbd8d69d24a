"""Starting a streaming query, so that an interrupt cannot leave it half started.

:func:`run_query` builds the writer a ``StreamSpec`` describes and turns the streaming
DataFrame into a running :class:`~workbench.spark.handle.StreamHandle`. The start itself
runs ``DataStreamWriter.start`` on a thread of its own and undoes a start the user
interrupted.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from ..errors import StreamStartError, refusal_line
from ..progress import ProgressHistory
from .console import ConsoleWriter, OutputCounts, console_writer, print_console
from .handle import StreamHandle, StreamSpec
from .plan import plan_text
from .session import is_connect
from .stopping import StreamInterrupted, Worker

__all__ = ["run_query", "START_PATIENCE", "not_started"]

log = logging.getLogger(__name__)

#: Seconds an interrupted start may still take before it is left to stop its query by itself.
START_PATIENCE = 60.0


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

    Examples
    --------
    >>> spec = StreamSpec("counts", "memory", "complete", parse_trigger(None), "/tmp/cp")   # doctest: +SKIP
    >>> handle = run_query(spark, df.groupBy("k").count(), spec)                           # doctest: +SKIP
    """
    # On Spark Connect the console function runs on the server, where counts would stay.
    counts = OutputCounts() if foreach_batch is None and spec.sink == "console" and not is_connect() else None
    try:
        # Built inside: Spark checks some options as they are set (a trigger interval).
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
            writer = writer.foreachBatch(console_writer(spec.rows, spec.truncate, console or print_console, counts))
        query = _start_writer(writer, spec.name, spark)
    except StreamInterrupted:
        raise
    except Exception as exc:  # Spark's analysis errors arrive as py4j-captured exceptions
        details = str(exc)
        raise StreamStartError(
            f"Spark cannot start stream {spec.name!r}: {refusal_line(details, plan_text(df))}", details
        ) from None
    try:
        handle = StreamHandle(spec, query, spark, on_event=on_event, history=history, output_rows=counts)
        handle.output_columns = tuple(df.columns)
        handle.poller.start()
    except KeyboardInterrupt:  # started, but no handle yet: nobody could stop it later
        raise StreamInterrupted(not_started(spec.name, stopped=_stop_quietly(query, spec.name))) from None
    return handle


def _start_writer(writer: Any, name: str, spark: Any) -> Any:
    """``writer.start()``; on a KeyboardInterrupt, undo the start and raise :class:`StreamInterrupted`."""
    lock = threading.Lock()
    abandoned = False

    def start() -> Any:
        query = writer.start()
        with lock:
            stop_now = abandoned
        if stop_now:  # the caller gave up waiting: nobody else will stop it
            _stop_now(query)
        return query

    worker = Worker(start, f"workbench-start-{name}", spark).start()
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
    raise StreamInterrupted(not_started(name, stopped=_stop_quietly(worker.result, name)))


def not_started(name: str, *, stopped: bool) -> str:
    """The one line of an interrupted start; ``stopped``: its half-started query has stopped (else
    a second interrupt left it stopping in the background)."""
    how = "stopped the half-started query" if stopped else "its half-started query stops in the background"
    return f"interrupted: stream {name!r} was not started ({how})"


def _stop_quietly(query: Any, name: str) -> bool:
    """Stop a half-started query on a thread of its own; False when a second interrupt left it stopping.

    A KeyboardInterrupt inside the Py4J call would leave the JVM stopping it unknown to us,
    and escape as a raw traceback: the call runs on, and the interrupt only ends the wait.
    """
    worker = Worker(lambda: _stop_now(query), f"workbench-unstart-{name}").start()
    try:
        worker.wait()
    except KeyboardInterrupt:
        log.info("interrupted again: the half-started query %r stops in the background", name)
        return False
    return True


def _stop_now(query: Any) -> None:
    try:
        query.stop()
    except Exception:
        log.debug("stopping an interrupted start failed", exc_info=True)
