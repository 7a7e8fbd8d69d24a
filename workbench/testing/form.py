"""The live-input form of a memory stream: one text box per column, and Add."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

__all__ = ["AddRowForm"]


class AddRowForm(widgets.VBox):
    """Add one row to a memory stream from a notebook; shows the offset reached or the error.

    Parameters
    ----------
    stream : MemoryStream
        Anything with ``schema`` (a StructType) and ``add(rows) -> int``.

    Examples
    --------
    >>> form = AddRowForm(events)                                # doctest: +SKIP
    >>> form.fields["word"].value = "donkey"                     # doctest: +SKIP
    >>> form.add()                                               # doctest: +SKIP
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.fields = {
            f.name: widgets.Text(description=f.name, placeholder=f.dataType.simpleString(),
                                 layout=widgets.Layout(width="280px"))
            for f in stream.schema.fields
        }
        self.button = widgets.Button(description="Add", button_style="primary", icon="plus")
        self.status = widgets.HTML("")
        self.button.on_click(lambda _: self.add())
        super().__init__([widgets.HBox([*self.fields.values(), self.button]), self.status])

    def add(self) -> int | None:
        """Add the typed row; returns the offset reached, or None when the row was refused."""
        row = {name: (box.value.strip() or None) for name, box in self.fields.items()}
        for f in self.stream.schema.fields:
            text = row[f.name]
            if text is not None and f.dataType.typeName() in ("integer", "long", "short", "byte"):
                row[f.name] = int(text) if text.lstrip("-").isdigit() else text
            elif text is not None and f.dataType.typeName() in ("double", "float"):
                try:
                    row[f.name] = float(text)
                except ValueError:
                    pass
        try:
            offset = self.stream.add([row])
        except (TypeError, ValueError) as exc:
            self.status.value = f"<span style='color:#b00'>Not added: {exc}</span>"
            return None
        self.status.value = f"Added at offset {offset}: {row}"
        return offset

    def __repr__(self) -> str:
        # A notebook without widgets (or after the kernel) shows this, not the widget tree.
        return f"<AddRowForm: one row of {', '.join(self.fields)} at a time>"
