"""Building the SparkSession: an embedded local Spark tuned for interactive streaming.

Defaults measured on a 2-core machine: 200 shuffle partitions make a stateful micro-batch
~25x slower than 2; adaptive execution is unsupported in streaming and only logs a
warning; the driver and UI would bind every interface unless told otherwise.
``WORKBENCH_MASTER`` points the session at a cluster and ``SPARK_REMOTE`` at a Spark
Connect server instead; either URL is checked (well formed, and something answers there)
before a JVM or a Connect client starts, so a wrong one is one line, not a minute of retries.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from .._java import require_java
from .._spark_target import SparkTarget, require_reachable, spark_target

__all__ = [
    "build_session", "default_conf", "is_local_master", "is_connect", "is_connect_session", "session_target",
    "stop_session", "spark_is_gone", "discard_dead_session",
]

log = logging.getLogger(__name__)

_LOG4J = Path(__file__).with_name("log4j2.properties")


def is_local_master(master: str) -> bool:
    """Whether a master URL runs Spark inside this machine (``local``, ``local[2]``, ...)."""
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def is_connect() -> bool:
    """Whether sessions go through Spark Connect (``SPARK_REMOTE`` is set)."""
    return bool(os.environ.get("SPARK_REMOTE"))


def is_connect_session(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its code runs on the server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def session_target(spark: Any) -> SparkTarget:
    """Where a running session's Spark runs (embedded, a cluster or a Connect server)."""
    if is_connect_session(spark):
        return spark_target(os.environ)
    return spark_target({}, spark.sparkContext.master)


_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _loopback_master(master: str) -> bool:
    # A master on this machine's loopback can only have executors here: the driver can stay
    # on loopback too instead of listening on every interface.
    if not master.startswith("spark://"):
        return False
    hosts = [part.rpartition(":")[0].strip("[]") for part in master[len("spark://"):].split(",")]
    return all(host in _LOOPBACK for host in hosts)


def default_conf(master: str, warehouse_dir: str) -> dict[str, str]:
    """The configuration the workbench gives a session, before the user's own settings.

    Parameters
    ----------
    master : str
        The master URL; loopback binding is added only for a local master (a cluster's
        executors must reach the driver).
    warehouse_dir : str
        Folder for ``spark.sql.warehouse.dir``, so nothing lands in the working folder.

    Examples
    --------
    >>> conf = default_conf("local[2]", "/tmp/w")
    >>> conf["spark.sql.shuffle.partitions"], conf["spark.driver.host"]
    ('2', '127.0.0.1')
    >>> "spark.driver.host" in default_conf("spark://cluster:7077", "/tmp/w")
    False
    >>> default_conf("spark://127.0.0.1:7077", "/tmp/w")["spark.driver.bindAddress"]
    '127.0.0.1'
    """
    conf = {
        "spark.app.name": "workbench",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        # A RocksDB state store serves the state change feed only with a change log.
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.warehouse.dir": warehouse_dir,
        "spark.log.structuredLogging.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_LOG4J}",
    }
    conf["spark.master"] = master
    if is_local_master(master) or _loopback_master(master):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def build_session(warehouse_dir: str, conf: dict[str, Any]) -> Any:
    """Create (or return the active) SparkSession with the workbench's defaults.

    Parameters
    ----------
    warehouse_dir : str
        Private folder for the SQL warehouse.
    conf : dict
        The user's settings; they win over the defaults.

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    workbench._spark_target.SparkURLError
        For a malformed ``SPARK_REMOTE``, ``WORKBENCH_MASTER`` or ``spark.master``.
    workbench._spark_target.SparkUnreachableError
        When nothing answers at the master or Connect server (checked within seconds).
    """
    target = spark_target(os.environ, str(conf.get("spark.master") or "") or None)
    require_reachable(target)
    from pyspark.sql import SparkSession

    _quiet_query_context_loggers()
    if target.source == "SPARK_REMOTE":
        remote = target.url
        if remote.startswith("local"):
            # pyspark starts a local Connect server JVM; keep it on loopback as well.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Only runtime SQL settings can be given to a Spark Connect server.
        settings = {
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            **{k: str(v) for k, v in conf.items()},
        }
        if remote.startswith("local"):
            # The local server's gRPC port would otherwise listen on every interface.
            settings.setdefault("spark.connect.grpc.binding.address", "127.0.0.1")
        builder = SparkSession.builder.remote(remote)
        for key, value in settings.items():
            builder = builder.config(key, value)
        log.info("connecting to Spark Connect at %s", remote)
        return builder.getOrCreate()

    require_java()
    _quiet_dead_gateway_errors()
    master = target.url
    settings = {**default_conf(master, warehouse_dir), **{k: str(v) for k, v in conf.items()}}
    if is_local_master(master) or _loopback_master(master):
        # Decides where the JVM's web UI and block manager bind; read once at JVM start.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python UDF workers must use this interpreter (and so this environment's packages).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _quiet_query_context_loggers() -> None:
    # pyspark logs every analysis error a second time, as a JSON record with the JVM stack
    # trace, through its own Python loggers (log4j settings do not reach them). The error
    # itself is still raised; the workbench reports it as one line.
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


class _DeadGatewayFilter(logging.Filter):
    """Drops py4j's traceback for a call cut off because the JVM went away.

    py4j logs one per call in flight when the JVM dies: for calls from Python ("Exception
    while sending command.") and for Python callbacks the JVM was running, such as the
    session-wide progress listener ("There was an exception while executing the Python
    Proxy..."). The workbench reports the death once, as each stream's error.
    """

    MESSAGES = ("Exception while sending command.",
                "There was an exception while executing the Python Proxy on the Python Side.")
    GONE = ("Py4JNetworkError", "ConnectionRefusedError", "ConnectionResetError", "BrokenPipeError")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() not in self.MESSAGES or not record.exc_info:
            return True
        return type(record.exc_info[1]).__name__ not in self.GONE


def _quiet_dead_gateway_errors() -> None:
    # A logger's filters see only its own records, not those its children pass up.
    for name in ("", "py4j.java_gateway", "py4j.clientserver"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DeadGatewayFilter) for f in logger.filters):
            logger.addFilter(_DeadGatewayFilter())


def stop_session(spark: Any, timeout: float = 10.0) -> None:
    """Stop ``spark`` and end the JVM this process launched for it, waiting for it to exit.

    For a kernel shutdown: Jupyter kernels signal their child processes before exiting and
    keep waiting (up to ~30 s) while a child remains, even a dead one that nobody reaped;
    pyspark never reaps its JVM. Ending and reaping it here lets the kernel exit at once.
    """
    from pyspark import SparkContext

    try:
        spark.stop()
    except Exception:
        log.debug("stopping the session failed", exc_info=True)
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None:
        return
    try:
        gateway.shutdown()
    except Exception:
        log.debug("closing the py4j gateway failed", exc_info=True)
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is not None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except Exception:
            proc.kill()
            proc.wait()


def spark_is_gone(spark: Any, wait: float = 0.0) -> bool:
    """Whether ``spark`` can no longer run anything: stopped, or its JVM has died.

    Only the process's own JVM is checked (``poll()`` on the process pyspark launched),
    which costs no call into Spark: after the JVM dies, each py4j call fails with a
    connection error and logs a traceback, so callers ask this first. ``wait`` gives a JVM
    that is still exiting (its connections already closed) that many seconds to end.

    Examples
    --------
    >>> class Stopped:
    ...     _sc = type("Context", (), {"_jsc": None})()
    >>> spark_is_gone(Stopped())
    True
    """
    context = getattr(spark, "_sc", None)
    if context is None:  # Spark Connect reports it itself
        return bool(getattr(spark, "is_stopped", False))
    if getattr(context, "_jsc", None) is None:
        return True
    proc = getattr(getattr(context, "_gateway", None), "proc", None)
    if proc is None:
        return False
    if wait > 0:
        try:
            proc.wait(wait)
        except Exception:  # subprocess.TimeoutExpired: it still runs
            return False
    return proc.poll() is not None


def discard_dead_session(spark: Any) -> None:
    """Forget a session whose JVM died, so that the next build starts a new JVM.

    pyspark keeps the dead session, context and gateway as its active ones and would hand
    them out again (every call then failing with ``ConnectionRefusedError``).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    context = getattr(spark, "_sc", None)
    gateway = getattr(context, "_gateway", None) or SparkContext._gateway
    try:
        if gateway is not None:
            gateway.shutdown()
    except Exception:
        log.debug("closing the dead py4j gateway failed", exc_info=True)
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
    if proc is not None:
        proc.wait()
    if context is not None:
        context._jsc = None  # so that stop() skips the JVM and only ends the Python side
        context.stop()
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
