"""The stateful operators of a checkpoint (Spark's ``state-metadata``), read again only when it changes.

:func:`state_operators` is what :class:`~.state.StateInspector` asks first for every table
it reads. Spark's ``state-metadata`` reader runs a Spark job (about 0.1 s on two cores); a
stopped query's state is read many times in a row (one batch after another, each variable
of a processor), so the operators of a local checkpoint are kept with the names, sizes and
times of the files they come from (:func:`~.checkpoint_log.checkpoint_files`) and read
again only when those changed. Remote checkpoints (HDFS, S3...) are read every time.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ..errors import summarize_error
from .checkpoint_log import checkpoint_files
from .tws_state import TWS_OPERATORS

__all__ = ["StateOperator", "OPERATOR_KINDS", "state_operators"]

#: Spark's operator names, in the words a user knows the operators by.
OPERATOR_KINDS: dict[str, str] = {
    "stateStoreSave": "aggregation",
    "sessionWindowStateStoreSaveExec": "session window aggregation",
    "dedupe": "dropDuplicates",
    "dedupeWithinWatermark": "dropDuplicatesWithinWatermark",
    "symmetricHashJoin": "stream-stream join",
    "applyInPandasWithState": "applyInPandasWithState",
    "flatMapGroupsWithState": "flatMapGroupsWithState",
    "transformWithStateExec": "transformWithState",
    "transformWithStateInPandasExec": "transformWithStateInPandas",
    "transformWithStateInPySparkExec": "transformWithState (Python)",
}


@dataclass(frozen=True)
class StateOperator:
    """One stateful operator of a checkpoint, from Spark's ``state-metadata``.

    Examples
    --------
    >>> op = StateOperator(0, "dedupe", ("default",), 2, 0, 5)
    >>> op.kind, op.is_join
    ('dropDuplicates', False)
    """

    operator_id: int
    name: str
    stores: tuple[str, ...]
    num_partitions: int
    min_batch_id: int
    max_batch_id: int
    #: Spark's ``operatorProperties`` (JSON): a transformWithState operator's variables.
    properties: str = ""

    @property
    def is_tws(self) -> bool:
        """Whether this is a transformWithState operator (named state variables, timers)."""
        return self.name in TWS_OPERATORS

    @property
    def kind(self) -> str:
        """What the operator is, in the DataFrame API's words."""
        return OPERATOR_KINDS.get(self.name, self.name)

    @property
    def is_join(self) -> bool:
        """Whether this is a stream-stream join (state per side)."""
        return self.name == "symmetricHashJoin"

    def label(self) -> str:
        """``0 (stateStoreSave)``: how errors name the operator."""
        return f"{self.operator_id} ({self.name})"


def _local_path(checkpoint: str) -> str | None:
    """The local folder of a checkpoint URI, or None for remote storage (HDFS, S3...)."""
    parsed = urlparse(checkpoint)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else checkpoint
    return None


def _listdir(folder: str) -> list[str]:
    return os.listdir(folder) if os.path.isdir(folder) else []


#: Operators last read per local checkpoint, with what their files were then
#: (:func:`checkpoint_files`): a stopped query's state is read many times (a batch after
#: another, each variable of a processor) and its operators do not change in between.
_READ: dict[str, tuple[tuple, list[StateOperator]]] = {}
_LOCK = threading.Lock()
#: Checkpoints whose operators are kept at most (the oldest read is forgotten first).
_KEPT = 32


def state_operators(spark: Any, checkpoint: str, name: str) -> list[StateOperator]:
    """The stateful operators in ``checkpoint`` (one per operator, a join's stores together).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    checkpoint : str
        The query's checkpoint folder or URI.
    name : str
        The stream's name, for messages.

    Raises
    ------
    ValueError
        When the checkpoint was removed, holds no committed batch, or the query is
        stateless.

    Examples
    --------
    >>> [op.kind for op in state_operators(spark, handle.checkpoint, "counts")]   # doctest: +SKIP
    ['aggregation']
    """
    local = _local_path(checkpoint)
    if local is not None and not os.path.isdir(local):
        raise ValueError(f"the checkpoint of stream {name!r} ({checkpoint}) was removed: "
                         "its state can no longer be read")
    files = checkpoint_files(local) if local is not None else None
    with _LOCK:
        known = _READ.get(local) if files is not None else None
    if known is not None and known[0] == files:
        return list(known[1])  # the files are as they were: no Spark job
    operators = _read_operators(spark, checkpoint, name, local)
    if files is not None:
        with _LOCK:
            _READ.pop(local, None)
            _READ[local] = (files, operators)
            while len(_READ) > _KEPT:
                del _READ[next(iter(_READ))]
    return list(operators)


def _read_operators(spark: Any, checkpoint: str, name: str, local: str | None) -> list[StateOperator]:
    """:func:`state_operators`, read with Spark's ``state-metadata`` reader."""
    try:
        rows = spark.read.format("state-metadata").load(checkpoint).collect()
    except Exception as exc:
        raise ValueError(f"cannot read the state of stream {name!r}: {summarize_error(str(exc))}") from None
    grouped: dict[int, list[Any]] = {}
    for row in rows:
        grouped.setdefault(int(row["operatorId"]), []).append(row)
    if not grouped:
        if local is not None and os.path.isdir(os.path.join(local, "state")):
            raise ValueError(
                f"the state of stream {name!r} has no operator metadata (a checkpoint written before "
                "Spark 4.0?): Spark's state reader cannot read it; restart the query on a new checkpoint")
        commits = os.path.join(local, "commits") if local is not None else None
        if commits is not None and not any(n.isdigit() for n in _listdir(commits)):
            raise ValueError(f"stream {name!r} has not committed a batch yet: there is no state to read")
        raise ValueError(f"stream {name!r} keeps no state: its query has no stateful operator "
                         "(aggregation, dropDuplicates, stream-stream join, ...WithState)")
    return [
        StateOperator(
            operator_id=op_id, name=str(group[0]["operatorName"]),
            stores=tuple(str(r["stateStoreName"]) for r in group),
            num_partitions=int(group[0]["numPartitions"]),
            min_batch_id=min(int(r["minBatchId"]) for r in group),
            max_batch_id=max(int(r["maxBatchId"]) for r in group),
            properties=str(group[0]["operatorProperties"] or ""),
        )
        for op_id, group in sorted(grouped.items())
    ]
