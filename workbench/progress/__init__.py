"""Pure-Python progress model: typed records, the bounded per-stream history and the poller.

Nothing here imports Spark or any view: Spark's JSON enters through
:meth:`BatchProgress.from_json`, and views read :class:`ProgressHistory`.
"""

from .history import HISTORY_COLUMNS, OPERATOR_COLUMNS, ProgressHistory, records_to_frame
from .poller import ProgressPoller, ProgressSource
from .records import DURATION_PARTS, BatchProgress, OperatorProgress, parse_spark_time

__all__ = [
    "BatchProgress", "OperatorProgress", "ProgressHistory", "ProgressPoller", "ProgressSource",
    "HISTORY_COLUMNS", "OPERATOR_COLUMNS", "DURATION_PARTS", "records_to_frame", "parse_spark_time",
]
