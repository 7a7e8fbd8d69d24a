"""Static pictures of chart grids, drawn in the kernel: what a notebook shows after its kernel is gone.

A live :class:`~workbench.views.charts.ChartGrid` exists only in a page that runs widgets and
only while its kernel lives. :func:`grid_picture` draws the same charts (titles, axes,
traces, colours, empty messages) as one PNG with matplotlib's Agg backend: no browser and no
network, so it works under ``jupyter nbconvert --execute`` too. It reads what the grid holds,
plotly chart specs with their points (:meth:`ChartGrid.drawn_spec`), and understands the
part of plotly's figure format the workbench's charts use: ``scatter`` traces (lines,
markers, step lines, ``connectgaps``, ``fill="tonexty"`` bands, dashes), stacked ``bar``
traces, several y axes stacked by ``domain`` over one batch axis, date axes (ticks on round
times), annotations on the paper, and legends in plotly's order, kept inside their chart. As
the page does, a live chart whose traces hold no value yet shows its message, not axes. On
purpose unlike the page, several stateful operators get a colour each (plotly's ten colours
repeat by trace index), and a monitor's header (status, error, "Why no output?") is drawn
over the charts: the picture is all a viewer without widgets shows.

matplotlib is imported when the first picture is drawn, never at import time.
"""

from __future__ import annotations

import html
import io
import math
import os
import re
import textwrap
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
#: The header's colours, as the live monitor's (``monitor_header.header_html``, ``diagnosis_html``).
_STATUS_COLOURS = {"active": "#2ca02c", "stopped": "#7f7f7f", "failed": "#d62728"}
_ERROR = "#d62728"
_NOTE = "#8a6d3b"
_HEADER_LINE = 17  # pixels per header line
_LEGEND_FONT = 7  # points
#: Line styles of the metrics of a chart drawn one colour per operator (see _operator_styles).
_METRIC_STYLES = ("-", "--", ":", "-.", (0, (5, 1.5, 1, 1.5, 1, 1.5)))


def grid_picture(grid: Any, *, columns: int = 2, header: str | None = None, note: str | None = None) -> bytes:
    """Draw every chart of a chart grid, as the page shows it, into one PNG.

    Parameters
    ----------
    grid : ChartGrid
        The charts to draw, with the points the kernel holds (the last ``window`` of each
        live trace). A live chart whose traces hold no value yet (a query without a
        watermark has none to draw) shows its empty message, as the page does.
    columns : int, default 2
        Charts per row (the live grid wraps two 560-pixel charts per row in a wide cell).
    header : str, optional
        Lines over the charts: a monitor's text summary
        (:func:`~workbench.views.monitor_header.summary_text`), whose first line ends with the
        status (coloured as in the live header) and whose ``error: ...`` line is red.
    note : str, optional
        A line under the header (HTML or text; tags are dropped): the monitor's "Why no
        output?" note (``monitor.diagnosis.value``).

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
    return figures_picture([grid.drawn_spec(key) for key in grid.chart_keys()], columns=columns, header=header,
                           note=note)


def figures_picture(specs: Sequence[Mapping[str, Any]], *, columns: int = 2, header: str | None = None,
                    note: str | None = None) -> bytes:
    """Draw chart specs holding their data (``{"layout", "traces"}``, see ``figure_spec``) as one PNG.

    ``header`` and ``note`` are drawn over the charts, as by :func:`grid_picture`.

    Examples
    --------
    >>> png = figures_picture([{"layout": {"title": {"text": "demo"}},
    ...                         "traces": [{"type": "bar", "x": [0, 1], "y": [3, 4]}]}])
    >>> png[1:4]
    b'PNG'
    """
    figure = _figure(specs, columns, header, note)
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=_DPI, facecolor="white")
    return out.getvalue()


def _figure(specs: Sequence[Mapping[str, Any]], columns: int, header: str | None = None,
            note: str | None = None) -> Any:
    """The matplotlib figure :func:`figures_picture` saves (tests read its texts and ticks)."""
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
    lines = _header_lines(header, note, width)
    top = 8 + _HEADER_LINE * len(lines) if lines else 0
    total = sum(heights) + top
    figure = Figure(figsize=(width / _DPI, total / _DPI), dpi=_DPI, facecolor="white")
    FigureCanvasAgg(figure)
    _draw_header(figure, lines, total)
    for row in range(rows):
        for column in range(columns):
            index = row * columns + column
            if index < len(specs):
                cell = (column / columns, 1 - (top + heights[row]) / total, 1 / columns, heights[row] / total)
                _draw_chart(figure, specs[index], cell, (width / columns, heights[row]))
        top += heights[row]
    return figure


def _header_lines(header: str | None, note: str | None, width: float) -> list[list[tuple[str, str, str]]]:
    """The header's lines as (text, colour, weight) parts, each line cut to ``width`` pixels.

    Examples
    --------
    >>> lines = _header_lines("Stream monitor: p (memory sink), failed\\nerror: ValueError: n/a",
    ...                       "<b>Why no output?</b> No input", 560)
    >>> lines[0][1], lines[1][0][:2], lines[2][0][:2]
    (('failed', '#d62728', 'bold'), ('error: ValueError: n/a', '#d62728'), ('Why no output? No input', '#8a6d3b'))
    """
    chars = max(20, int((width - 16) / 6.2))  # 9-point text at 80 dpi: about 6 pixels a character
    lines: list[list[tuple[str, str, str]]] = []
    for index, line in enumerate(part for part in (header or "").splitlines() if part.strip()):
        head, comma, status = line.rpartition(", ")
        if line.startswith("error: "):
            lines += [[(part, _ERROR, "normal")] for part in _wrap(line, chars)]
        elif index == 0 and comma:  # "Stream monitor: name (sink), status"
            lines.append([(_cut(head, chars - len(status) - 2) + comma, _TEXT, "normal"),
                          (status, _STATUS_COLOURS.get(status, _TEXT), "bold")])
        else:
            lines.append([(_cut(line, chars), _TEXT, "normal")])
    text = html.unescape(re.sub(r"<[^>]+>", "", note or "")).strip()
    lines += [[(part, _NOTE, "normal")] for part in _wrap(text, chars)] if text else []
    return lines


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:max(1, chars - 1)].rstrip() + "…"


def _wrap(text: str, chars: int, most: int = 2) -> list[str]:
    """``text`` in lines of at most ``chars``, the last of ``most`` cut short (an error's
    details can be long: the picture keeps their start)."""
    lines = textwrap.wrap(" ".join(text.split()), chars) or [""]
    return lines[:most - 1] + [_cut(" ".join(lines[most - 1:]), chars)] if len(lines) > most else lines


def _draw_header(figure: Any, lines: Sequence[Sequence[tuple[str, str, str]]], total: float) -> None:
    """The header's lines at the top of the figure (``total`` pixels high), parts side by side."""
    renderer = figure.canvas.get_renderer() if any(len(parts) > 1 for parts in lines) else None
    width = figure.get_figwidth() * _DPI
    for number, parts in enumerate(lines):
        x = 8.0
        for text, colour, weight in parts:
            drawn = figure.text(x / width, 1 - (6 + _HEADER_LINE * number) / total, text, fontsize=9, color=colour,
                                fontweight=weight, va="top")
            if renderer is not None:
                x += drawn.get_window_extent(renderer).width


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
    from matplotlib.lines import Line2D

    layout = spec.get("layout", {})
    margin = {"l": 60, "r": 20, "t": 40, "b": 40, **layout.get("margin", {})}
    traces = [t for t in spec.get("traces", []) if t.get("visible", True) is not False]
    if not any(len(t.get("x") or t.get("y") or ()) for t in traces):
        traces = []  # as in the page: a chart without points shows its message, not empty axes
    styles, keys = _operator_styles(traces, _colourway(layout))
    has_legend = bool(traces) and layout.get("showlegend", len([t for t in traces if t.get("name")]) > 1)
    grouped = {index for index, (_, dash) in styles.items() if dash}
    labels = [label for label, _ in keys] + [t["name"] for i, t in enumerate(traces)
                                             if i not in grouped and t.get("name") and t.get("showlegend", True)]
    # The legend is centred under the plot and stays inside the chart: as many columns
    # (plotly's row of 120-pixel entries at most) as its longest labels leave room for.
    centre = margin["l"] + (pixels[0] - margin["l"] - margin["r"]) / 2
    columns = _legend_columns(figure, labels if has_legend else [], _legend_reversed(layout, traces),
                              most=max(1, int(pixels[0] // 120)), room=2 * min(centre, pixels[0] - centre) - 8)
    bottom_px = margin["b"] + 14 * math.ceil(len(labels) / columns) if has_legend else margin["b"]
    left, bottom, width, height = cell
    px, py = width / pixels[0], height / pixels[1]
    plot = (left + margin["l"] * px, bottom + bottom_px * py,
            width - (margin["l"] + margin["r"]) * px, height - (margin["t"] + bottom_px) * py)
    title = _text(layout.get("title"))
    if title:
        figure.text(left + 0.02 * width, bottom + height - 12 * py, title, fontsize=11, color=_TEXT, va="top")
    if not traces:
        plot = (left, bottom, width, height - 24 * py)
    y_names = (sorted((k for k in layout if k.startswith("yaxis")), key=_axis_number) or ["yaxis"]) if traces else []
    axes: dict[str, Any] = {}
    for name in y_names:
        low, high = layout.get(name, {}).get("domain", [0.0, 1.0])
        # One batch axis for the chart: every y axis of it shares the x range.
        axes[name] = figure.add_axes((plot[0], plot[1] + low * plot[3], plot[2], (high - low) * plot[3]),
                                     sharex=next(iter(axes.values()), None))
    dated = _draw_traces(axes, layout, traces, styles) if axes else set()
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
        proxies = [(Line2D([], [], color=colour, linestyle=style, linewidth=1.5), label) for label, (colour, style)
                   in keys]
        drawn = [entry for ax in axes.values() for entry in zip(*ax.get_legend_handles_labels())]
        entries = _legend_order(proxies + drawn, layout, traces, columns)
        if entries:
            handles, labels = zip(*entries)
            figure.legend(handles, labels, loc="upper center", frameon=False, fontsize=_LEGEND_FONT, ncol=columns,
                          labelcolor=_TEXT, bbox_to_anchor=(plot[0] + plot[2] / 2, bottom + (bottom_px - 26) * py))


def _legend_columns(figure: Any, labels: Sequence[str], reversed_: bool, *, most: int, room: float) -> int:
    """How many columns (up to ``most``) a legend of ``labels`` may have to be at most ``room`` pixels wide."""
    if not labels:
        return 1
    from matplotlib.font_manager import FontProperties

    renderer = figure.canvas.get_renderer()
    font = FontProperties(size=_LEGEND_FONT)
    widths = [renderer.get_text_width_height_descent(label, font, ismath=False)[0]
              for label in (labels[::-1] if reversed_ else labels)]
    em = _LEGEND_FONT * _DPI / 72
    for columns in range(max(1, min(most, len(widths))), 1, -1):
        # matplotlib's legend: a handle (2 em), a gap (0.8 em) and the text per column, 2 em
        # between columns, 0.4 em of border on either side.
        if sum(max(widths[c::columns]) + 2.8 * em for c in range(columns)) + 2 * em * (columns - 1) + 0.8 * em <= room:
            return columns
    return 1


def _operator_styles(traces: Sequence[Mapping[str, Any]], colourway: Sequence[str]) -> tuple[
        dict[int, tuple[Any, Any]], list[tuple[str, tuple[Any, Any]]]]:
    """One colour per operator and one line style per metric, for traces named ``"<n>:<operator> <metric>"``.

    The State chart of a query with several stateful operators names its traces so
    (``monitor_charts.operator_traces``); plotly colours them by index and its ten colours
    repeat, so that the first and third operators' lines (and their legend entries) looked
    alike. Returns (colour, line style) by trace index (a trace's own colour stays; the
    legend shows those with a line style by the keys instead) and the legend's keys: each
    operator as a coloured line, then each metric as a line style. Other traces take the
    colours after the operators' (line style None: their own). With one operator, nothing changes.

    Examples
    --------
    >>> styles, keys = _operator_styles([{"name": "0:a total"}, {"name": "0:a memory"},
    ...                                  {"name": "1:b total"}, {"name": "other"}], ["red", "blue", "green"])
    >>> [label for label, _ in keys], styles[2], styles[3]
    (['0:a', '1:b', 'total', 'memory'], ('blue', '-'), ('green', None))
    """
    groups: dict[str, list[int]] = {}
    for index, trace in enumerate(traces):
        match = re.fullmatch(r"(\d+):\S.*", str(trace.get("name") or ""))
        if match:
            groups.setdefault(match.group(1), []).append(index)
    if len(groups) < 2:
        return {}, []
    styles: dict[int, tuple[Any, Any]] = {}
    keys: list[tuple[str, tuple[Any, Any]]] = []
    metrics: dict[str, Any] = {}
    for number, indices in enumerate(groups.values()):
        names = [str(traces[i]["name"]) for i in indices]
        prefix = os.path.commonprefix(names) if len(names) > 1 else names[0]
        label = prefix[:prefix.rfind(" ")] if " " in prefix else prefix
        colour = colourway[number % len(colourway)]
        keys.append((label, (colour, "-")))
        for index, name in zip(indices, names):
            metric = name[len(label):].strip() or name
            style = metrics.setdefault(metric, _METRIC_STYLES[len(metrics) % len(_METRIC_STYLES)])
            styles[index] = (colour, style)
    keys += [(metric, (_TEXT, style)) for metric, style in metrics.items()]
    others = [i for i in range(len(traces)) if i not in styles]
    styles.update((i, (colourway[(len(groups) + k) % len(colourway)], None)) for k, i in enumerate(others))
    return styles, keys


def _legend_reversed(layout: Mapping[str, Any], traces: Sequence[Mapping[str, Any]]) -> bool:
    """Whether plotly lists the legend from the last trace: by default for stacked bars and for
    bands filled to the previous trace (unless ``legend.traceorder`` says)."""
    order = layout.get("legend", {}).get("traceorder")
    return ("reversed" in order) if isinstance(order, str) else any(
        (t.get("type") == "bar" and layout.get("barmode") == "stack") or t.get("fill") in ("tonextx", "tonexty")
        for t in traces)


def _legend_order(entries: Sequence[Any], layout: Mapping[str, Any], traces: Sequence[Mapping[str, Any]],
                  columns: int) -> list[Any]:
    """Legend entries (in trace order) in the order matplotlib needs to place them as plotly does.

    plotly lists the last trace first for stacked bars and filled bands (see
    :func:`_legend_reversed`), and fills a horizontal legend row by row, where matplotlib
    fills its columns one after the other.

    Examples
    --------
    >>> _legend_order(list("abcde"), {"barmode": "stack"}, [{"type": "bar"}], columns=2)
    ['e', 'c', 'a', 'd', 'b']
    >>> _legend_order(list("abc"), {}, [{"type": "scatter"}], columns=4)
    ['a', 'b', 'c']
    """
    listed = list(entries)[::-1] if _legend_reversed(layout, traces) else list(entries)
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


def _colourway(layout: Mapping[str, Any]) -> Sequence[str]:
    template = layout.get("template", {})
    return layout.get("colorway") or (template.get("layout", {}).get("colorway")
                                      if isinstance(template, Mapping) else None) or PLOTLY_COLOURS


def _draw_traces(axes: Mapping[str, Any], layout: Mapping[str, Any], traces: Sequence[Mapping[str, Any]],
                 styles: Mapping[Any, Any] | None = None) -> set[str]:
    """Draw the traces on their y axes; returns the names of the axes that plot times.

    ``styles`` (see :func:`_operator_styles`) gives traces a colour and line style (None:
    their own) instead of their index's; those with a line style have no legend entry.
    """
    colourway = _colourway(layout)
    styles = styles or {}
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
        colour, dash = styles.get(index, (None, None))
        colour = _colour(trace, index, colourway if colour is None else [colour])
        label = trace.get("name") if trace.get("showlegend", True) and not dash else None
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
        style["linestyle"] = (dash or _DASHES.get(line.get("dash", "solid"), "-")) if "lines" in mode else "none"
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
    box = ax.get_position()
    size = (box.width * ax.figure.get_figwidth() * _DPI, box.height * ax.figure.get_figheight() * _DPI)
    ax.set_facecolor(layout.get("plot_bgcolor", "white"))
    ax.grid(True, color=_GRID, linewidth=0.8)
    ax.set_axisbelow(True)
    for side, spine in ax.spines.items():
        spine.set_visible(side == "bottom")
        spine.set_color(_AXIS_LINE)
    ax.tick_params(colors=_TEXT, labelsize=7, length=0)
    ax.set_ylabel(_text(axis.get("title")), fontsize=8, color=_TEXT)
    if dates:
        # Ticks on round times (12:05, 12:10; every 2 s), as plotly's date axis puts them: the
        # default locator spaced them evenly in days, at 12:07:12 or 00:00:03.
        ax.yaxis.set_major_locator(_time_locator(size[1] // 24))
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
    if xaxis.get("type") == "date":
        ax.xaxis.set_major_locator(_time_locator(size[0] // 70))
        ax.xaxis.set_major_formatter(DateFormatter(xaxis.get("tickformat", "%H:%M:%S")))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # batch ids, "0" alone for one
    if bottom:
        titles = [_text(layout[k].get("title")) for k in sorted(layout, key=_axis_number) if k.startswith("xaxis")]
        ax.set_xlabel(next((t for t in titles if t), ""), fontsize=8, color=_TEXT, labelpad=1)
    else:
        ax.tick_params(labelbottom=False)
    if not ax.has_data():
        ax.set_yticks([])
        ax.set_xticks([])


def _time_locator(most: float) -> Any:
    """Ticks on round times, at most ``most`` (3 at least): steps of 1, 2, 5, 10, 15 or 30
    seconds or minutes as plotly's date axes step (matplotlib's own skip 2), hours as matplotlib's."""
    from matplotlib.dates import MINUTELY, SECONDLY, AutoDateLocator

    locator = AutoDateLocator(minticks=3, maxticks=max(3, int(most)))
    locator.intervald[SECONDLY] = locator.intervald[MINUTELY] = [1, 2, 5, 10, 15, 30, 60]
    return locator
