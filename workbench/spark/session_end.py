"""Ending a session: stopping it, killing its JVM at kernel shutdown, and a JVM that died.

A kernel shutdown must end within Jupyter's wait, so :func:`end_session` tells the queries to
stop, kills the JVM at once and hands the session's private folders to a detached removal.
:func:`spark_is_gone` tells a stopped or dead session from a live one without a py4j call
that would hang, and :func:`discard_dead_session` forgets a JVM that died under running
streams so that the next session starts afresh. Building a session is :mod:`.session`.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from .private_folders import came_back
from .session import classic_session, is_connect_session, is_local_master

__all__ = ["stop_session", "end_session", "spark_is_gone", "discard_dead_session", "run_aside"]

log = logging.getLogger(__name__)


def stop_session(spark: Any, timeout: float = 10.0) -> None:
    """Stop ``spark`` and end the JVM this process launched for it, waiting for it to exit.

    The gentle way, for a process that carries on; a kernel shutdown uses
    :func:`end_session`, which fits Jupyter's 5 s.
    """
    from pyspark import SparkContext

    try:
        spark.stop()
    except Exception:
        log.debug("stopping the session failed", exc_info=True)
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None:
        _remove_scratch(spark, None)
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
    _remove_scratch(spark, proc)


def end_session(spark: Any, grace: float = 0.0, folders: tuple[Path, ...] = ()) -> None:
    """End ``spark`` for a kernel shutdown: kill the JVM this process launched, leave nothing behind.

    Jupyter asks a kernel to shut down, terminates it 2.5 s later and kills it at 5 s
    (``shutdown_wait_time``), and then no clean-up runs. ``spark.stop()`` alone took 3.9 s
    on a loaded 2-core machine, so a JVM started here (embedded Spark, or pyspark's local
    Spark Connect server) is killed instead: its queries were stopped before, its scratch
    files are in the session's private folder (removed here), and the Python workers it
    started exit when it does. A session on a cluster or a Connect server gets ``grace``
    seconds to say goodbye first (so that the cluster frees its executors at once).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session to end (classic or Spark Connect).
    grace : float, default 0.0
        Seconds ``spark.stop()`` may take before the JVM is killed; 0 kills it at once
        when it runs on this machine.
    folders : tuple of Path
        More folders to remove once the JVM has ended (the workbench's temp folder).
    """
    from pyspark import SparkContext

    local = not is_connect_session(spark) and is_local_master(_master_of(spark))
    scratch = getattr(spark, "_workbench_scratch", None)
    if is_connect_session(spark) and not os.environ.get("SPARK_LOCAL_REMOTE"):
        _bounded(spark.stop, max(grace, 1.0), "closing the Spark Connect client")
    elif grace > 0 and not local:
        _bounded(spark.stop, grace, "stopping the session")
    elif local and scratch is None:
        # Spark's folders are in the user's spark.local.dir / SPARK_LOCAL_DIRS, not in a
        # private folder removed below: let Spark remove them itself, for a bounded time.
        _bounded(spark.stop, 2.0, "stopping the session")
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        _expect_accumulator_disconnect(spark)
        proc.kill()
        try:
            proc.wait(2.0)  # reaped, or the kernel would wait for it (~30 s) before exiting
        except Exception:
            log.warning("the Spark JVM (pid %s) did not end within 2 s of being killed", proc.pid)
        log.debug("the Spark JVM (pid %s) has ended", proc.pid)
    # With the JVM gone, nothing writes into removed checkpoints any more: remove those it wrote into.
    _remove_folders([*folders, *([scratch] if scratch is not None else []), *map(Path, came_back(jvm_ended=True))])
    _remove_perf_data(proc)
    if gateway is not None:
        _forget_jvm(spark)
    for variable in ("SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        os.environ.pop(variable, None)


def _expect_accumulator_disconnect(spark: Any) -> None:
    """Prepare pyspark's accumulator server for the JVM's end, so that it prints nothing.

    Once a Python worker has sent accumulator updates (a Python UDF, a foreachBatch
    function, the replay's scripted rows), the JVM keeps a socket open to that server, which
    runs in this process. Killed, the JVM closes it; the server's handler, polling the
    socket, reads the end as a cut-off update and socketserver prints the ``EOFError``
    traceback to stderr (at the end of every such script). pyspark's own ``stop()`` shuts
    the server down while the JVM still runs, which waits up to a second for the handler's
    next poll. Here the server is only told that it is ending (the handler leaves its loop
    at its next poll) and the one disconnect that can still race the flag is logged at
    debug level instead of printed; nothing waits.
    """
    for session in (spark, classic_session()):
        server = getattr(getattr(session, "_sc", None), "_accumulatorServer", None)
        if server is not None:
            server.server_shutdown = True
            server.handle_error = _log_accumulator_disconnect


def _log_accumulator_disconnect(request: Any, client_address: Any) -> None:
    log.debug("the Spark JVM's accumulator connection ended", exc_info=True)


def _remove_folders(folders: list[Path]) -> None:
    """Remove ``folders`` without making the kernel wait: a detached ``rm -rf`` does it.

    Measured on a loaded 2-core machine: removing the checkpoints of three streams in the
    kernel took 0.6 s of the 2.5 s Jupyter gives it. ``rm`` runs in its own session, so
    neither the kernel's wait for its children nor a signal to its process group stops it.
    """
    folders = [folder for folder in folders if os.path.exists(folder)]
    if not folders:
        return
    rm = shutil.which("rm")
    if rm is not None:
        try:
            subprocess.Popen([rm, "-rf", "--", *map(str, folders)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            return
        except OSError:
            log.debug("starting rm failed; removing the folders here", exc_info=True)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _forget_jvm(spark: Any) -> None:
    """Make pyspark's Python side forget a JVM that was killed (no call to it, no waiting).

    Unlike :func:`discard_dead_session` nothing is closed: the interpreter is ending, and
    pyspark's py4j threads are daemons.
    """
    for session in (spark, classic_session()):
        context = getattr(session, "_sc", None)
        if context is not None:
            context._jsc = None  # spark_is_gone() and stop() see it as stopped
    _forget_pyspark_globals()


def _master_of(spark: Any) -> str:
    context = getattr(spark, "_sc", None)
    try:
        return str(context.master) if context is not None else ""
    except Exception:
        return ""


def run_aside(call: Callable[[], Any], name: str) -> threading.Thread | None:
    """Start ``call`` on a daemon thread named ``name``; at interpreter exit, call it here.

    From Python 3.12 no thread starts once the interpreter is ending (``atexit`` callbacks,
    where a plain script's session ends): ``Thread.start`` raises there, so the call runs
    on this thread instead. Returns the started thread, or None when ``call`` has run here.

    Examples
    --------
    >>> done = []
    >>> thread = run_aside(lambda: done.append(1), "example")
    >>> thread.join(); done
    [1]
    """
    def guarded() -> None:
        # A failure ends only the call and goes to the log: nothing prints under a cell or at a
        # script's exit (a stop that finds the JVM already gone at exit, for instance).
        try:
            call()
        except Exception:
            log.debug("%s failed", name, exc_info=True)

    thread = threading.Thread(target=guarded, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError as exc:
        if "interpreter shutdown" not in str(exc):
            raise
        guarded()
        return None
    return thread


def _bounded(call: Any, seconds: float, what: str) -> None:
    """Run ``call`` on a daemon thread and wait at most ``seconds`` for it (at interpreter exit, here)."""
    worker = run_aside(call, f"workbench-{what.replace(' ', '-')}")
    if worker is None:
        return
    worker.join(seconds)
    if worker.is_alive():
        log.info("%s took more than %.1f s; going on without it", what, seconds)


def _remove_scratch(spark: Any, proc: Any) -> None:
    scratch = getattr(spark, "_workbench_scratch", None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    _remove_perf_data(proc)


def _remove_perf_data(proc: Any) -> None:
    if proc is not None:
        # A killed JVM cannot delete its performance-data file (/tmp/hsperfdata_USER/PID).
        perf = Path(tempfile.gettempdir()) / f"hsperfdata_{_user()}" / str(proc.pid)
        try:
            perf.unlink()
        except OSError:
            pass


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:
        return ""


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
        if getattr(spark, "is_stopped", False):
            return True
        # SPARK_REMOTE=local[N]: the server runs in this process's own JVM, whose death its client
        # would retry for about ten minutes.
        server = classic_session() if os.environ.get("SPARK_LOCAL_REMOTE") else None
        return server is not None and server is not spark and spark_is_gone(server, wait)
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

    if is_connect_session(spark):  # SPARK_REMOTE=local[N]: the in-process server's JVM died
        _forget_connect_client(spark)
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
    _forget_pyspark_globals()


def _forget_connect_client(spark: Any) -> None:
    """Close a Spark Connect client whose server died, and stop pyspark handing it out again.

    Its ``getOrCreate`` would return it (every call then failing with ``NO_ACTIVE_SESSION``),
    and ``stop()`` would ask the dead server to release the session, retrying for minutes.
    Closing the channel cancels the calls still retrying on it.
    """
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    try:
        spark.client._channel.close()  # close() itself first waits up to 10 s for releases the dead server never answers
    except Exception:
        log.debug("closing the dead Spark Connect channel failed", exc_info=True)
    spark.client._closed = True  # so that is_stopped is true
    with RemoteSparkSession._lock:
        if RemoteSparkSession._default_session is spark:
            RemoteSparkSession._default_session = None
        if getattr(RemoteSparkSession._active_session, "session", None) is spark:
            RemoteSparkSession._active_session.session = None


def _forget_pyspark_globals() -> None:
    """Clear pyspark's process-wide handles on a JVM that is gone, so a new session starts one."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
