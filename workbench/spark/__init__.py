"""Everything that talks to pyspark: sessions, starting and stopping queries, sources.

No other part of the workbench imports pyspark; they go through this package.
"""

from .environment import CheckpointWarning, Workbench, current_env, new_env
from .registry import STREAM_COLUMNS
from .handle import StreamHandle

__all__ = ["Workbench", "CheckpointWarning", "current_env", "new_env", "StreamHandle", "STREAM_COLUMNS"]
