"""Making the class data archive: ``python -m workbench.spark.class_recording PATH``.

What the process :func:`workbench._class_archive.record_in_background` starts runs (at the
lowest CPU priority): a local session whose JVM has ``-XX:ArchiveClassesAtExit`` runs a
windowed count with a watermark, on the state store the workbench uses, for a few
micro-batches through the workbench; its JVM then ends and writes the classes it loaded to a
temporary file, which becomes the archive once a JVM has started with it (a half-written or
unusable archive is never moved into place). See :mod:`workbench._class_archive`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .. import _class_archive as class_archive
from .._java import require_java
from .environment import new_env
from .session_end import stop_session

__all__ = ["record"]


def record(archive: Path, timeout: float = 300.0) -> bool:
    """Make ``archive`` here and now, holding the claim the caller took; True when it is in place.

    Examples
    --------
    >>> record(class_archive.current_archive())      # doctest: +SKIP
    True
    """
    with class_archive.claimed(archive) as tmp:
        os.environ[class_archive.ENV] = "0"  # this session maps no archive and records no other
        class_path = _run_a_stream(f"-XX:ArchiveClassesAtExit={tmp} {class_archive.QUIET}", timeout)
        if not tmp.is_file():
            raise RuntimeError("the JVM wrote no archive")
        java = require_java()
        check = subprocess.run(
            [java.path, f"-XX:SharedArchiveFile={tmp}", "-Xshare:on", "-cp", class_path, "-version"],
            capture_output=True, text=True, timeout=60, check=False)
        if check.returncode != 0:
            raise RuntimeError(f"a JVM does not start with it: {check.stderr.strip()[-300:]}")
        class_archive.write_note(archive, java.path, java.version or "")
        os.replace(tmp, archive)
        # A new archive in: those of installations that are gone (a deleted virtualenv) go out,
        # before the claim goes, so that whoever waits for the claim to go finds the folder settled.
        class_archive.prune(archive.parent)
    return archive.exists()


def _run_a_stream(java_options: str, timeout: float) -> str:
    """A local session with ``java_options`` that runs a small stateful stream, then ends its JVM.

    Returns the JVM's class path (an archive fits only JVMs with the same one).
    """
    env = new_env()
    spark = env.session(**{"spark.driver.extraJavaOptions": java_options})
    class_path = spark.sparkContext._jvm.System.getProperty("java.class.path")
    try:
        (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).option("advanceMillisPerBatch", 1000)
         .load().withWatermark("timestamp", "2 seconds").createOrReplaceTempView("class_archive_events"))
        counts = spark.sql("SELECT window(timestamp, '2 seconds') AS window, value % 3 AS k, count(*) AS n "
                           "FROM class_archive_events GROUP BY 1, 2")
        handle = env.start(counts, "class_archive", trigger="100 ms")
        deadline = time.monotonic() + timeout
        while handle.progress.total < 3 and handle.status == "active" and time.monotonic() < deadline:
            time.sleep(0.2)
        handle.stop()
        handle.result()
    finally:
        env.stop_all()
        stop_session(spark, timeout=timeout)  # the JVM writes the archive as it ends
    return class_path


if __name__ == "__main__":
    os.nice(19)
    sys.exit(0 if record(Path(sys.argv[1])) else 1)
