"""Typed progress records: the one place where Spark's progress JSON becomes Python objects.

Spark reports a streaming query's progress as JSON (``StreamingQuery.lastProgress``,
``recentProgress`` and listener events). :meth:`BatchProgress.from_json` turns one such
dictionary into a frozen :class:`BatchProgress`; nothing past the poller handles raw dicts.
Field names are snake_case; Spark's camelCase survives only in the JSON keys read here.
:func:`parse_interval` reads an interval as Spark prints it (in plans and options).
"""

from __future__ import annotations

import re
import sys
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Iterator, Mapping

__all__ = ["BatchProgress", "OperatorProgress", "parse_spark_time", "parse_interval", "DURATION_PARTS",
           "TWS_OPERATORS", "AGGREGATION_OPERATORS"]

#: ``durationMs`` keys that make up a batch, in the order the monitor stacks them,
#: mapped to the record attribute that holds each.
DURATION_PARTS: dict[str, str] = {
    "addBatch": "add_batch_ms",
    "getBatch": "get_batch_ms",
    "latestOffset": "latest_offset_ms",
    "queryPlanning": "query_planning_ms",
    "walCommit": "wal_commit_ms",
    "commitOffsets": "commit_offsets_ms",
}


#: Java's ISO format signs a year only past 9999 or before year 1, where Python's datetime ends.
_OUT_OF_RANGE = re.compile(r"[+-]\d{4,}-")
_LATEST = datetime.max.replace(tzinfo=timezone.utc)
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


@lru_cache(maxsize=1024)
def parse_spark_time(text: str | None) -> datetime | None:
    """Parse a timestamp as Spark writes it in progress JSON (``2024-01-01T12:07:00.000Z``).

    Parameters
    ----------
    text : str or None
        ISO-8601 text in UTC with a trailing ``Z``, or None.

    Returns
    -------
    datetime or None
        A timezone-aware UTC datetime, or None when Spark gave none.

    Examples
    --------
    >>> parse_spark_time("2024-01-01T12:07:00.000Z")
    datetime.datetime(2024, 1, 1, 12, 7, tzinfo=datetime.timezone.utc)
    >>> parse_spark_time(None) is None
    True

    A time past year 9999 (event times in milliseconds read as seconds, say) is the latest
    time Python has, and one before year 1 the earliest: the batch's record stays, and its
    charts show the time as far off as it is.

    >>> parse_spark_time("+55840-11-09T23:13:20.000Z").year
    9999
    """
    if not text:
        return None
    if _OUT_OF_RANGE.match(text):
        return _EARLIEST if text.startswith("-") else _LATEST
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


_UNITS = {
    "microsecond": timedelta(microseconds=1), "millisecond": timedelta(milliseconds=1),
    "second": timedelta(seconds=1), "minute": timedelta(minutes=1), "hour": timedelta(hours=1),
    "day": timedelta(days=1), "week": timedelta(weeks=1),
}
_UNIT_ALIASES = {"us": "microsecond", "ms": "millisecond", "s": "second", "sec": "second",
                 "min": "minute", "h": "hour", "d": "day"}
_INTERVAL_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)")


def parse_interval(text: str) -> timedelta | None:
    """Parse an interval as Spark prints it (``10 minutes``, ``1 hour 30 minutes``).

    Returns None when the text is not an interval.

    Examples
    --------
    >>> parse_interval("10 minutes"), parse_interval("interval 1 hour 30 minutes")
    (datetime.timedelta(seconds=600), datetime.timedelta(seconds=5400))
    >>> parse_interval("soon") is None
    True
    """
    text = text.strip().strip("'\"").lower()
    if text.startswith("interval"):
        text = text[len("interval"):]
    parts = _INTERVAL_PART.findall(text)
    if not parts or _INTERVAL_PART.sub("", text).strip(" ,"):
        return None
    total = timedelta(0)
    for number, unit in parts:
        unit = _UNIT_ALIASES.get(unit, unit.rstrip("s"))
        if unit not in _UNITS:
            return None
        total += float(number) * _UNITS[unit]
    return total


#: Spark's names for transformWithState operators (Scala, Python Rows, pandas).
TWS_OPERATORS: frozenset[str] = frozenset({"transformWithStateExec", "transformWithStateInPandasExec",
                                           "transformWithStateInPySparkExec"})

#: Spark's names for the operators of a streaming aggregation (``groupBy``, windows, session windows);
#: a join (``symmetricHashJoin``) or ``dropDuplicates`` (``dedupe``) is stateful but no aggregation.
AGGREGATION_OPERATORS: frozenset[str] = frozenset({"stateStoreSave", "sessionWindowStateStoreSaveExec"})

#: One shared empty mapping for the many records without custom or observed metrics.
_NO_METRICS: Mapping[str, Any] = MappingProxyType({})


def _name(value: Any) -> str | None:
    # Ids, names and metric keys repeat in every batch of a stream: keep one copy of each.
    return None if value is None else sys.intern(str(value))


class _Metrics(Mapping[str, int]):
    """An operator's custom metrics in a batch: the names shared with every batch that has the
    same ones, the values packed (RocksDB's state store reports 38 per operator and batch:
    about 480 bytes so, against 1,900 as a dict of Python ints)."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: array) -> None:
        self._index, self._values = index, values

    def __getitem__(self, key: str) -> int:
        return self._values[self._index[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(self))


@lru_cache(maxsize=256)
def _metric_index(names: tuple[str, ...]) -> Mapping[str, int]:
    return MappingProxyType({sys.intern(name): i for i, name in enumerate(names)})


def _metrics(values: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not values:
        return _NO_METRICS
    if all(type(v) is int and -(2**63) <= v < 2**63 for v in values.values()):
        return _Metrics(_metric_index(tuple(map(str, values))), array("q", values.values()))
    return {sys.intern(str(k)): v for k, v in values.items()}  # not Spark's longs: kept as given


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _count(value: Any) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def _source_sum(sources: Any, key: str) -> float | None:
    values = [source[key] for source in sources if source.get(key) is not None]
    return sum(values) if values else None


def _float(value: Any) -> float | None:
    # Spark writes NaN rates for batches that took no time; keep them as NaN floats.
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class OperatorProgress:
    """Progress of one stateful operator in one micro-batch (``stateOperators[i]``).

    Examples
    --------
    >>> op = OperatorProgress.from_json({"operatorName": "stateStoreSave", "numRowsTotal": 4})
    >>> op.num_rows_total, op.num_rows_updated
    (4, 0)
    """

    operator_name: str
    num_rows_total: int = 0
    num_rows_updated: int = 0
    num_rows_removed: int = 0
    num_rows_dropped_by_watermark: int = 0
    memory_used_bytes: int = 0
    num_shuffle_partitions: int | None = None
    num_state_store_instances: int | None = None
    custom_metrics: Mapping[str, int] = field(default_factory=lambda: _NO_METRICS)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OperatorProgress:
        """Build a record from one element of Spark's ``stateOperators`` list."""
        return cls(
            operator_name=_name(data.get("operatorName", "")),
            num_rows_total=int(data.get("numRowsTotal", 0) or 0),
            num_rows_updated=int(data.get("numRowsUpdated", 0) or 0),
            num_rows_removed=int(data.get("numRowsRemoved", 0) or 0),
            num_rows_dropped_by_watermark=int(data.get("numRowsDroppedByWatermark", 0) or 0),
            memory_used_bytes=int(data.get("memoryUsedBytes", 0) or 0),
            num_shuffle_partitions=_int(data.get("numShufflePartitions")),
            num_state_store_instances=_int(data.get("numStateStoreInstances")),
            custom_metrics=_metrics(data.get("customMetrics")),
        )


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """What Spark reported about one micro-batch of a streaming query.

    Build it with :meth:`from_json` from Spark's progress dictionary. Durations are in
    milliseconds (None where Spark reported none), times are timezone-aware UTC datetimes.

    Examples
    --------
    >>> record = BatchProgress.from_json({
    ...     "id": "q", "runId": "r", "name": "counts", "batchId": 3,
    ...     "timestamp": "2024-01-01T00:00:01.000Z", "numInputRows": 10,
    ...     "durationMs": {"addBatch": 15, "triggerExecution": 80},
    ...     "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"},
    ...     "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 2}],
    ... })
    >>> record.batch_id, record.add_batch_ms, record.state_rows_total
    (3, 15, 2)
    >>> record.is_idle_report
    False
    """

    batch_id: int
    timestamp: datetime | None
    query_id: str = ""
    run_id: str = ""
    name: str | None = None
    batch_duration_ms: int | None = None
    num_input_rows: int = 0
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    add_batch_ms: int | None = None
    get_batch_ms: int | None = None
    latest_offset_ms: int | None = None
    query_planning_ms: int | None = None
    trigger_execution_ms: int | None = None
    wal_commit_ms: int | None = None
    commit_offsets_ms: int | None = None
    event_time_min: datetime | None = None
    event_time_max: datetime | None = None
    event_time_avg: datetime | None = None
    watermark: datetime | None = None
    operators: tuple[OperatorProgress, ...] = ()
    num_output_rows: int | None = None
    sink_description: str | None = None
    #: ``observedMetrics``: name -> {metric: value}, from ``Dataset.observe`` in the query.
    observed_metrics: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _NO_METRICS)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchProgress:
        """Build a record from Spark's progress dictionary (``json.loads(progress.json)``)."""
        durations = data.get("durationMs") or {}
        event_time = data.get("eventTime") or {}
        sink = data.get("sink") or {}
        parts = {attr: _int(durations.get(key)) for key, attr in DURATION_PARTS.items()}
        sources = data.get("sources") or ()
        # Spark Connect's progress JSON leaves out the totals that Spark derives from the
        # sources; derive them the same way.
        num_input_rows = data.get("numInputRows", _source_sum(sources, "numInputRows"))
        input_rate = data.get("inputRowsPerSecond", _source_sum(sources, "inputRowsPerSecond"))
        processed_rate = data.get(
            "processedRowsPerSecond", _source_sum(sources, "processedRowsPerSecond")
        )
        return cls(
            batch_id=int(data["batchId"]),
            timestamp=parse_spark_time(data.get("timestamp")),
            query_id=_name(data.get("id", "")),
            run_id=_name(data.get("runId", "")),
            name=_name(data.get("name")),
            batch_duration_ms=_int(data.get("batchDuration")),
            num_input_rows=int(num_input_rows or 0),
            input_rows_per_second=_float(input_rate),
            processed_rows_per_second=_float(processed_rate),
            trigger_execution_ms=_int(durations.get("triggerExecution")),
            event_time_min=parse_spark_time(event_time.get("min")),
            event_time_max=parse_spark_time(event_time.get("max")),
            event_time_avg=parse_spark_time(event_time.get("avg")),
            watermark=parse_spark_time(event_time.get("watermark")),
            operators=tuple(OperatorProgress.from_json(op) for op in data.get("stateOperators") or ()),
            # Spark writes -1 when a sink cannot count (foreachBatch, files): unknown, not negative.
            num_output_rows=_count(sink.get("numOutputRows")),
            sink_description=_name(sink.get("description")),
            observed_metrics=(
                {_name(k): dict(v or {}) for k, v in data["observedMetrics"].items()}
                if data.get("observedMetrics") else _NO_METRICS
            ),
            **parts,
        )

    @property
    def is_idle_report(self) -> bool:
        """True for Spark's idle re-report, which is not a batch.

        While no data arrives Spark re-reports progress every 10 s under the *next* batch
        id, with no rows and only ``latestOffset``/``triggerExecution`` timed. A batch that
        really ran (even an empty, watermark-only one) always times ``addBatch``.
        """
        return self.num_input_rows == 0 and self.add_batch_ms is None

    @property
    def known_watermark(self) -> datetime | None:
        """The watermark, or None while the query has none yet.

        A query with a watermark reports Spark's initial watermark, epoch 0
        (``1970-01-01 00:00:00``), until its first event times are seen: it means "no
        watermark yet", so it is None here and missing (``NaT``) in history tables.
        :attr:`watermark` keeps the value exactly as Spark reported it.

        Examples
        --------
        >>> first = BatchProgress.from_json({"batchId": 0, "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}})
        >>> first.known_watermark is None, first.watermark.year
        (True, 1970)
        """
        watermark = self.watermark
        return None if watermark is None or watermark.timestamp() <= 0 else watermark

    @property
    def watermark_gap_seconds(self) -> float | None:
        """Newest event time minus watermark, in seconds; None where either is unknown.

        How far the watermark trails the data of this batch: rows older than the watermark
        are late. Spark's initial watermark (epoch 0, "none yet") counts as unknown, so a
        stream without a watermark has no gap rather than a gap of decades.

        Examples
        --------
        >>> record = BatchProgress.from_json({"batchId": 1, "eventTime": {
        ...     "max": "2024-01-01T00:00:30.500Z", "watermark": "2024-01-01T00:00:20.000Z"}})
        >>> record.watermark_gap_seconds
        10.5
        >>> BatchProgress.from_json({"batchId": 0, "eventTime": {
        ...     "max": "2024-01-01T00:00:30.000Z", "watermark": "1970-01-01T00:00:00.000Z"}}
        ... ).watermark_gap_seconds is None
        True
        """
        newest, watermark = self.event_time_max, self.known_watermark
        if newest is None or watermark is None:
            return None
        return (newest - watermark).total_seconds()

    @property
    def state_rows_total(self) -> int:
        """Rows held in state, summed over the stateful operators."""
        return sum(op.num_rows_total for op in self.operators)

    @property
    def state_rows_updated(self) -> int:
        """State rows updated in this batch, summed over operators."""
        return sum(op.num_rows_updated for op in self.operators)

    @property
    def state_rows_removed(self) -> int:
        """State rows removed (evicted) in this batch, summed over operators."""
        return sum(op.num_rows_removed for op in self.operators)

    @property
    def state_rows_dropped_by_watermark(self) -> int:
        """Spark's ``numRowsDroppedByWatermark`` summed over operators.

        Spark counts late *aggregated groups* here (after partial aggregation), not input
        rows; see the replay panel's late-row account for a per-row count.
        """
        return sum(op.num_rows_dropped_by_watermark for op in self.operators)

    @property
    def state_memory_bytes(self) -> int:
        """State store memory in bytes, summed over operators."""
        return sum(op.memory_used_bytes for op in self.operators)

    def _custom_sum(self, *names: str) -> int:
        return sum(int(op.custom_metrics.get(name, 0) or 0) for op in self.operators for name in names)

    @property
    def timers_registered(self) -> int:
        """Timers a transformWithState processor registered in this batch (``numRegisteredTimers``)."""
        return self._custom_sum("numRegisteredTimers")

    @property
    def timers_deleted(self) -> int:
        """Timers removed in this batch (``numDeletedTimers``).

        Spark 4.3's Python processors count a timer that fired here, as well as one the
        handler deleted, and leave ``numExpiredTimers`` at 0 (measured).
        """
        return self._custom_sum("numDeletedTimers")

    @property
    def timers_expired(self) -> int:
        """Timers Spark reported as expired in this batch (``numExpiredTimers``)."""
        return self._custom_sum("numExpiredTimers")

    @property
    def state_variables(self) -> int:
        """State variables of transformWithState processors (value, list and map states).

        Spark counts each variable once per state store instance (a processor's two
        variables on two shuffle partitions read 4): the count is per instance.

        Examples
        --------
        >>> op = {"operatorName": "transformWithStateInPandasExec", "numStateStoreInstances": 2,
        ...       "customMetrics": {"numValueStateVars": 2, "numListStateVars": 2, "numRegisteredTimers": 1}}
        >>> record = BatchProgress.from_json({"batchId": 0, "stateOperators": [op]})
        >>> record.state_variables, record.timers_registered, record.state_values_removed_by_ttl
        (2, 1, 0)
        """
        names = ("numValueStateVars", "numListStateVars", "numMapStateVars")
        return sum(round(sum(int(op.custom_metrics.get(n, 0) or 0) for n in names) / (op.num_state_store_instances or 1))
                   for op in self.operators)

    @property
    def state_values_removed_by_ttl(self) -> int:
        """State values a TTL removed in this batch (``numValuesRemovedDueToTTLExpiry``)."""
        return self._custom_sum("numValuesRemovedDueToTTLExpiry")
