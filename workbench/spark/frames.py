"""One shape of results: Spark DataFrames turned into flat pandas tables.

Spark's window columns are structs (``window = {start, end}``); pandas shows them as
dictionaries, which cannot be sorted, compared or plotted. Every table the workbench hands
to users (a stream's results, a replay's results, state rows) goes through
:func:`flat_select` / :func:`to_flat_pandas`, so that a struct column ``window`` always
becomes ``window_start`` and ``window_end``. :func:`to_flat_pandas` and :func:`rows_to_pandas`
give TIMESTAMP columns as timezone-aware UTC times whatever the session's time zone, and
TIMESTAMP_NTZ columns as times without a zone, as Spark keeps them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["flat_select", "to_flat_pandas", "times_as_micros", "rows_to_pandas", "utc_times", "check_utc_session"]

#: Session time zones that are UTC by another name.
_UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "UCT", "UNIVERSAL", "ZULU", "Z", "+00:00", "GMT+00:00"})

#: Stands for a null TIMESTAMP in :func:`times_as_micros` (no time Spark holds is this far back),
#: so that its columns stay integers: pandas turns integer columns with nulls into floats,
#: which lose microseconds past the year 2255.
_NO_TIME = -(2**63)


def _quoted(name: str) -> str:
    """``name`` as one part of a Spark column reference: in backticks, its backticks doubled.

    >>> _quoted("a`b"), _quoted("a.b")
    ('`a``b`', '`a.b`')
    """
    return "`" + name.replace("`", "``") + "`"


def flat_select(df: Any) -> Any:
    """``df`` with each struct column replaced by one column per field (``window_start``).

    Nested structs are flattened all the way down, names joined with ``_``. A flattened
    name never repeats another (Spark compares names ignoring case): the columns that are not
    structs keep their names, and a field whose joined name is taken (a struct ``a`` with a
    field ``x`` beside a column ``a_x``) is named by its path, ``a.x``; were that taken too,
    the first free of ``a.x_2``, ``a.x_3``... Names may hold any character (backticks too).
    Columns of type VOID (``F.lit(None)``, ``F.raise_error(...)``) become strings of nulls:
    results are stored as parquet, which pyspark 4.0 refuses to write with a VOID column (4.1
    and later store it).

    Examples
    --------
    >>> flat = flat_select(spark.sql("SELECT named_struct('start', 1, 'end', 2) AS window"))  # doctest: +SKIP
    >>> flat.columns                                                                            # doctest: +SKIP
    ['window_start', 'window_end']
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType, StructType

    fields = df.schema.fields
    taken = {f.name.lower() for f in fields if not isinstance(f.dataType, StructType)}

    def free(path: list[str]) -> str:
        name = "_".join(path)
        if name.lower() not in taken:
            return name
        name = dotted = ".".join(path)
        number = 1
        while name.lower() in taken:
            number += 1
            name = f"{dotted}_{number}"
        return name

    def leaf(dtype: Any, path: list[str]) -> Any:
        name = path[0] if len(path) == 1 else free(path)
        taken.add(name.lower())
        column = F.col(".".join(_quoted(p) for p in path))
        return (column.cast("string") if isinstance(dtype, NullType) else column).alias(name)

    def leaves(dtype: Any, path: list[str]) -> list[Any]:
        if not isinstance(dtype, StructType):
            return [leaf(dtype, path)]
        return [column for sub in dtype.fields for column in leaves(sub.dataType, [*path, sub.name])]

    return df.select(*[column for field in fields for column in leaves(field.dataType, [field.name])])


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
    """``df`` collected as a flat pandas table: struct columns split (see :func:`flat_select`).

    TIMESTAMP columns are ``datetime64[ns, UTC]`` (microseconds past the year 2262), the same
    instants whatever the session's time zone (``spark.sql.session.timeZone``); TIMESTAMP_NTZ
    columns stay without a zone.

    Examples
    --------
    >>> to_flat_pandas(spark.table("counts")).columns.tolist()   # doctest: +SKIP
    ['window_start', 'window_end', 'word', 'count']
    """
    flat = flat_select(df)
    return _times_from_micros(times_as_micros(flat).toPandas(), flat.schema)


def times_as_micros(flat: Any) -> Any:
    """``flat`` (a DataFrame of unique column names) with each TIMESTAMP column as LONG
    microseconds since the epoch, for :func:`rows_to_pandas`.

    Spark hands TIMESTAMP values to Python as wall-clock times: to pandas in the session's
    time zone, as ``datetime`` objects in the Python process's. Both are ambiguous once a
    year (when clocks go back); the microseconds are the instant itself.

    Examples
    --------
    >>> times_as_micros(spark.sql("SELECT timestamp'1970-01-01 00:00:01Z' AS t")).first().t  # doctest: +SKIP
    1000000
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    return flat.select(*[
        F.coalesce(F.unix_micros(F.col(_quoted(f.name))), F.lit(_NO_TIME)).alias(f.name)
        if isinstance(f.dataType, TimestampType) else F.col(_quoted(f.name))
        for f in flat.schema.fields
    ])


def rows_to_pandas(rows: list[Any], schema: Any) -> pd.DataFrame:
    """Rows collected from :func:`times_as_micros` of a DataFrame whose schema is ``schema``,
    as the pandas table :func:`to_flat_pandas` gives for them (same columns, dtypes, times).

    Examples
    --------
    >>> flat = flat_select(spark.table("counts"))                                         # doctest: +SKIP
    >>> rows_to_pandas(times_as_micros(flat).tail(5), flat.schema)                        # doctest: +SKIP
    """
    from pyspark.sql import types as T

    frame = pd.DataFrame([tuple(r) for r in rows], columns=pd.Index(schema.names, dtype=object))
    integers = {T.ByteType: "int8", T.ShortType: "int16", T.IntegerType: "int32", T.LongType: "int64"}
    for i, field in enumerate(schema.fields):
        column, kind = frame.iloc[:, i], type(field.dataType)
        if kind is T.TimestampNTZType:
            column = _zone_less(column)
        elif kind in integers:
            column = column.astype("float64" if column.isna().any() else integers[kind])
        elif kind in (T.FloatType, T.DoubleType):
            column = column.astype("float32" if kind is T.FloatType else "float64")
        elif kind is T.BooleanType and not column.isna().any():
            column = column.astype("bool")
        else:
            continue
        frame.isetitem(i, column)
    return _times_from_micros(frame, schema)


def _zone_less(column: pd.Series) -> pd.Series:
    """Naive ``datetime`` values (None: NaT) as ``datetime64[ns]``, microseconds past 2262."""
    try:
        return pd.to_datetime(column).astype("datetime64[ns]")
    except pd.errors.OutOfBoundsDatetime:
        return column.astype("datetime64[us]")


def _times_from_micros(frame: pd.DataFrame, schema: Any) -> pd.DataFrame:
    """``frame``'s TIMESTAMP columns (by position in ``schema``), held as microseconds, as UTC times."""
    from pyspark.sql.types import TimestampType

    for i, field in enumerate(schema.fields):
        if isinstance(field.dataType, TimestampType):
            micros = frame.iloc[:, i].to_numpy(dtype="int64")
            times = pd.Series(micros.view("datetime64[us]"), index=frame.index)
            try:
                times = times.astype("datetime64[ns]")
            except pd.errors.OutOfBoundsDatetime:
                pass
            frame.isetitem(i, times.dt.tz_localize("UTC"))
    return frame
