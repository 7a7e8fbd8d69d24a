"""transformWithState's state, read back: a processor's variables and its timers.

Spark 4's ``transformWithState`` (Rows) and ``transformWithStateInPandas`` keep, per
grouping key, several named state variables (value, list and map state, each with an
optional TTL) and timers. Spark's State Data Source reads one variable with
``stateVarName=NAME`` and the timers with ``readRegisteredTimers=true``; the operator's
``state-metadata`` row lists the variables (``operatorProperties``, JSON).

Spark facts relied on (measured on 4.3, RocksDB store): a variable's rows have the columns
``key`` (the grouping key's fields), then ``value`` (value state), ``list_element`` (one
row per list element) or ``user_map_key`` / ``user_map_value`` (one row per map key), then
``partition_id``; a variable with a TTL adds its expiry time. Timers come as ``key``,
``expiration_timestamp_ms``, ``partition_id``. The timers' own column families are listed
as ``TimerState`` variables named ``$...Timers...``; asking for one by name fails with a
JVM error wall, so the inspector refuses it first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from ..progress.records import TWS_OPERATORS

__all__ = ["StateVariable", "ProcessorState", "processor_state", "TWS_OPERATORS", "TIMER_COLUMNS",
           "variable_columns", "variable_reading", "timer_columns", "timer_frame"]


#: Columns of the timers table besides the grouping key's.
TIMER_COLUMNS: tuple[str, ...] = ("expires_at", "time_mode", "watermark", "ahead_of_watermark", "fires_in_batch",
                                  "partition_id")

_KINDS = {"ValueState": "value", "ListState": "list", "MapState": "map"}
_TIME_MODES = {"EventTime": "event time", "ProcessingTime": "processing time", "None": "none", "NoTime": "none"}
# Spark's names for a variable's parts, in the words the inspector's columns use.
_PARTS = {"key": "", "value": "", "list_element": "", "user_map_key": "map_key", "user_map_value": ""}
_TTL_FIELDS = ("ttlExpirationMs", "expiration_timestamp_ms", "ttl_expiration_ms")


@dataclass(frozen=True)
class StateVariable:
    """One state variable a ``StatefulProcessor`` declared in ``init``.

    Examples
    --------
    >>> StateVariable("count", "value", False).describe()
    'count (value)'
    >>> StateVariable("seen", "list", True).describe()
    'seen (list, TTL)'
    """

    name: str
    kind: str
    ttl: bool

    def describe(self) -> str:
        """``name (kind[, TTL])``: how summaries list the variable."""
        return f"{self.name} ({self.kind}{', TTL' if self.ttl else ''})"


@dataclass(frozen=True)
class ProcessorState:
    """What a transformWithState operator keeps: its variables, time mode and timers.

    Examples
    --------
    >>> state = processor_state('{"timeMode":"EventTime","stateVariables":['
    ...     '{"stateName":"count","stateVariableType":"ValueState","ttlEnabled":false},'
    ...     '{"stateName":"$eventTimers_keyToTimestamp","stateVariableType":"TimerState","ttlEnabled":false}]}')
    >>> state.names(), state.time_mode, state.has_timers
    (['count'], 'event time', True)
    >>> state.describe()
    'count (value); timers: event time'
    """

    time_mode: str
    variables: tuple[StateVariable, ...]
    has_timers: bool

    def names(self) -> list[str]:
        """The variables' names, as ``init`` declared them."""
        return [v.name for v in self.variables]

    def describe(self) -> str:
        """One line: each variable with its kind and TTL, then the timers' time mode."""
        parts = [v.describe() for v in self.variables]
        if self.has_timers:
            parts.append(f"timers: {self.time_mode}")
        return "; ".join(parts)

    def pick(self, variable: Any, stream: str) -> StateVariable:
        """The variable named ``variable`` (None: the only one), or one line listing the valid names."""
        if variable is not None and not isinstance(variable, str):
            raise TypeError(f"variable must be a state variable's name (str), got {variable!r}")
        if not self.variables:
            only = ", only timers: read them with timers()" if self.has_timers else ""
            raise ValueError(f"stream {stream!r}'s processor keeps no state variables{only}")
        known = ", ".join(repr(n) for n in self.names())
        if variable is None:
            if len(self.variables) != 1:
                raise ValueError(f"stream {stream!r}'s processor has {len(self.variables)} state variables: pick one "
                                 f"with variable= (one of {known})")
            return self.variables[0]
        for candidate in self.variables:
            if candidate.name == variable:
                return candidate
        hint = " (timers are read with timers())" if variable.startswith("$") else ""
        raise ValueError(f"unknown state variable {variable!r} in stream {stream!r}{hint}: use one of {known}")


def processor_state(properties: str | None) -> ProcessorState:
    """Parse the ``operatorProperties`` JSON of a transformWithState operator.

    Examples
    --------
    >>> processor_state(None)
    ProcessorState(time_mode='none', variables=(), has_timers=False)
    """
    data = json.loads(properties) if properties else {}
    variables, timers = [], False
    for item in data.get("stateVariables") or ():
        kind = str(item.get("stateVariableType", ""))
        if kind == "TimerState":
            timers = True
        elif kind in _KINDS and not str(item.get("stateName", "")).startswith("$"):
            variables.append(StateVariable(str(item["stateName"]), _KINDS[kind], bool(item.get("ttlEnabled"))))
    mode = str(data.get("timeMode", "None"))
    return ProcessorState(_TIME_MODES.get(mode, mode), tuple(sorted(variables, key=lambda v: v.name)), timers)


def variable_reading(operator: Any, variable: Any, stream: str) -> tuple[dict[str, Any], Any]:
    """The state reader's options and column flattener for ``variable`` of ``operator``.

    ``operator`` is a :class:`~.state_operators.StateOperator`; for one that is not transformWithState
    there are no options and ``variable`` must be None.
    """
    if operator.name in TWS_OPERATORS:
        chosen = processor_state(operator.properties).pick(variable, stream)
        return {"stateVarName": chosen.name}, variable_columns
    if variable is not None:
        raise ValueError(f"variable={variable!r} applies only to transformWithState; operator {operator.label()} "
                         "has no named state variables: leave variable out")
    return {}, None


def _fields(dtype: Any, path: list[str], prefix: str) -> list[tuple[list[str], str, Any]]:
    """Leaf fields of a struct as (path, column name, type); a bare value is one column.

    A variable with a TTL wraps each value as ``{value: {...}, ttlExpirationMs}``: the
    wrapper is dropped, the expiry kept under its own name.
    """
    from pyspark.sql.types import StructType

    if not isinstance(dtype, StructType):
        return [(path, prefix or path[-1], dtype)]
    names = [f.name for f in dtype.fields]
    out = []
    for sub in dtype.fields:
        wrapper = sub.name == "value" and "ttlExpirationMs" in names
        label = prefix if wrapper else f"{prefix}_{sub.name}" if prefix else sub.name
        out += _fields(sub.dataType, [*path, sub.name], label)
    return out


def variable_columns(df: Any) -> Any:
    """A state variable's rows as flat columns: key fields, then the value's fields.

    A name the key already uses gets a ``value_`` prefix; a map key's fields get
    ``map_key_`` only when they clash too; a TTL expiry (milliseconds) becomes a UTC
    timestamp column ``expires_at``.
    """
    from pyspark.sql import functions as F

    taken: set[str] = set()
    columns = []
    for field in df.schema.fields:
        if field.name == "partition_id":
            continue
        if field.name in _TTL_FIELDS:
            columns.append(F.timestamp_millis(F.col(f"`{field.name}`")).alias("expires_at"))
            continue
        for path, label, _ in _fields(field.dataType, [field.name], ""):
            if path[-1] in _TTL_FIELDS:
                columns.append(F.timestamp_millis(F.col(".".join(f"`{p}`" for p in path))).alias("expires_at"))
                continue
            if label in taken:
                label = f"{_PARTS.get(field.name) or 'value'}_{label}"
            taken.add(label)
            columns.append(F.col(".".join(f"`{p}`" for p in path)).alias(label))
    columns.append(F.col("partition_id"))
    return df.select(*columns)


def timer_columns(df: Any) -> Any:
    """Registered timers as flat columns: key fields, ``expires_at`` (UTC), ``partition_id``."""
    from pyspark.sql import functions as F

    columns = [F.col(".".join(f"`{p}`" for p in path)).alias(label)
               for path, label, _ in _fields(df.schema["key"].dataType, ["key"], "")]
    columns.append(F.timestamp_millis(F.col("expiration_timestamp_ms")).alias("expires_at"))
    columns.append(F.col("partition_id"))
    return df.select(*columns)


def timer_frame(frame: pd.DataFrame, time_mode: str, batch_id: int, watermarks: Mapping[int, Any]) -> pd.DataFrame:
    """Timers held after batch ``batch_id``, with their ``time_mode`` and, for event time, when they fire.

    ``watermarks`` maps each batch of the stream's history to the watermark it ran with.
    ``watermark`` is batch ``batch_id``'s, ``ahead_of_watermark`` how far each timer's expiry
    is ahead of it, and ``fires_in_batch`` the first later batch whose watermark is at or past
    the expiry (an event-time timer fires in that batch); it is missing (``<NA>``) while the
    history does not reach such a batch, and for processing-time timers.

    Examples
    --------
    >>> t = pd.Timestamp("2024-01-01 10:02", tz="UTC")
    >>> frame = pd.DataFrame({"user": ["a", "b"], "expires_at": [t, t + pd.Timedelta(hours=1)],
    ...                       "partition_id": [0, 0]})
    >>> marks = {3: t - pd.Timedelta(minutes=2), 4: t - pd.Timedelta(minutes=1), 5: t}
    >>> timers = timer_frame(frame, "event time", 3, marks)
    >>> timers["ahead_of_watermark"].tolist()
    [Timedelta('0 days 00:02:00'), Timedelta('0 days 01:02:00')]
    >>> timers["fires_in_batch"].tolist()
    [5, <NA>]
    """
    watermark = watermarks.get(batch_id)
    event_time = time_mode == "event time"
    mark = pd.Timestamp(watermark) if watermark is not None and event_time else pd.NaT
    frame = frame.copy()
    partitions = frame.pop("partition_id")
    frame["time_mode"] = time_mode
    frame["watermark"] = pd.Series([mark] * len(frame), index=frame.index, dtype="datetime64[ns, UTC]")
    frame["ahead_of_watermark"] = frame["expires_at"] - frame["watermark"]
    # A timer still held after batch_id did not fire in it: look only at the batches after it.
    later = sorted((b, pd.Timestamp(w)) for b, w in watermarks.items() if b > batch_id and w is not None)
    frame["fires_in_batch"] = pd.array(
        [next((b for b, w in later if w >= expiry), pd.NA) if event_time and pd.notna(expiry) else pd.NA
         for expiry in frame["expires_at"]], dtype="Int64")
    frame["partition_id"] = partitions
    return frame
