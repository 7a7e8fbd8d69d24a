"""The values replay specs are built from: event times, durations, counts and names.

Readable text in (``"12:07"``, ``"10 minutes"``), typed values out, and back to the same
text for JSON; plus the small checks every spec runs on its arguments, so that a mistake
raises a ``ValueError`` that names the argument before Spark starts anything. Pure Python.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from ..progress.diagnosis import parse_interval

__all__ = [
    "parse_event_time", "parse_duration", "duration_text", "time_text", "check_int", "check_number",
    "check_ident", "DEFAULT_DAY",
]

_TIME_ONLY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: "key\n" is no identifier
#: The day of time-of-day event times (``"12:07"``) unless a spec names another.
DEFAULT_DAY = "2024-01-01"


def parse_event_time(value: Any, *, day: str | date = DEFAULT_DAY) -> datetime:
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


def duration_text(value: timedelta) -> str:
    """A duration as the text specs store: whole minutes, else seconds, else milliseconds.

    Examples
    --------
    >>> duration_text(timedelta(minutes=10)), duration_text(timedelta(milliseconds=1500))
    ('10 minutes', '1500 milliseconds')
    """
    ms = round(value.total_seconds() * 1000)
    if ms % 60_000 == 0:
        return f"{ms // 60_000} minutes"
    if ms % 1000 == 0:
        return f"{ms // 1000} seconds"
    return f"{ms} milliseconds"


def time_text(value: datetime) -> str:
    """A time as the UTC text specs store (``parse_event_time`` reads it back).

    Examples
    --------
    >>> time_text(datetime(2024, 1, 1, 12, 7, 30, 500000, tzinfo=timezone.utc))
    '2024-01-01 12:07:30.5'
    """
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".")


def check_int(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """``value`` if it is a whole number from ``minimum`` (to ``maximum``), else a ValueError naming ``name``.

    Examples
    --------
    >>> check_int("seed", 3, 0)
    3
    >>> check_int("rows_per_batch", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: rows_per_batch must be a whole number >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be a whole number from {minimum} to {maximum}, got {value!r}")
    return value


def check_number(name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a float if it is a number from ``low`` to ``high``, else a ValueError.

    Examples
    --------
    >>> check_number("late share", 1, 0.0, 1.0)
    1.0
    >>> check_number("late share", 1.5, 0.0, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: late share must be a number from 0 to 1, got 1.5
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def check_ident(what: str, name: Any) -> str:
    """``name`` if it is a valid column name (letters, digits, underscores), else a ValueError.

    Examples
    --------
    >>> check_ident("key column", "user_id")
    'user_id'
    >>> check_ident("key column", "user id")
    Traceback (most recent call last):
    ...
    ValueError: bad key column name 'user id': use letters, digits and underscores (e.g. 'key')
    """
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise ValueError(f"bad {what} name {name!r}: use letters, digits and underscores (e.g. 'key')")
    return name
