"""Reading a running query's progress: the poller's source over a pyspark ``StreamingQuery``.

Owns :class:`QueryProgressSource` (what the poller polls), :func:`progress_json` (Spark's
progress as a plain dict, the one conversion from pyspark's objects) and
:data:`SPARK_STOPPED`, the error of every stream whose Spark went away under it.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from ..progress.poller import SourceGone
from .session_end import spark_is_gone

__all__ = ["QueryProgressSource", "progress_json", "jvm_query", "SPARK_STOPPED"]

#: The error of every stream whose Spark session stopped or whose JVM died under it.
SPARK_STOPPED = (
    "Spark stopped: the session or its JVM ended while the stream ran; "
    "workbench.session() or the next %%stream starts a new one"
)


class QueryProgressSource:
    """Adapts a pyspark ``StreamingQuery`` (classic or Spark Connect) to the poller's source.

    ``output_rows`` maps batch ids to the rows a Python-side sink wrote (the console
    sink counts them); Spark reports ``numOutputRows = -1`` for ``foreachBatch`` sinks.
    With ``spark``, a session whose JVM has gone ends the poller at once. ``heard``, once
    set, gives the reports the session's listener heard for this run (its
    ``QueryRecorder.heard``): :meth:`recent_progress` adds those that Spark's recent list no
    longer holds, so that a poll after a burst of batches misses none.
    """

    def __init__(self, query: Any, output_rows: Mapping[int, int] | None = None, spark: Any = None) -> None:
        self._query = query
        self._output_rows = output_rows
        self._spark = spark
        self.heard: Callable[[], Sequence[Mapping[str, Any]]] | None = None

    def is_active(self) -> bool:
        if self._spark is not None and spark_is_gone(self._spark):
            # Ends the poller at once, without a failing (and loudly logged) py4j call.
            raise SourceGone(SPARK_STOPPED)
        return bool(self._query.isActive)

    def last_progress(self) -> Mapping[str, Any] | None:
        progress = self._query.lastProgress
        return self._with_rows(progress_json(progress)) if progress else None

    def recent_progress(self) -> Sequence[Mapping[str, Any]]:
        recent = [progress_json(p) for p in self._query.recentProgress]
        if self.heard is not None:
            held = {raw.get("batchId") for raw in recent}
            # The history orders what it is given; a shallow copy, as _with_rows sets "sink".
            recent += [dict(raw) for raw in self.heard() if raw.get("batchId") not in held]
        return [self._with_rows(raw) for raw in recent]

    def heard_after(self, batch_id: int) -> list[dict[str, Any]] | None:
        """The reports the listener heard of batches after ``batch_id``, oldest first; None without a listener.

        The poller reads them instead of fetching Spark's recent list (~0.14 s) when they
        continue its history without a gap.
        """
        if self.heard is None:
            return None
        return [self._with_rows(dict(raw)) for raw in self.heard() if raw.get("batchId", -1) > batch_id]

    def _with_rows(self, raw: dict[str, Any]) -> dict[str, Any]:
        count = self._output_rows.get(raw.get("batchId", -1)) if self._output_rows is not None else None
        if count is not None:
            raw["sink"] = {**(raw.get("sink") or {}), "numOutputRows": count}
        return raw


def progress_json(progress: Any) -> dict[str, Any]:
    """Spark's progress JSON as a plain dict, from pyspark's ``StreamingQueryProgress``."""
    text = getattr(progress, "json", None)
    if isinstance(text, str):
        return json.loads(text)
    return dict(progress)


def jvm_query(query: Any) -> Any:
    """The JVM's query behind a classic pyspark ``StreamingQuery``; None on Spark Connect.

    pyspark offers no public way to what only the JVM's query knows: the memory sink's
    newest batch and its rows, a watched query's output mode, trigger and checkpoint. This
    is the one place that reads pyspark's private ``_jsq`` (Spark Connect's queries have none).

    Examples
    --------
    >>> jvm_query(object()) is None
    True
    """
    return getattr(query, "_jsq", None)
