"""Static pictures of chart grids, drawn in the kernel: what a notebook shows after its kernel is gone.

A live :class:`~workbench.views.charts.ChartGrid` exists only in a page that runs widgets and
only while its kernel lives. :func:`grid_picture` draws the same charts (titles, axes,
traces, colours, empty messages) as one PNG with matplotlib's Agg backend: no browser and no
network, so it works under ``jupyter nbconvert --execute`` too. It reads what the grid holds,
plotly chart specs with their points (:meth:`ChartGrid.drawn_spec`), and understands the
part of plotly's figure format the workbench's charts use: ``scatter`` traces (lines,
markers, step lines, ``connectgaps``, ``fill="tonexty"`` bands, dashes), stacked ``bar``
traces, several y axes stacked by ``domain`` over one batch axis, date axes, annotations on
the paper, and legends in plotly's order.

matplotlib is imported when the first picture is drawn, never at import time.
"""

from __future__ import annotations

import io
import math
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["grid_picture", "figures_picture", "PLOTLY_COLOURS"]

#: plotly.js's default colour sequence (its ``colorway`` when the layout names no template),
#: used, by trace index as plotly.js does, for traces without a colour of their own: the page
#: draws the monitor's charts with no template, so these are the colours a reader saw live.
PLOTLY_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_DPI = 80
_WIDTH = 560   # pixels per chart, as the live grid draws them
_HEIGHT = 320
_GRID = "#ebf0f8"
_AXIS_LINE = "#c8d4e3"
_TEXT = "#2a3f5f"
_DASHES = {"dot": ":", "dash": "--", "dashdot": "-.", "longdash": "--", "solid": "-"}
_MARKERS = {"x": "x", "circle": "o", "square": "s", "diamond": "D", "cross": "P", "triangle-up": "^"}


def grid_picture(grid: Any, *, columns: int = 2) -> bytes:
    """Draw every chart of a chart grid, as the page shows it, into one PNG.

    Parameters
    ----------
    grid : ChartGrid
        The charts to draw, with the points the kernel holds (the last ``window`` of each
        live trace).
    columns : int, default 2
        Charts per row (the live grid wraps two 560-pixel charts per row in a wide cell).

    Returns
    -------
    bytes
        A PNG image.

    Examples
    --------
    >>> from workbench.views.charts import ChartGrid
    >>> grid = ChartGrid([{"key": "rates", "layout": {"title": {"text": "rows/s"}},
    ...                    "traces": [{"type": "scatter", "name": "input"}]}])
    >>> grid.extend({"rates": ([0, 1, 2], [[5.0, 7.5, 6.0]])})
    >>> grid_picture(grid)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    return figures_picture([grid.drawn_spec(key) for key in grid.chart_keys()], columns=columns)


def figures_picture(specs: Sequence[Mapping[str, Any]], *, columns: int = 2) -> bytes:
    """Draw chart specs holding their data (``{"layout", "traces"}``, see ``figure_spec``) as one PNG.

    Examples
    --------
    >>> png = figures_picture([{"layout": {"title": {"text": "demo"}},
    ...                         "traces": [{"type": "bar", "x": [0, 1], "y": [3, 4]}]}])
    >>> png[1:4]
    b'PNG'
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive whole number, got {columns!r}")
    specs = list(specs)
    columns = max(1, min(columns, len(specs)))
    rows = max(1, math.ceil(len(specs) / columns))
    heights = [max((_size(spec, "height", _HEIGHT) for spec in specs[r * columns:(r + 1) * columns]), default=_HEIGHT)
               for r in range(rows)]
    width = max((_size(spec, "width", _WIDTH) for spec in specs), default=_WIDTH) * columns
    total = sum(heights)
    figure = Figure(figsize=(width / _DPI, total / _DPI), dpi=_DPI, facecolor="white")
    FigureCanvasAgg(figure)
    top = 0
    for row in range(rows):
        for column in range(columns):
            index = row * columns + column
            if index < len(specs):
                cell = (column / columns, 1 - (top + heights[row]) / total, 1 / columns, heights[row] / total)
                _draw_chart(figure, specs[index], cell, (width / columns, heights[row]))
        top += heights[row]
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=_DPI, facecolor="white")
    return out.getvalue()


def _size(spec: Mapping[str, Any], name: str, default: int) -> int:
    value = spec.get("layout", {}).get(name)
    return int(value) if isinstance(value, (int, float)) and value > 0 else default


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        value = value.get("text")
    return "" if value is None else str(value).replace("<br>", "\n")


def _draw_chart(figure: Any, spec: Mapping[str, Any], cell: tuple[float, float, float, float],
                pixels: tuple[float, float]) -> None:
    """One plotly chart in ``cell`` (left, bottom, width, height as figure fractions)."""
    layout = spec.get("layout", {})
    margin = {"l": 60, "r": 20, "t": 40, "b": 40, **layout.get("margin", {})}
    traces = [t for t in spec.get("traces", []) if t.get("visible", True) is not False]
    has_legend = layout.get("showlegend", len([t for t in traces if t.get("name")]) > 1)
    legend_rows = 0
    if has_legend:
        names = [t for t in traces if t.get("name") and t.get("showlegend", True)]
        legend_rows = math.ceil(len(names) / max(1, int(pixels[0] // 120)))
    bottom_px = margin["b"] + 14 * legend_rows
    left, bottom, width, height = cell
    px, py = width / pixels[0], height / pixels[1]
    plot = (left + margin["l"] * px, bottom + bottom_px * py,
            width - (margin["l"] + margin["r"]) * px, height - (margin["t"] + bottom_px) * py)
    title = _text(layout.get("title"))
    if title:
        figure.text(left + 0.02 * width, bottom + height - 12 * py, title, fontsize=11, color=_TEXT, va="top")
    if not any(len(t.get("x") or t.get("y") or ()) for t in traces):
        # As in the page: a chart without points shows its message, not empty axes.
        traces, has_legend = [], False
        plot = (left, bottom, width, height - 24 * py)
    y_names = (sorted((k for k in layout if k.startswith("yaxis")), key=_axis_number) or ["yaxis"]) if traces else []
    axes: dict[str, Any] = {}
    for name in y_names:
        low, high = layout.get(name, {}).get("domain", [0.0, 1.0])
        # One batch axis for the chart: every y axis of it shares the x range.
        axes[name] = figure.add_axes((plot[0], plot[1] + low * plot[3], plot[2], (high - low) * plot[3]),
                                     sharex=next(iter(axes.values()), None))
    dated = _draw_traces(axes, layout, traces) if axes else set()
    bottom_axis = min(axes.items(), key=lambda item: layout.get(item[0], {}).get("domain", [0.0, 1.0])[0])[1] \
        if axes else None
    for name, ax in axes.items():
        _style_axis(ax, layout, name, bottom=ax is bottom_axis, dates=name in dated)
    for note in layout.get("annotations", []):
        if note.get("xref", "paper") == "paper" and note.get("yref", "paper") == "paper":
            font = note.get("font", {})
            figure.text(plot[0] + float(note.get("x", 0.5)) * plot[2], plot[1] + float(note.get("y", 0.5)) * plot[3],
                        _text(note), ha="center", va="center" if not note.get("yanchor") else "bottom",
                        fontsize=font.get("size", 12) * 0.8, color=font.get("color", _TEXT))
    if has_legend:
        columns = max(1, int(pixels[0] // 120))
        entries = _legend_order([entry for ax in axes.values() for entry in zip(*ax.get_legend_handles_labels())],
                                layout, traces, columns)
        if entries:
            handles, labels = zip(*entries)
            figure.legend(handles, labels, loc="upper center", frameon=False, fontsize=7, ncol=columns,
                          labelcolor=_TEXT, bbox_to_anchor=(plot[0] + plot[2] / 2, bottom + (bottom_px - 26) * py))


def _legend_order(entries: Sequence[Any], layout: Mapping[str, Any], traces: Sequence[Mapping[str, Any]],
                  columns: int) -> list[Any]:
    """Legend entries (in trace order) in the order matplotlib needs to place them as plotly does.

    plotly lists the last trace first by default for stacked bars and for bands filled to
    the previous trace (unless ``legend.traceorder`` says), and fills a horizontal legend
    row by row, where matplotlib fills its columns one after the other.

    Examples
    --------
    >>> _legend_order(list("abcde"), {"barmode": "stack"}, [{"type": "bar"}], columns=2)
    ['e', 'c', 'a', 'd', 'b']
    >>> _legend_order(list("abc"), {}, [{"type": "scatter"}], columns=4)
    ['a', 'b', 'c']
    """
    order = layout.get("legend", {}).get("traceorder")
    reversed_ = ("reversed" in order) if isinstance(order, str) else any(
        (t.get("type") == "bar" and layout.get("barmode") == "stack") or t.get("fill") in ("tonextx", "tonexty")
        for t in traces)
    listed = list(entries)[::-1] if reversed_ else list(entries)
    return [entry for column in range(columns) for entry in listed[column::columns]]


def _axis_number(name: str) -> int:
    digits = name[5:]
    return int(digits) if digits.isdigit() else 1


def _colour(trace: Mapping[str, Any], index: int, colourway: Sequence[str]) -> str:
    for part in ("line", "marker"):
        colour = trace.get(part, {}).get("color") if isinstance(trace.get(part), Mapping) else None
        if isinstance(colour, str):
            return _rgba(colour)
    return colourway[index % len(colourway)]


def _rgba(colour: str) -> Any:
    """plotly's ``rgba(r,g,b,a)`` text as a matplotlib colour; other colours pass through."""
    if colour.startswith("rgb"):
        parts = [float(p) for p in colour[colour.index("(") + 1:colour.index(")")].split(",")]
        rgb = tuple(p / 255 for p in parts[:3])
        return (*rgb, parts[3]) if len(parts) > 3 else rgb
    return colour


def _values(values: Iterable[Any], dates: bool) -> list[Any]:
    """Plot values: numbers stay numbers, UTC wall-clock text becomes matplotlib dates, None is a gap."""
    import numpy as np
    from matplotlib.dates import date2num

    out: list[Any] = []
    for value in values:
        if value is None or (isinstance(value, float) and value != value):
            out.append(math.nan)
        elif dates or isinstance(value, str):
            out.append(float(date2num(np.datetime64(str(value).replace("Z", "")))))
        else:
            out.append(value)
    return out


def _draw_traces(axes: Mapping[str, Any], layout: Mapping[str, Any], traces: Sequence[Mapping[str, Any]]) -> set[str]:
    """Draw the traces on their y axes; returns the names of the axes that plot times."""
    template = layout.get("template", {})
    colourway = layout.get("colorway") or (template.get("layout", {}).get("colorway")
                                           if isinstance(template, Mapping) else None) or PLOTLY_COLOURS
    stacks: dict[tuple[str, Any], float] = {}
    previous: dict[str, tuple[list[Any], list[Any]]] = {}
    dated: set[str] = set()
    for index, trace in enumerate(traces):
        name = "yaxis" + str(trace.get("yaxis", "y"))[1:]
        ax = axes.get(name) or next(iter(axes.values()))
        dates = layout.get(name, {}).get("type") == "date" or any(isinstance(v, str) for v in trace.get("y", []))
        if dates:
            dated.add(name)
        x = _values(trace.get("x", []), layout.get("xaxis", {}).get("type") == "date")
        y = _values(trace.get("y", []), dates)
        if trace.get("connectgaps"):  # plotly joins the points on either side of a gap
            kept = [i for i, value in enumerate(y) if value == value]
            x, y = [x[i] for i in kept], [y[i] for i in kept]
        colour = _colour(trace, index, colourway)
        label = trace.get("name") if trace.get("showlegend", True) else None
        if trace.get("type") == "bar":
            base = [stacks.get((name, xv), 0.0) for xv in x]
            heights = [0.0 if v != v else v for v in y]
            _bars(ax, x, heights, base, colour, label)
            if layout.get("barmode") == "stack":
                for xv, b, h in zip(x, base, heights):
                    stacks[(name, xv)] = b + h
            continue
        line = trace.get("line", {}) if isinstance(trace.get("line"), Mapping) else {}
        marker = trace.get("marker", {}) if isinstance(trace.get("marker"), Mapping) else {}
        mode = trace.get("mode") or ("lines+markers" if len(x) <= 20 else "lines")
        style: dict[str, Any] = {"color": colour, "label": label}
        style["linestyle"] = _DASHES.get(line.get("dash", "solid"), "-") if "lines" in mode else "none"
        style["linewidth"] = float(line.get("width", 2)) * 0.75
        if line.get("shape") == "hv":
            style["drawstyle"] = "steps-post"
        if "markers" in mode:
            style["marker"] = _MARKERS.get(str(marker.get("symbol", "circle")), "o")
            style["markersize"] = float(marker.get("size", 6)) * 0.6
        ax.plot(x, y, **style)
        if trace.get("fill") == "tonexty" and name in previous:
            below_x, below_y = previous[name]
            if below_x == x:
                fill = _rgba(trace["fillcolor"]) if isinstance(trace.get("fillcolor"), str) else colour
                ax.fill_between(x, below_y, y, color=fill, linewidth=0, alpha=None if trace.get("fillcolor") else 0.3)
        previous[name] = (x, y)
    return dated


def _bars(ax: Any, x: Sequence[float], heights: Sequence[float], base: Sequence[float], colour: Any,
          label: str | None) -> None:
    """Bars 0.9 wide centred on ``x``, as one collection: ``ax.bar`` makes an artist per bar,
    which took a quarter of a monitor picture's time with its 360 latency bars
    (``bench/bench_pictures.py``)."""
    from matplotlib.collections import PolyCollection

    boxes = [((xv - 0.45, b), (xv - 0.45, b + h), (xv + 0.45, b + h), (xv + 0.45, b))
             for xv, h, b in zip(x, heights, base) if xv == xv]
    bars = PolyCollection(boxes, facecolors=[colour], linewidths=0, label=label)
    bars.sticky_edges.y.extend(base)  # as ax.bar: the axis starts at the bars' feet, no margin below
    ax.add_collection(bars)
    ax.autoscale_view()  # matplotlib before 3.11 leaves the view as it was for a collection


def _style_axis(ax: Any, layout: Mapping[str, Any], name: str, *, bottom: bool, dates: bool) -> None:
    from matplotlib.dates import DateFormatter
    from matplotlib.ticker import EngFormatter, MaxNLocator

    axis = layout.get(name, {})
    ax.set_facecolor(layout.get("plot_bgcolor", "white"))
    ax.grid(True, color=_GRID, linewidth=0.8)
    ax.set_axisbelow(True)
    for side, spine in ax.spines.items():
        spine.set_visible(side == "bottom")
        spine.set_color(_AXIS_LINE)
    ax.tick_params(colors=_TEXT, labelsize=7, length=0)
    ax.set_ylabel(_text(axis.get("title")), fontsize=8, color=_TEXT)
    if dates:
        ax.yaxis.set_major_formatter(DateFormatter(axis.get("tickformat", "%H:%M:%S")))
        # One time (or none): a minute around it. The data's limits, not the view's: matplotlib
        # widens a date axis of one value by years, which then read "00:00:00" at every tick.
        low, high = ax.dataLim.intervaly
        if ax.has_data() and math.isfinite(high - low) and high - low < 2 / 86_400:
            ax.set_ylim(low - 30 / 86_400, high + 30 / 86_400)
    elif axis.get("ticksuffix"):
        ax.yaxis.set_major_formatter(EngFormatter(unit=axis["ticksuffix"], sep=""))
    if axis.get("rangemode") == "tozero":
        low, high = ax.get_ylim()
        ax.set_ylim(bottom=min(0.0, low), top=max(high, 1e-9))
    xaxis = layout.get("xaxis", {})
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # batch ids
    if xaxis.get("type") == "date":
        ax.xaxis.set_major_formatter(DateFormatter(xaxis.get("tickformat", "%H:%M:%S")))
    if bottom:
        titles = [_text(layout[k].get("title")) for k in sorted(layout, key=_axis_number) if k.startswith("xaxis")]
        ax.set_xlabel(next((t for t in titles if t), ""), fontsize=8, color=_TEXT, labelpad=1)
    else:
        ax.tick_params(labelbottom=False)
    if not ax.has_data():
        ax.set_yticks([])
        ax.set_xticks([])
