"""A transformWithState processor in the monitor's charts: timers, state variables and TTL.

Once progress shows a transformWithState operator, :class:`TimerTraces` adds to the
*State* chart one line per batch for the timers registered, deleted and expired, the state
variables and the values a TTL removed, and to the *Watermark* chart (when the query has a
watermark) a marker on each batch in which timers left the store. Spark 4.3's Python
processors count a timer that fired as deleted and leave ``numExpiredTimers`` at 0, so
progress cannot tell a fired timer from one the processor deleted itself: the marker says
"fired or deleted", and ``handle.timers()`` tells which timers are still waiting.

Pure functions of progress records; the monitor calls :meth:`TimerTraces.draw` with the
points it is about to send.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..progress.records import TWS_OPERATORS, BatchProgress
from .monitor_charts import known_watermark, utc_text

__all__ = ["TimerTraces", "STATE_TRACES", "state_traces", "fired_trace", "state_lanes", "fired_lane"]

#: The State chart's transformWithState traces: (name, the BatchProgress attribute drawn).
STATE_TRACES: tuple[tuple[str, str], ...] = (
    ("timers registered", "timers_registered"), ("timers deleted", "timers_deleted"),
    ("timers expired", "timers_expired"), ("state variables", "state_variables"),
    ("values removed by TTL", "state_values_removed_by_ttl"),
)


def state_traces() -> list[dict[str, Any]]:
    """The State chart's traces for a transformWithState operator (styles, no data).

    Examples
    --------
    >>> [t["name"] for t in state_traces()]
    ['timers registered', 'timers deleted', 'timers expired', 'state variables', 'values removed by TTL']
    """
    return [{"type": "scatter", "name": name, "mode": "lines+markers", "line": {"dash": "dash", "width": 1.5},
             "marker": {"size": 5}, "hovertemplate": f"{name} %{{y}}<extra></extra>"} for name, _ in STATE_TRACES]


def fired_trace() -> dict[str, Any]:
    """The Watermark chart's marker of batches in which timers fired or were deleted."""
    return {"type": "scatter", "name": "timers fired or deleted", "mode": "markers",
            "marker": {"symbol": "star", "size": 11, "color": "#ff7f0e"},
            "hovertemplate": "timers fired or deleted at watermark %{y|%H:%M:%S}<extra></extra>"}


def state_lanes(records: Sequence[BatchProgress]) -> list[list[Any]]:
    """The values of :func:`state_traces` for ``records``, one list per trace.

    Examples
    --------
    >>> op = {"operatorName": "transformWithStateInPandasExec",
    ...       "customMetrics": {"numValueStateVars": 1, "numRegisteredTimers": 2}}
    >>> state_lanes([BatchProgress.from_json({"batchId": 0, "stateOperators": [op]})])
    [[2], [0], [0], [1], [0]]
    """
    return [[getattr(r, attr) for r in records] for _, attr in STATE_TRACES]


def fired_lane(records: Sequence[BatchProgress]) -> list[Any]:
    """For each record: its watermark (UTC text) when timers left the store in it, else None.

    Examples
    --------
    >>> op = {"operatorName": "transformWithStateInPandasExec", "customMetrics": {"numDeletedTimers": 1}}
    >>> fired_lane([BatchProgress.from_json({"batchId": 3, "stateOperators": [op],
    ...                                      "eventTime": {"watermark": "2024-01-01T10:40:00.000Z"}})])
    ['2024-01-01 10:40:00.000000']
    """
    return [utc_text(known_watermark(r.watermark)) if r.timers_deleted + r.timers_expired else None
            for r in records]


class TimerTraces:
    """Adds the timer and TTL traces to a monitor's charts and their values to each draw.

    Examples
    --------
    >>> from workbench.views.charts import ChartGrid
    >>> from workbench.views.monitor_charts import chart_points, chart_specs, operator_traces
    >>> op = {"operatorName": "transformWithStateInPandasExec", "customMetrics": {"numRegisteredTimers": 1}}
    >>> records = [BatchProgress.from_json({"batchId": 0, "stateOperators": [op]})]
    >>> grid = ChartGrid(chart_specs())
    >>> grid.add_traces("state", operator_traces(["transformWithStateInPandasExec"]))
    >>> points = chart_points(records, 1)
    >>> TimerTraces().draw(grid, records, points)
    >>> grid.extend(points); grid.data("state")[1][5]
    [1]
    """

    def __init__(self) -> None:
        self._state_at: int | None = None  # where the timer lanes sit among the State chart's
        self._marks = False

    def draw(self, charts: Any, records: Sequence[BatchProgress], points: dict[str, Any]) -> None:
        """Add the traces when a processor first shows up; put their values into ``points``.

        The timer traces go after the operators' traces the State chart has when they are
        added (an operator seen later goes after them); ``points`` is what the monitor is
        about to send (:func:`~.monitor_charts.chart_points`, input watermarks included).
        """
        if self._state_at is None and any(op.operator_name in TWS_OPERATORS for r in records for op in r.operators):
            self._state_at = len(charts.data("state")[1])
            charts.add_traces("state", state_traces())
            if any(r.watermark is not None for r in records):
                charts.add_traces("watermark", [fired_trace()])
                self._marks = True
        if self._state_at is not None:
            lanes = points["state"][1]
            lanes[self._state_at:self._state_at] = state_lanes(records)
        if self._marks:
            points["watermark"][1].append(fired_lane(records))
