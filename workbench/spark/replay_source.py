"""Streaming DataFrames for replay specs, on Spark's deterministic ``rate-micro-batch`` source.

``rate-micro-batch`` gives batch ``k`` the values ``k * rowsPerBatch ..`` all stamped with
the same time, and the same rows on every run. Everything a :class:`~workbench.replay.Replay`
generates is a Spark expression over ``value`` and the seed (``xxhash64``), so it repeats
exactly; a :class:`~workbench.replay.Script` joins ``value`` to a static table of the
scripted rows, so padding rows (scripted batches shorter than the longest one, and every
batch after the script ends) drop out in the join.

The same column expressions applied to a static frame of ``(timestamp, value)`` rows give
the input rows of any batch without running the stream (:func:`replay_input`), which the
late-row account uses.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..replay.spec import Replay, Script, WindowCount

__all__ = ["build_stream", "replay_input", "script_input", "build_window_count", "rate_stream"]

_UNIT = 1 << 30
_MICROS = 1_000_000


def rate_stream(spark: Any, rows_per_batch: int, num_partitions: int, start_ms: int, advance_ms: int) -> DataFrame:
    """A ``rate-micro-batch`` streaming DataFrame (``timestamp``, ``value``)."""
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", num_partitions)
        .option("startTimestamp", start_ms)
        .option("advanceMillisPerBatch", advance_ms)
        .load()
    )


def _uniform(seed: int, salt: str) -> Column:
    """A deterministic uniform number in [0, 1) per ``value``: the same on every run."""
    hashed = F.xxhash64(F.col("value"), F.lit(seed), F.lit(salt))
    return F.pmod(hashed, F.lit(_UNIT)).cast("double") / F.lit(float(_UNIT))


def _micros(value: timedelta) -> int:
    return round(value.total_seconds() * _MICROS)


def _shift(column: Column, micros: Column) -> Column:
    return F.timestamp_micros(F.unix_micros(column) + micros.cast("bigint"))


def generated_columns(base: DataFrame, spec: Replay) -> DataFrame:
    """Add a Replay's generated columns to a ``(timestamp, value)`` frame, streaming or static."""
    seed = spec.seed
    columns: list[Column] = [F.col("value"), F.col("timestamp")]
    disorder = spec.disorder
    if disorder is None:
        event_time = F.col("timestamp")
    else:
        low, high = _micros(disorder.min_delay), _micros(disorder.max_delay)
        u = _uniform(seed, "delay")
        if disorder.distribution == "fixed":
            delay = F.lit(high)
        elif disorder.distribution == "uniform":
            delay = F.lit(low) + F.floor(u * F.lit(high - low))
        else:  # exponential with mean (high - low) / 3 above low, capped at high
            mean = (high - low) / 3.0
            delay = F.lit(low) + F.least(F.floor(-F.log(F.lit(1.0) - u) * F.lit(mean)), F.lit(high - low))
        on_time = (_shift(F.col("timestamp"), F.floor(_uniform(seed, "jitter") * F.lit(_micros(spec.advance))))
                   if disorder.jitter else F.col("timestamp"))
        event_time = F.when(_uniform(seed, "late") < F.lit(disorder.share),
                            _shift(F.col("timestamp"), -delay)).otherwise(on_time)
    columns.append(event_time.alias(spec.event_time))
    for key in spec.keys:
        index = F.floor(F.lit(float(key.cardinality)) * F.pow(_uniform(seed, f"key:{key.name}"), F.lit(1.0 + key.skew)))
        columns.append(F.concat(F.lit(key.prefix), F.least(index, F.lit(key.cardinality - 1)).cast("string"))
                       .alias(key.name))
    for payload in spec.payload:
        u = _uniform(seed, f"payload:{payload.name}")
        if payload.kind == "choice":
            pick = F.floor(u * F.lit(len(payload.choices))).cast("int") + F.lit(1)
            column = F.element_at(F.array(*[F.lit(c) for c in payload.choices]), pick)
        elif payload.kind == "int":
            span = math.ceil(payload.high) - math.floor(payload.low)
            column = (F.lit(math.floor(payload.low)) + F.floor(u * F.lit(span))).cast("bigint")
        else:
            column = F.lit(float(payload.low)) + u * F.lit(float(payload.high - payload.low))
        columns.append(column.alias(payload.name))
    return base.select(*columns)


#: Arrow's type for each Spark type a script's table has (script times are UTC-aware).
_ARROW_TYPES = {T.LongType(): pa.int64(), T.StringType(): pa.string(), T.DoubleType(): pa.float64(),
                T.BooleanType(): pa.bool_(), T.TimestampType(): pa.timestamp("us", tz="UTC")}


def _script_schema(script: Script, with_batch: bool) -> T.StructType:
    names = {"string": T.StringType(), "bigint": T.LongType(), "double": T.DoubleType(), "boolean": T.BooleanType()}
    fields = [T.StructField("value", T.LongType(), False)]
    if with_batch:
        fields.append(T.StructField("batch", T.LongType(), False))
    fields.append(T.StructField(script.event_time, T.TimestampType(), False))
    fields += [T.StructField(name, names[kind], True) for name, kind in zip(script.columns[1:], script.column_types)]
    return T.StructType(fields)


def _script_table(spark: Any, script: Script) -> DataFrame:
    # Made from an Arrow table, which the JVM reads itself: Python rows would go through a
    # Python worker, whose start-up (about a second on 2 cores) a fresh session pays in the
    # first step of every scripted replay.
    schema = _script_schema(script, with_batch=False)
    rows = [dict(zip(schema.names, (row[0], *row[2:]))) for row in script.table()]
    arrow = pa.schema([pa.field(f.name, _ARROW_TYPES[f.dataType], nullable=f.nullable) for f in schema.fields])
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=arrow), schema)


def build_stream(spark: Any, source: Replay | Script) -> DataFrame:
    """The streaming DataFrame of a :class:`Replay` or :class:`Script`.

    Examples
    --------
    >>> df = build_stream(spark, Script([[("12:07", "dog")]], ["event_time", "word"]))  # doctest: +SKIP
    >>> df.columns                                                                     # doctest: +SKIP
    ['event_time', 'word']
    """
    if isinstance(source, Replay):
        rate = rate_stream(spark, source.rows_per_batch, source.num_partitions, source.start_ms, source.advance_ms)
        return generated_columns(rate, source)
    if isinstance(source, Script):
        rate = rate_stream(spark, source.rows_per_batch, source.num_partitions, 0, 1000)
        table = _script_table(spark, source)
        # Inner join: rate values with no scripted row (padding) produce nothing.
        return rate.select("value").join(F.broadcast(table), "value").select(*source.columns)
    raise TypeError(f"expected a workbench.Replay or workbench.Script, got {type(source).__name__}")


def replay_input(spark: Any, spec: Replay, batches: int) -> pd.DataFrame:
    """The rows of data batches ``0 .. batches-1`` of ``spec``, computed without streaming.

    Columns: ``batch``, ``value``, ``timestamp`` and the generated columns; identical to what
    the stream delivers because the same expressions run over the same ``(timestamp, value)``.
    """
    width = spec.rows_per_batch
    base = spark.range(0, batches * width).select(
        F.col("id").alias("value"),
        F.timestamp_millis(F.lit(spec.start_ms) + F.floor(F.col("id") / F.lit(width)) * F.lit(spec.advance_ms))
        .alias("timestamp"),
    )
    frame = generated_columns(base, spec).toPandas()
    frame.insert(0, "batch", frame["value"] // width)
    return frame.sort_values("value", kind="stable").reset_index(drop=True)


def script_input(script: Script, batches: int) -> pd.DataFrame:
    """The scripted rows of data batches ``0 .. batches-1`` (pure; no Spark needed)."""
    rows = [row for row in script.table() if row[1] < batches]
    frame = pd.DataFrame(rows, columns=["value", "batch", *script.columns])
    frame[script.event_time] = pd.to_datetime(frame[script.event_time], utc=True)
    return frame[["batch", "value", *script.columns]]


def build_window_count(df: DataFrame, query: WindowCount) -> DataFrame:
    """Apply a declarative :class:`~workbench.replay.WindowCount` query to ``df``."""
    seconds = lambda d: f"{round(d.total_seconds() * 1000)} milliseconds"  # noqa: E731
    if query.time_column not in df.columns:
        raise ValueError(f"the query's time column {query.time_column!r} is not in the stream's columns {df.columns}")
    if query.watermark is not None:
        df = df.withWatermark(query.time_column, seconds(query.watermark))
    window = F.window(query.time_column, seconds(query.window), seconds(query.slide))
    return df.groupBy(window, *query.keys).count()
