"""Building the SparkSession: an embedded local Spark tuned for interactive streaming.

Defaults measured on a 2-core machine: 200 shuffle partitions make a stateful micro-batch
~25x slower than 2; adaptive execution is unsupported in streaming and only logs a
warning; the driver and UI would bind every interface unless told otherwise.
``WORKBENCH_MASTER`` points the session at a cluster and ``SPARK_REMOTE`` at a Spark
Connect server instead; either URL is checked (well formed, and something answers there)
before a JVM or a Connect client starts, so a wrong one is one line, not a minute of retries.

Spark's own scratch files (``spark.local.dir``: block manager and shuffle folders, pyspark's
broadcast files) go to a private folder of the session's, so that a kernel shutdown can
end the JVM at once and still leave nothing behind (:func:`.session_end.end_session`). The JVM's stderr
goes to a log file there too, not to the notebook (see :mod:`.jvm_launch`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
import uuid
import zipfile
from pathlib import Path
from typing import Any, Iterator

from .._java import require_java
from .._spark_target import (
    CONNECT_DEFAULT_PORT, SparkTarget, SparkUnreachableError, connect_port, is_loopback, require_free_connect_port,
    require_reachable, spark_target,
)
from .. import _class_archive as class_archive
from .jvm_launch import launch_jvm
from .private_folders import private_folder
from .python_workers import use_for_workers

__all__ = [
    "build_session", "default_conf", "is_local_master", "is_connect", "is_connect_session", "session_target",
    "classic_session", "CHECKPOINT_MANAGER", "local_checkpoint_manager", "with_user_conf", "loopback_local_ip",
    "is_stopped", "built_here", "running_session",
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


def _loopback_master(master: str) -> bool:
    # A master on this machine's loopback can only have executors here: the driver can stay
    # on loopback too instead of listening on every interface.
    if not master.startswith("spark://"):
        return False
    hosts = [part.rpartition(":")[0].strip("[]") for part in master[len("spark://"):].split(",")]
    return all(is_loopback(host) for host in hosts)


#: The state store every session uses (also asked of a Spark Connect server): transformWithState
#: runs only on RocksDB (the default HDFS-backed store fails its first batch) and every other
#: stateful operator runs on it as well; changelog checkpointing is Spark's recommendation for
#: RocksDB, and the state change feed needs it.
STATE_STORE_CONF: dict[str, str] = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}


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
    >>> CHECKPOINT_MANAGER in default_conf("local[2]", "/tmp/w"), CHECKPOINT_MANAGER in default_conf("yarn", "/tmp/w")
    (True, False)
    >>> java = "spark.driver.extraJavaOptions"
    >>> LOCAL_JIT_OPTIONS in default_conf("local[2]", "/tmp/w")[java], LOCAL_JIT_OPTIONS in default_conf("yarn", "/tmp/w")[java]
    (True, False)
    """
    conf = {
        "spark.app.name": "workbench",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        **STATE_STORE_CONF,
        "spark.sql.warehouse.dir": warehouse_dir,
        "spark.log.structuredLogging.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_LOG4J}",
    }
    conf["spark.master"] = master
    if is_local_master(master):
        conf.update(_local_settings())
        conf["spark.driver.extraJavaOptions"] += f" {LOCAL_JIT_OPTIONS}"
    if is_local_master(master) or _loopback_master(master):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


#: Settings whose user's value is added after the workbench's instead of replacing it.
APPENDED_SETTINGS = ("spark.driver.extraJavaOptions",)


def with_user_conf(defaults: dict[str, str], conf: dict[str, Any]) -> dict[str, str]:
    """``defaults`` with the user's ``conf`` over them; the user's JVM options come after the workbench's.

    For :data:`APPENDED_SETTINGS` both are kept, the user's last: the JVM takes the last of
    an option given twice, so the user's own ``-D`` or ``-XX`` setting wins, and the
    workbench's log configuration and JIT options stay for whatever the user did not set.

    Examples
    --------
    >>> java = "spark.driver.extraJavaOptions"
    >>> with_user_conf({java: "-Da=1", "spark.app.name": "workbench"}, {java: "-Da=2", "spark.app.name": 7})
    {'spark.driver.extraJavaOptions': '-Da=1 -Da=2', 'spark.app.name': '7'}
    """
    settings = {**defaults, **{key: str(value) for key, value in conf.items()}}
    for key in APPENDED_SETTINGS:
        if key in defaults and key in conf and settings[key].strip():
            settings[key] = f"{defaults[key]} {settings[key].strip()}"
    return settings


#: The setting that names the class Spark writes checkpoint files with.
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
#: Spark's checkpoint file manager on Hadoop's ``FileSystem`` API, in the packages it has lived
#: in (Spark 4.1 moved it to ``checkpointing``).
_FILE_SYSTEM_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
)


@functools.cache
def local_checkpoint_manager() -> str | None:
    """The checkpoint file manager of an embedded Spark's sessions, or None to keep Spark's default.

    Spark's default manager goes through Hadoop's ``FileContext`` API. On a local disk, without
    Hadoop's native library (pyspark ships none), every rename there makes the JVM start
    ``readlink`` processes: Hadoop's local file system looks for symbolic links with a shell
    command. That is some sixty forks of the JVM per stateful micro-batch.
    Spark's ``FileSystem``-based manager writes the same files and renames them with one system
    call, which is atomic on a local disk; a batch's offsets and commit writes take a third of
    the time (``bench/bench_checkpoint_files.py``). Only the embedded local Spark uses it: a
    cluster's checkpoints live on the storage its owner chose.

    The class is looked up in the ``spark-sql`` jar of the pyspark in use; None when there is
    none (a Spark whose jars lie elsewhere), and Spark's default stays.

    Examples
    --------
    >>> local_checkpoint_manager().endswith(".FileSystemBasedCheckpointFileManager")
    True
    """
    try:
        from pyspark.find_spark_home import _find_spark_home

        jars = sorted(Path(_find_spark_home()).joinpath("jars").glob("spark-sql_*.jar"))
        if not jars:
            return None
        with zipfile.ZipFile(jars[0]) as jar:
            entries = jar.NameToInfo
            return next((name for name in _FILE_SYSTEM_MANAGERS if name.replace(".", "/") + ".class" in entries),
                        None)
    except (Exception, SystemExit):  # no Spark home found (pyspark exits), an unreadable jar
        return None


#: The JIT of an embedded Spark's JVM: its optimising compiler (C2) takes a method at ten to
#: twenty-five times Java's default counts. A fresh JVM's first queries and micro-batches run
#: code the quick compiler (C1) made, and the second core is not spent compiling code that runs
#: a few hundred times; the loops of a heavy query still reach C2 within its first seconds.
#: On two cores a session starts about 0.5 s sooner and a replay's first step takes about 0.5 s
#: less, with a quarter less CPU, and a heavy query runs as fast as with Java's defaults; C1
#: alone (the test suite's choice) is faster still to start but four times slower on a heavy
#: query (``bench/bench_local_jit.py``). ``IgnoreUnrecognizedVMOptions``: a JVM without these
#: settings starts anyway. The user's own ``spark.driver.extraJavaOptions`` come after them
#: (:func:`with_user_conf`): an option the user sets again wins.
LOCAL_JIT_OPTIONS = ("-XX:+IgnoreUnrecognizedVMOptions -XX:Tier4InvocationThreshold=100000 "
                     "-XX:Tier4MinInvocationThreshold=50000 -XX:Tier4CompileThreshold=100000 "
                     "-XX:Tier4BackEdgeThreshold=1000000")


def _local_settings() -> dict[str, str]:
    """What only an embedded local Spark gets (see :func:`local_checkpoint_manager`)."""
    manager = local_checkpoint_manager()
    return {CHECKPOINT_MANAGER: manager} if manager else {}


def require_connect_server(target: SparkTarget, timeout: float = 5.0) -> None:
    """Raise ``SparkUnreachableError`` (one line) unless a gRPC server answers at a Connect ``target``.

    A TCP connection alone (``require_reachable``) also succeeds at a master's port or a
    web UI's, where pyspark's client would then retry for about ten minutes: this waits for
    the handshake of Spark Connect's gRPC server, on a channel made as pyspark makes it
    (TLS with ``use_ssl`` or a token), within ``timeout`` seconds.

    Examples
    --------
    >>> require_connect_server(parse_remote("sc://127.0.0.1:7077"))     # doctest: +SKIP
    Traceback (most recent call last):
    ...
    workbench._spark_target.SparkUnreachableError: sc://127.0.0.1:7077 accepts connections but does not answer as a Spark Connect server ...
    """
    import grpc
    from pyspark.sql.connect.client import core

    builder = getattr(core, "DefaultChannelBuilder", None) or core.ChannelBuilder
    channel = builder(target.url).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        raise SparkUnreachableError(
            f"{target.url} accepts connections but does not answer as a Spark Connect server within {timeout:g} s "
            f"(a master's port, 7077, or a web UI's, 8080?): {target.source} names the Connect server, by default "
            f"on port {CONNECT_DEFAULT_PORT}") from None
    finally:
        channel.close()


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
        # Only runtime SQL settings can be given to a Spark Connect server.
        settings = {
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            **STATE_STORE_CONF,
            **(_local_settings() if remote.startswith("local") else {}),
            **{k: str(v) for k, v in conf.items()},
        }
        if remote.startswith("local"):
            return _start_local_connect(remote, settings)
        require_connect_server(target)  # else pyspark's client retries a port that is no server for minutes
        builder = SparkSession.builder.remote(remote)
        for key, value in settings.items():
            builder = builder.config(key, value)
        log.info("connecting to Spark Connect at %s", remote)
        return builder.getOrCreate()

    java = require_java()
    quiet_dead_gateway_errors()
    master = target.url
    settings = with_user_conf(default_conf(master, warehouse_dir), conf)
    on_this_machine = is_local_master(master) or _loopback_master(master)
    local_ip = loopback_local_ip() if on_this_machine else contextlib.nullcontext()
    # Python workers must use this interpreter (and so this environment's packages).
    use_for_workers(is_local_master(master))
    scratch = None
    if "spark.local.dir" not in settings and not os.environ.get("SPARK_LOCAL_DIRS"):
        scratch = _new_scratch()
        settings["spark.local.dir"] = str(scratch)
        settings["spark.driver.extraJavaOptions"] = _with_tmpdir(settings.get("spark.driver.extraJavaOptions"), scratch)
    archive = class_archive.archive_path(java.path, java.version or "") if is_local_master(master) else None
    try:
        with local_ip:
            # With the user's own spark.local.dir, the log goes to the workbench's private folder.
            jvm_log = _launch(settings, scratch if scratch is not None else Path(warehouse_dir).parent, archive)
            builder = SparkSession.builder
            for key, value in settings.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    if archive is not None:
        class_archive.record_in_background(archive, settings)
    _own_scratch(spark, scratch)
    spark._workbench_log = jvm_log
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _launch(settings: dict[str, str], folder: Path, archive: Path | None) -> Path | None:
    """Start the JVM (see :func:`.jvm_launch.launch_jvm`), mapping the class archive when there is one.

    A JVM that does not start with the archive starts again without it, and the archive is
    put aside (see :mod:`workbench._class_archive`).
    """
    from pyspark import SparkContext

    options = class_archive.archive_options(settings, archive) if archive is not None else None
    if options is None or SparkContext._gateway is not None:  # no archive, or a JVM that runs already
        return launch_jvm(settings, folder)
    mapped = {**settings, "spark.driver.extraJavaOptions": f"{settings.get('spark.driver.extraJavaOptions', '')} "
                                                           f"{options}".strip()}
    try:
        path = launch_jvm(mapped, folder)
    except Exception:
        path = launch_jvm(settings, folder)  # an error of the session's own settings is raised here
        log.warning("the Spark JVM did not start with the class archive %s: it is put aside", archive)
        class_archive.without_archive(archive, "the Spark JVM did not start with it")
        return path
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None and class_archive.mapped_by(proc.pid, archive) is False:
        if class_archive.is_archive(archive):  # fine for other JVMs: this one has another class path
            log.info("the Spark JVM did not map the class archive %s (another class path?)", archive)
        else:
            log.warning("the Spark JVM ignored the class archive %s, which is not one: it is put aside", archive)
            class_archive.without_archive(archive, "the Spark JVM ignored it (not a class data archive)")
    return path


def _with_tmpdir(options: str | None, scratch: Path) -> str:
    """JVM options with ``java.io.tmpdir`` in ``scratch``, unless the user set one.

    The JVM's own temporary files (native libraries it unpacks, Spark's artifact folders)
    then go with the scratch folder, also when the JVM is killed at shutdown.
    """
    options = options or ""
    if "-Djava.io.tmpdir=" in options:
        return options
    return f"{options} -Djava.io.tmpdir={scratch}".strip()


def _new_scratch() -> Path:
    # Mode 0700: block manager files hold the stream's data.
    return private_folder("spark-")


def _own_scratch(spark: Any, scratch: Path | None) -> None:
    """Remember the scratch folder on the session, unless an earlier session's JVM was reused."""
    if scratch is None:
        return
    context = getattr(spark, "_sc", None)
    if context is not None and context.getConf().get("spark.local.dir") != str(scratch):
        shutil.rmtree(scratch, ignore_errors=True)  # an active session built elsewhere: its own folders
        return
    spark._workbench_scratch = scratch


@contextlib.contextmanager
def loopback_local_ip() -> Iterator[None]:
    """While a JVM this process starts is launched: ``SPARK_LOCAL_IP`` 127.0.0.1 unless it names loopback.

    ``SPARK_LOCAL_IP`` decides where the JVM's web UI and block manager bind (read once, at JVM
    start). One the user exported for a cluster (an address of the machine's network) would put
    the embedded Spark's UI on that network: it is replaced for the launch, with a warning naming
    it, and given back afterwards (what the kernel starts later, such as ``spark-submit`` to a
    cluster, keeps it). Unset, it is set for good, as before. Only for a local master or a local
    Spark Connect server: a cluster's executors must reach the driver.
    """
    current = os.environ.get("SPARK_LOCAL_IP", "")
    if current and is_loopback(current):
        yield
        return
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if not current:
        yield
        return
    log.warning("SPARK_LOCAL_IP=%s is not a loopback address: the embedded Spark binds 127.0.0.1 instead, "
                "so that its driver and UI stay on this machine", current)
    try:
        yield
    finally:
        os.environ["SPARK_LOCAL_IP"] = current


def _start_local_connect(remote: str, settings: dict[str, str]) -> Any:
    """Start pyspark's in-process Spark Connect server for ``local[N]`` and connect to it.

    pyspark always serves it on port 15002 and reaches it as ``sc://localhost``; a second
    kernel on the machine would fail to bind that port and then reach the first kernel's
    server, which refuses it (each accepts only its own kernel's random token). So the port
    is checked first, and ``WORKBENCH_CONNECT_PORT`` chooses another.
    """
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    running = classic_session()
    if os.environ.get("SPARK_LOCAL_REMOTE") and running is not None and running._sc._jsc is not None:
        # This kernel's server still runs (only the client session was stopped): use it again.
        port = int(running._sc.getConf().get("spark.connect.grpc.binding.port"))
        spark = RemoteSparkSession.builder.remote(f"sc://localhost:{port}").config(map=settings).getOrCreate()
        spark._workbench_log = getattr(running._sc._gateway, "_workbench_log", None)
        return spark
    port = connect_port(os.environ)
    require_free_connect_port(port, remote)
    local_ip = loopback_local_ip()  # pyspark starts the server JVM here; keep it on loopback as well
    # Its Python workers must use this interpreter (and so this environment's packages).
    use_for_workers(True)
    scratch = _new_scratch()
    server = {
        **settings,
        # The gRPC port would otherwise listen on every interface.
        "spark.connect.grpc.binding.address": settings.get("spark.connect.grpc.binding.address", "127.0.0.1"),
        "spark.connect.grpc.binding.port": str(port),
        "spark.local.dir": str(scratch),
        "spark.driver.extraJavaOptions": _with_tmpdir(settings.get("spark.driver.extraJavaOptions"), scratch),
    }
    log.info("starting a local Spark Connect server (%s) on 127.0.0.1:%d", remote, port)
    try:
        # What SparkSession.builder.remote("local[N]") does, with the port given: the server
        # is a classic session of this process; SPARK_LOCAL_REMOTE makes stop() end it.
        os.environ["SPARK_LOCAL_REMOTE"] = "1"
        # The server JVM reads its token from its environment, as pyspark would set it.
        os.environ.setdefault("SPARK_CONNECT_AUTHENTICATE_TOKEN",
                              settings.get("spark.connect.authenticate.token") or str(uuid.uuid4()))
        with local_ip:
            jvm_log = launch_jvm({**server, "spark.master": remote}, scratch, hide_remote=True)
            RemoteSparkSession._start_connect_server(remote, server)
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        # "localhost", not 127.0.0.1: with the token pyspark uses TLS except for localhost.
        spark = RemoteSparkSession.builder.remote(f"sc://localhost:{port}").config(map=settings).getOrCreate()
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    spark._workbench_scratch = scratch
    spark._workbench_log = jvm_log
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


def quiet_dead_gateway_errors() -> None:
    """Keep py4j's connection tracebacks of a JVM that died (or stopped) out of the user's log and cell."""
    # A logger's filters see only its own records, not those its children pass up.
    for name in ("", "py4j.java_gateway", "py4j.clientserver"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DeadGatewayFilter) for f in logger.filters):
            logger.addFilter(_DeadGatewayFilter())


def classic_session() -> Any:
    """The classic SparkSession of this process, if any: with ``SPARK_REMOTE=local[N]`` the
    local Spark Connect server's, next to the Connect client session the user holds."""
    from pyspark.sql import SparkSession

    return SparkSession._instantiatedSession


def is_stopped(spark: Any) -> bool:
    """Whether ``spark`` was stopped: a classic session loses its JVM context, a Connect one says so."""
    context = getattr(spark, "_sc", None)
    if context is not None:
        return getattr(context, "_jsc", None) is None
    return bool(getattr(spark, "is_stopped", False))


def built_here(spark: Any) -> bool:
    """Whether :func:`build_session` (or the local Connect server's start) built ``spark``, rather than its user."""
    return hasattr(spark, "_workbench_log")


def running_session() -> Any:
    """The SparkSession running in this process (a Spark Connect client's or a classic one), or None;
    starts nothing and imports no pyspark that is not imported yet."""
    if "pyspark.sql" not in sys.modules:
        return None
    connect = sys.modules.get("pyspark.sql.connect.session")  # loaded only once a Connect session was made
    if connect is not None:
        remote = connect.SparkSession.getActiveSession() or getattr(connect.SparkSession, "_default_session", None)
        if remote is not None and not is_stopped(remote):
            return remote
    classic = classic_session()
    return classic if classic is not None and not is_stopped(classic) else None
