"""One shape of results: Spark DataFrames turned into flat pandas tables.

Spark's window columns are structs (``window = {start, end}``); pandas shows them as
dictionaries, which cannot be sorted, compared or plotted. Every table the workbench hands
to users (a stream's results, a replay's results, state rows) goes through
:func:`flat_select` / :func:`to_flat_pandas`, so that a struct column ``window`` always
becomes ``window_start`` and ``window_end`` and every timestamp is timezone-aware UTC.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["flat_select", "to_flat_pandas", "utc_times", "check_utc_session"]

#: Session time zones that are UTC by another name.
_UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "UCT", "UNIVERSAL", "ZULU", "Z", "+00:00", "GMT+00:00"})


def flat_select(df: Any) -> Any:
    """``df`` with each struct column replaced by one column per field (``window_start``).

    Nested structs are flattened all the way down, names joined with ``_``. Columns of type
    VOID (``F.lit(None)``, ``F.raise_error(...)``) become strings of nulls: results are stored
    as parquet, which pyspark 4.0 refuses to write with a VOID column (4.1 and later store it).

    Examples
    --------
    >>> flat = flat_select(spark.sql("SELECT named_struct('start', 1, 'end', 2) AS window"))  # doctest: +SKIP
    >>> flat.columns                                                                            # doctest: +SKIP
    ['window_start', 'window_end']
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType, StructType

    def leaf(dtype: Any, path: list[str], name: str) -> Any:
        column = F.col(".".join(f"`{p}`" for p in path))
        return (column.cast("string") if isinstance(dtype, NullType) else column).alias(name)

    def leaves(dtype: StructType, path: list[str], name: str) -> list[Any]:
        out = []
        for sub in dtype.fields:
            sub_path, sub_name = [*path, sub.name], f"{name}_{sub.name}"
            if isinstance(sub.dataType, StructType):
                out += leaves(sub.dataType, sub_path, sub_name)
            else:
                out.append(leaf(sub.dataType, sub_path, sub_name))
        return out

    columns = []
    for field in df.schema.fields:
        if isinstance(field.dataType, StructType):
            columns += leaves(field.dataType, [field.name], field.name)
        else:
            columns.append(leaf(field.dataType, [field.name], field.name))
    return df.select(*columns)


def utc_times(frame: pd.DataFrame) -> pd.DataFrame:
    """Datetime columns in UTC: naive ones are taken as UTC (the workbench's sessions run in
    UTC), aware ones (Arrow keeps the session's time zone) are converted.

    Examples
    --------
    >>> utc_times(pd.DataFrame({"t": pd.to_datetime(["2024-01-01 12:00"])}))["t"].dt.tz
    datetime.timezone.utc
    >>> utc_times(pd.DataFrame({"t": pd.to_datetime(["2024-01-01 13:00+01:00"])}))["t"].iloc[0]
    Timestamp('2024-01-01 12:00:00+0000', tz='UTC')
    """
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_datetime64_any_dtype(column):
            continue
        if column.dt.tz is None:
            frame[name] = column.dt.tz_localize("UTC")
        elif str(column.dt.tz) != "UTC":
            frame[name] = column.dt.tz_convert("UTC")
    return frame


def _utc_all_year(zone: str) -> bool:
    """Whether ``zone`` (an IANA name: ``Etc/Zulu``, ``GMT0``...) is UTC in winter and in summer.

    >>> _utc_all_year("Etc/Zulu"), _utc_all_year("GMT0"), _utc_all_year("Europe/London"), _utc_all_year("+00:00")
    (True, True, False, False)
    """
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    try:
        info = ZoneInfo(zone)
    except Exception:  # ZoneInfoNotFoundError and others: not an IANA name ("+00:00" is in _UTC_NAMES)
        return False
    return all(info.utcoffset(datetime(2024, month, 1)) == timedelta(0) for month in (1, 7))


def check_utc_session(spark: Any, what: str) -> None:
    """Refuse, in one line, a session whose time zone is not UTC: ``what`` reads times as UTC.

    Spark hands a batch's times to pandas as the session's wall-clock times, without a zone:
    under another zone a test's rows added as UTC come back hours away from its answers.
    """
    zone = str(spark.conf.get("spark.sql.session.timeZone") or "")
    if zone.upper() not in _UTC_NAMES and not _utc_all_year(zone):
        raise ValueError(
            f"{what} reads and compares times in UTC, but this session's time zone is {zone!r}: run "
            "spark.conf.set('spark.sql.session.timeZone', 'UTC') first (workbench.session() and the "
            "pytest plugin's spark fixture do)")


def to_flat_pandas(df: Any) -> pd.DataFrame:
    """``df`` collected as a flat pandas table: struct columns split, times in UTC.

    Examples
    --------
    >>> to_flat_pandas(spark.table("counts")).columns.tolist()   # doctest: +SKIP
    ['window_start', 'window_end', 'word', 'count']
    """
    return utc_times(flat_select(df).toPandas())
