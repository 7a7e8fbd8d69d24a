"""Comparing a streaming query's rows with the rows a test expects, and saying how they differ.

Rows are compared as multisets (order ignored). Each column is read by its Spark type, all
the way down: timestamps compare as times and dates as days (strings such as
``"2024-01-01 12:07"`` and ``"2024-01-01"`` allowed), a struct (a window too) as a tuple of its
fields (given as a tuple or a dict), an array as a tuple, a map as its pairs, floats after
rounding to 9 places (NaN equals NaN, and is not null), whole numbers exactly, decimals
exactly (given as a Decimal, an int, a string such as ``"3.50"`` or a float as written).
:func:`row_diff` returns the rows missing and unexpected; :func:`describe_rows` prints
rows short enough for an assertion message.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import date, datetime
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from pyspark.sql.types import (
    ArrayType, DataType, DateType, DecimalType, MapType, StructType, TimestampNTZType, TimestampType,
)

from .memory_stream import as_decimal

__all__ = ["Columns", "row_diff", "describe_rows", "show_time", "as_time", "state_row", "loose_rows", "NAN"]


class _NaN:
    """NaN as a check compares it: equal to NaN (unlike the float), not to null or to any number."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return hash(_NaN)

    def __repr__(self) -> str:
        return "nan"


#: What a NaN compares as (``float("nan")`` in an expected row, a NaN in the query's rows).
NAN = _NaN()


def show_time(value: Any) -> str:
    """A time as ``2024-01-01 12:07`` (seconds and fractions only when not zero).

    Examples
    --------
    >>> show_time(pd.Timestamp("2024-01-01 12:07:00")), show_time(pd.Timestamp("2024-01-01 12:07:05"))
    ('2024-01-01 12:07', '2024-01-01 12:07:05')
    """
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    if stamp.microsecond or stamp.nanosecond:
        return stamp.isoformat(sep=" ")
    return stamp.strftime("%Y-%m-%d %H:%M" if stamp.second == 0 else "%Y-%m-%d %H:%M:%S")


def as_time(value: Any, column: str) -> pd.Timestamp:
    """``value`` (a string such as ``"2024-01-01 12:07"``, a datetime) as a naive UTC Timestamp.

    Examples
    --------
    >>> as_time("2024-01-01 12:07", "event_time")
    Timestamp('2024-01-01 12:07:00')
    """
    return _Time(value, column).stamp


class _Time:
    """A time that compares and hashes as its value and prints short."""

    __slots__ = ("stamp",)
    day = False  # a date column's value: compares as its day

    def __init__(self, value: Any, column: str) -> None:
        kind, example = ("date", "'2024-01-01'") if self.day else ("time", "'2024-01-01 12:07'")
        if isinstance(value, (str, datetime, date, pd.Timestamp)):
            try:
                stamp = pd.Timestamp(value)
            except ValueError:
                raise ValueError(f"column {column!r}: {value!r} is not a {kind}; write {kind}s like {example}") from None
        else:
            raise TypeError(f"column {column!r}: {value!r} is not a {kind}; give a string like {example} "
                            f"or a {'date' if self.day else 'datetime'}")
        if stamp.tzinfo is not None:
            stamp = stamp.tz_convert("UTC").tz_localize(None)
        if self.day:
            if stamp != stamp.normalize():
                raise ValueError(f"column {column!r} is a date: {value!r} is not a day; write days like '2024-01-01'")
        self.stamp = stamp

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.stamp == other.stamp

    def __hash__(self) -> int:
        return hash(self.stamp)

    def __repr__(self) -> str:
        return repr(self.stamp.strftime("%Y-%m-%d") if self.day else show_time(self.stamp))


class _Day(_Time):
    """A date that compares and hashes as its day and prints as ``'2024-01-01'``."""

    __slots__ = ()
    day = True


def _typed(value: Any, dtype: DataType, name: str) -> Any:
    """``value`` of a column of type ``dtype`` in the form it compares in (``name`` for errors).

    >>> from pyspark.sql.types import ArrayType, DateType
    >>> _typed(["2024-01-01", None], ArrayType(DateType()), "days")
    ('2024-01-01', None)
    """
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return NAN
    elif value is None or (not isinstance(value, (list, tuple, dict)) and not hasattr(value, "__len__")
                           and pd.isna(value) is True):
        return None  # pd.NA, NaT
    if isinstance(dtype, DecimalType):
        return as_decimal(value.item() if isinstance(value, np.generic) else value, name, dtype)
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return _Time(value, name)
    if isinstance(dtype, DateType):
        return _Day(value, name)
    if isinstance(dtype, StructType):
        return _struct(value, dtype, name)
    if isinstance(dtype, ArrayType):
        if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
            value = value.tolist()  # an array column's value from toPandas
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"column {name!r} is an array: give it as a list, got {value!r}")
        return tuple(_typed(item, dtype.elementType, f"{name}[{i}]") for i, item in enumerate(value))
    if isinstance(dtype, MapType):
        if not isinstance(value, dict):
            raise ValueError(f"column {name!r} is a map: give it as a dict, got {value!r}")
        typed = [(_typed(k, dtype.keyType, f"{name} key"), _typed(v, dtype.valueType, f"{name}[{k!r}]"))
                 for k, v in value.items()]
        return tuple(sorted(typed, key=repr))
    return _plain(value)


def _struct(value: Any, dtype: StructType, name: str) -> tuple[Any, ...]:
    fields = dtype.fieldNames()
    shape = "(start, end)" if fields == ["start", "end"] else f"a tuple of its {len(fields)} fields or a dict"
    what = "a window" if fields == ["start", "end"] else f"a struct<{', '.join(fields)}>"
    if hasattr(value, "asDict"):
        value = value.asDict()
    if isinstance(value, dict):
        unknown = [k for k in value if k not in fields]
        missing = [f for f in fields if f not in value]
        if unknown or missing:
            raise ValueError(f"column {name!r} is {what}: " + ("; ".join(
                ([f"unknown field(s) {unknown}"] if unknown else []) + ([f"missing field(s) {missing}"] if missing else [])))
                + f" in {value!r}")
        value = tuple(value[f] for f in fields)
    if not isinstance(value, (tuple, list)) or len(value) != len(fields):
        raise ValueError(f"column {name!r} is {what}: give it as {shape}, got {value!r}")
    return tuple(_typed(v, f.dataType, f"{name}.{f.name}") for v, f in zip(value, dtype.fields))


def _plain(value: Any) -> Any:
    """A value as it compares: numpy scalars and arrays as Python values, lists as tuples, all the way down.

    >>> import numpy as np
    >>> _plain(np.array([1, 2])), _plain(np.array([1])), _plain([0.1 + 0.2]), _plain(np.int64(3))
    ((1, 2), (1,), (0.3,), 3)
    """
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # a numpy scalar, or an array column's value from toPandas
    if isinstance(value, float):
        return NAN if math.isnan(value) else round(value, 9)
    if isinstance(value, dict):
        return tuple(sorted((key, _plain(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item) for item in value)
    return value


class Columns:
    """The result columns of a query, and how each compares.

    Examples
    --------
    >>> from pyspark.sql.types import StructType
    >>> cols = Columns(StructType.fromJson({"type": "struct", "fields": [
    ...     {"name": "window", "type": {"type": "struct", "fields": [
    ...         {"name": "start", "type": "timestamp", "nullable": True, "metadata": {}},
    ...         {"name": "end", "type": "timestamp", "nullable": True, "metadata": {}}]},
    ...      "nullable": True, "metadata": {}},
    ...     {"name": "count", "type": "long", "nullable": False, "metadata": {}}]}))
    >>> cols.key(("2024-01-01 12:00", "2024-01-01 12:10"), 2) == cols.key(
    ...     {"start": pd.Timestamp("2024-01-01 12:00"), "end": pd.Timestamp("2024-01-01 12:10")}, 2)
    True
    """

    def __init__(self, schema: StructType) -> None:
        self.names = schema.fieldNames()
        self.types = [f.dataType for f in schema.fields]

    def key(self, *values: Any) -> tuple[Any, ...]:
        """One row's values, in column order, in the form they compare in."""
        return tuple(_typed(v, t, n) for v, n, t in zip(values, self.names, self.types))

    def row(self, row: Any) -> tuple[Any, ...]:
        """A row given as a tuple (column order), a dict (by name) or a pyspark Row."""
        if hasattr(row, "asDict"):
            row = row.asDict()
        if isinstance(row, dict):
            unknown = [k for k in row if k not in self.names]
            missing = [n for n in self.names if n not in row]
            if unknown or missing:
                raise ValueError(f"row {row!r} does not match the result's columns {self.names}"
                                 + (f": unknown {unknown}" if unknown else "")
                                 + (f": missing {missing}" if missing else ""))
            return self.key(*(row[n] for n in self.names))
        if isinstance(row, (tuple, list)):
            if len(row) != len(self.names):
                raise ValueError(f"row {tuple(row)!r} has {len(row)} value(s); the result's columns are {self.names}")
            return self.key(*row)
        raise TypeError(f"row {row!r} must be a tuple or a dict; the result's columns are {self.names}")

    def rows(self, rows: Iterable[Any]) -> list[tuple[Any, ...]]:
        if isinstance(rows, pd.DataFrame):  # a missing value (NaN, None, NaT) in a DataFrame is null
            rows = [{k: None if pd.api.types.is_scalar(v) and pd.isna(v) else v for k, v in r.items()}
                    for r in rows.to_dict("records")]
        elif isinstance(rows, (str, bytes, dict)) or not hasattr(rows, "__iter__"):
            raise TypeError(f"rows must be a list of tuples or dicts, got {rows!r}")
        return [self.row(r) for r in rows]


def row_diff(expected: Sequence[tuple[Any, ...]], actual: Sequence[tuple[Any, ...]]
             ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """``(missing, unexpected)``: expected rows not in ``actual``, and the reverse (multisets).

    Examples
    --------
    >>> row_diff([("a", 1), ("b", 2)], [("b", 2), ("c", 3), ("c", 3)])
    ([('a', 1)], [('c', 3), ('c', 3)])
    """
    missing = Counter(expected)
    missing.subtract(Counter(actual))
    unexpected = Counter(actual)
    unexpected.subtract(Counter(expected))
    return list((missing + Counter()).elements()), list((unexpected + Counter()).elements())


def describe_rows(rows: Sequence[tuple[Any, ...]], limit: int = 10) -> str:
    """Rows as short tuples, one per line, at most ``limit`` of them.

    Examples
    --------
    >>> print(describe_rows([("dog", 2)]))
        ('dog', 2)
    >>> describe_rows([])
    '    (none)'
    """
    if not rows:
        return "    (none)"
    lines = [f"    {_short(r)}" for r in sorted(rows, key=repr)[:limit]]
    if len(rows) > limit:
        lines.append(f"    ... and {len(rows) - limit} more")
    return "\n".join(lines)


def _short(row: tuple[Any, ...]) -> str:
    parts = []
    for value in row:
        if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, _Time) for v in value):
            parts.append(f"({value[0]!r}, {value[1]!r})")
        else:
            parts.append(repr(value))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def state_row(row: Any, columns: list[str]) -> tuple[Any, ...]:
    """A state row given as a tuple or a dict, as a tuple in the state's column order."""
    if isinstance(row, dict):
        unknown = [k for k in row if k not in columns]
        if unknown:
            raise ValueError(f"state row {row!r} names unknown column(s) {unknown}; the state's columns are {columns}")
        return tuple(row.get(c) for c in columns)
    if not isinstance(row, (tuple, list)):
        raise TypeError(f"state row {row!r} must be a tuple or a dict; the state's columns are {columns}")
    return tuple(row)


def loose_rows(rows: Sequence[Any], columns: list[str]) -> list[tuple[Any, ...]]:
    """State rows as they compare: times as short strings, numpy scalars as Python values."""
    out = []
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"state row {tuple(row)!r} has {len(row)} value(s); the state's columns are {columns}")
        out.append(tuple(_loose(v) for v in row))
    return out


def _loose(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return show_time(pd.Timestamp(value)) if re.match(r"\d{4}-\d\d-\d\d[ T]\d", value) else value
        except ValueError:
            return value
    if isinstance(value, pd.Timestamp) or hasattr(value, "isoformat") and not isinstance(value, str):
        return show_time(value)
    if hasattr(value, "item"):
        return value.item()
    return value
