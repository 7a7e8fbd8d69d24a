"""Closing a widget with everything under it: its children, layouts and styles.

``Widget.close()`` closes one widget's comm. A box's children, and each widget's ``layout``
and ``style`` (widgets of their own), stay open in the kernel's registry of widgets and on
the page; and a child whose callbacks point back at its owner (a button's ``on_click``)
keeps that owner alive, with the stream handle, progress history and Spark query it shows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["close_tree"]


def close_tree(*roots: Any) -> None:
    """Close each widget in ``roots``, its ``children`` (recursively), layouts and styles.

    Anything that is not an ipywidgets widget is skipped; a widget already closed is not
    closed again, but what it holds is.

    Examples
    --------
    >>> import ipywidgets as widgets
    >>> button = widgets.Button(description="Stop")
    >>> box = widgets.HBox([button, widgets.HTML("status")])
    >>> parts = [box, *box.children, box.layout, button.layout, button.style]
    >>> close_tree(box)
    >>> [part.comm is None for part in parts]
    [True, True, True, True, True, True]
    """
    seen: set[int] = set()
    pending = list(roots)
    while pending:
        widget = pending.pop()
        # Told by what it has, not by class: this runs from ``Widget.__del__`` at the
        # interpreter's exit too, when nothing can be imported any more.
        if not (hasattr(widget, "has_trait") and hasattr(widget, "comm")) or id(widget) in seen:
            continue
        seen.add(id(widget))
        pending.extend(getattr(widget, "children", None) or ())
        for part in ("layout", "style"):
            if widget.has_trait(part):
                pending.append(getattr(widget, part))
        if widget.comm is not None:  # one that closed itself already is not asked again
            widget.close()
