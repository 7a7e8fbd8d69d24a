"""The stream monitor's charts as data: plotly layouts, trace styles and the points to draw.

Pure functions of progress records: :func:`chart_specs` describes the four charts
(watermark, state, latency, rates) without data, :func:`operator_traces` and
:func:`input_traces` add the traces that depend on the query, and :func:`chart_points`
turns records into the points each trace draws. :class:`~workbench.views.monitor.StreamMonitor`
sends them to its :class:`~workbench.views.charts.ChartGrid`; the browser benchmark
builds the same charts from them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

from ..progress.diagnosis import EPOCH
from ..progress.records import DURATION_PARTS, BatchProgress

__all__ = [
    "chart_specs", "operator_traces", "input_traces", "chart_points", "utc_text", "known_watermark",
    "NO_STATE", "NO_WATERMARK",
]

_TIME_HOVER = "%{y|%Y-%m-%d %H:%M:%S.%L}"
_STATE_METRICS = (
    ("total", "num_rows_total"), ("updated", "num_rows_updated"),
    ("removed", "num_rows_removed"), ("late groups dropped", "num_rows_dropped_by_watermark"),
)
_FIGURE_HEIGHT = 320
#: Charts are drawn at this fixed width in a grid that wraps to one column when two do not
#: fit (the extension's view uses the same width).
_FIGURE_WIDTH = 560
#: What the state chart says once batches have run without a stateful operator.
NO_STATE = "No state: this query has no stateful operator"
NO_WATERMARK = "No watermark: this query has none (withWatermark sets one)"
#: automargin makes room for the tick labels, so plotly need not measure every label of a
#: drawn axis to hide those past the chart's edge ("hide past div", its default): that check
#: was a third of the script time of the page's full chart draws.
_AXIS = {"gridcolor": "#ebf0f8", "zerolinecolor": "#ebf0f8", "linecolor": "#c8d4e3", "automargin": True,
         "ticklabeloverflow": "allow"}


def utc_text(value: datetime | None) -> str | None:
    """A time as the UTC wall-clock text the charts plot (``None`` stays ``None``).

    plotly.js has no time zones: it gets UTC wall-clock text and the axis says "UTC".

    Examples
    --------
    >>> utc_text(datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc))
    '2024-01-01 12:00:00.000000'
    """
    if value is None:
        return None
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def known_watermark(value: datetime | None) -> datetime | None:
    """The watermark, or ``None`` while there is none yet.

    Spark's initial watermark is epoch 0, meaning "none yet": plotting 1970 next to
    today's event times would flatten the chart, so it is left out.

    Examples
    --------
    >>> known_watermark(EPOCH) is None
    True
    """
    return None if value is None or value <= EPOCH else value


def _number(value: float | int | None) -> float | int | None:
    # NaN (Spark's rate for a batch that took no time) is not JSON: send "no value".
    return None if value is None or value != value else value


def _layout(title: str, **axes: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.02, "font": {"size": 14}}, "height": _FIGURE_HEIGHT,
        "width": _FIGURE_WIDTH, "margin": {"l": 60, "r": 20, "t": 40, "b": 40}, "hovermode": "x unified",
        # Below the batch axis and its title, not over them.
        "legend": {"orientation": "h", "y": -0.3, "yanchor": "top", "font": {"size": 10}},
        "paper_bgcolor": "white", "plot_bgcolor": "white", "font": {"color": "#2a3f5f"},
        **{name: {**_AXIS, **axis} for name, axis in axes.items()},
    }


def _two_rows(title: str, top: dict[str, Any], bottom: dict[str, Any], split: float) -> dict[str, Any]:
    # Two y axes stacked over one shared batch axis (what make_subplots(rows=2) draws).
    return _layout(title, xaxis={"anchor": "y2", "title": {"text": "batch", "standoff": 4}},
                   yaxis={"domain": [split + 0.06, 1.0], "anchor": "x", **top},
                   yaxis2={"domain": [0.0, split], "anchor": "x", **bottom})


def _line(name: str, hover: str, **style: Any) -> dict[str, Any]:
    # Without a mode, plotly marks each point of a short line and draws longer ones as lines
    # alone: markers are one node each, and a live chart redraws them with every batch (the
    # watermark keeps its markers: each is a batch's watermark).
    return {"type": "scatter", "name": name, "hovertemplate": f"{hover}<extra></extra>", **style}


def chart_specs() -> list[dict[str, Any]]:
    """The monitor's four charts (layout and trace styles, no data), in display order.

    State traces are not listed: they depend on how many stateful operators the query
    has, which progress tells only with the first batch (see :func:`operator_traces`).

    Examples
    --------
    >>> [spec["key"] for spec in chart_specs()]
    ['watermark', 'state', 'latency', 'rates']
    """
    watermark = {
        "key": "watermark",
        "layout": _two_rows("Watermark and event time (UTC)",
                            {"title": {"text": "UTC"}, "type": "date", "tickformat": "%H:%M:%S"},
                            {"title": {"text": "gap s"}, "rangemode": "tozero"}, 0.3),
        "traces": [
            # A batch that read no rows (the no-data batch Spark runs when the watermark moves)
            # has no event times: the band goes on over it rather than breaking at every one.
            _line("event time min", f"min event time {_TIME_HOVER}", mode="lines", connectgaps=True,
                  line={"width": 0.5, "color": "#9ecae1"}),
            _line("event time max", f"max event time {_TIME_HOVER}", mode="lines", connectgaps=True,
                  line={"width": 0.5, "color": "#9ecae1"}, fill="tonexty", fillcolor="rgba(158,202,225,0.45)"),
            _line("watermark", f"watermark {_TIME_HOVER}", mode="lines+markers",
                  line={"shape": "hv", "width": 2, "color": "#d62728"}, marker={"size": 4}),
            _line("gap (s)", "gap %{y:.3f} s", mode="lines", line={"shape": "hv", "color": "#7f7f7f"},
                  yaxis="y2"),
        ],
    }
    state = {
        "key": "state",
        "layout": _two_rows("State rows", {"title": {"text": "rows"}, "rangemode": "tozero"},
                            {"title": {"text": "memory"}, "rangemode": "tozero", "ticksuffix": "B"}, 0.32),
        "traces": [],
    }
    latency = {
        "key": "latency",
        "layout": {**_layout("Batch duration (ms)", xaxis={"title": {"text": "batch"}},
                             yaxis={"title": {"text": "ms"}, "rangemode": "tozero"}),
                   "barmode": "stack", "bargap": 0.1},
        "traces": [
            *({"type": "bar", "name": key, "hovertemplate": f"{key} %{{y}} ms<extra></extra>"}
              for key in DURATION_PARTS),
            _line("triggerExecution", "triggerExecution %{y} ms", line={"color": "black", "width": 1.5},
                  marker={"size": 4}),
        ],
    }
    rates = {
        "key": "rates",
        "layout": _layout("Rows per second", xaxis={"title": {"text": "batch"}},
                          yaxis={"title": {"text": "rows/s"}, "rangemode": "tozero"}),
        "traces": [
            _line("input rows/s", "input %{y:.1f} rows/s", marker={"size": 4}),
            _line("processed rows/s", "processed %{y:.1f} rows/s", marker={"size": 4}),
        ],
    }
    return [watermark, state, latency, rates]


def operator_traces(names: Sequence[str], start: int = 0) -> list[dict[str, Any]]:
    """State-chart traces for operators ``start..`` of ``names``: four row counts and memory each.

    Spark's ``numRowsDroppedByWatermark`` counts late groups (after partial aggregation),
    not input rows: the trace says "late groups dropped".

    Trace names carry ``"<index>:<operator> "`` when the query has several operators.

    Examples
    --------
    >>> [t["name"] for t in operator_traces(["stateStoreSave"])]
    ['total', 'updated', 'removed', 'late groups dropped', 'memory']
    """
    traces = []
    for index in range(start, len(names)):
        label = names[index] or f"operator {index}"
        prefix = f"{index}:{label} " if len(names) > 1 else ""
        traces += [_line(f"{prefix}{metric}", f"{prefix}{metric} %{{y}}", mode="lines")
                   for metric, _ in _STATE_METRICS]
        traces.append(_line(f"{prefix}memory", f"{prefix}memory %{{y:,}} B", mode="lines",
                            line={"dash": "dot"}, yaxis="y2"))
    return traces


def input_traces(names: Sequence[str]) -> list[dict[str, Any]]:
    """Watermark-chart traces for each observed input: the watermark that input proposes.

    Examples
    --------
    >>> [t["name"] for t in input_traces(["clicks", "views"])]
    ['watermark: clicks', 'watermark: views']
    """
    return [_line(f"watermark: {name}", f"{name} watermark {_TIME_HOVER}", mode="lines",
                  line={"shape": "hv", "width": 1.5, "dash": "dash"}) for name in names]


def chart_points(records: Sequence[BatchProgress], operators: int) -> dict[str, tuple[list[Any], list[list[Any]]]]:
    """The points the monitor draws for ``records``: ``{chart: (batch ids, [values per trace])}``.

    Times are UTC wall-clock text (``None`` where Spark gave none; Spark's initial epoch-0
    watermark is ``None``), numbers are plain (``None`` for missing or NaN), the gap is max
    event time minus watermark in seconds. ``operators`` is the number of stateful
    operators whose traces the state chart has.

    Examples
    --------
    >>> record = BatchProgress.from_json({"batchId": 4, "numInputRows": 3,
    ...     "durationMs": {"addBatch": 20, "triggerExecution": 50},
    ...     "eventTime": {"max": "2024-01-01T12:00:10.000Z", "watermark": "2024-01-01T12:00:00.000Z"}})
    >>> points = chart_points([record], operators=0)
    >>> points["watermark"][1][2:], points["latency"][1][0]
    ([['2024-01-01 12:00:00.000000'], [10.0]], [20])
    """
    x = [r.batch_id for r in records]
    watermarks = [known_watermark(r.watermark) for r in records]
    gaps = [r.watermark_gap_seconds for r in records]
    state: list[list[Any]] = []
    for index in range(operators):
        for attr in (*(attr for _, attr in _STATE_METRICS), "memory_used_bytes"):
            state.append([getattr(r.operators[index], attr) if index < len(r.operators) else None for r in records])
    return {
        "watermark": (x, [[utc_text(r.event_time_min) for r in records],
                          [utc_text(r.event_time_max) for r in records],
                          [utc_text(w) for w in watermarks], gaps]),
        "state": (x, state),
        "latency": (x, [[getattr(r, attr) for r in records] for attr in DURATION_PARTS.values()]
                    + [[r.trigger_execution_ms for r in records]]),
        "rates": (x, [[_number(r.input_rows_per_second) for r in records],
                      [_number(r.processed_rows_per_second) for r in records]]),
    }
