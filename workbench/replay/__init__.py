"""Reproducible streaming experiments: replay specs, scenarios, late-row rules, comparisons.

Pure Python: nothing here imports Spark or widgets. ``workbench.spark.replay_source`` turns
specs into streaming DataFrames, ``workbench.spark.replay_run`` plays them and
``workbench.views.replay_panel`` shows the controls.
"""

from . import scenarios
from .late import FATES, LATE_COLUMNS, WindowShape, late_row_fates, late_totals, window_spans
from .columns import DISTRIBUTIONS, PAYLOAD_KINDS, Disorder, KeyColumn, PayloadColumn
from .spec import Replay, Script, WindowCount, source_from_json
from .values import parse_duration, parse_event_time

__all__ = [
    "Replay", "Script", "KeyColumn", "Disorder", "PayloadColumn", "WindowCount", "parse_event_time",
    "parse_duration", "source_from_json", "DISTRIBUTIONS", "PAYLOAD_KINDS", "WindowShape", "window_spans",
    "late_row_fates", "late_totals", "FATES", "LATE_COLUMNS", "scenarios",
]
