"""Replay specs: pure, JSON-serialisable descriptions of deterministic input streams.

Two kinds of source, both played on Spark's ``rate-micro-batch`` source:

* :class:`Replay` generates rows: key columns with a cardinality and a skew, event-time
  disorder (a share of rows that arrive late, and how late) and payload columns (see
  ``workbench.replay.columns``), all as deterministic functions of the rate source's
  ``value`` and a seed. ``rate-micro-batch`` gives every row of a batch the same timestamp,
  so disorder has to come from ``value``.
* :class:`Script` lists the rows of every micro-batch explicitly.

:class:`WindowCount` describes the most common teaching query (counts per event-time
window and key, with a watermark) declaratively, so that scenarios can carry their query
and saved experiments can describe it. Nothing here imports Spark; every value is checked
when a spec is built, so a mistake raises before Spark starts anything. A spec becomes a
streaming DataFrame through ``workbench.replay_stream(spec)`` (which calls
``workbench.spark.replay_source.build_stream``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any, Iterable, Mapping, Sequence

from .columns import Disorder, KeyColumn, PayloadColumn
from .values import DEFAULT_DAY, check_ident, check_int, duration_text, parse_duration, parse_event_time, time_text

__all__ = ["Replay", "Script", "WindowCount", "source_from_json"]


@dataclass(frozen=True)
class WindowCount:
    """A declarative query: counts per event-time window (and keys) with a watermark.

    ``stream -> withWatermark(time_column, watermark) -> groupBy(window(time_column,
    window, slide), *keys).count()``. ``watermark=None`` leaves the watermark out.

    Examples
    --------
    >>> q = WindowCount("event_time", "10 minutes", "5 minutes", "10 minutes", ("word",))
    >>> q.describe()
    "withWatermark('event_time', '10 minutes').groupBy(window('event_time', '10 minutes', '5 minutes'), 'word').count()"
    """

    time_column: str = "event_time"
    window: Any = "10 minutes"
    slide: Any = None
    watermark: Any = "10 minutes"
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_ident("time column", self.time_column)
        object.__setattr__(self, "window", parse_duration(self.window, "window", allow_zero=False))
        object.__setattr__(self, "slide", parse_duration(self.slide, "slide", allow_zero=False)
                           if self.slide is not None else self.window)
        for what in ("window", "slide"):
            if getattr(self, what) % timedelta(milliseconds=1):
                raise ValueError(f"{what} {getattr(self, what)} is not a whole number of milliseconds, "
                                 "which Spark's windows count in")
        if self.slide > self.window:
            raise ValueError(f"slide {duration_text(self.slide)!r} is longer than the window "
                             f"{duration_text(self.window)!r}: Spark's sliding windows need slide <= window")
        if self.watermark is not None:
            object.__setattr__(self, "watermark", parse_duration(self.watermark, "watermark"))
        keys = (self.keys,) if isinstance(self.keys, str) else tuple(self.keys)
        object.__setattr__(self, "keys", tuple(check_ident("key column", k) for k in keys))

    def describe(self) -> str:
        """The query as the DataFrame calls it stands for."""
        window = f"window({self.time_column!r}, {duration_text(self.window)!r}, {duration_text(self.slide)!r})"
        grouping = ", ".join([window] + [repr(k) for k in self.keys])
        head = (f"withWatermark({self.time_column!r}, {duration_text(self.watermark)!r})."
                if self.watermark is not None else "")
        return f"{head}groupBy({grouping}).count()"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "window_count", "time_column": self.time_column, "window": duration_text(self.window),
            "slide": duration_text(self.slide),
            "watermark": None if self.watermark is None else duration_text(self.watermark),
            "keys": list(self.keys),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WindowCount:
        data = {k: v for k, v in data.items() if k != "kind"}
        return cls(**{**data, "keys": tuple(data.get("keys", ()))})


@dataclass(frozen=True)
class Replay:
    """A generated, deterministic input stream on ``rate-micro-batch``.

    Batch ``k`` holds ``rows_per_batch`` rows, ``value`` from ``k * rows_per_batch``; its
    processing time is ``start + k * advance``. Every generated column is a
    deterministic function of ``value`` and ``seed``, so the same spec always gives the
    same rows in the same batches.

    Parameters
    ----------
    rows_per_batch : int, default 10
    num_partitions : int, default 1
    start : str or datetime, default "2024-01-01 12:00"
        The first batch's time (readable, UTC).
    advance : str or timedelta, default "1 minute"
        How far time moves per batch.
    seed : int, default 0
    keys : sequence of KeyColumn, default one ``key`` column of 10 values
    disorder : Disorder, optional
        Late rows; None for perfectly ordered event times.
    payload : sequence of PayloadColumn, optional
    event_time : str, default "event_time"
        Name of the event-time column.

    Examples
    --------
    >>> spec = Replay(rows_per_batch=5, disorder=Disorder(share=0.2), seed=7)
    >>> Replay.from_json(spec.to_json()) == spec
    True
    >>> df = workbench.replay_stream(spec)   # doctest: +SKIP
    >>> Replay(rows_per_batch=-1)
    Traceback (most recent call last):
    ...
    ValueError: rows_per_batch must be a whole number >= 1, got -1
    """

    rows_per_batch: int = 10
    num_partitions: int = 1
    start: Any = "2024-01-01 12:00"
    advance: Any = "1 minute"
    seed: int = 0
    keys: tuple[KeyColumn, ...] = (KeyColumn(),)
    disorder: Disorder | None = None
    payload: tuple[PayloadColumn, ...] = ()
    event_time: str = "event_time"
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_int("rows_per_batch", self.rows_per_batch, 1)
        check_int("num_partitions", self.num_partitions, 1)
        check_int("seed", self.seed, -(2**31), 2**63 - 1)  # Spark's hash takes the seed as a long
        object.__setattr__(self, "start", parse_event_time(self.start))
        if self.start.timestamp() < 0:  # Spark's rate source counts from the epoch
            raise ValueError(f"start must be 1970-01-01 00:00 UTC or later, got {self.start.isoformat(sep=' ')}")
        object.__setattr__(self, "advance", parse_duration(self.advance, "advance"))
        keys = (self.keys,) if isinstance(self.keys, KeyColumn) else tuple(self.keys)
        payload = (self.payload,) if isinstance(self.payload, PayloadColumn) else tuple(self.payload)
        for item in keys:
            if not isinstance(item, KeyColumn):
                raise TypeError(f"keys must be KeyColumn(...) values, got {item!r}")
        for item in payload:
            if not isinstance(item, PayloadColumn):
                raise TypeError(f"payload must be PayloadColumn(...) values, got {item!r}")
        if self.disorder is not None and not isinstance(self.disorder, Disorder):
            raise TypeError(f"disorder must be Disorder(...) or None, got {self.disorder!r}")
        check_ident("event time column", self.event_time)
        names = [self.event_time, *(k.name for k in keys), *(p.name for p in payload)]
        reserved = {"value", "timestamp"}
        clash = sorted({n for n in names if names.count(n) > 1} | (set(names) & reserved))
        if clash:
            raise ValueError(f"column names must be distinct and not 'value'/'timestamp': {', '.join(clash)}")
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "payload", payload)

    @property
    def columns(self) -> list[str]:
        """Output columns, in order (the rate source's ``value`` and ``timestamp`` first)."""
        return ["value", "timestamp", self.event_time, *(k.name for k in self.keys), *(p.name for p in self.payload)]

    @property
    def start_ms(self) -> int:
        """``start`` in epoch milliseconds (the rate source's ``startTimestamp``)."""
        return round(self.start.timestamp() * 1000)

    @property
    def advance_ms(self) -> int:
        return round(self.advance.total_seconds() * 1000)

    def scripted_rows(self, batches: int) -> list[int]:
        """Rows per data batch (all ``rows_per_batch``: a Replay has no padding)."""
        return [self.rows_per_batch] * batches

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "replay", "rows_per_batch": self.rows_per_batch, "num_partitions": self.num_partitions,
            "start": time_text(self.start), "advance": duration_text(self.advance), "seed": self.seed,
            "keys": [asdict(k) for k in self.keys], "payload": [{**asdict(p), "choices": list(p.choices)}
                                                                for p in self.payload],
            "disorder": None, "event_time": self.event_time, "notes": self.notes,
        }
        if self.disorder is not None:
            data["disorder"] = {**asdict(self.disorder), "min_delay": duration_text(self.disorder.min_delay),
                                "max_delay": duration_text(self.disorder.max_delay)}
        return data

    def to_json(self) -> str:
        """The spec as JSON text; :meth:`from_json` reads it back."""
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Replay:
        data = dict(data)
        if data.pop("kind", "replay") != "replay":
            raise ValueError("this JSON describes a Script, not a Replay: use Script.from_json")
        data["keys"] = tuple(KeyColumn(**k) for k in data.get("keys", ()))
        data["payload"] = tuple(PayloadColumn(**{**p, "choices": tuple(p.get("choices", ()))})
                                for p in data.get("payload", ()))
        if data.get("disorder") is not None:
            data["disorder"] = Disorder(**data["disorder"])
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"not a Replay spec: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> Replay:
        """Read a spec written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


_TYPES = {str: "string", int: "bigint", float: "double", bool: "boolean"}


@dataclass(frozen=True)
class Script:
    """An explicit scripted stream: the exact rows of every micro-batch.

    Parameters
    ----------
    batches : list of lists of tuples
        One entry per micro-batch; each row is ``(event_time, *other_columns)`` with the
        event time readable text (``"12:07"``, ``"2024-01-01 12:07:30"``) or a datetime.
        An empty list is a batch in which nothing arrives.
    columns : sequence of str
        Names of the row positions; the first names the event time.
    day : str, default "2024-01-01"
        The day of time-of-day event times.
    num_partitions : int, default 1

    After the script ends the stream keeps delivering empty batches.

    Examples
    --------
    >>> script = Script([[("12:07", "dog"), ("12:08", "owl")], [("12:14", "dog")]], ["event_time", "word"])
    >>> script.rows_per_batch, script.scripted_rows(3)
    (2, [2, 1, 0])
    >>> Script([[("12:07", "dog")], [("12:08",)]], ["event_time", "word"])
    Traceback (most recent call last):
    ...
    ValueError: script batch 1, row 0 has 1 values but columns name 2 (event_time, word)
    """

    batches: tuple[tuple[tuple[Any, ...], ...], ...]
    columns: tuple[str, ...]
    day: str = DEFAULT_DAY
    num_partitions: int = 1
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.columns, str) or not isinstance(self.columns, Iterable):
            raise TypeError(f"columns must be a list of names such as ['event_time', 'word'], got {self.columns!r}")
        columns = tuple(check_ident("script column", c) for c in self.columns)
        if not columns:
            raise ValueError("columns is empty: name at least the event-time column, e.g. ['event_time']")
        if len(set(columns)) != len(columns) or {"value", "timestamp"} & set(columns):
            raise ValueError(f"script columns must be distinct and not 'value'/'timestamp', got {list(columns)}")
        check_int("num_partitions", self.num_partitions, 1)
        try:
            date.fromisoformat(str(self.day))
        except ValueError:
            raise ValueError(f"cannot read day {self.day!r}: use 'YYYY-MM-DD'") from None
        if isinstance(self.batches, (str, bytes)) or not isinstance(self.batches, Iterable):
            raise TypeError("batches must be a list with one list of row tuples per micro-batch")
        batches: list[tuple[tuple[Any, ...], ...]] = []
        types: list[type | None] = [None] * (len(columns) - 1)
        for b, batch in enumerate(self.batches):
            if isinstance(batch, (str, bytes)) or not isinstance(batch, Iterable):
                raise TypeError(f"script batch {b} must be a list of row tuples, got {batch!r}")
            rows = []
            for r, row in enumerate(batch):
                if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
                    raise TypeError(f"script batch {b}, row {r} must be a tuple, got {row!r}")
                if len(row) != len(columns):
                    raise ValueError(
                        f"script batch {b}, row {r} has {len(row)} values but columns name {len(columns)} "
                        f"({', '.join(columns)})"
                    )
                event_time = parse_event_time(row[0], day=str(self.day))
                for i, item in enumerate(row[1:]):
                    kind = type(item) if item is not None else None
                    if kind is not None and kind not in _TYPES:
                        raise TypeError(f"script batch {b}, row {r}: column {columns[i + 1]!r} holds {item!r}; "
                                        "use text, whole numbers, numbers or booleans")
                    if kind is int and types[i] is float or kind is float and types[i] is int:
                        kind = float
                    elif kind is not None and types[i] is not None and kind is not types[i]:
                        raise TypeError(f"script column {columns[i + 1]!r} mixes {types[i].__name__} and "
                                        f"{kind.__name__} (batch {b}, row {r})")
                    types[i] = kind or types[i]
                rows.append((event_time, *row[1:]))
            batches.append(tuple(rows))
        if not batches:
            raise ValueError("the script has no batches: give a list with one list of rows per micro-batch")
        object.__setattr__(self, "batches", tuple(batches))
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "_types", tuple(_TYPES[t] if t else "string" for t in types))

    @property
    def event_time(self) -> str:
        """Name of the event-time column."""
        return self.columns[0]

    @property
    def column_types(self) -> tuple[str, ...]:
        """Spark SQL types of the columns after the event time (inferred from the values)."""
        return self._types  # type: ignore[attr-defined,no-any-return]

    @property
    def rows_per_batch(self) -> int:
        """Rate rows per batch: the longest scripted batch (shorter ones are padded)."""
        return max(1, max(len(b) for b in self.batches))

    def scripted_rows(self, batches: int) -> list[int]:
        """Scripted (not padding) rows in each of the first ``batches`` data batches."""
        return [len(self.batches[k]) if k < len(self.batches) else 0 for k in range(batches)]

    def table(self) -> list[tuple[Any, ...]]:
        """The scripted rows as ``(value, batch, event_time, *columns)`` for the rate join.

        Row ``r`` of batch ``b`` is delivered with rate ``value = b * rows_per_batch + r``.
        """
        width = self.rows_per_batch
        return [(b * width + r, b, *row) for b, batch in enumerate(self.batches) for r, row in enumerate(batch)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "script", "columns": list(self.columns), "day": str(self.day),
            "num_partitions": self.num_partitions, "notes": self.notes,
            "batches": [[[time_text(row[0]), *row[1:]] for row in batch] for batch in self.batches],
        }

    def to_json(self) -> str:
        """The script as JSON text; :meth:`from_json` reads it back."""
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Script:
        data = dict(data)
        if data.pop("kind", "script") != "script":
            raise ValueError("this JSON describes a Replay, not a Script: use Replay.from_json")
        try:
            return cls(batches=[[tuple(row) for row in batch] for batch in data.pop("batches")], **data)
        except (TypeError, KeyError) as exc:
            raise ValueError(f"not a Script: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> Script:
        """Read a script written by :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def source_from_json(text: str) -> Replay | Script:
    """Read a :class:`Replay` or :class:`Script` from its JSON.

    Examples
    --------
    >>> type(source_from_json(Replay().to_json())).__name__
    'Replay'
    """
    data = json.loads(text)
    return Script.from_dict(data) if data.get("kind") == "script" else Replay.from_dict(data)
