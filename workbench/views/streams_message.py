"""What the kernel tells JupyterLab's Streams panel: the ``workbench.streams`` comm's names and snapshots.

A snapshot (:func:`streams_message`) lists the kernel's streams, one entry each
(:func:`stream_info`), read from each handle's progress history, status and error without
calling Spark; :func:`outline` is what a page whose panel is hidden still needs. The
publisher that sends them is :mod:`workbench.views.streams_panel`; the protocol is written
down in ``docs/architecture.md``.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Protocol

from ..progress.diagnosis import EPOCH
from ..progress.records import BatchProgress
from .sparkui import statistics_path

__all__ = [
    "COMM_TARGET", "LOADED_COMM_ID", "GAP_POINTS", "BATCH_KEYS", "StreamLike", "current_cell_id", "gap_seconds",
    "stream_info", "streams_message", "outline",
]

#: The comm target name, the same on both sides.
COMM_TARGET = "workbench.streams"
#: The comm id of the kernel's "the workbench is loaded" message (no page opens such a comm).
LOADED_COMM_ID = "workbench.streams.loaded"
#: Watermark-gap values per stream in a snapshot (the panel's sparkline).
GAP_POINTS = 30
#: A stream's entries that change with every batch: a page whose panel is hidden is not sent
#: snapshots that differ only in them.
BATCH_KEYS = frozenset({"batches", "last_batch_id", "watermark", "input_rows_per_second", "gap_seconds"})


class StreamLike(Protocol):
    """What the panel reads from a stream (a :class:`~workbench.spark.handle.StreamHandle`)."""

    name: str
    sink: str
    progress: Any  # ProgressHistory

    @property
    def finished(self) -> bool: ...

    @property
    def status(self) -> str: ...

    @property
    def error(self) -> str | None: ...

    @property
    def run_id(self) -> str: ...

    @property
    def id(self) -> str: ...

    def on_finished(self, callback: Callable[[Any], None]) -> None: ...

    def stop(self) -> None: ...


def current_cell_id(shell: Any = None) -> str | None:
    """The id of the notebook cell whose code is running now, or None.

    JupyterLab puts the cell's id in each execute request's metadata (``cellId``). Outside
    an execute request of the main thread (a button's callback, a background thread, a
    plain IPython shell) there is no such cell and the answer is None.

    Examples
    --------
    >>> current_cell_id() is None        # not in a kernel
    True
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover (IPython comes with ipykernel)
            return None
        shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    try:
        parent = kernel.get_parent("shell")
    except Exception:  # an ipykernel without channels in get_parent
        parent = getattr(kernel, "get_parent", lambda: {})()
    if not isinstance(parent, dict) or parent.get("header", {}).get("msg_type") != "execute_request":
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    return cell if isinstance(cell, str) and cell else None


def gap_seconds(records: Iterable[BatchProgress]) -> list[float | None]:
    """:attr:`BatchProgress.watermark_gap_seconds` per batch, to the millisecond (None where unknown).

    Examples
    --------
    >>> from workbench.progress import BatchProgress
    >>> gap_seconds([BatchProgress.from_json({"batchId": 0, "eventTime": {
    ...     "max": "2024-01-01T00:00:30.000Z", "watermark": "2024-01-01T00:00:20.000Z"}})])
    [10.0]
    """
    # Rounded to milliseconds (Spark's precision): the snapshot stays short on the wire.
    gaps = (record.watermark_gap_seconds for record in records)
    return [None if gap is None else round(gap, 3) for gap in gaps]


def _iso(value: datetime | None) -> str | None:
    if value is None or value <= EPOCH:
        return None
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def stream_info(
    handle: StreamLike, *, ids: tuple[str, str], port: int, cell_id: str | None,
) -> dict[str, Any]:
    """One stream's entry of a ``streams`` message, read without calling Spark.

    Parameters
    ----------
    handle : StreamLike
        The stream; its progress history, ``finished``, and (once finished) its settled
        ``status`` and ``error`` are read.
    ids : (str, str)
        The query's id and run id, read once per handle by the caller.
    port : int
        The Spark UI's port, 0 when there is none.
    cell_id : str or None
        The notebook cell that started the stream.
    """
    recent = handle.progress.tail(GAP_POINTS)
    last = recent[-1] if recent else None
    finished = handle.finished
    query_id, run_id = ids
    return {
        "name": handle.name,
        "id": query_id,
        "run_id": run_id,
        # While the query runs, `status` would ask Spark; a finished handle has settled it.
        "status": handle.status if finished else "active",
        "batches": handle.progress.total,
        "last_batch_id": handle.progress.last_batch_id,
        "watermark": _iso(last.watermark) if last else None,
        "input_rows_per_second": last.input_rows_per_second if last else None,
        "gap_seconds": gap_seconds(recent),
        "error": handle.error if finished else None,
        "sink": handle.sink,
        "cell_id": cell_id,
        "spark_ui": {"port": port, "path": statistics_path(run_id)} if port else None,
    }


def streams_message(streams: list[dict[str, Any]], port: int) -> dict[str, Any]:
    """The kernel-to-page snapshot: ``{"kind": "streams", "streams": [...], "spark_ui_port": port}``."""
    return {"kind": "streams", "streams": streams, "spark_ui_port": port}


def outline(message: dict[str, Any] | None) -> dict[str, Any] | None:
    """A ``streams`` message without its batch-level entries (:data:`BATCH_KEYS`).

    What a page whose Streams panel is hidden still needs: which streams there are, their
    status, errors, cells and Spark UI links (its status bar counts the active ones).

    Examples
    --------
    >>> outline(streams_message([{"name": "n", "status": "active", "batches": 3}], 4040))
    {'kind': 'streams', 'streams': [{'name': 'n', 'status': 'active'}], 'spark_ui_port': 4040}
    """
    if message is None:
        return None
    streams = [{k: v for k, v in stream.items() if k not in BATCH_KEYS} for stream in message.get("streams", [])]
    return {**message, "streams": streams}
