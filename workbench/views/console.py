"""Console-sink output under the notebook cell that started the stream.

Text printed from a background thread lands under whichever cell runs at that moment;
adding each micro-batch to a widget created by the starting cell keeps every batch under
that cell, in order, and sends the page only the new batch.

The widget's display output also carries the batches as plain text (a
:class:`~workbench.views.static_output.StaticOutput`, brought up to date after each cell
that saw new batches), so a saved notebook, its HTML export, GitHub and a JupyterLab page
opening it after the kernel is gone show the tables instead of nothing.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import deque
from typing import Any, Callable

from ..errors import InterruptionNoiseFilter
from .closing import close_tree
from .static_output import StaticOutput

__all__ = ["cell_console", "in_kernel", "CellConsole", "filter_kernel_stderr", "unfilter_kernel_stderr"]


def in_kernel() -> bool:
    """Whether code runs in a Jupyter kernel (where widgets can be displayed)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def cell_console(display_now: bool = True) -> Callable[[str], None]:
    """A writer for console-sink text that stays under the current cell.

    In a Jupyter kernel this displays a :class:`CellConsole` under the running cell and
    returns it (call it with each batch's text, from any thread). Elsewhere it returns
    a function writing to standard output.

    Examples
    --------
    >>> write = cell_console()
    >>> write("Batch: 0\\n")
    Batch: 0
    """
    if not in_kernel():
        def write_stdout(text: str) -> None:
            sys.stdout.write(text)
            sys.stdout.flush()

        return write_stdout

    from IPython.display import display

    filter_kernel_stderr()
    console = CellConsole()
    if display_now:
        display(console.widget)
    return console


class CellConsole:
    """Console-sink text under a cell: one small widget per batch in a box, the newest kept.

    Each batch becomes its own ``Output`` widget holding just that batch's text, so the page
    receives only the new batch (plus the box's short list of children), not every earlier
    table again. Past ``max_batches`` the oldest batches are dropped and a line says how many.
    Safe to call from any thread.

    Parameters
    ----------
    max_batches : int, default 50
        Batches shown at most.

    Attributes
    ----------
    widget : ipywidgets.VBox
        What the cell displays; its output also holds the batches' text (see :meth:`text`).

    Examples
    --------
    >>> console = CellConsole(max_batches=2)
    >>> for i in range(3):
    ...     console(f"Batch: {i}\\n")
    >>> console.texts(), console.dropped
    (['Batch: 1\\n', 'Batch: 2\\n'], 1)
    """

    def __init__(self, max_batches: int = 50) -> None:
        import ipywidgets as widgets

        if isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1:
            raise ValueError(f"max_batches must be a positive whole number, got {max_batches!r}")
        self.max_batches = max_batches
        self.widget = _console_box_class()(layout=widgets.Layout(max_height="32em", overflow="auto"))
        self.widget.add_class("workbench-console")
        self._output = self.widget.static_output = StaticOutput(self.widget, text=self.text,
                                                                after_cell=self._publish_new)
        self._note = widgets.HTML("")
        self._batches: deque[Any] = deque()
        self.dropped = 0
        self._published = 0  # batches written when the text was last published
        self._ended = False  # its stream has ended: no batch comes any more
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        import ipywidgets as widgets

        batch = widgets.Output(outputs=({"output_type": "stream", "name": "stdout", "text": text},))
        with self._lock:
            self._batches.append(batch)
            old = []
            while len(self._batches) > self.max_batches:
                old.append(self._batches.popleft())
            if old:
                self.dropped += len(old)
                self._note.value = (
                    f"<i>{self.dropped} earlier batches not shown (the newest {self.max_batches} are kept)</i>"
                )
            self.widget.children = ((self._note,) if self.dropped else ()) + tuple(self._batches)
        close_tree(*old)

    def close(self) -> None:
        """Stop publishing after cells and close the widgets (when its cell runs again)."""
        self._output.stop_listening()
        with self._lock:
            self._batches.clear()
        close_tree(self.widget, self._note)  # the note is in the box only once batches were dropped

    def texts(self) -> list[str]:
        """The text of each batch shown, oldest first."""
        with self._lock:
            return ["".join(o.get("text", "") for o in batch.outputs) for batch in self._batches]

    def text(self) -> str:
        """What viewers without the widget show: the batches' text, after a line on those dropped.

        Examples
        --------
        >>> console = CellConsole(max_batches=1)
        >>> console("Batch: 0\\n"); console("Batch: 1\\n")
        >>> print(console.text())
        (1 earlier batches not shown)
        Batch: 1
        """
        texts = self.texts()
        if not texts:
            return "Console sink: no batch yet"
        note = f"({self.dropped} earlier batches not shown)\n" if self.dropped else ""
        return note + "".join(texts).rstrip("\n")

    def finish(self, _stream: Any = None) -> None:
        """Its stream has ended (a stream's ``on_finished`` callback): the cell after this one
        publishes the text for the last time, and later cells leave it alone."""
        with self._lock:
            self._ended = True

    def _publish_new(self) -> bool:
        """After each cell: publish the text when batches came since it was last published."""
        with self._lock:
            written, ended = len(self._batches) + self.dropped, self._ended  # batches written so far
        if written != self._published:
            self._published = written
            self._output.publish(written)
        # Else batches may still come, or the widget's view was left out (no page was known
        # to draw it) and comes back after a later cell once one is: keep listening.
        return ended and not self._output.view_left_out


@functools.cache
def _console_box_class() -> type:
    """The console's widget class (made on first use: importing this module needs no ipywidgets)."""
    import ipywidgets as widgets

    class ConsoleBox(widgets.VBox):
        """The console's box: displayed through its output, so the text travels with the widget."""

        static_output: StaticOutput

        def _ipython_display_(self) -> None:
            self.static_output.display()

    return ConsoleBox


def filter_kernel_stderr() -> InterruptionNoiseFilter | None:
    """In a Jupyter kernel, keep the JVM's stop-mid-batch StackOverflowError wall out of the notebook.

    The kernel forwards everything the Spark JVM writes to its stderr to the notebook, under
    whichever cell runs. Stopping a console-sink stream (a ``foreachBatch`` query) while a
    batch runs makes the JVM print a ~1,000-line StackOverflowError there; this drops that
    one report (see :class:`~workbench.errors.InterruptionNoiseFilter`) and passes every
    other line. Idempotent; returns the filter (its ``dropped`` counts the walls), or None
    outside a kernel.

    Examples
    --------
    >>> filter_kernel_stderr() is None   # plain Python: nothing to do
    True
    """
    stream = sys.stderr
    if not in_kernel() or not hasattr(stream, "_flush_buffers"):
        return None
    noise = getattr(stream, "_workbench_noise", None)
    if noise is not None:
        return noise
    noise = InterruptionNoiseFilter()
    original = stream._flush_buffers

    # Filtered where ipykernel's stream turns buffered text into messages: IPython swaps
    # ``write`` around every cell (to keep outputs in its history) and restores the one it
    # found, so a filter on ``write`` would be gone after the cell that installed it.
    def flush_buffers() -> Any:
        for parent, data in original():
            yield parent, noise.feed(data)

    stream._flush_buffers = flush_buffers  # type: ignore[attr-defined]
    stream._workbench_noise = noise  # type: ignore[attr-defined]
    return noise


def unfilter_kernel_stderr() -> None:
    """Undo :func:`filter_kernel_stderr` (``%unload_ext workbench``)."""
    stream = sys.stderr
    if getattr(stream, "_workbench_noise", None) is not None:
        del stream._flush_buffers
        del stream._workbench_noise
