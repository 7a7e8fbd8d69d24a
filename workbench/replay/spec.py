"""Replay specs: pure, JSON-serialisable descriptions of deterministic input streams.

Two kinds of source, both played on Spark's ``rate-micro-batch`` source (see
``workbench.spark.replay_source`` for how they become streaming DataFrames):

* :class:`Replay` generates rows: key columns with a cardinality and a skew, event-time
  disorder (a share of rows that arrive late, and how late) and payload columns, all as
  deterministic functions of the rate source's ``value`` and a seed. ``rate-micro-batch``
  gives every row of a batch the same timestamp, so disorder has to come from ``value``.
* :class:`Script` lists the rows of every micro-batch explicitly.

:class:`WindowCount` describes the most common teaching query (counts per event-time
window and key, with a watermark) declaratively, so that scenarios can carry their query
and saved experiments can describe it. Nothing here imports Spark; every value is checked
when a spec is built, so a mistake raises before Spark starts anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any, Iterable, Mapping, Sequence

from ..progress.diagnosis import parse_interval

__all__ = [
    "Replay", "Script", "KeyColumn", "Disorder", "PayloadColumn", "WindowCount",
    "parse_event_time", "parse_duration", "source_from_json", "DISTRIBUTIONS", "PAYLOAD_KINDS",
]

#: How late rows' delays are spread between ``min_delay`` and ``max_delay``.
DISTRIBUTIONS: tuple[str, ...] = ("uniform", "fixed", "exponential")
#: Kinds of generated payload column.
PAYLOAD_KINDS: tuple[str, ...] = ("int", "float", "choice")

_TIME_ONLY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFAULT_DAY = "2024-01-01"


def parse_event_time(value: Any, *, day: str | date = _DEFAULT_DAY) -> datetime:
    """Parse a readable event time into a timezone-aware UTC datetime.

    Parameters
    ----------
    value : str or datetime
        ``"2024-01-01 12:07"``, ``"2024-01-01T12:07:30Z"``, or a time of day such as
        ``"12:07"`` (on ``day``). Naive datetimes are taken as UTC.
    day : str or date, default "2024-01-01"
        The day of time-of-day values.

    Raises
    ------
    ValueError
        For text that is not a time, naming the accepted forms.

    Examples
    --------
    >>> parse_event_time("12:07")
    datetime.datetime(2024, 1, 1, 12, 7, tzinfo=datetime.timezone.utc)
    >>> parse_event_time("2024-03-05 08:00:30").isoformat()
    '2024-03-05T08:00:30+00:00'
    >>> parse_event_time("noon")
    Traceback (most recent call last):
    ...
    ValueError: cannot read event time 'noon': use 'HH:MM[:SS]' or 'YYYY-MM-DD HH:MM[:SS]' (UTC), or a datetime
    """
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    if isinstance(value, str):
        text = value.strip()
        match = _TIME_ONLY.match(text)
        if match:
            base = day if isinstance(day, date) else date.fromisoformat(str(day))
            hour, minute = int(match.group(1)), int(match.group(2))
            second = int(match.group(3) or 0)
            micro = int((match.group(4) or "0").ljust(6, "0"))
            if hour < 24 and minute < 60 and second < 60:
                return datetime.combine(base, time(hour, minute, second, micro), timezone.utc)
        else:
            try:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                parsed = None
            if parsed is not None:
                return parse_event_time(parsed)
    raise ValueError(
        f"cannot read event time {value!r}: use 'HH:MM[:SS]' or 'YYYY-MM-DD HH:MM[:SS]' (UTC), or a datetime"
    )


def parse_duration(value: Any, what: str = "duration", *, allow_zero: bool = True) -> timedelta:
    """Parse ``"10 minutes"``, ``"500 ms"``, a number of seconds or a timedelta.

    Examples
    --------
    >>> parse_duration("10 minutes")
    datetime.timedelta(seconds=600)
    >>> parse_duration(1.5)
    datetime.timedelta(seconds=1, microseconds=500000)
    >>> parse_duration("-1 minute", "advance")
    Traceback (most recent call last):
    ...
    ValueError: advance must not be negative, got '-1 minute'
    """
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        result = timedelta(seconds=value)
    elif isinstance(value, str) and parse_interval(value) is not None:
        result = parse_interval(value)  # type: ignore[assignment]
    else:
        raise ValueError(f"cannot read {what} {value!r}: use text such as '10 minutes' or '500 ms', or seconds")
    if result < timedelta(0):
        raise ValueError(f"{what} must not be negative, got {value!r}")
    if not allow_zero and result == timedelta(0):
        raise ValueError(f"{what} must be positive, got {value!r}")
    return result


def _duration_text(value: timedelta) -> str:
    ms = round(value.total_seconds() * 1000)
    if ms % 60_000 == 0:
        return f"{ms // 60_000} minutes"
    if ms % 1000 == 0:
        return f"{ms // 1000} seconds"
    return f"{ms} milliseconds"


def _time_text(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".")


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def _check_number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _check_ident(what: str, name: Any) -> str:
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"bad {what} name {name!r}: use letters, digits and underscores (e.g. 'key')")
    return name


@dataclass(frozen=True)
class KeyColumn:
    """A generated key column: ``cardinality`` distinct values ``prefix0 .. prefixN-1``.

    ``skew`` 0 spreads rows evenly; larger values put more rows on the low keys (a key's
    index is ``floor(cardinality * u ** (1 + skew))`` for a uniform ``u``).

    Examples
    --------
    >>> KeyColumn("user", cardinality=3, skew=2.0).prefix
    'user_'
    """

    name: str = "key"
    cardinality: int = 10
    skew: float = 0.0
    prefix: str | None = None

    def __post_init__(self) -> None:
        _check_ident("key column", self.name)
        _check_int(f"cardinality of key {self.name!r}", self.cardinality, 1)
        _check_number(f"skew of key {self.name!r}", self.skew, 0.0, 100.0)
        if self.prefix is None:
            object.__setattr__(self, "prefix", f"{self.name}_")
        elif not isinstance(self.prefix, str):
            raise ValueError(f"prefix of key {self.name!r} must be text, got {self.prefix!r}")


@dataclass(frozen=True)
class Disorder:
    """Event-time disorder: a ``share`` of rows arrive late by ``min_delay .. max_delay``.

    On-time rows get event times spread over their batch's interval (``jitter``); late
    rows get their batch's time minus a delay drawn from ``distribution``
    (``uniform``, ``fixed`` = always ``max_delay``, or ``exponential`` with mean
    ``(max_delay - min_delay) / 3`` above ``min_delay``, capped at ``max_delay``).

    Examples
    --------
    >>> Disorder(share=0.2, min_delay="1 minute", max_delay="12 minutes").max_delay
    datetime.timedelta(seconds=720)
    >>> Disorder(distribution="normalish")
    Traceback (most recent call last):
    ...
    ValueError: unknown distribution 'normalish': use one of uniform, fixed, exponential
    """

    share: float = 0.1
    min_delay: Any = "1 minute"
    max_delay: Any = "5 minutes"
    distribution: str = "uniform"
    jitter: bool = True

    def __post_init__(self) -> None:
        _check_number("late share", self.share, 0.0, 1.0)
        low = parse_duration(self.min_delay, "min_delay")
        high = parse_duration(self.max_delay, "max_delay")
        if high < low:
            raise ValueError(f"max_delay ({self.max_delay!r}) must not be below min_delay ({self.min_delay!r})")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {self.distribution!r}: use one of {', '.join(DISTRIBUTIONS)}")
        object.__setattr__(self, "min_delay", low)
        object.__setattr__(self, "max_delay", high)
        object.__setattr__(self, "jitter", bool(self.jitter))


@dataclass(frozen=True)
class PayloadColumn:
    """A generated payload column: ``int`` or ``float`` in ``[low, high)``, or a ``choice``.

    Examples
    --------
    >>> PayloadColumn("amount", "float", low=0, high=100).kind
    'float'
    >>> PayloadColumn("colour", "choice", choices=("red", "blue")).choices
    ('red', 'blue')
    """

    name: str
    kind: str = "int"
    low: float = 0
    high: float = 100
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_ident("payload column", self.name)
        if self.kind not in PAYLOAD_KINDS:
            raise ValueError(f"unknown payload kind {self.kind!r} for {self.name!r}: use one of {', '.join(PAYLOAD_KINDS)}")
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.kind == "choice":
            if not self.choices or not all(isinstance(c, str) for c in self.choices):
                raise ValueError(f"payload {self.name!r} of kind 'choice' needs choices=(text, ...)")
        else:
            for bound in (self.low, self.high):
                if isinstance(bound, bool) or not isinstance(bound, (int, float)):
                    raise ValueError(f"payload {self.name!r} bounds must be numbers, got {bound!r}")
            if not self.low < self.high:
                raise ValueError(f"payload {self.name!r} needs low < high, got {self.low!r} .. {self.high!r}")


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
        _check_ident("time column", self.time_column)
        object.__setattr__(self, "window", parse_duration(self.window, "window", allow_zero=False))
        object.__setattr__(self, "slide", parse_duration(self.slide, "slide", allow_zero=False)
                           if self.slide is not None else self.window)
        if self.watermark is not None:
            object.__setattr__(self, "watermark", parse_duration(self.watermark, "watermark"))
        keys = (self.keys,) if isinstance(self.keys, str) else tuple(self.keys)
        object.__setattr__(self, "keys", tuple(_check_ident("key column", k) for k in keys))

    def describe(self) -> str:
        """The query as the DataFrame calls it stands for."""
        window = f"window({self.time_column!r}, {_duration_text(self.window)!r}, {_duration_text(self.slide)!r})"
        grouping = ", ".join([window] + [repr(k) for k in self.keys])
        head = (f"withWatermark({self.time_column!r}, {_duration_text(self.watermark)!r})."
                if self.watermark is not None else "")
        return f"{head}groupBy({grouping}).count()"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "window_count", "time_column": self.time_column, "window": _duration_text(self.window),
            "slide": _duration_text(self.slide),
            "watermark": None if self.watermark is None else _duration_text(self.watermark),
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
    >>> df = spec.stream(spark)            # doctest: +SKIP
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
        _check_int("rows_per_batch", self.rows_per_batch, 1)
        _check_int("num_partitions", self.num_partitions, 1)
        _check_int("seed", self.seed, -(2**31))
        object.__setattr__(self, "start", parse_event_time(self.start))
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
        _check_ident("event time column", self.event_time)
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
            "start": _time_text(self.start), "advance": _duration_text(self.advance), "seed": self.seed,
            "keys": [asdict(k) for k in self.keys], "payload": [{**asdict(p), "choices": list(p.choices)}
                                                                for p in self.payload],
            "disorder": None, "event_time": self.event_time, "notes": self.notes,
        }
        if self.disorder is not None:
            data["disorder"] = {**asdict(self.disorder), "min_delay": _duration_text(self.disorder.min_delay),
                                "max_delay": _duration_text(self.disorder.max_delay)}
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

    def stream(self, spark: Any) -> Any:
        """The streaming DataFrame of this spec on ``spark`` (see ``workbench.spark.replay_source``)."""
        # The one call from the pure spec into the Spark layer, made only when a user asks
        # for the DataFrame: importing the spec stays free of pyspark.
        from ..spark.replay_source import build_stream

        return build_stream(spark, self)


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
    day: str = _DEFAULT_DAY
    num_partitions: int = 1
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.columns, str) or not isinstance(self.columns, Iterable):
            raise TypeError(f"columns must be a list of names such as ['event_time', 'word'], got {self.columns!r}")
        columns = tuple(_check_ident("script column", c) for c in self.columns)
        if not columns:
            raise ValueError("columns is empty: name at least the event-time column, e.g. ['event_time']")
        if len(set(columns)) != len(columns) or {"value", "timestamp"} & set(columns):
            raise ValueError(f"script columns must be distinct and not 'value'/'timestamp', got {list(columns)}")
        _check_int("num_partitions", self.num_partitions, 1)
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
            "batches": [[[_time_text(row[0]), *row[1:]] for row in batch] for batch in self.batches],
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

    def stream(self, spark: Any) -> Any:
        """The streaming DataFrame delivering exactly these rows (see ``workbench.spark.replay_source``)."""
        # The one call from the pure spec into the Spark layer, made only when a user asks
        # for the DataFrame: importing the spec stays free of pyspark.
        from ..spark.replay_source import build_stream

        return build_stream(spark, self)


def source_from_json(text: str) -> Replay | Script:
    """Read a :class:`Replay` or :class:`Script` from its JSON.

    Examples
    --------
    >>> type(source_from_json(Replay().to_json())).__name__
    'Replay'
    """
    data = json.loads(text)
    return Script.from_dict(data) if data.get("kind") == "script" else Replay.from_dict(data)
