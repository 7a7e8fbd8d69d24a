"""A widget's display output that also carries a picture and a text summary, for viewers without it.

A live widget is only drawn by a page that runs widgets while its kernel lives. What a notebook
keeps of an output is its mime bundle, and each viewer picks one entry of it:

- JupyterLab and Notebook 7 with the kernel alive pick the widget view.
- GitHub, nbviewer, JupyterLab opening a notebook it does not trust, and any viewer that runs
  no widgets pick the picture (``image/png``), else the text (``text/plain``).
- nbconvert's HTML export picks a widget view over any picture when the notebook stores that
  widget's state (``metadata.widgets``, which ``nbconvert --execute`` writes; a notebook saved
  from JupyterLab stores none unless asked to), and draws it only with the widget's JavaScript
  (fetched from a CDN), so an exported widget shows nothing offline. Without the widget's
  state it picks the picture.

:class:`StaticOutput` therefore displays the widget with a display id and, when asked
(a stream ended, a replay step, ``snapshot()``), updates that output (IPython's
``update_display``) with a picture and a text summary beside the widget view. While no page
has loaded the widget's charts by the time a later cell starts (``jupyter nbconvert
--execute``, papermill: the chart model's page side never said ``ready``), the update leaves
the widget view out, so the exported notebook and its HTML show the picture. A page that ran
all cells at once says ``ready`` only after them (the kernel reads its messages in order):
the view then comes back at once.

An update sent from a background thread reaches a JupyterLab page whenever it comes, but
``nbconvert --execute`` only records messages while a cell runs; so the owner also gets a
call after every cell (IPython's ``post_execute`` event) to publish what is due then.

A notebook saved from a live JupyterLab page keeps the widget view beside the picture; opened
again once the kernel is gone, JupyterLab's widget renderer would pick the view and report
"model not found". Every output therefore carries the marker :data:`FALLBACK_METADATA` in its
metadata: the workbench's JupyterLab extension then shows the picture (or, for a text-only
output such as the console sink's, the text) in place of a widget whose model is gone.

An output may also be text only (no ``picture``): the text is then what viewers without the
widget show. Such an output has no chart model to say ``ready``: it goes by what the process knows
(:func:`widget_front_end_connected`: a chart model of another output said ``ready``, or the
page opened ipywidgets' control channel; ``nbconvert --execute`` does neither).
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any, Callable, ClassVar, Hashable

from .._process_end import draw_counted, is_ending

__all__ = ["FALLBACK_METADATA", "StaticOutput", "WIDGET_VIEW"]

log = logging.getLogger(__name__)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The output metadata that marks a workbench output whose other entries stand in for its widget.
FALLBACK_METADATA = {"spark-streaming-workbench": {"fallback": True}}


def widget_front_end_connected() -> bool:
    """Whether a page that draws widgets is known to be connected to this kernel.

    Known when a chart model of this process said ``ready`` (see
    :meth:`StaticOutput.watch_page`), or when the page opened ipywidgets' control channel
    (pages do when they connect to a kernel that has already imported ipywidgets).
    """
    import ipywidgets as widgets

    return StaticOutput.page_seen_in_process or getattr(widgets.Widget, "_control_comm", None) is not None


class StaticOutput:
    """The display output of one widget: the live view, plus a picture and a text once published.

    Parameters
    ----------
    widget : ipywidgets.Widget
        The widget shown.
    text : callable returning str
        The widget's summary as plain text (called at each display and publish).
    picture : callable returning bytes, optional
        Draws the PNG (called on :meth:`publish`, on the caller's thread). Without it the
        output is text only.
    after_cell : callable returning bool, optional
        Called after every cell the kernel runs once the widget is displayed; when it returns
        True the output is published then (on the kernel's main thread, inside that cell's
        execution, where ``nbconvert --execute`` records it).

    Examples
    --------
    >>> import ipywidgets as widgets
    >>> box = widgets.VBox()
    >>> out = StaticOutput(box, text=lambda: "a box", picture=lambda: b"\\x89PNG...")
    >>> sorted(out.bundle())
    ['application/vnd.jupyter.widget-view+json', 'text/plain']
    >>> out.publish(key=1)
    >>> sorted(out.bundle()), out.bundle()["text/plain"]
    (['application/vnd.jupyter.widget-view+json', 'image/png', 'text/plain'], 'a box')
    >>> sorted(out.bundle(with_view=False))
    ['image/png', 'text/plain']
    >>> text_only = StaticOutput(box, text=lambda: "Batch: 0")
    >>> text_only.publish()
    >>> text_only.picture is None, text_only.bundle()["text/plain"]
    (True, 'Batch: 0')
    """

    #: Whether any chart model of this process was loaded by a page: a fact about the kernel
    #: (a page that draws widgets is connected), which text-only outputs go by.
    page_seen_in_process: ClassVar[bool] = False

    def __init__(self, widget: Any, *, text: Callable[[], str], picture: Callable[[], bytes] | None = None,
                 after_cell: Callable[[], bool] | None = None) -> None:
        self._widget = widget
        self._text = text
        self._picture = picture
        self._after_cell = after_cell
        self._lock = threading.RLock()
        self._display_ids: list[str] = []
        self._png: bytes | None = None
        self._key: Hashable = None
        #: Whether a page loaded the widget's charts (then the widget view stays in the output).
        self.seen_by_page = False
        self._cells_started = 0  # cells started since the first display
        self._shell: Any = None
        self._watched = False  # a chart model tells when a page loads it (watch_page)
        self._page_callbacks: list[Callable[[], None]] = []  # see on_page
        self._published = False
        self._sent_view: bool | None = None  # whether the last update carried the widget view

    # -- what is shown ------------------------------------------------------------------------

    @property
    def picture(self) -> bytes | None:
        """The PNG published last, or None."""
        return self._png

    def bundle(self, *, with_view: bool | None = None) -> dict[str, Any]:
        """The mime bundle of the output: widget view (unless left out), picture once drawn, text."""
        import ipywidgets as widgets

        # The base class's bundle: the owner may override _repr_mimebundle_ with this one.
        view = widgets.Widget._repr_mimebundle_(self._widget).get(WIDGET_VIEW)
        if with_view is None:
            with_view = not (self._png or (self._picture is None and self._published)) or not self.unseen
        data: dict[str, Any] = {}
        if with_view and view is not None:
            data[WIDGET_VIEW] = view
        if self._png:
            data["image/png"] = base64.b64encode(self._png).decode("ascii")
        data["text/plain"] = self._text()
        return data

    @property
    def unseen(self) -> bool:
        """True once a whole cell has started since the display and no page loaded the charts.

        A page that draws widgets loads a chart model as soon as the kernel creates it, and
        says ``ready`` before the user's next cell reaches the kernel; only then is "no page"
        a safe conclusion (until then the picture is published beside the widget view).
        """
        if self.seen_by_page or (not self._watched and widget_front_end_connected()):
            return False
        return self._cells_started > 0

    @property
    def settled(self) -> bool:
        """Whether it is known if a page draws the widget (see :attr:`unseen`)."""
        return self.seen_by_page or self._cells_started > 0

    @property
    def view_left_out(self) -> bool:
        """Whether the last update left the widget's view out (no page was known to draw it)."""
        return self._sent_view is False

    def watch_page(self, widget: Any) -> None:
        """Learn from ``widget`` (a ``ChartGrid``) when a page loads it: its model says ``ready``."""
        self._watched = True

        def on_message(_widget: Any, content: Any, _buffers: Any) -> None:
            if isinstance(content, dict) and content.get("kind") == "ready":
                with self._lock:
                    left_out = self.unseen and bool(self._png)
                    self.seen_by_page = True
                    StaticOutput.page_seen_in_process = True
                    if left_out:
                        # The page's "ready" came after cells it had queued (Run All): the
                        # view was left out meanwhile; put it back.
                        self._update()
                for callback in list(self._page_callbacks):
                    callback()

        widget.on_msg(on_message)

    def on_page(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the kernel's comm thread) each time a page loads the watched charts."""
        self._page_callbacks.append(callback)

    def display(self) -> None:
        """Show the widget as a new output with a display id (what ``_ipython_display_`` calls)."""
        from IPython.display import display

        with self._lock:
            handle = display(self.bundle(), raw=True, display_id=True, metadata=FALLBACK_METADATA)
            if handle is not None:
                self._display_ids.append(handle.display_id)
        self._listen_to_cells()

    @property
    def displayed(self) -> bool:
        """Whether the widget was shown with :meth:`display`."""
        return bool(self._display_ids)

    def draw(self, key: Hashable = None) -> bytes:
        """The picture of the state named ``key``: drawn again only when ``key`` changed (or is None).

        Once the process is ending (:func:`workbench._process_end.process_ending`), nothing
        is drawn: the picture drawn last, if any.
        """
        with self._lock:
            if self._picture is None:
                return b""
            if (self._png is None or key is None or key != self._key) and not is_ending():
                self._png, self._key = draw_counted(self._picture), key
            return self._png or b""

    def publish(self, key: Hashable = None) -> None:
        """Draw the picture (see :meth:`draw`) and update every output showing the widget.

        ``key`` names the state drawn (e.g. the last batch id and the status): publishing the
        same state again sends the picture already drawn. Once the process is ending
        (:func:`workbench._process_end.process_ending`), nothing is drawn or sent.
        """
        if is_ending():
            return
        with self._lock:
            self.draw(key)
            self._published = True
            self._update()

    def _update(self) -> None:
        if not self._display_ids:
            return
        from IPython.display import update_display

        bundle = self.bundle()
        self._sent_view = WIDGET_VIEW in bundle
        for display_id in self._display_ids:
            update_display(bundle, raw=True, display_id=display_id, metadata=FALLBACK_METADATA)

    # -- after each cell ----------------------------------------------------------------------

    def _listen_to_cells(self) -> None:
        if self._after_cell is None or self._shell is not None:
            return
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython is a dependency
            return
        shell = get_ipython()
        if shell is not None:
            self._shell = shell
            shell.events.register("pre_execute", self._on_cell_start)
            shell.events.register("post_execute", self._on_cell_done)

    def _on_cell_start(self) -> None:
        self._cells_started += 1

    def _on_cell_done(self) -> None:
        try:
            if self._after_cell is not None and self._after_cell():
                self.stop_listening()
            elif self.view_left_out and WIDGET_VIEW in self.bundle():
                # A page became known since the view was left out (a text-only output goes by
                # what the process knows, which a later chart model can change): show it again.
                with self._lock:
                    self._update()
        except Exception:  # a view must never break the user's cell
            log.exception("publishing the picture of %r failed", self._widget)

    def stop_listening(self) -> None:
        """No more calls after each cell (the owner is done or closed)."""
        shell, self._shell = self._shell, None
        if shell is not None:
            for event, callback in (("pre_execute", self._on_cell_start), ("post_execute", self._on_cell_done)):
                try:
                    shell.events.unregister(event, callback)
                except ValueError:
                    pass
