"""A replay's state, read back: the state methods of a replay run and of the stream the monitor reads.

:class:`ReplayState` gives ``state()``, ``state_changes()``, ``state_summary()`` and
``timers()`` (the same as a ``StreamHandle``'s) to anything with an ``_inspector()``
method that returns a :class:`~workbench.spark.state.StateInspector`;
:meth:`ReplayState.state_parts` lists every table a state view shows (each side of a
join, each variable and the timers of a transformWithState processor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from .tws_state import processor_state

if TYPE_CHECKING:
    from .state_operators import StateOperator

__all__ = ["ReplayState"]


class ReplayState:
    """The state methods of a replay, read from its checkpoint after any step.

    Examples
    --------
    >>> panel.step(); panel.handle.state(variable="count"); panel.handle.timers()   # doctest: +SKIP
    """

    def _inspector(self) -> Any:
        raise NotImplementedError

    def state(self, batch_id: int | None = None, operator: int | str | None = None,
              side: str | None = None, variable: str | None = None) -> pd.DataFrame:
        """The state rows held after batch ``batch_id`` (default: the latest); see ``StreamHandle.state``.

        Examples
        --------
        >>> run.step(); run.state()                    # doctest: +SKIP
        >>> run.state(variable="pages")                # doctest: +SKIP
        """
        return self._inspector().state(batch_id, operator, side, variable)

    def state_changes(self, start_batch: int, end_batch: int | None = None, operator: int | str | None = None,
                      side: str | None = None, variable: str | None = None) -> pd.DataFrame:
        """What changed in state between two batches; see ``StreamHandle.state_changes``."""
        return self._inspector().changes(start_batch, end_batch, operator, side, variable)

    def state_summary(self) -> pd.DataFrame:
        """The query's stateful operators; see ``StreamHandle.state_summary``."""
        return self._inspector().summary()

    def timers(self, batch_id: int | None = None, operator: int | str | None = None) -> pd.DataFrame:
        """A transformWithState processor's timers after batch ``batch_id``; see ``StreamHandle.timers``.

        Examples
        --------
        >>> run.step(); run.timers()[["user", "expires_at", "ahead_of_watermark"]]   # doctest: +SKIP
        """
        return self._inspector().timers(batch_id, operator)

    def state_parts(self) -> list[tuple[str, int, Callable[[], pd.DataFrame]]]:
        """Every table of the latest state: ``(title, batch id, read)``, ``read()`` giving the rows.

        One part per operator, per side of a stream-stream join, and per state variable of a
        transformWithState processor plus its timers (when it has any).
        """
        inspector = self._inspector()
        parts: list[tuple[str, int, Callable[[], pd.DataFrame]]] = []
        # The operators are read once; each part reads the batch they name (a later batch
        # committed meanwhile, as while playing, does not make a table disagree with its title).
        for op in inspector.operators():
            def read(op: StateOperator = op, **options: Any) -> Callable[[], pd.DataFrame]:
                return lambda: inspector.state_of(op, op.max_batch_id, **options)

            if op.is_join:
                parts += [(f"{op.kind}, {side} side", op.max_batch_id, read(side=side)) for side in ("left", "right")]
            elif op.is_tws:
                processor = processor_state(op.properties)
                parts += [(f"{op.kind}, {v.describe()}", op.max_batch_id, read(variable=v.name))
                          for v in processor.variables]
                if processor.has_timers:
                    parts.append((f"{op.kind}, timers ({processor.time_mode})", op.max_batch_id,
                                  lambda op=op: inspector.timers_of(op, op.max_batch_id)))
            else:
                parts.append((op.kind, op.max_batch_id, read()))
        return parts
