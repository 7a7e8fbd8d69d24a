"""The batch ids in a checkpoint's logs, read from the local file system.

Spark writes one file per batch into a checkpoint's ``offsets`` folder as the batch starts
and into its ``commits`` folder once it has committed it. The workbench reads those names
to tell where a restart goes on, which batch a stop interrupted, and which batch a stop cut
after its commit; and the names of all its log and state files, to tell whether a checkpoint
changed since its state operators were last read. Only checkpoints on this machine are read (``file:`` paths included);
other file systems (``hdfs://``, ``s3a://``) are out of this process's reach.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

__all__ = ["local_checkpoint", "batch_ids", "next_watermark_ms", "checkpoint_files", "uncommit_unreported"]

log = logging.getLogger(__name__)


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


def next_watermark_ms(checkpoint: str | os.PathLike[str] | None, batch_id: int) -> int | None:
    """The watermark (epoch milliseconds) the batch after ``batch_id`` runs with, from its commit.

    Spark writes it into each batch's commit file (a version line, then JSON); None when the
    batch has no commit yet or the checkpoint is not on this machine.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory(); checkpoint = Path(folder.name)
    >>> (checkpoint / "commits").mkdir()
    >>> _ = (checkpoint / "commits" / "3").write_text('v1\\n{"nextBatchWatermarkMs":5000}')
    >>> next_watermark_ms(checkpoint, 3), next_watermark_ms(checkpoint, 4)
    (5000, None)
    >>> folder.cleanup()
    """
    folder = local_checkpoint(checkpoint)
    if folder is None:
        return None
    try:
        committed = json.loads((folder / "commits" / str(batch_id)).read_text().split("\n", 1)[1])
        return int(committed.get("nextBatchWatermarkMs", 0))
    except (OSError, ValueError, IndexError, TypeError, AttributeError):
        return None


def checkpoint_files(folder: str | os.PathLike[str]) -> tuple | None:
    """What Spark's ``state-metadata`` reader reads of a local checkpoint ``folder``: the names of
    its commits and state files, and the size and time of each operator metadata file.

    Two equal results mean the same operators and batch ranges: a commit, a state file
    written or removed by maintenance, or a restart that rewrote an operator's metadata all
    change it. None when a file went while it was read (a running query's maintenance).
    About a millisecond for a thousand names (Spark keeps 100 batches of them).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory(); checkpoint = Path(folder.name)
    >>> before = checkpoint_files(checkpoint)
    >>> (checkpoint / "commits").mkdir(); (checkpoint / "commits" / "0").touch()
    >>> checkpoint_files(checkpoint) == before
    False
    >>> folder.cleanup()
    """
    seen = []
    try:
        for top in ("commits", "state"):
            for path, folders, files in os.walk(os.path.join(folder, top)):
                folders.sort()
                files.sort()
                if "_metadata" in path.split(os.sep):
                    stats = [os.stat(os.path.join(path, f)) for f in files]
                    seen.append((path, tuple((f, st.st_size, st.st_mtime_ns) for f, st in zip(files, stats))))
                else:
                    seen.append((path, tuple(files)))
    except OSError:
        return None
    return tuple(seen)


def uncommit_unreported(checkpoint: str, last_reported: int | None, name: str = "") -> list[int]:
    """Take back the commits of batches Spark committed but never reported; their ids.

    A stop that interrupts a batch just after Spark wrote its commit but before it reported
    its progress leaves a batch with no record in the history, and a restart would go on
    after it. Without its commit the batch runs again on restart, from the same offsets,
    exactly as one interrupted a moment earlier: its state version and its results are
    written again. Only local checkpoints are read (nothing is done for other file systems).

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.TemporaryDirectory(); checkpoint = folder.name
    >>> os.makedirs(os.path.join(checkpoint, "commits"))
    >>> for n in ("0", "1", ".1.crc"): open(os.path.join(checkpoint, "commits", n), "w").close()
    >>> uncommit_unreported(checkpoint, 0), sorted(os.listdir(os.path.join(checkpoint, "commits")))
    ([1], ['0'])
    >>> folder.cleanup()
    """
    taken = [i for i in batch_ids(checkpoint, "commits") if last_reported is None or i > last_reported]
    for batch_id in taken:
        for leaf in (str(batch_id), f".{batch_id}.crc"):
            (local_checkpoint(checkpoint) / "commits" / leaf).unlink(missing_ok=True)
    if taken:
        log.info("replay %s: batches %s were committed but not reported when it paused; they run again", name, taken)
    return taken
