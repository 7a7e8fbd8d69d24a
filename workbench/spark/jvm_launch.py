"""Starting the Spark JVM with its standard error in a log file instead of the notebook.

A Jupyter kernel forwards whatever its child processes write to the inherited stderr to the
notebook, under whichever cell runs: the JVM's start-up lines ("WARNING: Using incubator
modules: jdk.incubator.vector", "Setting default log level to ...") would be a red box under
the first cell, and later JVM reports (log4j errors, stack traces of a stopped batch, the
output of the Python workers the JVM starts) would land under unrelated cells. So the
workbench starts the JVM itself, as pyspark would (``launch_gateway``, whose ``popen_kwargs``
exist for this), with its stderr appended to a log file in the session's private folder,
and hands the gateway to pyspark before the session is built. The JVM's stdout is left as
it is: only a raw ``format("console")`` query writes there, and a user who asked for one
expects its tables; the workbench's own console sink renders on the Python side.

The file's path is ``workbench.spark_log()``; it goes with the session's folder at shutdown.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["JVM_LOG_NAME", "launch_jvm", "jvm_log", "log_tail"]

log = logging.getLogger(__name__)

#: The log file's name in the session's private folder.
JVM_LOG_NAME = "spark-jvm.log"


def launch_jvm(settings: Mapping[str, str], folder: Path, *, hide_remote: bool = False) -> Path | None:
    """Start the JVM for the next SparkContext of this process, its stderr going to a file.

    Nothing is started when pyspark already has a JVM (a stopped session's, or one a user
    started): its output goes where it went before, and the path returned is that JVM's
    log, if the workbench started it.

    Parameters
    ----------
    settings : mapping of str to str
        The session's Spark settings; ``spark-submit`` reads those it needs at JVM start
        (``spark.driver.extraJavaOptions``, memory, jars), as when pyspark starts it.
    folder : pathlib.Path
        A private folder of the session's; the log is ``folder / JVM_LOG_NAME``.
    hide_remote : bool, default False
        Start it without ``SPARK_REMOTE`` in the environment (the server JVM of a local
        Spark Connect session, which ``spark-submit`` must not take for a client).

    Returns
    -------
    pathlib.Path or None
        The JVM's log file, or None for a JVM the workbench did not start.

    Raises
    ------
    pyspark.errors.PySparkRuntimeError
        When the JVM exits at start; the error carries the log's last lines as a note.

    Examples
    --------
    >>> path = launch_jvm({"spark.master": "local[2]"}, scratch)     # doctest: +SKIP
    >>> path.read_text().splitlines()[0]                              # doctest: +SKIP
    'WARNING: Using incubator modules: jdk.incubator.vector'
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return getattr(SparkContext._gateway, "_workbench_log", None)
        path = folder / JVM_LOG_NAME
        conf = SparkConf(loadDefaults=False).setAll([(k, str(v)) for k, v in settings.items()])
        with open(path, "ab") as out, _without_variable("SPARK_REMOTE" if hide_remote else None):
            try:
                gateway = launch_gateway(conf, popen_kwargs={"stderr": out})
            except Exception as error:
                tail = log_tail(path)
                if tail:
                    error.add_note(f"The Spark JVM's last lines ({path}):\n{tail}")
                raise
        gateway._workbench_log = path
        # What SparkContext does with a gateway it is given: later sessions use this JVM.
        SparkContext._ensure_initialized(gateway=gateway)
    log.info("the Spark JVM (pid %s) writes its stderr to %s", getattr(gateway.proc, "pid", "?"), path)
    return path


def jvm_log(spark: Any) -> Path | None:
    """The log file of the JVM behind ``spark``, or None (a JVM the workbench did not start).

    Examples
    --------
    >>> jvm_log(object()) is None
    True
    """
    path = getattr(spark, "_workbench_log", None)
    return Path(path) if path is not None else None


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of ``path`` ("" when it is missing or empty).

    Examples
    --------
    >>> log_tail(Path("/no/such/file"))
    ''
    """
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


@contextmanager
def _without_variable(name: str | None) -> Iterator[None]:
    # pyspark's own start of a local Connect server hides SPARK_REMOTE from spark-submit too.
    value = os.environ.pop(name, None) if name else None
    try:
        yield
    finally:
        if name and value is not None:
            os.environ[name] = value
