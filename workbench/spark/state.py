"""The state inspector: what a stateful query holds, batch by batch (Spark's State Data Source).

A :class:`StateInspector` reads one query's checkpoint with Spark's ``state-metadata``
and ``statestore`` readers and returns readable pandas tables:

* :meth:`~StateInspector.summary`: the stateful operators (name, kind, batch range,
  partitions);
* :meth:`~StateInspector.state`: the rows held after a batch;
* :meth:`~StateInspector.changes`: what changed between two batches (Spark's change
  feed), each delete with the watermark of the batch that evicted it;
* :meth:`~StateInspector.timers`: a transformWithState processor's registered timers
  (its state variables are read with ``state(variable=NAME)``, see :mod:`.tws_state`).

Keys and values are flat columns named as the query names them (``window_start``,
``window_end``, ``word``, ``count``), not Spark's nested ``key``/``value`` structs.

Spark facts relied on (measured on 4.3, HDFS-backed store unless said; the workbench's
sessions use the RocksDB store, on which the same holds): the state of batch
N is what the operator kept after committing N; in append mode a window leaves state (a
delete in the change feed) in the batch whose watermark passes its end, and the deletes
of a batch equal its ``numRowsRemoved``. ``joinSide`` and ``readChangeFeed`` cannot be
combined, so a join's changes are read from the side's ``keyWithIndexToValue`` store.
A RocksDB store serves the change feed only with changelog checkpointing on (the
workbench's sessions turn it on); without it Spark fails on a missing ``.changelog`` file.
Bad arguments are refused with one line before Spark reads anything.
"""

from __future__ import annotations

import logging
import numbers
import re
import warnings
from typing import Any, Sequence

import pandas as pd

from ..errors import summarize_error
from .checkpoint_log import local_checkpoint
from .frames import utc_times
from .state_operators import OPERATOR_KINDS, StateOperator, state_operators
from .tws_state import TIMER_COLUMNS, processor_state, timer_columns, timer_frame, variable_reading

__all__ = ["StateInspector", "StateOperator", "SUMMARY_COLUMNS", "OPERATOR_KINDS", "inspector_for"]

log = logging.getLogger(__name__)

#: Columns of :meth:`StateInspector.summary`.
SUMMARY_COLUMNS: tuple[str, ...] = (
    "operator", "operator_name", "kind", "sides", "stores", "num_partitions", "min_batch_id", "max_batch_id",
)


SIDES = ("left", "right")

# Spark's own (camelCase) names inside state rows, as snake_case.
_SPARK_NAMES = {"sessionStartTime": "session_start_time", "expiresAtMicros": "expires_at", "index": "value_index"}
_JOIN_KEY = re.compile(r"field\d+")
_GROUPING = "_groupingexpression"


def _check_batch(value: Any, what: str) -> int:
    # numbers.Integral: a batch id read from a history table is a numpy integer.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{what} must be a batch id (a whole number >= 0), got {value!r}")
    return int(value)


class StateInspector:
    """Reads the state of one stateful query from its checkpoint.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    checkpoint : str
        The query's checkpoint folder.
    name : str
        The stream's name (for messages).
    watermarks : dict, optional
        Batch id -> the watermark that batch used (from the progress history): a delete
        in the change feed is attributed to it.
    result_columns : sequence of str, optional
        The query's output columns, to name grouping keys as the query does (Spark
        stores an aliased key as ``_groupingexpression``).

    Examples
    --------
    >>> inspector = StateInspector(spark, handle.checkpoint, name="counts")   # doctest: +SKIP
    >>> inspector.state(batch_id=3)                                            # doctest: +SKIP
    """

    def __init__(self, spark: Any, checkpoint: str, *, name: str, watermarks: dict[int, Any] | None = None,
                 result_columns: Sequence[str] = ()) -> None:
        self._spark = spark
        self.checkpoint = str(checkpoint)
        self.name = name
        self._watermarks = dict(watermarks or {})
        self._result_columns = list(result_columns)
        self._integral: set[str] = set()  # whole-number columns of the last table read

    # -- operators -----------------------------------------------------------------------------

    def operators(self) -> list[StateOperator]:
        """The stateful operators in the checkpoint (:func:`~.state_operators.state_operators`).

        Raises
        ------
        ValueError
            When the checkpoint was removed, holds no committed batch, or the query is
            stateless.
        """
        return state_operators(self._spark, self.checkpoint, self.name)

    def summary(self) -> pd.DataFrame:
        """One row per stateful operator (:data:`SUMMARY_COLUMNS`; ``variables`` too with transformWithState).

        Examples
        --------
        >>> inspector.summary()[["operator", "kind", "max_batch_id"]]   # doctest: +SKIP
        """
        operators = self.operators()
        rows = [
            {"operator": op.operator_id, "operator_name": op.name, "kind": op.kind,
             "sides": ", ".join(SIDES) if op.is_join else "", "stores": ", ".join(op.stores),
             "num_partitions": op.num_partitions, "min_batch_id": op.min_batch_id, "max_batch_id": op.max_batch_id,
             "variables": processor_state(op.properties).describe() if op.is_tws else ""}
            for op in operators
        ]
        tws = any(op.is_tws for op in operators)
        return pd.DataFrame(rows, columns=[*SUMMARY_COLUMNS, *(["variables"] if tws else [])])

    def _pick(self, operator: int | str | None, side: str | None, tws: bool = False) -> StateOperator:
        if side is not None and side not in SIDES:
            raise ValueError(f"unknown side {side!r}: use 'left' or 'right' (the sides of a stream-stream join)")
        if operator is not None and (isinstance(operator, bool) or not isinstance(operator, (int, str))):
            raise TypeError(f"operator must be an operator id (int) or name (str), got {operator!r}")
        operators = self.operators()
        known = ", ".join(op.label() for op in operators)
        if operator is None and tws and sum(op.is_tws for op in operators) == 1:
            operators = [op for op in operators if op.is_tws]  # variables and timers name their operator
        if operator is None:
            if len(operators) > 1:
                raise ValueError(f"stream {self.name!r} has {len(operators)} stateful operators: pick one with "
                                 f"operator= (one of {known})")
            chosen = operators[0]
        else:
            matches = [op for op in operators
                       if op.operator_id == operator or op.name == operator or op.kind == operator]
            if not matches:
                raise ValueError(f"unknown operator {operator!r} in stream {self.name!r}: use one of {known}")
            if len(matches) > 1:
                raise ValueError(f"operator {operator!r} names several operators of stream {self.name!r}: pick one "
                                 f"by id ({', '.join(op.label() for op in matches)})")
            chosen = matches[0]
        if chosen.is_join and side is None:
            raise ValueError(f"operator {chosen.label()} is a stream-stream join, which keeps state per side: "
                             "pass side='left' or side='right'")
        if side is not None and not chosen.is_join:
            raise ValueError(f"side={side!r} applies only to stream-stream joins; operator {chosen.label()} "
                             "has no sides: leave side out")
        return chosen

    def _check_in_range(self, batch_id: int, op: StateOperator, what: str) -> None:
        if not op.min_batch_id <= batch_id <= op.max_batch_id:
            raise ValueError(f"{what} {batch_id} is not in the checkpoint of stream {self.name!r}: operator "
                             f"{op.label()} has state for batches {op.min_batch_id} to {op.max_batch_id}")

    # -- reading -------------------------------------------------------------------------------

    def state(self, batch_id: int | None = None, operator: int | str | None = None,
              side: str | None = None, variable: str | None = None) -> pd.DataFrame:
        """The rows an operator holds after batch ``batch_id`` (default: the latest committed).

        For a transformWithState operator, ``variable`` names the state variable (needed
        when the processor has several): a value state gives one row per key, a list state
        one row per element, a map state one row per map key; a variable with a TTL adds
        ``expires_at``.

        Returns
        -------
        pandas.DataFrame
            Key columns, then value columns, then ``partition_id``; sorted by key.

        Raises
        ------
        ValueError
            Unknown operator, side or variable, a batch not in the checkpoint, a stateless
            query or a removed checkpoint; one line naming what is allowed.

        Examples
        --------
        >>> inspector.state(batch_id=2)[["window_start", "window_end", "word", "count"]]  # doctest: +SKIP
        """
        if batch_id is not None:
            batch_id = _check_batch(batch_id, "batch_id")
        op = self._pick(operator, side, tws=variable is not None)
        if batch_id is not None:
            self._check_in_range(batch_id, op, "batch")
        return self.state_of(op, batch_id, side=side, variable=variable)

    def state_of(self, op: StateOperator, batch_id: int | None = None, *, side: str | None = None,
                 variable: str | None = None) -> pd.DataFrame:
        """:meth:`state` of an operator already read with :meth:`operators` (no second metadata read).

        ``side`` and ``variable`` must fit ``op``, as :meth:`state` checks; a state view that
        shows every operator after each replay step reads their list once this way.
        """
        options, flatten = variable_reading(op, variable, self.name)
        if side is not None:
            options["joinSide"] = side
        frame = self._load(self._reader(op, batch_id, options), op, flatten)
        return self._sorted(frame, ["partition_id"])

    def timers(self, batch_id: int | None = None, operator: int | str | None = None) -> pd.DataFrame:
        """The timers a transformWithState operator has registered after ``batch_id`` (default: the latest).

        Returns the grouping key's columns, then :data:`~.tws_state.TIMER_COLUMNS`: ``expires_at``
        (UTC), ``time_mode``, the ``watermark`` batch ``batch_id`` ran with, ``ahead_of_watermark``
        (how far that watermark still has to move: an event-time timer fires in the first batch whose
        watermark reaches it) and ``fires_in_batch`` (the first later batch of the stream's history
        whose watermark is at or past the expiry, the batch that fires the timer; ``<NA>`` while the
        history does not reach one, for a timer a later input deleted or moved before then, and
        for processing-time timers), sorted by expiry. Raises
        ``ValueError`` as :meth:`state` does, and for an operator that is not transformWithState.
        """
        if batch_id is not None:
            batch_id = _check_batch(batch_id, "batch_id")
        op = self._pick(operator, None, tws=True)
        if not op.is_tws:
            raise ValueError(f"operator {op.label()} of stream {self.name!r} keeps no timers: only "
                             "transformWithState processors register timers")
        if processor_state(op.properties).time_mode == "none":
            raise ValueError(f"stream {self.name!r}'s processor runs with timeMode None, so it has no timers (give "
                             "transformWithState timeMode 'EventTime' or 'ProcessingTime' to register some)")
        if batch_id is not None:
            self._check_in_range(batch_id, op, "batch")
        return self.timers_of(op, batch_id)

    def timers_of(self, op: StateOperator, batch_id: int | None = None) -> pd.DataFrame:
        """:meth:`timers` of a transformWithState operator already read with :meth:`operators`."""
        reader = self._reader(op, batch_id, {"readRegisteredTimers": True})
        batch = op.max_batch_id if batch_id is None else batch_id
        frame = timer_frame(self._load(reader, op, timer_columns), processor_state(op.properties).time_mode,
                            batch, self._watermarks)
        return self._sorted(self._unless_removed(op, frame, batch), ["expires_at", "partition_id"], first=True)

    def _unless_removed(self, op: StateOperator, frame: pd.DataFrame, batch: int) -> pd.DataFrame:
        """``fires_in_batch`` kept only for timers still registered in the batch before it: a later
        input may delete or move a timer (a new session's end), which then never fires."""
        keys = [c for c in frame.columns if c not in TIMER_COLUMNS] + ["expires_at"]
        for fires in sorted({int(b) for b in frame["fires_in_batch"].dropna()}):
            if fires - 1 <= batch:
                continue  # still registered after `batch`, the batch before it
            try:
                held = self._load(self._reader(op, fires - 1, {"readRegisteredTimers": True}), op, timer_columns)
            except ValueError:
                continue  # that batch's state is no longer kept: what the watermarks say stands
            kept = set(map(tuple, held[keys].astype(object).values.tolist()))
            rows = frame.index[frame["fires_in_batch"] == fires]
            gone = [i for i, row in zip(rows, frame.loc[rows, keys].astype(object).values.tolist())
                    if tuple(row) not in kept]
            frame.loc[gone, "fires_in_batch"] = pd.NA
        return frame

    def changes(self, start_batch: int, end_batch: int | None = None, operator: int | str | None = None,
                side: str | None = None, variable: str | None = None) -> pd.DataFrame:
        """What changed in state from batch ``start_batch`` to ``end_batch`` (both included).

        ``variable`` names a transformWithState processor's state variable, as in :meth:`state`.

        Returns
        -------
        pandas.DataFrame
            ``batch_id``, ``change_type`` (``update``, ``delete``, or ``append`` for a list
            state's new elements), the key and value columns (values are empty for deletes),
            ``watermark`` (for deletes: the watermark of that batch, which evicted the row)
            and ``partition_id``. Sorted by batch and key, each key's changes in the order
            Spark wrote them (a key's changes live in one partition): applied in order, they
            give each batch's :meth:`state`.

        Examples
        --------
        >>> inspector.changes(0, 5).query("change_type == 'delete'")   # doctest: +SKIP
        """
        start_batch = _check_batch(start_batch, "start_batch")
        if end_batch is not None:
            end_batch = _check_batch(end_batch, "end_batch")
            if start_batch > end_batch:
                raise ValueError(f"start_batch {start_batch} is after end_batch {end_batch}: give start_batch <= "
                                 "end_batch")
        op = self._pick(operator, side, tws=variable is not None)
        options, flatten = variable_reading(op, variable, self.name)
        self._check_in_range(start_batch, op, "start_batch")
        if end_batch is not None:
            self._check_in_range(end_batch, op, "end_batch")
            options["changeEndBatchId"] = end_batch
        if side is not None:
            # Spark refuses joinSide with readChangeFeed: read the side's row store instead.
            options["storeName"] = f"{side}-keyWithIndexToValue"
        options.update(readChangeFeed=True, changeStartBatchId=start_batch)
        frame = self._load(self._reader(op, None, options), op, flatten)
        for column in frame.columns:
            # A delete has no value, which made pandas turn whole-number columns into floats.
            if column not in ("batch_id", "partition_id") and pd.api.types.is_float_dtype(frame[column]) \
                    and column in self._integral:
                frame[column] = frame[column].astype("Int64")
        watermarks = frame["batch_id"].map(lambda b: self._watermarks.get(int(b)))
        frame["watermark"] = pd.to_datetime(watermarks.where(frame["change_type"] == "delete"), utc=True)
        columns = [c for c in frame.columns if c != "partition_id"] + ["partition_id"]
        frame = frame[columns]
        # By batch and key, each key's changes in the order Spark wrote them (its change log's): an
        # update then a delete of a key must not read the other way round. Keys not known (a
        # processor's variables): Spark's order within each batch and partition.
        return self._sorted(frame, ["batch_id", *(self._key_columns or ["partition_id"])], first=True, only=True)

    def _reader(self, op: StateOperator, batch_id: int | None, options: dict[str, Any]) -> Any:
        reader = self._spark.read.format("statestore").option("operatorId", op.operator_id)
        for key, value in {**({} if batch_id is None else {"batchId": batch_id}), **options}.items():
            reader = reader.option(key, value)
        return reader

    def _load(self, reader: Any, op: StateOperator, flatten: Any = None) -> pd.DataFrame:
        from pyspark.sql.types import IntegralType

        self._key_columns: list[str] = []  # set by _readable
        try:
            flat = flatten(reader.load(self.checkpoint)) if flatten else self._readable(reader.load(self.checkpoint), op)
            self._integral = {f.name for f in flat.schema.fields if isinstance(f.dataType, IntegralType)}
            with warnings.catch_warnings():
                # pyspark warns (with the JVM trace) before raising a failed Arrow read; the
                # error below says it in one line.
                warnings.simplefilter("ignore", UserWarning)
                return utc_times(flat.toPandas())
        except Exception as exc:
            text = str(exc)
            missing = re.search(r"(\S+\.changelog) does not exist", text)
            local = local_checkpoint(self.checkpoint)
            if missing and local is not None and next(local.glob("state/**/*.changelog"), None) is not None:
                raise ValueError(  # the store keeps change logs: this one went (removed by hand, or a copy)
                    f"state file {missing.group(1)} of stream {self.name!r} is missing: its state from that batch on "
                    "cannot be rebuilt") from None
            if missing or "changelog" in text.lower() and "FileNotFound" in text:
                raise ValueError(
                    f"the state store of stream {self.name!r} (RocksDB) keeps no change log, which the change feed "
                    "needs: start the query with spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing"
                    ".enabled=true on a new checkpoint") from None
            raise ValueError(f"cannot read the state of stream {self.name!r}: {summarize_error(text)}") from None

    def _readable(self, df: Any, op: StateOperator) -> Any:
        """Select flat, readably named columns from Spark's ``key``/``value`` structs."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import NullType, StructType

        schema = {f.name: f.dataType for f in df.schema.fields}
        key_type, value_type = schema["key"], schema.get("value")
        value_path, timeout = ["value"], False
        if (isinstance(value_type, StructType) and value_type.fieldNames() in (["groupState"],
                                                                               ["groupState", "timeoutTimestamp"])
                and isinstance(value_type.fields[0].dataType, StructType)):
            # applyInPandasWithState wraps the user's state row in `groupState`, with a timeout
            # beside it (milliseconds, -1 for none) when the query has one.
            timeout = len(value_type.fields) == 2
            value_type, value_path = value_type.fields[0].dataType, ["value", "groupState"]
        grouping = _grouping_names(
            [f.name for f in key_type.fields] if isinstance(key_type, StructType) else [],
            [f.name for f in value_type.fields] if isinstance(value_type, StructType) else [],
            self._result_columns,
        )
        join_keys = [f.name for f in key_type.fields if _JOIN_KEY.fullmatch(f.name)] if isinstance(
            key_type, StructType) else []

        def name_of(field: str) -> str:
            if field in grouping:
                return grouping[field]
            if field in join_keys:
                return "join_key" if len(join_keys) == 1 else f"join_key_{join_keys.index(field)}"
            return _SPARK_NAMES.get(field, field)

        def leaves(dtype: Any, path: list[str], name: str | None) -> list[tuple[list[str], str, Any]]:
            out = []
            for sub in dtype.fields:
                if isinstance(sub.dataType, NullType):
                    continue  # dropDuplicates stores a placeholder value with no content
                label = name_of(sub.name) if name is None else f"{name}_{sub.name}"
                if isinstance(sub.dataType, StructType):
                    out += leaves(sub.dataType, [*path, sub.name], label)
                else:
                    out.append(([*path, sub.name], label, sub.dataType))
            return out

        key_leaves = leaves(key_type, ["key"], None) if isinstance(key_type, StructType) else []
        self._key_columns = [label for _, label, _ in key_leaves]
        value_leaves = leaves(value_type, value_path, None) if isinstance(value_type, StructType) else []
        taken = {label for _, label, _ in key_leaves}
        columns = [F.col(c) for c in ("batch_id", "change_type") if c in schema]
        for path, label, dtype in key_leaves + [(p, f"value_{lbl}" if lbl in taken else lbl, d)
                                                for p, lbl, d in value_leaves]:
            column = F.col(".".join(f"`{p}`" for p in path))
            if path[-1] == "expiresAtMicros":
                column = F.timestamp_micros(column)
            columns.append(column.alias(label))
        if timeout:
            stamp = F.col("value.timeoutTimestamp")
            columns.append(F.when(stamp >= 0, F.timestamp_millis(stamp)).alias("timeout_at"))
        columns.append(F.col("partition_id"))
        return df.select(*columns)

    @staticmethod
    def _sorted(frame: pd.DataFrame, last: list[str], *, first: bool = False, only: bool = False) -> pd.DataFrame:
        """Rows in a stable order: by ``last`` first when ``first``, then by every other column (``only``: not)."""
        others = [] if only else [c for c in frame.columns if c not in last and c != "watermark"]
        by = (last + others) if first else (others + last)
        try:
            frame = frame.sort_values(by, kind="stable", na_position="first")
        except TypeError:  # unorderable values (e.g. maps): Spark's order, batch by batch
            log.debug("state rows of mixed types are left unsorted", exc_info=True)
            by = [c for c in ("batch_id", "partition_id") if c in frame.columns]
            frame = frame.sort_values(by, kind="stable") if by else frame
        return frame.reset_index(drop=True)


def _grouping_names(key_fields: list[str], value_fields: list[str], result_columns: list[str]) -> dict[str, str]:
    """Spark's ``_groupingexpression`` fields named as the query's output columns.

    A struct whose fields line up with the start of the output columns (the named ones
    equal, position by position) gives the names of its grouping fields: a windowed
    count's key ``[window, _groupingexpression]`` against ``[window, word, count]``, or a
    session window's value row. Fields it cannot name are called ``group``, ``group_2``...

    Examples
    --------
    >>> _grouping_names(["window", "_groupingexpression"], ["count"], ["window", "word", "count"])
    {'_groupingexpression': 'word'}
    >>> _grouping_names(["_groupingexpression", "sessionStartTime"],
    ...                 ["session_window", "_groupingexpression", "count"], ["session_window", "user", "count"])
    {'_groupingexpression': 'user'}
    >>> _grouping_names(["_groupingexpression"], [], [])
    {'_groupingexpression': 'group'}
    """
    names: dict[str, str] = {}
    for fields in (key_fields, value_fields):
        if len(fields) > len(result_columns):
            continue
        pairs = list(zip(fields, result_columns))
        if all(f == r or f.startswith(_GROUPING) for f, r in pairs):
            for f, r in pairs:
                if f.startswith(_GROUPING):
                    names.setdefault(f, r)
    unnamed = [f for f in dict.fromkeys(key_fields + value_fields) if f.startswith(_GROUPING) and f not in names]
    for i, f in enumerate(unnamed):
        names[f] = "group" if i == 0 else f"group_{i + 1}"
    return names


def inspector_for(spark: Any, checkpoint: str, *, name: str, progress: Any,
                  result_columns: Sequence[str] = ()) -> StateInspector:
    """A :class:`StateInspector` whose deletes carry the watermarks of ``progress``'s batches.

    ``progress`` is the stream's :class:`~workbench.progress.ProgressHistory`; the
    watermark a batch reported is the one it evicted state with.
    """
    # Spark's epoch-0 watermark means "none yet": no timer is behind it, no delete carries it.
    watermarks = {r.batch_id: r.known_watermark for r in progress.records()}
    return StateInspector(spark, checkpoint, name=name, watermarks=watermarks, result_columns=result_columns)
