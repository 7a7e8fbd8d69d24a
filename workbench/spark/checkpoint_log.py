"""The batch ids in a checkpoint's logs, read from the local file system.

Spark writes one file per batch into a checkpoint's ``offsets`` folder as the batch starts
and into its ``commits`` folder once it has committed it. The workbench reads those names
to tell where a restart goes on, which batch a stop interrupted, and which batch a stop cut
after its commit. Only checkpoints on this machine are read (``file:`` paths included);
other file systems (``hdfs://``, ``s3a://``) are out of this process's reach.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["local_checkpoint", "batch_ids"]


def local_checkpoint(checkpoint: str | os.PathLike[str] | None) -> Path | None:
    """The checkpoint's folder on this machine, or None (no checkpoint, or another file system).

    Examples
    --------
    >>> local_checkpoint("file:/tmp/counts"), local_checkpoint("s3a://bucket/counts"), local_checkpoint(None)
    (PosixPath('/tmp/counts'), None, None)
    """
    if not checkpoint:
        return None
    path = os.fspath(checkpoint)
    path = path[len("file:"):] if path.startswith("file:") else path
    return None if "://" in path else Path(path)


def batch_ids(checkpoint: str | os.PathLike[str] | None, log: str) -> list[int]:
    """The batch ids in a local checkpoint's ``log`` (``"offsets"`` or ``"commits"``), in order.

    Empty when the log is not there yet or the checkpoint is not on this machine.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory(); checkpoint = Path(folder.name)
    >>> (checkpoint / "commits").mkdir()
    >>> for name in ("0", "1", ".1.crc", "10"): (checkpoint / "commits" / name).touch()
    >>> batch_ids(checkpoint, "commits"), batch_ids(checkpoint, "offsets")
    ([0, 1, 10], [])
    >>> folder.cleanup()
    """
    folder = local_checkpoint(checkpoint)
    if folder is None:
        return []
    try:
        return sorted(int(entry.name) for entry in os.scandir(folder / log) if entry.name.isdigit())
    except OSError:
        return []
