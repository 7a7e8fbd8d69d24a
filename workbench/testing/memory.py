"""The public :class:`MemoryStream`: Spark's side from :mod:`workbench.spark.memory_stream`, plus its form."""

from __future__ import annotations

from typing import Any

from ..spark.memory_stream import MemoryStream as _SparkMemoryStream

__all__ = ["MemoryStream"]


class MemoryStream(_SparkMemoryStream):
    __doc__ = _SparkMemoryStream.__doc__

    _widget: Any = None

    def widget(self) -> Any:
        """A small form to add one row at a time: a text box per column, and Add.

        For teaching: with a ``%%stream`` over ``events.df`` running on a processing-time
        trigger, type a late event and watch the watermark drop it.

        Examples
        --------
        >>> events.widget()                                     # doctest: +SKIP
        """
        if self._widget is None:
            from .form import AddRowForm

            self._widget = AddRowForm(self)
        return self._widget
