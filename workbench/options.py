"""Pure validation of the options a user gives when starting a stream (or a session).

Every user-facing entry point (``workbench.start``, ``%%stream``, the replay panel) checks
its options here, before Spark starts anything, so that a mistake gives one clear line
naming the bad value and what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = [
    "SINKS", "OUTPUT_MODES", "Trigger", "parse_trigger", "check_name", "check_sink",
    "check_output_mode", "check_rows", "check_seconds", "check_settings",
]

SINKS: tuple[str, ...] = ("memory", "console")
OUTPUT_MODES: tuple[str, ...] = ("append", "update", "complete")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: a trailing newline is no identifier
_UNITS = {
    "ms": "milliseconds", "milli": "milliseconds", "millis": "milliseconds",
    "millisecond": "milliseconds", "milliseconds": "milliseconds",
    "s": "seconds", "sec": "seconds", "secs": "seconds", "second": "seconds", "seconds": "seconds",
    "m": "minutes", "min": "minutes", "mins": "minutes", "minute": "minutes", "minutes": "minutes",
    "h": "hours", "hour": "hours", "hours": "hours",
}
_MILLIS = {"milliseconds": 1, "seconds": 1000, "minutes": 60_000, "hours": 3_600_000}
_INTERVAL = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([a-z]+)")  # ASCII digits, which Spark reads
#: The longest trigger interval taken: a day (Spark's interval arithmetic overflows far above).
_MAX_INTERVAL_MILLIS = 86_400_000
#: The most rows a preview or console table shows: Spark counts them in a Java int.
MAX_ROWS = 2_147_483_647
#: The most seconds a wait, interval or grace may be: a day (Python's waits overflow far above).
MAX_SECONDS = 86_400.0
_TRIGGER_HELP = (
    "an interval such as '1 second' or '500 ms', 'once', 'available-now', or nothing "
    "for as fast as possible"
)


@dataclass(frozen=True)
class Trigger:
    """A parsed trigger: exactly one of its forms.

    Attributes
    ----------
    kind : str
        ``"default"`` (run batches back to back), ``"processing_time"``, ``"once"`` or
        ``"available_now"``.
    interval : str or None
        Spark's interval text for ``processing_time`` (e.g. ``"1 seconds"``).
    text : str
        How the user wrote it, normalised, for tables and messages.
    """

    kind: str
    interval: str | None = None
    text: str = "default"

    def writer_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``DataStreamWriter.trigger``; empty for the default trigger."""
        if self.kind == "processing_time":
            return {"processingTime": self.interval}
        if self.kind == "once":
            return {"once": True}
        if self.kind == "available_now":
            return {"availableNow": True}
        return {}


def parse_trigger(value: str | Trigger | None) -> Trigger:
    """Parse a trigger as users write it.

    Parameters
    ----------
    value : str, Trigger or None
        ``"1 second"``, ``"500 ms"``, ``"2 minutes"``, ``"once"``, ``"available-now"``
        (or ``"availableNow"``), or None/``"default"`` for back-to-back batches.

    Returns
    -------
    Trigger

    Raises
    ------
    ValueError
        For anything else, naming the value and the allowed forms.

    Examples
    --------
    >>> parse_trigger("1 second").writer_kwargs()
    {'processingTime': '1 seconds'}
    >>> parse_trigger("1.5 minutes").writer_kwargs()
    {'processingTime': '90 seconds'}
    >>> parse_trigger("available-now").kind
    'available_now'
    >>> parse_trigger("continuous 1 second")
    Traceback (most recent call last):
    ...
    ValueError: trigger 'continuous 1 second' is refused: Spark's continuous mode keeps one task per source partition running for the whole query, which on a small local Spark starves every other job (reading results hangs) and it reports no micro-batch progress to monitor; use an interval such as '1 second' (micro-batches, ~100 ms latency)
    >>> parse_trigger("soon")
    Traceback (most recent call last):
    ...
    ValueError: unknown trigger 'soon': use an interval such as '1 second' or '500 ms', 'once', 'available-now', or nothing for as fast as possible
    """
    if isinstance(value, Trigger):
        return value
    if value is None:
        return Trigger("default")
    if not isinstance(value, str):
        raise TypeError(f"trigger must be a string such as '1 second', got {value!r}")
    text = value.strip().lower()
    if text in ("", "default"):
        return Trigger("default")
    if text == "once":
        return Trigger("once", text="once")
    if text.replace("_", "-") in ("available-now", "availablenow"):
        return Trigger("available_now", text="available-now")
    if text.startswith("continuous"):
        # Measured on local[2]: a continuous query holds one core per source partition for
        # its whole life, so reading its memory table (or any other job) waited forever.
        raise ValueError(
            f"trigger {value!r} is refused: Spark's continuous mode keeps one task per source partition "
            "running for the whole query, which on a small local Spark starves every other job (reading "
            "results hangs) and it reports no micro-batch progress to monitor; use an interval such as "
            "'1 second' (micro-batches, ~100 ms latency)"
        )
    match = _INTERVAL.fullmatch(text)
    if match and match.group(2) in _UNITS:
        amount, unit = match.group(1), _UNITS[match.group(2)]
        if float(amount) <= 0:
            raise ValueError(f"trigger interval must be positive, got {value!r}")
        millis = Decimal(amount) * _MILLIS[unit]
        if millis > _MAX_INTERVAL_MILLIS:
            raise ValueError(f"trigger interval {value!r} is longer than a day: use at most '24 hours'")
        if millis != millis.to_integral_value():
            raise ValueError(f"trigger interval {value!r} is not a whole number of milliseconds, which Spark counts in")
        if "." in amount and unit != "seconds":
            # Spark takes a fraction of seconds only ("1.5 minutes" is refused once the query starts).
            amount, unit = format((millis / 1000).normalize(), "f"), "seconds"
        return Trigger("processing_time", interval=f"{amount} {unit}", text=f"{amount} {unit}")
    raise ValueError(f"unknown trigger {value!r}: use {_TRIGGER_HELP}")


def check_name(name: object) -> str:
    """Check a stream name: it also names the memory-sink table, so it must be an identifier.

    Examples
    --------
    >>> check_name("counts")
    'counts'
    >>> check_name("my counts")
    Traceback (most recent call last):
    ...
    ValueError: bad stream name 'my counts': use letters, digits and underscores, starting with a letter or underscore (e.g. 'word_counts')
    """
    if not isinstance(name, str):
        raise TypeError(f"stream name must be a string, got {name!r}")
    if not name.strip():
        raise ValueError("stream name is empty: give a name such as 'word_counts'")
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"bad stream name {name!r}: use letters, digits and underscores, starting with a "
            "letter or underscore (e.g. 'word_counts')"
        )
    return name


def check_sink(sink: object) -> str:
    """Check a sink name (``memory`` or ``console``), case-insensitively.

    Examples
    --------
    >>> check_sink("Console")
    'console'
    """
    if isinstance(sink, str) and sink.strip().lower() in SINKS:
        return sink.strip().lower()
    raise ValueError(f"unknown sink {sink!r}: use one of {', '.join(SINKS)}")


def check_output_mode(mode: object) -> str | None:
    """Check an output mode (``append``, ``update``, ``complete`` or None for Spark's default).

    Examples
    --------
    >>> check_output_mode("Update")
    'update'
    >>> check_output_mode(None) is None
    True
    """
    if mode is None:
        return None
    if isinstance(mode, str) and mode.strip().lower() in OUTPUT_MODES:
        return mode.strip().lower()
    raise ValueError(
        f"unknown output mode {mode!r}: use one of {', '.join(OUTPUT_MODES)} "
        "(or leave it out for Spark's default, append)"
    )


def check_rows(rows: object) -> int:
    """Check a row count for previews and console tables (a whole number from 1 to :data:`MAX_ROWS`).

    Examples
    --------
    >>> check_rows(5)
    5
    >>> check_rows(2**31)
    Traceback (most recent call last):
    ...
    ValueError: rows must be a whole number from 1 to 2147483647, got 2147483648
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= MAX_ROWS:
        raise ValueError(f"rows must be a whole number from 1 to {MAX_ROWS}, got {rows!r}")
    return rows


def check_seconds(what: str, value: object, *, zero_ok: bool = False) -> float:
    """Check a number of seconds (positive, or >= 0 with ``zero_ok``, and at most a day); returns it as a float.

    Examples
    --------
    >>> check_seconds("poll_interval", 0.5)
    0.5
    >>> check_seconds("poll_interval", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: poll_interval must be a positive number of seconds up to 86400 (a day), got inf
    >>> check_seconds("grace", None, zero_ok=True)
    Traceback (most recent call last):
    ...
    ValueError: grace must be a number of seconds from 0 to 86400 (a day), got None
    """
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not number or value < 0 or (value == 0 and not zero_ok) or value > MAX_SECONDS:
        allowed = "a number of seconds from 0 to 86400" if zero_ok else "a positive number of seconds up to 86400"
        raise ValueError(f"{what} must be {allowed} (a day), got {value!r}")
    return float(value)


def check_settings(conf: Mapping[str, Any]) -> None:
    """Refuse, in one line, a setting Spark would not read (before any JVM starts).

    >>> check_settings({"spark.sql.shuffle.partitions": 4})
    >>> check_settings({"conf": {"spark.sql.shuffle.partitions": 4}})
    Traceback (most recent call last):
    ...
    ValueError: workbench.session: 'conf' is not a Spark setting (their names start with 'spark.'); pass settings as keywords, e.g. workbench.session(**{'spark.sql.shuffle.partitions': '4'})
    """
    for key, value in conf.items():
        if not key.startswith("spark."):
            raise ValueError(f"workbench.session: {key!r} is not a Spark setting (their names start with 'spark.'); "
                             "pass settings as keywords, e.g. workbench.session(**{'spark.sql.shuffle.partitions': '4'})")
        if not isinstance(value, (str, int, float, bool)):
            raise TypeError(f"workbench.session: the value of {key!r} must be a string, number or bool, "
                            f"got {type(value).__name__} {value!r:.60}")
