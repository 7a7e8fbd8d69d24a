"""Plotly charts in one widget, fed point by point, drawn in any front end that renders widgets.

:class:`ChartGrid` is one widget holding several plotly charts. It is an anywidget whose
``_esm`` is a small loader (see :mod:`workbench.views.widget_code`): where the workbench's
JupyterLab extension is loaded it draws with the extension's code and plotly.js comes from
the extension's static files; elsewhere (VS Code, Colab, a JupyterLab without the extension)
the page's first chart grid asks the kernel once for the chart code and plotly.js, which
every chart of the page then shares. Either way plotly.js reaches a page at most once.

The widget itself carries only chart specs (layout and trace styles, sent once) and data
points. Live charts send only the points that are new: ``extend`` appends them in the page,
which keeps the last ``window`` points of each trace. The kernel keeps the same rolling
window, so a page that reloads, or a second view of the widget, asks for it
(``{"kind": "ready"}``) and gets it whole.

Each view tells the kernel whether it can be seen (``{"kind": "seen", "view": id, "visible":
bool, "gone": bool}``, when that changes). While none of its views can (scrolled away, a
hidden tab, a collapsed output), the grid sends no points, only keeps them (:attr:`seen`);
when one shows again it sends the whole window once and calls the :meth:`on_seen`
callbacks (the monitor then updates its header and preview). Views that never say (an
older front end) count as seen.

A grid may carry a caption, one line of HTML over its charts that goes with their points
(the monitor's newest batch, its rates and watermark): it travels in the same message as
the points, so the page draws both in one frame, and a view that cannot be seen gets
neither.

Wire format (kernel to page, custom widget messages)::

    {"kind": "data", "reset": bool,
     "charts": {key: {"x": [batch ids], "y": [[values of trace 0], [values of trace 1], ...]}},
     "caption": "<html>"}   # only when the caption changed, and with every reset

Values are numbers, ``null`` for none, or UTC wall-clock times as
``"YYYY-MM-DD HH:MM:SS.ffffff"`` strings (plotly.js has no time zones). ``reset`` replaces a
chart's data; otherwise the points are appended. Charts whose specs already hold their
data (``x``/``y`` in the traces) are static and never receive messages. A page without the
extension sends ``{"kind": "code"}`` once and gets ``{"kind": "code"}`` with two buffers
(:func:`workbench.views.widget_code.code_buffers`).

This module imports plotly only to build figure objects on request (:meth:`figure`).
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from typing import Any, Callable, Iterable, Mapping, Sequence

import anywidget
from traitlets import Dict, Int, List, Unicode

from .widget_code import code_buffers, esm

__all__ = ["ChartGrid", "EMPTY_MESSAGE", "figure_spec"]

EMPTY_MESSAGE = "Waiting for the first batch…"



def figure_spec(key: str, figure: Any) -> dict[str, Any]:
    """A chart spec (``{"key", "layout", "traces"}``) from a plotly figure, data included.

    Values become plain JSON lists (plotly keeps numeric arrays as base64 typed arrays;
    NaN and NaT become ``null``), so the spec reads the same in Python and in the page.

    Examples
    --------
    >>> import plotly.graph_objects as go
    >>> spec = figure_spec("demo", go.Figure(go.Scatter(x=[1, 2], y=[3.0, float("nan")])))
    >>> spec["key"], spec["traces"][0]["y"]
    ('demo', [3.0, None])
    """
    import json

    import plotly.utils

    # plotly's encoder turns pandas times and numpy scalars into JSON; typed arrays and
    # NaN are decoded here.
    plain = json.loads(json.dumps(figure.to_plotly_json(), cls=plotly.utils.PlotlyJSONEncoder))
    return {"key": key, "layout": plain.get("layout", {}), "traces": [_plain(t) for t in plain.get("data", [])]}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            import base64

            import numpy as np

            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return [None if v != v else v for v in array.tolist()]  # NaN -> null
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [None if v in ("NaT", "NaN") or (isinstance(v, float) and v != v) else _plain(v) for v in value]
    return value


class ChartGrid(anywidget.AnyWidget):
    """Several plotly charts in one widget, in a grid that wraps to the cell's width.

    Parameters
    ----------
    charts : sequence of dict
        One spec per chart: ``{"key": str, "layout": plotly layout (dict), "traces":
        [plotly trace (dict), ...]}`` and optionally ``"empty_message"``. Traces without
        ``x``/``y`` are live: their points come from :meth:`extend`. Traces with data are
        drawn as they are. A chart without points, or without traces, shows its empty
        message instead of axes.
    window : int, default 60
        Points kept per live trace (in the kernel and in the page).
    empty_message : str, optional
        What a live chart without points says instead of drawing empty axes.

    Attributes
    ----------
    caption : str
        The line of HTML over the charts (empty: none), set with :meth:`extend`,
        :meth:`reset` or :meth:`set_caption`.

    Examples
    --------
    >>> grid = ChartGrid([{"key": "rates", "layout": {"title": {"text": "rows/s"}},
    ...                    "traces": [{"type": "scatter", "name": "input"}]}], window=3)
    >>> grid.extend({"rates": ([0, 1], [[5.0, 7.5]])})
    >>> grid.extend({"rates": ([2, 3], [[None, 9.0]])})
    >>> grid.data("rates")
    ([1, 2, 3], [[7.5, None, 9.0]])
    >>> grid.figure("rates").data[0].y
    (7.5, None, 9.0)
    >>> grid.extend({"rates": ([4], [[8.0]])}, caption="batch 4 · input 8.0 rows/s")
    >>> grid.caption
    'batch 4 · input 8.0 rows/s'
    """

    _esm = esm("chartgrid.js")

    charts = List(Dict(), help="Chart specs: key, plotly layout, traces (styles; data only for static charts).").tag(
        sync=True)
    window = Int(60, help="Points kept per live trace.").tag(sync=True)
    empty_message = Unicode(EMPTY_MESSAGE, help="Shown by a live chart that has no points yet.").tag(sync=True)

    def __init__(self, charts: Sequence[Mapping[str, Any]], *, window: int = 60,
                 empty_message: str = EMPTY_MESSAGE, **kwargs: Any) -> None:
        keys = [spec["key"] for spec in charts]
        if len(set(keys)) != len(keys):
            raise ValueError(f"chart keys must be unique, got {keys}")
        self._lock = threading.RLock()  # one writer of the buffers and the page at a time
        self._x: dict[str, deque[Any]] = {}
        self._y: dict[str, list[deque[Any]]] = {}
        self._views: dict[str, bool] = {}  # each view's last word, until it goes: can it be seen?
        self._seen = True  # any view can be seen (views that never said count as seen); set with _views
        self._behind = False  # points were kept but not sent while no view could be seen
        self._seen_callbacks: list[Callable[[], None]] = []
        self._caption = ""
        super().__init__(charts=[dict(spec) for spec in charts], window=window, empty_message=empty_message,
                         **kwargs)
        for spec in self.charts:
            self._allocate(spec["key"], _live_count(spec))
        self.on_msg(self._on_page_message)

    # -- kernel side buffers ------------------------------------------------------------------

    def _allocate(self, key: str, traces: int) -> None:
        self._x.setdefault(key, deque(maxlen=self.window))
        lanes = self._y.setdefault(key, [])
        x_len = len(self._x[key])
        while len(lanes) < traces:
            # A trace added later (e.g. a state operator seen first in batch 3) has no
            # values for the points before it.
            lanes.append(deque([None] * x_len, maxlen=self.window))

    def _spec(self, key: str) -> dict[str, Any]:
        for spec in self.charts:
            if spec["key"] == key:
                return spec
        raise KeyError(f"no chart {key!r}; charts: {[s['key'] for s in self.charts]}")

    def chart_keys(self) -> list[str]:
        """The charts' keys, in display order."""
        return [spec["key"] for spec in self.charts]

    def data(self, key: str) -> tuple[list[Any], list[list[Any]]]:
        """The live points of chart ``key``: x values and one list of y values per trace."""
        with self._lock:
            return list(self._x[key]), [list(lane) for lane in self._y[key]]

    # -- updates ------------------------------------------------------------------------------

    def set_empty_message(self, key: str, text: str) -> None:
        """What chart ``key`` says while it has no points or no traces."""
        with self._lock:
            current = next((c for c in self.charts if c["key"] == key), None)
            if current is None:
                raise KeyError(f"no chart {key!r}; charts: {self.chart_keys()}")
            if current.get("empty_message") == text:
                return  # called on every draw: no copy, no message when nothing changes
            charts = copy.deepcopy(self.charts)
            next(c for c in charts if c["key"] == key)["empty_message"] = text
            self.charts = charts

    def add_traces(self, key: str, traces: Iterable[Mapping[str, Any]], *, title: str | None = None) -> None:
        """Append live traces to chart ``key`` (their earlier points are empty)."""
        with self._lock:
            charts = copy.deepcopy(self.charts)
            for spec in charts:
                if spec["key"] == key:
                    spec["traces"] = [*spec.get("traces", []), *map(dict, traces)]
                    if title is not None:
                        spec.setdefault("layout", {}).setdefault("title", {})["text"] = title
                    self._allocate(key, _live_count(spec))
                    break
            else:
                raise KeyError(f"no chart {key!r}; charts: {self.chart_keys()}")
            self.charts = charts  # one sync message; the page redraws with its data kept
            self._send_to_page(self._message(reset=True, keys=[key]))

    def set_overlays(self, key: str, traces: Iterable[Mapping[str, Any]]) -> None:
        """Replace the static traces drawn over chart ``key`` (each with its own ``x``/``y``).

        Overlays mark things that are not one value per batch, e.g. the replay panel's late
        rows; live traces keep their points.
        """
        overlays = [{**trace, "meta": _OVERLAY} for trace in traces]
        for trace in overlays:
            if "x" not in trace or "y" not in trace:
                raise ValueError(f"an overlay trace needs x and y values, got keys {sorted(trace)}")
        with self._lock:
            charts = copy.deepcopy(self.charts)
            spec = next((c for c in charts if c["key"] == key), None)
            if spec is None:
                raise KeyError(f"no chart {key!r}; charts: {self.chart_keys()}")
            spec["traces"] = [t for t in spec.get("traces", []) if t.get("meta") != _OVERLAY] + overlays
            self.charts = charts

    @property
    def caption(self) -> str:
        """The line of HTML over the charts (empty: none)."""
        return self._caption

    def set_caption(self, caption: str) -> None:
        """Change the line of HTML over the charts alone (with points, pass it to :meth:`extend`)."""
        self.extend({}, caption=caption)

    def _caption_part(self, caption: str | None) -> dict[str, str]:
        """The message's caption entry: only when it changed (called under the lock)."""
        if caption is None or caption == self._caption:
            return {}
        self._caption = str(caption)
        return {"caption": self._caption}

    def extend(self, points: Mapping[str, tuple[Sequence[Any], Sequence[Sequence[Any]]]], *,
               caption: str | None = None) -> None:
        """Append points: ``{key: (x values, [y values of each trace])}``, and set the caption.

        Each trace's list must be as long as the x values; charts may list fewer traces
        than they have (the rest get ``None``). ``caption`` (HTML, None: unchanged) goes to
        the page in the same message as the points.
        """
        with self._lock:
            part = self._caption_part(caption)
            if not points:
                if part:
                    self._send_to_page({"kind": "data", "reset": False, "charts": {}, **part})
                return
            for key, (x, ys) in points.items():
                lanes = self._y[key]
                if len(ys) > len(lanes):
                    raise ValueError(f"chart {key!r} has {len(lanes)} traces, got values for {len(ys)}")
                self._x[key].extend(x)
                for index, lane in enumerate(lanes):
                    lane.extend(ys[index] if index < len(ys) else [None] * len(x))
            self._send_to_page({"kind": "data", "reset": False, **part,
                        "charts": {key: {"x": list(x), "y": [list(y) for y in ys]} for key, (x, ys) in points.items()}})

    def reset(self, points: Mapping[str, tuple[Sequence[Any], Sequence[Sequence[Any]]]] | None = None, *,
              caption: str | None = None) -> None:
        """Replace the live data of the charts named in ``points`` (all charts when None: cleared).

        ``caption`` (HTML, None: unchanged) goes with them.
        """
        with self._lock:
            self._caption_part(caption)
            keys = list(points) if points is not None else self.chart_keys()
            for key in keys:
                x, ys = points[key] if points is not None else ([], [])
                self._x[key] = deque(x, maxlen=self.window)
                self._y[key] = [deque(ys[i] if i < len(ys) else [None] * len(x), maxlen=self.window)
                                for i in range(len(self._y[key]))]
            self._send_to_page(self._message(reset=True, keys=keys))

    def _message(self, *, reset: bool, keys: Iterable[str]) -> dict[str, Any]:
        return {"kind": "data", "reset": reset, "caption": self._caption,
                "charts": {key: {"x": list(self._x[key]), "y": [list(lane) for lane in self._y[key]]} for key in keys}}

    @property
    def seen(self) -> bool:
        """Whether a view of the grid can be seen (views that never said count as seen)."""
        return self._seen

    def on_seen(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the kernel's comm thread) when a view can be seen again after none could."""
        self._seen_callbacks.append(callback)

    def _send_to_page(self, content: dict[str, Any]) -> None:
        if self.comm is None:  # closed widgets drop updates
            return
        if content.get("kind") == "data" and not self.seen:
            self._behind = True  # sent whole when a view shows again
            return
        self.send(content)

    def _on_seen_message(self, content: Mapping[str, Any]) -> None:
        view, visible = str(content.get("view")), bool(content.get("visible"))
        with self._lock:
            was = self.seen
            if content.get("gone"):
                self._views.pop(view, None)  # the last one gone: nobody to send to
            else:
                self._views[view] = visible
            self._seen = any(self._views.values())  # once views speak, those that say so count
            back = self._seen and not was
            if back and self._behind:
                self._behind = False
                self._send_to_page(self._message(reset=True, keys=self.chart_keys()))
        if back:
            for callback in list(self._seen_callbacks):
                callback()

    def _on_page_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == "seen":
            self._on_seen_message(content)
        elif kind == "ready":  # a view started: give it everything the kernel holds
            with self._lock:
                self._send_to_page(self._message(reset=True, keys=self.chart_keys()))
        elif kind == "code":  # a page without the extension: its chart code, once per page
            try:
                buffers = list(code_buffers())
            except OSError as exc:
                self.send({"kind": "code", "error": f"the kernel could not read the chart code: {exc}"})
            else:
                self.send({"kind": "code", "files": ["widgets.js", "plotly.min.js.gz"]}, buffers)

    # -- plotly figures -------------------------------------------------------------------------

    def drawn_spec(self, key: str) -> dict[str, Any]:
        """Chart ``key`` as a plain spec (``{"key", "layout", "traces"}``) holding the points drawn.

        What :meth:`figure` wraps in plotly's validated objects. The static picture
        (:func:`~workbench.views.pictures.grid_picture`) draws from this instead: building
        and encoding validated figures took about a fifth of a monitor picture's time
        (``bench/bench_pictures.py``). A live chart without a value carries the empty
        message as an annotation (alone, once batches came), as the page shows it.

        Examples
        --------
        >>> grid = ChartGrid([{"key": "rates", "layout": {}, "traces": [{"type": "scatter"}]}])
        >>> grid.extend({"rates": ([0, 1], [[5.0, 7.5]])})
        >>> trace = grid.drawn_spec("rates")["traces"][0]
        >>> trace["x"], trace["y"]
        ([0, 1], [5.0, 7.5])
        """
        with self._lock:
            spec = copy.deepcopy(self._spec(key))
            x, ys = list(self._x[key]), [list(lane) for lane in self._y[key]]
        traces = spec.get("traces", [])
        lanes = iter(ys)
        live = False
        for trace in traces:
            if _is_live(trace):
                live = True
                trace["x"], trace["y"] = x, next(lanes, [])
        layout = spec.get("layout", {})
        # As the page: the message over a live chart whose lanes hold no value (no batch yet, or
        # a query without a watermark), and nothing else once batches came.
        if not traces or (live and not any(v is not None and v == v for lane in ys for v in lane)):
            traces = traces if not x else []
            text = spec.get("empty_message", self.empty_message)
            layout["annotations"] = [*layout.get("annotations", []), _empty_annotation(text)]
        return {"key": key, "layout": layout, "traces": traces}

    def figure(self, key: str) -> Any:
        """Chart ``key`` as a ``plotly.graph_objects.Figure`` holding the points drawn.

        A live chart without a value carries the empty message as an annotation. A spec
        without a template gets plotly_white's look in the colours the page draws it with
        (plotly.js's own, :data:`~workbench.views.pictures.PLOTLY_COLOURS`), so that a saved
        HTML shows the traces as the live chart did.
        """
        import plotly.graph_objects as go

        from .pictures import PLOTLY_COLOURS

        spec = self.drawn_spec(key)
        layout = spec["layout"]
        if "template" not in layout:
            layout = {"template": "plotly_white", "colorway": list(PLOTLY_COLOURS), **layout}
        return go.Figure({"data": spec["traces"], "layout": layout}, skip_invalid=True)

    def figures(self) -> dict[str, Any]:
        """Every chart as a plotly figure, by key."""
        return {key: self.figure(key) for key in self.chart_keys()}


_OVERLAY = "workbench-overlay"


def _is_live(trace: Mapping[str, Any]) -> bool:
    return "x" not in trace and "y" not in trace


def _live_count(spec: Mapping[str, Any]) -> int:
    return sum(1 for trace in spec.get("traces", []) if _is_live(trace))


def _empty_annotation(text: str) -> dict[str, Any]:
    return {"text": text, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
            "font": {"size": 14, "color": "#7f7f7f"}}
