"""Comparing a streaming query's rows with the rows a test expects, and saying how they differ.

Rows are compared as multisets (order ignored). Each column is read by its Spark type:
timestamps compare as times (strings such as ``"2024-01-01 12:07"`` allowed), a window
struct compares as a ``(start, end)`` pair, floats after rounding to 9 places.
:func:`row_diff` returns the rows missing and unexpected; :func:`describe_rows` prints
rows short enough for an assertion message.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime
from typing import Any, Iterable, Sequence

import pandas as pd
from pyspark.sql.types import DataType, StructType, TimestampNTZType, TimestampType

__all__ = ["Columns", "row_diff", "describe_rows", "show_time", "as_time"]

_TIME = "time"
_WINDOW = "window"
_PLAIN = "plain"


def _kind(dtype: DataType) -> str:
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return _TIME
    if isinstance(dtype, StructType) and dtype.fieldNames() == ["start", "end"]:
        return _WINDOW
    return _PLAIN


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

    def __init__(self, value: Any, column: str) -> None:
        if isinstance(value, (str, datetime, date, pd.Timestamp)):
            try:
                stamp = pd.Timestamp(value)
            except ValueError:
                raise ValueError(f"column {column!r}: {value!r} is not a time; write times like "
                                 "'2024-01-01 12:07'") from None
        else:
            raise TypeError(f"column {column!r}: {value!r} is not a time; give a string like '2024-01-01 12:07' "
                            "or a datetime")
        if stamp.tzinfo is not None:
            stamp = stamp.tz_convert("UTC").tz_localize(None)
        self.stamp = stamp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Time) and self.stamp == other.stamp

    def __hash__(self) -> int:
        return hash(self.stamp)

    def __repr__(self) -> str:
        return repr(show_time(self.stamp))


def _plain(value: Any) -> Any:
    """A value as it compares: numpy scalars and arrays as Python values, lists as tuples, all the way down.

    >>> import numpy as np
    >>> _plain(np.array([1, 2])), _plain(np.array([1])), _plain([0.1 + 0.2]), _plain(np.int64(3))
    ((1, 2), (1,), (0.3,), 3)
    """
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # a numpy scalar, or an array column's value from toPandas
    if isinstance(value, float):
        return round(value, 9)
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
        self.kinds = [_kind(f.dataType) for f in schema.fields]

    def _value(self, value: Any, name: str, kind: str) -> Any:
        if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value) is True):
            return None
        if kind == _TIME:
            return _Time(value, name)
        if kind == _WINDOW:
            if isinstance(value, dict):
                value = (value.get("start"), value.get("end"))
            elif hasattr(value, "asDict"):
                value = (value["start"], value["end"])
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError(f"column {name!r} is a window: give it as (start, end), got {value!r}")
            return (_Time(value[0], name), _Time(value[1], name))
        return _plain(value)

    def key(self, *values: Any) -> tuple[Any, ...]:
        """One row's values, in column order, in the form they compare in."""
        return tuple(self._value(v, n, k) for v, n, k in zip(values, self.names, self.kinds))

    def row(self, row: Any) -> tuple[Any, ...]:
        """A row given as a tuple (column order), a dict (by name) or a pyspark Row."""
        if hasattr(row, "asDict"):
            row = row.asDict(recursive=True)
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
        if isinstance(rows, pd.DataFrame):
            rows = rows.to_dict("records")
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
