"""What the views need from a stream, written down once.

The live monitor reads a stream through this small protocol, so that a stream the
workbench started (:class:`~workbench.spark.handle.StreamHandle`), a query it watches and
a replayed run (:class:`~workbench.spark.replay_run.ReplayRun`'s view of its restarts) are
each an honest implementation rather than a stand-in imitating a handle. The views never
import Spark: everything they show comes through these members.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Protocol

import pandas as pd

from ..progress.history import ProgressHistory

__all__ = ["MonitoredStream"]


class MonitoredStream(Protocol):
    """A stream as the live monitor reads it.

    Optional members, read with ``getattr`` when present: ``spec.poll_interval`` (seconds
    between progress polls), ``run_id`` and ``spark_ui_url`` (for the Spark UI button),
    ``timers()`` (a transformWithState processor's timers, which "why no output?" names).

    Attributes
    ----------
    name : str
    sink : str or None
        ``"memory"`` streams have a result table, which :meth:`preview` reads.
    output_mode : str or None
    progress : ProgressHistory
        The batch-by-batch history the charts are drawn from.
    started_at : datetime or None
    plan : Any
        Facts from the query plan (``PlanFacts``) for "why no output?", or None.
    """

    name: str
    sink: str | None
    output_mode: str | None
    progress: ProgressHistory
    started_at: datetime | None
    plan: Any

    @property
    def status(self) -> str:
        """``"active"``, ``"stopped"``, ``"failed"`` (or the replay's own states)."""

    @property
    def error(self) -> str | None:
        """One readable line when the stream failed, else None."""

    def stop(self) -> None:
        """Stop the stream (the monitor's Stop button; may block until a batch ends)."""

    def on_finished(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(stream)`` once when the stream ends (at once if it has)."""

    def preview(self, rows: int) -> tuple[pd.DataFrame, int]:
        """A few rows of the result table and its row count (memory sink only)."""
