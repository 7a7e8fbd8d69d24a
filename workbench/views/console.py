"""Console-sink output under the notebook cell that started the stream.

Text printed from a background thread lands under whichever cell runs at that moment;
appending to an ``Output`` widget created by the starting cell keeps every micro-batch
under that cell, in order.
"""

from __future__ import annotations

import sys
from typing import Callable

__all__ = ["cell_console", "in_kernel"]


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

    In a Jupyter kernel this displays an ``Output`` widget under the running cell and
    returns a function appending text to it (safe from any thread). Elsewhere it returns
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

    import ipywidgets as widgets
    from IPython.display import display

    out = widgets.Output(layout=widgets.Layout(max_height="32em", overflow="auto"))
    out.add_class("workbench-console")
    if display_now:
        display(out)
    return CellConsole(out)


class CellConsole:
    """Appends console-sink text to an ``Output`` widget; ``.widget`` is that widget."""

    def __init__(self, widget: object) -> None:
        self.widget = widget

    def __call__(self, text: str) -> None:
        self.widget.append_stdout(text)  # type: ignore[attr-defined]
