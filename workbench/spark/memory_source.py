"""What runs in Spark's Python workers for workbench.testing: the memory source and the batch saver.

:class:`MemoryDataSource` (``workbench_memory``) is a Python data source
(:class:`pyspark.sql.datasource.DataSourceStreamReader`) reading the numbered files a
:class:`~workbench.spark.memory_stream.MemoryStream` writes: the offset is the number of
files, batch ``(start, end]`` reads files ``start + 1 .. end``. :func:`batch_saver` is a
``foreachBatch`` function keeping each batch's rows in a file named by batch id.

Spark runs them in Python workers it starts itself: the driver's (``latestOffset``,
``partitions``), the executors' (``read``), a Spark Connect server's (``foreachBatch``).
This module is pickled by value, so those workers need pyspark and pyarrow, not the
workbench; it imports nothing of the workbench for that reason.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Sequence

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

__all__ = ["MemoryDataSource", "SOURCE_NAME", "batch_count", "batch_file", "batch_saver", "drop_stale_gates", "readable",
           "release", "released", "batches_added", "saved_batches", "saved_rows"]

#: The data source name the workbench registers with each session.
SOURCE_NAME = "workbench_memory"

SUFFIX = ".pkl"


def batch_count(folder: str, names: list[str] | None = None) -> int:
    """How many batches of rows ``folder`` holds (files are numbered from 1, never rewritten);
    ``names``: its listing, when the caller has one."""
    return sum(1 for name in (os.listdir(folder) if names is None else names) if name.endswith(SUFFIX))


#: Files ``released.<pid>.<test>``: each open StreamTest's count of the batches the source may
#: read (it releases them at each process(), so that batch boundaries do not depend on when
#: the rows were added); the source reads up to the lowest. None: it reads all.
RELEASED_PREFIX = "released."


def released(folder: str) -> int | None:
    """How many batches ``folder``'s source may read (the lowest gate), or None when it reads all."""
    return _lowest_gate(folder, os.listdir(folder))


def readable(folder: str) -> int:
    """How many of ``folder``'s batches its source may read now: those added, up to the lowest gate.

    One listing of the folder gives both (Spark asks at every trigger).
    """
    names = os.listdir(folder)
    count, gate = batch_count(folder, names), _lowest_gate(folder, names)
    return count if gate is None else min(count, gate)


def _lowest_gate(folder: str, names: list[str]) -> int | None:
    counts = []
    for name in names:
        if name.startswith(RELEASED_PREFIX):
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    counts.append(int(handle.read().strip()))
            except (OSError, ValueError):
                continue  # removed meanwhile, or being replaced
    return min(counts) if counts else None


def release(folder: str, count: int | None, owner: str) -> None:
    """Let ``folder``'s source read ``count`` batches as far as ``owner`` is concerned (None: its gate removed)."""
    path = os.path.join(folder, f"{RELEASED_PREFIX}{os.getpid()}.{owner}")
    if count is None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        return
    fd, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(str(count))
    os.replace(temporary, path)


def drop_stale_gates(folder: str) -> None:
    """Remove the gates of processes that have ended (a test run killed before its tests closed)."""
    for name in os.listdir(folder):
        if not name.startswith(RELEASED_PREFIX):
            continue
        pid = name[len(RELEASED_PREFIX):].split(".", 1)[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            try:
                os.remove(os.path.join(folder, name))
            except FileNotFoundError:
                pass
        except (ValueError, PermissionError):
            continue  # not ours to judge


def batch_file(folder: str, index: int) -> str:
    """The file of the ``index``-th batch added (from 1)."""
    return os.path.join(folder, f"{index:09d}{SUFFIX}")


def write_atomically(path: str, value: Any) -> None:
    """Pickle ``value`` to ``path`` so that a reader sees all of it or nothing."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        pickle.dump(value, handle)
    os.replace(temporary, path)


class _MemoryReader(DataSourceStreamReader):
    def __init__(self, folder: str, schema: StructType | None = None) -> None:
        self.folder = folder
        # The rows keep UTC times without a zone; Spark's worker reads such a datetime in its
        # own local time (astimezone), so TIMESTAMP columns get their zone when read (a
        # TIMESTAMP_NTZ column stays as it is).
        fields = schema.fields if schema is not None else []
        self.utc_columns = [(i, field.dataType) for i, field in enumerate(fields) if _has_timestamp(field.dataType)]

    def initialOffset(self) -> dict:
        return {"added": 0}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        # Every limit is read-all: a memory stream's next batch takes everything added (and released).
        return {"added": readable(self.folder)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        rows: list[tuple[Any, ...]] = []
        for index in range(int(start["added"]) + 1, int(end["added"]) + 1):
            with open(batch_file(self.folder, index), "rb") as handle:
                rows.extend(pickle.load(handle))
        # The rows travel in the partition: executors need no access to the folder.
        return [InputPartition(rows)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if not self.utc_columns:
            yield from partition.value
            return
        for row in partition.value:
            values = list(row)
            for index, dtype in self.utc_columns:
                values[index] = _with_utc(values[index], dtype)
            yield tuple(values)

    def commit(self, end: dict) -> None:
        pass  # files stay until the stream is closed: a restart may read them again


def _has_timestamp(dtype: Any) -> bool:
    """Whether ``dtype`` is, or holds, a TIMESTAMP (with local time zone) field."""
    if isinstance(dtype, TimestampType):
        return True
    if isinstance(dtype, StructType):
        return any(_has_timestamp(field.dataType) for field in dtype.fields)
    if isinstance(dtype, ArrayType):
        return _has_timestamp(dtype.elementType)
    if isinstance(dtype, MapType):
        return _has_timestamp(dtype.keyType) or _has_timestamp(dtype.valueType)
    return False


def _with_utc(value: Any, dtype: Any) -> Any:
    """``value`` with every zone-less datetime in a TIMESTAMP field of ``dtype`` marked UTC."""
    if value is None:
        return None
    if isinstance(dtype, TimestampType):
        return value.replace(tzinfo=timezone.utc) if isinstance(value, datetime) and value.tzinfo is None else value
    if isinstance(dtype, StructType):
        types = {field.name: field.dataType for field in dtype.fields}
        if isinstance(value, dict):
            return {key: _with_utc(item, types.get(key)) for key, item in value.items()}
        if isinstance(value, (tuple, list)) and len(value) == len(dtype.fields):  # else Spark says what is wrong
            return tuple(_with_utc(item, field.dataType) for item, field in zip(value, dtype.fields))
        return value
    if isinstance(dtype, ArrayType) and isinstance(value, (tuple, list)):
        return [_with_utc(item, dtype.elementType) for item in value]
    if isinstance(dtype, MapType) and isinstance(value, dict):
        return {_with_utc(key, dtype.keyType): _with_utc(item, dtype.valueType) for key, item in value.items()}
    return value



class MemoryDataSource(DataSource):
    """The ``workbench_memory`` source: option ``folder``; the schema comes from ``.schema()``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        raise ValueError("a workbench_memory stream needs its schema: use workbench.testing.MemoryStream")

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _MemoryReader(self.options["folder"], schema)


def batch_saver(folder: str) -> Callable[[Any, int], None]:
    """A ``foreachBatch`` function keeping each batch's rows in ``folder/<batch id>.pkl``.

    A batch replayed after a restart replaces its own file instead of counting twice. Rows
    are kept as tuples of Python values read through Arrow, not pandas: a whole-number
    column with a null stays whole numbers (pandas made it floats, rounding big ones), NaN
    stays apart from null, a decimal stays a Decimal, a map is a dict.
    """

    def save(batch: Any, batch_id: int) -> None:
        table = batch.toArrow()
        columns = [[_from_arrow(value, column.type) for value in column.to_pylist()] if _has_map(column.type)
                   else column.to_pylist() for column in table.columns]  # the type looked at once per column
        rows = list(zip(*columns)) if columns else [()] * table.num_rows
        write_atomically(os.path.join(folder, f"{batch_id}{SUFFIX}"), rows)

    return save


def _from_arrow(value: Any, arrow_type: Any) -> Any:
    """An Arrow value as Python has it, with each map (a list of pairs there) as a dict."""
    import pyarrow as pa

    if value is None or not _has_map(arrow_type):
        return value
    if pa.types.is_map(arrow_type):
        pairs = [(_from_arrow(k, arrow_type.key_type), _from_arrow(v, arrow_type.item_type)) for k, v in value]
        try:
            return dict(pairs)
        except TypeError:  # a key Python cannot hash: the answer says what is wrong
            return pairs
    if pa.types.is_struct(arrow_type):
        return {field.name: _from_arrow(value[field.name], field.type) for field in arrow_type}
    return [_from_arrow(item, arrow_type.value_type) for item in value]  # a list


def _has_map(arrow_type: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_map(arrow_type):
        return True
    if pa.types.is_struct(arrow_type):
        return any(_has_map(field.type) for field in arrow_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _has_map(arrow_type.value_type)
    return False


def batches_added(offset: Any) -> int:
    """How many added batches of rows a source offset covers (as progress reports it: JSON text, or parsed).

    >>> batches_added('{"added": 3}'), batches_added({"added": 2}), batches_added(None)
    (3, 2, 0)
    """
    if isinstance(offset, str):
        offset = json.loads(offset)
    return int((offset or {}).get("added", 0))


def saved_batches(folder: str) -> list[int]:
    """The ids of the batches :func:`batch_saver` kept in ``folder``, in order."""
    return sorted(int(name[:-len(SUFFIX)]) for name in os.listdir(folder) if name.endswith(SUFFIX))


def saved_rows(folder: str, batch_id: int) -> list[tuple[Any, ...]]:
    """The rows :func:`batch_saver` kept of batch ``batch_id``, in column order (none for a batch it did not see)."""
    path = os.path.join(folder, f"{batch_id}{SUFFIX}")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as handle:
        return pickle.load(handle)


cloudpickle.register_pickle_by_value(sys.modules[__name__])
