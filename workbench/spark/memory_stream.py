"""A memory stream for Python: rows added from Python, read by the next micro-batch, exactly once.

Built on Spark 4's Python data source API (:class:`pyspark.sql.datasource.DataSource` and
:class:`~pyspark.sql.datasource.DataSourceStreamReader`). Each :meth:`MemoryStream.add`
writes one immutable file, ``<n>.pkl``, into the stream's folder; the offset is the number
of such files. Spark records the offsets each batch read in the query's checkpoint, so a
query restarted from its checkpoint goes on from where it stopped and reads every row once,
in the order it was added.

The reader's driver-side methods (``latestOffset``, ``partitions``) run in a Python worker
the Spark driver starts, not in this process: the folder must be readable by the Spark
driver's machine (the same machine for the embedded Spark and a client-mode cluster; for a
Spark Connect server, its machine must see the same path). Partitions carry their rows, so
executors need no access to the folder; the source's code (:mod:`.memory_source`) travels
pickled by value, so Spark's Python workers need pyspark, not the workbench.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import weakref
from datetime import date, datetime
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType, DecimalType, FractionalType, IntegerType,
    IntegralType, MapType, ShortType, StringType, StructType, TimestampNTZType, TimestampType,
)

from ..errors import error_line
from .memory_source import (
    SOURCE_NAME, MemoryDataSource, batch_count, batch_file, drop_stale_gates, release, write_atomically,
)
from .private_folders import private_folder, remove_folder

__all__ = ["MemoryStream", "register_memory_source", "as_decimal", "end_stream_test"]

#: The file beside the rows that keeps the stream's schema (Spark's JSON form).
SCHEMA_FILE = "schema.json"


def register_memory_source(spark: Any) -> None:
    """Register the ``workbench_memory`` data source with ``spark`` (idempotent)."""
    spark.dataSource.register(MemoryDataSource)


def _parse_schema(spark: Any, schema: Any) -> StructType:
    if isinstance(schema, StructType):
        return schema
    if not isinstance(schema, str) or not schema.strip():
        raise TypeError(f"schema must be a DDL string such as 'event_time timestamp, word string' or a "
                        f"StructType, got {schema!r}")
    try:
        parsed = StructType.fromDDL(schema) if hasattr(StructType, "fromDDL") else None
        if parsed is None:
            parsed = spark.createDataFrame([], schema).schema
    except Exception as exc:
        raise ValueError(f"schema {schema!r} is not a valid DDL schema ({error_line(exc)[:200]}); write it like "
                         "'event_time timestamp, word string'") from None
    if not isinstance(parsed, StructType) or not parsed.fields:
        raise ValueError(f"schema {schema!r} has no columns; write it like 'event_time timestamp, word string'")
    _check_names(schema, parsed)
    return parsed


def _check_names(given: Any, schema: StructType) -> None:
    """Refuse a schema naming a column (or a struct's field) twice: Spark reads names ignoring case."""
    shown = given if isinstance(given, str) else schema.simpleString()
    pending: list[tuple[str, DataType]] = [("", schema)]
    while pending:
        prefix, dtype = pending.pop()
        while isinstance(dtype, (ArrayType, MapType)):
            dtype = dtype.elementType if isinstance(dtype, ArrayType) else dtype.valueType
        if not isinstance(dtype, StructType):
            continue
        seen: dict[str, str] = {}
        for field in dtype.fields:
            if field.name.lower() in seen:
                case = "" if seen[field.name.lower()] == field.name else " (column names ignore case)"
                raise ValueError(f"schema {shown!r} names column {prefix + field.name!r} twice{case}: give each "
                                 "column its own name")
            seen[field.name.lower()] = field.name
            pending.append((f"{prefix}{field.name}.", field.dataType))


def _time(value: Any, field: str, as_date: bool) -> Any:
    import pandas as pd

    if isinstance(value, str):
        try:
            stamp = pd.Timestamp(value)
        except ValueError:
            raise ValueError(f"column {field!r}: {value!r} is not a time; write times like "
                             "'2024-01-01 12:07:00'") from None
    elif isinstance(value, (datetime, date)):
        stamp = pd.Timestamp(value)
    else:
        raise TypeError(f"column {field!r}: {value!r} is not a time; give a string like '2024-01-01 12:07:00', "
                        "a datetime or a pandas Timestamp")
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    return stamp.date() if as_date else stamp.to_pydatetime()


_PLAIN: list[tuple[type[DataType], tuple[type, ...], str]] = [
    (BooleanType, (bool,), "True or False"),
    (IntegralType, (int,), "a whole number"),
    (FractionalType, (float, int), "a number"),
    (StringType, (str,), "a string"),
    (BinaryType, (bytes, bytearray), "bytes"),
]


#: Enough digits for any decimal Spark holds (38), so that rounding never happens unseen.
_EXACT = Context(prec=100)


def as_decimal(value: Any, name: str, dtype: DecimalType) -> Decimal:
    """``value`` of a decimal column as a Decimal: a Decimal, an int, a string, or a float as written.

    A float is taken as its shortest form (``0.1`` is ``Decimal('0.1')``, not the binary
    fraction it holds).

    >>> from pyspark.sql.types import DecimalType
    >>> as_decimal(0.1, "d", DecimalType(10, 2)), as_decimal("3.50", "d", DecimalType(10, 2))
    (Decimal('0.1'), Decimal('3.50'))
    """
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            number = Decimal(repr(value) if isinstance(value, float) else value)
        except InvalidOperation:
            number = Decimal("NaN")
    else:
        raise TypeError(f"column {name!r} is {dtype.simpleString()}: {value!r} is not a number; give a Decimal, an "
                        "int, a float or a string such as '3.50'")
    if not number.is_finite():
        raise ValueError(f"column {name!r} is {dtype.simpleString()}: {value!r} is not a number; give a Decimal, an "
                         "int, a float or a string such as '3.50'")
    return number


def _decimal(value: Any, name: str, dtype: DecimalType) -> Decimal:
    """``value`` as the column's Decimal, at its scale; refused when it does not fit exactly."""
    number = as_decimal(value, name, dtype)
    step = Decimal(1).scaleb(-dtype.scale)
    fitted = number.quantize(step, context=_EXACT)
    if fitted != number:
        raise ValueError(f"column {name!r} is {dtype.simpleString()}: {value!r} has more than {dtype.scale} decimal "
                         "places")
    largest = Decimal(10 ** (dtype.precision - dtype.scale)) - step
    if abs(fitted) > largest:
        raise ValueError(f"column {name!r} is {dtype.simpleString()}: {value!r} is out of its range (-{largest} to "
                         f"{largest})")
    return fitted


#: Bits of each whole-number type (a long's 64 otherwise).
_BITS = {ByteType: 8, ShortType: 16, IntegerType: 32}


def _value(value: Any, name: str, dtype: DataType) -> Any:
    if value is None:
        return None
    if isinstance(dtype, ArrayType):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise TypeError(f"column {name!r} is {dtype.simpleString()}: {value!r} is not a list")
        return [_value(v, f"{name}[{i}]", dtype.elementType) for i, v in enumerate(value)]
    if isinstance(dtype, MapType):
        if not isinstance(value, dict):
            raise TypeError(f"column {name!r} is {dtype.simpleString()}: {value!r} is not a dict")
        return {_value(k, f"{name} key", dtype.keyType): _value(v, f"{name}[{k!r}]", dtype.valueType)
                for k, v in value.items()}
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy scalars from a pandas DataFrame
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return _time(value, name, as_date=False)
    if isinstance(dtype, DateType):
        return _time(value, name, as_date=True)
    if isinstance(dtype, DecimalType):  # before the fractional types: it is one of them in pyspark
        return _decimal(value, name, dtype)
    for spark_type, python_types, words in _PLAIN:
        if isinstance(dtype, spark_type):
            wrong = isinstance(value, bool) and spark_type is not BooleanType
            if wrong or not isinstance(value, python_types):
                raise TypeError(f"column {name!r} is {dtype.simpleString()}: {value!r} is not {words}")
            bits = _BITS.get(type(dtype), 64)
            if spark_type is IntegralType and not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                raise ValueError(f"column {name!r} is {dtype.simpleString()}: {value!r} is out of its range "
                                 f"({-(2 ** (bits - 1))} to {2 ** (bits - 1) - 1})")
            return float(value) if spark_type is FractionalType else value
    return value  # a struct: Spark checks it when the batch reads it


def _from_pandas(value: Any, dtype: DataType) -> Any:
    """A pandas cell as the value it stands for: a missing one (None, NaN, NaT) is null; a whole
    number pandas turned into a float (its column held a missing value) is the whole number."""
    import pandas as pd

    if pd.api.types.is_scalar(value) and pd.isna(value):
        return None
    if isinstance(dtype, IntegralType) and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _rows(rows: Any, schema: StructType) -> list[tuple[Any, ...]]:
    import pandas as pd

    names = schema.fieldNames()
    if isinstance(rows, pd.DataFrame):
        missing = [n for n in names if n not in rows.columns]
        if missing:
            raise ValueError(f"the DataFrame lacks column(s) {missing}; the stream's columns are {names}")
        rows = [tuple(_from_pandas(v, f.dataType) for v, f in zip(record, schema.fields))
                for record in rows[names].itertuples(index=False, name=None)]
    elif isinstance(rows, (tuple, dict)) or not hasattr(rows, "__iter__") or isinstance(rows, str):
        raise TypeError(f"rows must be a list of tuples or dicts, or a pandas DataFrame, got {rows!r}")
    converted = []
    for row in rows:
        if isinstance(row, dict):
            unknown = [k for k in row if k not in names]
            if unknown:
                raise ValueError(f"row {row!r} names unknown column(s) {unknown}; the stream's columns are {names}")
            values = [row.get(n) for n in names]
        elif isinstance(row, (tuple, list)):
            if len(row) != len(names):
                raise ValueError(f"row {tuple(row)!r} has {len(row)} value(s); the stream's columns are {names}")
            values = list(row)
        else:
            raise TypeError(f"row {row!r} must be a tuple or a dict; the stream's columns are {names}")
        converted.append(tuple(_value(v, f.name, f.dataType) for v, f in zip(values, schema.fields)))
    return converted


class MemoryStream:
    """A streaming source fed from Python: rows added now are read by the next micro-batch.

    Every row added is read exactly once and in order, also across a restart of the query
    from its checkpoint. It uses Spark's Python data source API, so it needs Spark 4.0 or
    later and pyarrow, and a Spark driver that reads this machine's file system (the
    embedded Spark, a cluster in client mode, or a Spark Connect server on this machine or
    sharing ``folder``).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose queries read the stream.
    schema : str or pyspark.sql.types.StructType
        The columns, e.g. ``"event_time timestamp, word string"``.
    folder : str or path, optional
        Where the added rows are kept; a private temporary folder (removed by
        :meth:`close` or at exit) when left out. Give one that the Spark driver reads
        when it runs elsewhere.

    Raises
    ------
    TypeError, ValueError
        For a bad schema or folder, before Spark starts anything.

    Examples
    --------
    >>> events = MemoryStream(spark, "event_time timestamp, word string")   # doctest: +SKIP
    >>> events.add([("2024-01-01 12:07", "dog"), ("2024-01-01 12:08", "owl")])  # doctest: +SKIP
    1
    >>> counts = events.df.groupBy("word").count()                          # doctest: +SKIP
    """

    def __init__(self, spark: Any, schema: str | StructType, *, folder: str | os.PathLike[str] | None = None,
                 _reopen: bool = False) -> None:
        if not hasattr(spark, "readStream") or not hasattr(spark, "dataSource"):
            raise TypeError("MemoryStream needs a SparkSession (workbench.session(), or the pytest plugin's spark "
                            f"fixture), got {'None' if spark is None else 'a ' + type(spark).__name__}")
        self.schema = _parse_schema(spark, schema)
        if folder is None:
            self.folder = str(private_folder("memory-stream-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
        else:
            if not isinstance(folder, (str, os.PathLike)):
                raise TypeError(f"folder must be a path, got {folder!r}")
            self.folder = os.path.abspath(os.fspath(folder))
            if not _reopen and os.path.isdir(self.folder) and batch_count(self.folder) > 0:
                # A test run again on a fixed folder would read the rows of every earlier run.
                raise ValueError(
                    f"folder {self.folder!r} holds the rows of an earlier memory stream: give an empty folder, remove "
                    "it first, or reopen that stream with MemoryStream.at(spark, folder)")
            os.makedirs(self.folder, exist_ok=True)
            drop_stale_gates(self.folder)  # a killed test run's StreamTest no longer holds rows back
            self._cleanup = None
        self._spark = spark
        # Kept beside the rows, so that the stream can be found again from a query reading it (:meth:`at`).
        with open(os.path.join(self.folder, SCHEMA_FILE), "w", encoding="utf-8") as handle:
            handle.write(self.schema.json())
        register_memory_source(spark)
        # The folder again in hex: Spark redacts an option whose value matches
        # spark.sql.redaction.options.regex ("url" by default) in the plans it prints, and the
        # workbench finds a query's input from its plan (record, to_test).
        self.df = (spark.readStream.format(SOURCE_NAME).schema(self.schema)
                   .option("folder", self.folder).option("folder_hex", self.folder.encode().hex()).load())

    @classmethod
    def at(cls, spark: Any, folder: str | os.PathLike[str]) -> MemoryStream:
        """The memory stream whose rows ``folder`` keeps, e.g. the input a running query reads.

        The folder is kept when the returned stream is closed: it belongs to the stream
        that made it.

        Raises
        ------
        ValueError
            When ``folder`` holds no memory stream (never made, or closed since).

        Examples
        --------
        >>> MemoryStream.at(spark, events.folder).rows() == events.rows()   # doctest: +SKIP
        True
        """
        path = os.path.join(os.fspath(folder), SCHEMA_FILE)
        try:
            with open(path, encoding="utf-8") as handle:
                schema = StructType.fromJson(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError):
            raise ValueError(f"folder {os.fspath(folder)!r} holds no workbench.testing.MemoryStream (closed, or "
                             "never one): keep the stream open while a query reads it") from None
        return cls(spark, schema, folder=folder, _reopen=True)

    @property
    def offset(self) -> int:
        """The offset reached so far: how many :meth:`add` calls added rows (or an empty batch)."""
        return batch_count(self.folder)

    def add(self, rows: Any, *, empty_batch: bool = False) -> int:
        """Append rows for the next micro-batch; return the offset reached.

        Parameters
        ----------
        rows : list of tuple or dict, or pandas.DataFrame
            Tuples in the schema's column order, dicts by column name (missing columns are
            null), or a DataFrame with the schema's columns. Times may be strings such as
            ``"2024-01-01 12:07"`` (UTC), datetimes or pandas Timestamps.
        empty_batch : bool, default False
            With no rows: move the offset all the same, so that Spark runs a micro-batch
            that reads nothing (as a replay's batch of padding only does), which applies
            the watermark the previous batch moved.

        Returns
        -------
        int
            The offset after these rows; adding no rows (without ``empty_batch``) returns
            the current offset.

        Raises
        ------
        TypeError, ValueError
            A row that does not fit the schema, naming the value and the column; nothing
            is added then.

        Examples
        --------
        >>> events.add([{"event_time": "2024-01-01 12:04", "word": "donkey"}])   # doctest: +SKIP
        2
        """
        if not isinstance(empty_batch, bool):
            raise TypeError(f"empty_batch must be True or False, got {empty_batch!r}")
        converted = _rows(rows, self.schema)
        if not converted and not empty_batch:
            return self.offset
        index = self.offset + 1
        write_atomically(batch_file(self.folder, index), converted)
        return index

    def rows(self) -> list[tuple[Any, ...]]:
        """Every row added so far, in order (as converted to the schema's types)."""
        return [row for batch in self.batches() for row in batch]

    def batches(self) -> list[list[tuple[Any, ...]]]:
        """The rows of each :meth:`add`, in order: ``batches()[k]`` reached offset ``k + 1``."""
        out = []
        for index in range(1, self.offset + 1):
            with open(batch_file(self.folder, index), "rb") as handle:
                out.append(pickle.load(handle))
        return out

    def close(self) -> None:
        """Remove the private folder of added rows (a folder given by the caller is kept)."""
        if self._cleanup is not None:
            self._cleanup()

    def __repr__(self) -> str:
        return f"<MemoryStream {self.schema.simpleString()} offset={self.offset}>"


def end_stream_test(running: list[Any], gated: list[str], name: str, folder: str, quiet: logging.Filter) -> None:
    """What a StreamTest leaves when closed or collected: its query stopped, its gates lifted
    (a live query on its streams reads everything again), its folder removed."""
    for query in running:
        try:
            query.stop()
        except Exception:
            pass  # the session is gone: nothing runs any more
    running.clear()
    logging.getLogger("py4j.clientserver").removeFilter(quiet)
    for stream_folder in gated:
        if os.path.isdir(stream_folder):
            release(stream_folder, None, name)
    gated.clear()
    remove_folder(folder)
