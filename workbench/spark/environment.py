"""The workbench's per-process state: the session's lifecycle, and the owner of everything else.

:class:`Workbench` holds the SparkSession (built, adopted, or replaced after its JVM died)
and its session-wide listener, the private temporary folder (checkpoints and warehouse)
and the checkpoint root, and ends them all at shutdown. The handles of its streams live in
its :class:`~workbench.spark.registry.StreamRegistry`, and starting a stream is
:func:`~workbench.spark.starting.start_stream`; ``Workbench`` is the one face both are
reached through. ``current_env()`` returns the one in use; ``new_env()`` replaces it
(tests use it for a clean slate). At interpreter exit every stream is stopped and the
temporary folder removed.

Checkpoints go to that temporary folder unless a checkpoint root is set
(``workbench.session(checkpoint_root=...)`` or ``WORKBENCH_CHECKPOINT_ROOT``): on a cluster
a folder on this machine only works while every executor shares its disk, so starting a
stream there without either says so once.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import sys
import threading
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .._process_end import ending_process
from .._spark_target import is_loopback
from ..errors import CheckpointWarning
from ..options import check_settings
from .private_folders import private_folder, remove_folder, sweep_orphans, sweep_removed
from .registry import StreamRegistry
from .session import build_session, is_connect_session, is_stopped, quiet_dead_gateway_errors, session_target
from .session_end import discard_dead_session, spark_is_gone
from .starting import start_stream
from .handle import StreamHandle
from .jvm_launch import jvm_log
from .warm_up import WarmUp, warm_up_wanted
from .watch import SessionWatcher

__all__ = ["Workbench", "CheckpointWarning", "current_env", "new_env"]

log = logging.getLogger(__name__)


class Workbench:
    """Owns the SparkSession, the temporary folder and the streams of one process.

    Parameters
    ----------
    poll_interval : float, default 0.5
        Seconds between progress polls for new streams.
    history_cap : int, default 100_000
        Most batches each stream's history keeps.

    Examples
    --------
    >>> env = current_env()                       # doctest: +SKIP
    >>> handle = env.start(df, "counts")          # doctest: +SKIP
    >>> env.stop_all()                            # doctest: +SKIP
    """

    def __init__(self, *, poll_interval: float = 0.5, history_cap: int = 100_000) -> None:
        self.poll_interval = poll_interval
        self.history_cap = history_cap
        self._spark: Any = None
        self._temp_dir: Path | None = None
        #: Scratch folders of earlier sessions (a dead JVM's, a stopped session's), removed at shutdown.
        self._old_scratch: list[Path] = []
        # One lock for the session and the handles: starting a stream holds it across both.
        self._lock = threading.RLock()
        #: The handles of this workbench's streams.
        self.registry = StreamRegistry(self, self._lock)
        self._counter = itertools.count(1)
        #: The session-wide listener recording every query's progress (see ``watch``).
        self._watcher: SessionWatcher | None = None
        self._checkpoint_root: str | None = os.environ.get("WORKBENCH_CHECKPOINT_ROOT") or None
        # Several kernels may share one checkpoint root: each keeps to its own sub-folder.
        self._run_token = uuid.uuid4().hex[:8]
        self._warned_local_checkpoints = False
        #: The background warm-up of the session's first streaming job (``spark.warm_up``), or None.
        self.warm_up: WarmUp | None = None

    # -- resources ---------------------------------------------------------------------------

    @property
    def temp_dir(self) -> Path:
        """The private temporary folder (mode 0700), created on first use, removed at exit."""
        with self._lock:
            if self._temp_dir is None or not self._temp_dir.exists():
                self._temp_dir = private_folder()
            return self._temp_dir

    def session(self, checkpoint_root: str | os.PathLike[str] | None = None, **conf: Any) -> Any:
        """Return the workbench's SparkSession, building it on first call.

        See :func:`workbench.session`. ``checkpoint_root`` (also on a running session) is
        where streams started without a checkpoint keep theirs from now on.
        """
        check_settings(conf)
        if checkpoint_root is not None:
            self.checkpoint_root = checkpoint_root
        with self._lock:
            if self._spark is not None and spark_is_gone(self._spark):
                self._forget_dead_session()
            if self._spark is None or is_stopped(self._spark):
                self._keep_scratch(self._spark)
                fresh_temp = self._temp_dir is None
                try:
                    self._spark = build_session(str(self.temp_dir / "warehouse"), conf)
                except BaseException:
                    if fresh_temp:  # a refused setting leaves no folder behind
                        self.close()
                    raise
                self._start_warm_up(self._spark)
                sweep_orphans()  # folders of killed processes, once per process, in the background
            elif conf:
                for key, value in conf.items():
                    try:
                        self._spark.conf.set(key, str(value))
                    except Exception:
                        log.warning("%s cannot change on a running session; restart the kernel to set it", key)
            self._listen(self._spark)
            return self._spark

    def _start_warm_up(self, spark: Any) -> None:
        """Start the first streaming job's one-time work in the background (a local session built here)."""
        if not warm_up_wanted() or is_connect_session(spark) or session_target(spark).kind != "embedded":
            return
        self.warm_up = WarmUp(spark, self.new_temp_folder("warm-up")).start()

    def _end_warm_up(self, wait: float = 0.0) -> None:
        warm, self.warm_up = self.warm_up, None
        if warm is not None:
            warm.stop(wait)

    def ui_web_url(self) -> str | None:
        """The Spark UI's URL, or None before Spark starts and on Spark Connect (which has none).

        Never starts Spark; one JVM call when a classic session is running.
        """
        spark = self._spark
        try:
            return None if spark is None or is_stopped(spark) else spark.sparkContext.uiWebUrl
        except Exception:  # Spark Connect sessions have no sparkContext
            return None

    @property
    def spark_log(self) -> Path | None:
        """The log file of the Spark JVM's stderr; see :func:`workbench.spark_log`. Never starts Spark."""
        spark = self._spark
        return None if spark is None else jvm_log(spark)

    def _listen(self, spark: Any) -> None:
        """Install the session-wide listener once per session, so every later query is recorded."""
        if is_connect_session(spark):
            # Measured on pyspark 4.3: after addListener on a Spark Connect session, the next
            # query start did not return within 60 s; watched Connect queries are polled and
            # back-filled instead.
            return
        if self._watcher is None or self._watcher.spark is not spark:
            if self._watcher is not None:
                self._watcher.remove()
            self._watcher = SessionWatcher.install(spark, history_cap=self.history_cap)

    def adopt_active(self) -> Any:
        """The workbench's session, or one the user built before loading it; never starts Spark.

        An adopted session keeps its settings; it gets the session-wide listener, so its
        later queries are recorded from their first batch. None when no session runs.
        """
        with self._lock:
            if self._spark is not None and spark_is_gone(self._spark):
                return None  # its JVM died: nothing to list; the next session() builds a new one
            if self._spark is not None and not is_stopped(self._spark):
                return self._spark
            if "pyspark.sql" not in sys.modules:
                return None
            try:
                from pyspark.sql import SparkSession

                active = SparkSession.getActiveSession()
            except Exception:
                log.debug("no active session to adopt", exc_info=True)
                return None
            if active is None:
                return None
            quiet_dead_gateway_errors()  # as for the workbench's own sessions: its JVM may die too
            self._spark = active
            self._listen(active)
            return active

    @property
    def checkpoint_root(self) -> str | None:
        """Where streams without a checkpoint of their own keep it; None for the temp folder.

        Set by ``workbench.session(checkpoint_root=...)`` or ``WORKBENCH_CHECKPOINT_ROOT``. A
        path or a URI Spark can write (``hdfs://``, ``s3a://``); folders there are kept at
        exit, so a query can restart from them.
        """
        return self._checkpoint_root

    @checkpoint_root.setter
    def checkpoint_root(self, root: str | os.PathLike[str] | None) -> None:
        if root is not None and not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"checkpoint_root must be a folder path or URI (a string or a Path), or None, got {root!r}")
        text = None if root is None else os.fspath(root).strip()
        if text == "":
            raise ValueError("checkpoint_root is empty: give a folder every executor can reach, or None")
        if text is not None and "://" not in text and os.path.exists(os.path.expanduser(text)) \
                and not os.path.isdir(os.path.expanduser(text)):
            raise ValueError(f"checkpoint_root {text!r} is a file: give a folder every executor can reach, or None")
        self._checkpoint_root = text

    def _forget_dead_session(self) -> None:
        """After the JVM died: mark every stream failed and let pyspark build a new JVM."""
        for handle in self.handles():
            handle.stop()  # no Spark call: it only settles the status and ends the poller
        if not is_stopped(self._spark):
            log.warning("the Spark JVM has ended; starting a new Spark session")
            discard_dead_session(self._spark)
        self._keep_scratch(self._spark)
        self._spark = None

    def _keep_scratch(self, spark: Any) -> None:
        """Keep a session's scratch folder for shutdown (a dead JVM's log stays readable until then).

        A stopped session's JVM may live on under the next session, still writing there.
        """
        scratch = getattr(spark, "_workbench_scratch", None)
        if scratch is not None and scratch not in self._old_scratch:
            self._old_scratch.append(scratch)

    def new_temp_folder(self, name: str) -> str:
        """A fresh folder under this process's private temporary folder."""
        sweep_removed()  # closed workbenches' checkpoints that a state store's maintenance wrote into
        folder = self.temp_dir / "checkpoints" / f"{name}-{next(self._counter)}"
        # Private like the temp folder: checkpoints hold the stream's state, i.e. its data.
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700)
        return str(folder)

    def new_checkpoint(self, name: str) -> str:
        """A fresh checkpoint folder for one start of stream ``name``.

        Under the checkpoint root when one is set, else in the private temporary folder
        (with a one-time :class:`CheckpointWarning` when Spark does not run on this machine).
        """
        root = self._checkpoint_root
        if root is None:
            self._warn_local_checkpoints()
            return self.new_temp_folder(name)
        leaf = f"workbench-{self._run_token}/{name}-{next(self._counter)}"
        if "://" in root or self._driver_elsewhere():  # hdfs://, s3a://, a Connect server's path: Spark makes it
            return f"{root.rstrip('/')}/{leaf}"
        folder = Path(root).expanduser() / leaf
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"cannot make a checkpoint under checkpoint_root {root!r}: {exc.strerror or exc}; "
                             "give a folder you can write (workbench.session(checkpoint_root=...) or "
                             "WORKBENCH_CHECKPOINT_ROOT)") from None
        return str(folder)

    def _driver_elsewhere(self) -> bool:
        """Whether the session's driver is a Spark Connect server on another machine (its paths are its own)."""
        spark = self._spark
        if spark is None or is_stopped(spark):
            return False
        target = session_target(spark)
        return target.kind == "connect" and not all(is_loopback(host) for host, _ in target.endpoints)

    def _warn_local_checkpoints(self) -> None:
        spark = self._spark
        if self._warned_local_checkpoints or spark is None or is_stopped(spark):
            return
        target = session_target(spark)
        if target.on_this_machine:
            return
        self._warned_local_checkpoints = True
        warnings.warn(
            f"Spark runs at {target.url}, but streams started without a checkpoint keep it in a "
            f"temporary folder on this machine ({self.temp_dir / 'checkpoints'}), which only works "
            "while every executor shares this machine's disk. Give each stream a checkpoint on storage "
            "every node reaches (--checkpoint DIR in %%stream, checkpoint=DIR in Python), or set one "
            "root for all: workbench.session(checkpoint_root=DIR) or WORKBENCH_CHECKPOINT_ROOT=DIR.",
            CheckpointWarning, stacklevel=4,
        )

    # -- streams (see registry.py and starting.py) ------------------------------------------------

    @property
    def watcher(self) -> SessionWatcher | None:
        """The session-wide listener recording every query's progress; None before a session
        is built, and on Spark Connect (see ``workbench.spark.watch``)."""
        return self._watcher

    def peek_session(self) -> Any:
        """The SparkSession held (running, stopped or dead), or None; never builds one."""
        return self._spark

    @property
    def on_stream_finished(self) -> list[Callable[[StreamHandle], None]]:
        """Called with a handle whenever one of its queries ends (views subscribe here)."""
        return self.registry.on_stream_finished

    @property
    def on_stream_started(self) -> list[Callable[[StreamHandle], None]]:
        """Called with each new handle, on the starting thread, right after its query starts."""
        return self.registry.on_stream_started

    def start(self, df: Any, name: str, **options: Any) -> StreamHandle:
        """Validate, replace any active stream of the same name, start; see :func:`workbench.start`.

        ``options`` are those of :func:`~workbench.spark.starting.start_stream`: the options
        of :func:`workbench.start`, and ``history`` and ``foreach_batch`` for the replay panel.
        """
        return start_stream(self, self.registry, df, name, **options)

    def watch(
        self, query: Any, *, poll_interval: float | None = None, started_by: str = "user",
        name: str | None = None,
    ) -> StreamHandle:
        """The handle of any query of the session: see :meth:`StreamRegistry.watch`."""
        return self.registry.watch(query, poll_interval=poll_interval, started_by=started_by, name=name)

    def watch_all(self) -> list[StreamHandle]:
        """Handles of every active query of the session (watching those not yet watched).

        Lists only: a session that is not running yet is not started for it.
        """
        return self.registry.watch_all()

    def watch_started(self) -> list[StreamHandle]:
        """Watch the queries started since that no handle follows; see :meth:`StreamRegistry.watch_started`."""
        return self.registry.watch_started()

    def get(self, name: str) -> StreamHandle:
        """The handle of stream ``name``, watching an active query of that name or id if needed.

        ValueError listing the known names if there is none.
        """
        return self.registry.get(name)

    def handles(self) -> list[StreamHandle]:
        """Every stream started in this process (the latest start of each name)."""
        return self.registry.handles()

    def streams(self) -> pd.DataFrame:
        """One row per stream: see :func:`workbench.streams`."""
        return self.registry.streams()

    def stop(self, name: str, *, missing_ok: bool = False) -> None:
        """Stop stream ``name``."""
        self.registry.stop(name, missing_ok=missing_ok)

    def stop_all(self, grace: float = 1.0, wait: float = 0.0) -> None:
        """Stop every stream and poller this workbench started, and any other active query.

        ``grace`` is passed to each :meth:`StreamHandle.stop`; every stop begins at once, and
        a KeyboardInterrupt while this waits raises :class:`StreamInterrupted` naming the
        streams still stopping (in the background). With ``grace=0`` (kernel
        shutdown, where Jupyter terminates a kernel that has not exited 2.5 s after the
        request) every active query is told to stop at once, side by side, and this returns
        after ``wait`` seconds at the latest (by default at once), even if stops are still
        under way: on a loaded 2-core machine starting the stops alone took up to 0.7 s, and
        :meth:`shutdown` ends the JVM next, which ends every query anyway.
        """
        self.registry.stop_all(grace, wait)

    # -- ending ---------------------------------------------------------------------------------

    def shutdown(self) -> dict[str, float]:
        """Stop the streams, end the session and its JVM, remove the temp folders (kernel shutdown).

        Fits Jupyter's wait (``shutdown_wait_time``, 5 s, after half of which it terminates
        the kernel) on a loaded machine: the queries have been told to stop side by side (by
        the kernel's shutdown hook, or here), then a JVM this process launched is killed
        rather than stopped (see :func:`~workbench.spark.session.end_session`), and only then
        are the temporary folders removed, so that nothing writes into them afterwards.

        Returns
        -------
        dict of str to float
            Seconds taken by each step: ``streams``, ``spark``, ``folders`` and ``total``.
        """
        import time

        from .session_end import end_session

        began = time.monotonic()
        self._end_warm_up()
        # Usually a second call (the kernel's shutdown hook stops the streams first): the
        # stops are under way, and the JVM ends next anyway, so no waiting here.
        self.stop_all(grace=0.0, wait=0.0)
        streams_done = time.monotonic()
        log.debug("streams stopped after %.2f s", streams_done - began)
        with self._lock:
            spark, self._spark = self._spark, None
            self._watcher = None  # its listener ends with the JVM
            temp_dir, self._temp_dir = self._temp_dir, None
            old_scratch, self._old_scratch = self._old_scratch, []
        folders = (*((temp_dir,) if temp_dir is not None else ()), *old_scratch)
        if spark is None and not folders:
            # A second call (the interpreter's exit hook after the kernel's): nothing left.
            log.debug("shutdown: nothing left to end")
            return {"streams": streams_done - began, "spark": 0.0, "folders": 0.0, "total": time.monotonic() - began}
        if spark is not None:  # running, stopped or dead: its JVM and folders end here
            end_session(spark, grace=1.0, folders=folders)  # the grace is for a cluster only
        else:
            for folder in folders:
                remove_folder(folder)
        spark_done = time.monotonic()
        done = time.monotonic()
        log.info("shutdown took %.2f s (streams %.2f s, Spark %.2f s, folders %.2f s)",
                 done - began, streams_done - began, spark_done - streams_done, done - spark_done)
        return {"streams": streams_done - began, "spark": spark_done - streams_done,
                "folders": done - spark_done, "total": done - began}

    def close(self, grace: float = 1.0) -> None:
        """Stop everything and remove the temporary folder (the session itself stays)."""
        self._end_warm_up(wait=30.0)  # before its checkpoint folder goes
        self.stop_all(grace)
        with self._lock:
            if self._temp_dir is not None:
                # Removed again later if the JVM's state store maintenance writes into it.
                remove_folder(self._temp_dir)
                self._temp_dir = None


class _EnvHolder:
    """Holds the current :class:`Workbench`; the one piece of process-wide state."""

    def __init__(self) -> None:
        self.env: Workbench | None = None
        self.lock = threading.Lock()


_holder = _EnvHolder()


def current_env() -> Workbench:
    """The workbench of this process, created on first use."""
    with _holder.lock:
        if _holder.env is None:
            _holder.env = Workbench()
        return _holder.env


def new_env(**kwargs: Any) -> Workbench:
    """Close the current workbench (stopping its streams) and start a fresh one.

    The SparkSession is kept: building one takes seconds and it holds no workbench state.
    """
    with _holder.lock:
        old = _holder.env
        _holder.env = Workbench(**kwargs)
        if old is not None:
            _holder.env._spark = old._spark
            _holder.env._watcher = old._watcher
    if old is not None:
        old.close()
    return _holder.env


@atexit.register
def _close_at_exit() -> None:
    # The interpreter is ending: its JVM and every folder must go too, and quickly (a
    # kernel that missed the shutdown hook is killed 5 s after the request).
    # No stream stopped here draws its final picture on a thread as the interpreter
    # finalises (see workbench._process_end); a picture begun before gets a moment to end.
    env = _holder.env
    if env is not None:
        with ending_process():
            env.shutdown()
