"""The workbench's per-process state: one owner for the session, the streams and temp files.

:class:`Workbench` holds the SparkSession, the private temporary folder (checkpoints and
warehouse) and the handle of every stream started in this process. ``current_env()``
returns the one in use; ``new_env()`` replaces it (tests use it for a clean slate). At
interpreter exit every stream is stopped and the temporary folder removed.

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
import shutil
import sys
import tempfile
import threading
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..progress import ProgressHistory
from ..options import check_name, check_output_mode, check_rows, check_sink, parse_trigger
from ..errors import StreamStartError, refusal_line
from .plan import output_mode_problem, plan_facts, plan_text
from .session import build_session, discard_dead_session, is_connect_session, session_target, spark_is_gone
from .handle import StreamHandle, StreamSpec
from .query_start import run_query
from .stopping import StreamInterrupted
from .watch import SessionWatcher, find_query, watched_handle

__all__ = ["Workbench", "CheckpointWarning", "current_env", "new_env", "STREAM_COLUMNS"]

log = logging.getLogger(__name__)

#: Columns of :meth:`Workbench.streams`.
STREAM_COLUMNS = (
    "name", "id", "run_id", "status", "sink", "output_mode", "trigger", "batches",
    "last_batch_id", "watermark", "input_rows_per_second", "processed_rows_per_second", "error",
    "started_by",
    "table_rows", "cut_batch",
)


class CheckpointWarning(UserWarning):
    """Checkpoints are kept on this machine while Spark runs elsewhere."""


def check_streaming_frame(df: Any) -> None:
    """Raise TypeError/ValueError unless ``df`` is a streaming pyspark DataFrame."""
    from pyspark.sql import DataFrame

    if not isinstance(df, DataFrame):
        raise TypeError(
            f"expected a streaming pyspark DataFrame (from spark.readStream...), got {type(df).__name__}"
        )
    if spark_is_gone(df.sparkSession):
        raise ValueError(
            "this DataFrame belongs to a Spark session that has stopped: "
            "build it again from workbench.session()"
        )
    if not df.isStreaming:
        raise ValueError(
            "this DataFrame is not streaming (it was built with spark.read, not spark.readStream): "
            "start streams from spark.readStream sources"
        )


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
        self._handles: dict[str, StreamHandle] = {}
        self._lock = threading.RLock()
        self._counter = itertools.count(1)
        #: The session-wide listener recording every query's progress (see ``watch``).
        self._watcher: SessionWatcher | None = None
        self._checkpoint_root: str | None = os.environ.get("WORKBENCH_CHECKPOINT_ROOT") or None
        # Several kernels may share one checkpoint root: each keeps to its own sub-folder.
        self._run_token = uuid.uuid4().hex[:8]
        self._warned_local_checkpoints = False
        #: Called with a handle whenever one of its queries ends (views subscribe here).
        self.on_stream_finished: list[Callable[[StreamHandle], None]] = []
        #: Called with each new handle, on the starting thread, right after its query starts.
        self.on_stream_started: list[Callable[[StreamHandle], None]] = []

    # -- resources ---------------------------------------------------------------------------

    @property
    def temp_dir(self) -> Path:
        """The private temporary folder (mode 0700), created on first use, removed at exit."""
        with self._lock:
            if self._temp_dir is None or not self._temp_dir.exists():
                self._temp_dir = Path(tempfile.mkdtemp(prefix="workbench-"))
            return self._temp_dir

    def session(self, checkpoint_root: str | os.PathLike[str] | None = None, **conf: Any) -> Any:
        """Return the workbench's SparkSession, building it on first call.

        See :func:`workbench.session`. ``checkpoint_root`` (also on a running session) is
        where streams started without a checkpoint keep theirs from now on.
        """
        if checkpoint_root is not None:
            self.checkpoint_root = checkpoint_root
        with self._lock:
            if self._spark is not None and spark_is_gone(self._spark):
                self._forget_dead_session()
            if self._spark is None or _is_stopped(self._spark):
                fresh_temp = self._temp_dir is None
                try:
                    self._spark = build_session(str(self.temp_dir / "warehouse"), conf)
                except BaseException:
                    if fresh_temp:  # a refused setting leaves no folder behind
                        self.close()
                    raise
            elif conf:
                for key, value in conf.items():
                    try:
                        self._spark.conf.set(key, str(value))
                    except Exception:
                        log.warning("%s cannot change on a running session; restart the kernel to set it", key)
            self._listen(self._spark)
            return self._spark

    def ui_web_url(self) -> str | None:
        """The Spark UI's URL, or None before Spark starts and on Spark Connect (which has none).

        Never starts Spark; one JVM call when a classic session is running.
        """
        spark = self._spark
        try:
            return None if spark is None or _is_stopped(spark) else spark.sparkContext.uiWebUrl
        except Exception:  # Spark Connect sessions have no sparkContext
            return None

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
        text = None if root is None else os.fspath(root).strip()
        if text == "":
            raise ValueError("checkpoint_root is empty: give a folder every executor can reach, or None")
        self._checkpoint_root = text

    def _forget_dead_session(self) -> None:
        """After the JVM died: mark every stream failed and let pyspark build a new JVM."""
        for handle in self.handles():
            handle.stop()  # no Spark call: it only settles the status and ends the poller
        if not _is_stopped(self._spark):
            log.warning("the Spark JVM has ended; starting a new Spark session")
            discard_dead_session(self._spark)
        self._spark = None

    def new_temp_folder(self, name: str) -> str:
        """A fresh folder under this process's private temporary folder."""
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
        if "://" in root:  # hdfs://, s3a://, ...: Spark creates it
            return f"{root.rstrip('/')}/{leaf}"
        folder = Path(root).expanduser() / leaf
        folder.parent.mkdir(parents=True, exist_ok=True)
        return str(folder)

    def _warn_local_checkpoints(self) -> None:
        spark = self._spark
        if self._warned_local_checkpoints or spark is None or _is_stopped(spark):
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

    # -- streams --------------------------------------------------------------------------------

    def start(
        self,
        df: Any,
        name: str,
        *,
        sink: str = "memory",
        output_mode: str | None = None,
        trigger: Any = None,
        checkpoint: str | os.PathLike[str] | None = None,
        rows: int = 20,
        truncate: bool = True,
        console: Callable[[str], None] | None = None,
        poll_interval: float | None = None,
        history: ProgressHistory | None = None,
        foreach_batch: Callable[[Any, int], None] | None = None,
        input_watermarks: bool = False,
    ) -> StreamHandle:
        """Validate, replace any active stream of the same name, start; see :func:`workbench.start`.

        ``history`` lets a caller that restarts one query many times (the replay panel)
        keep a single history across the runs. ``foreach_batch(batch_df, batch_id)``
        replaces the sink (the handle's sink is then ``"foreach_batch"``): the replay
        panel collects results this way because Spark's memory sink cannot restart from a
        checkpoint in append or update mode. ``input_watermarks`` observes each
        watermarked input (see :func:`workbench.start`).
        """
        name = check_name(name)
        spec_sink = "foreach_batch" if foreach_batch is not None else check_sink(sink)
        mode = check_output_mode(output_mode)
        parsed_trigger = parse_trigger(trigger)
        rows = check_rows(rows)
        interval = self.poll_interval if poll_interval is None else poll_interval
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ValueError(f"poll_interval must be a positive number of seconds, got {interval!r}")
        if checkpoint is not None and not str(checkpoint).strip():
            raise ValueError("checkpoint is empty: give a folder path, or leave it out for a private temporary one")
        check_streaming_frame(df)
        if spec_sink == "console" and is_connect_session(df.sparkSession):
            raise ValueError(
                f"the console sink cannot print here: under Spark Connect ({session_target(df.sparkSession).url}) "
                "it would run on the server and print each batch into the server's log; use the memory sink "
                f"and read the table instead (%stream result {name}, or workbench.stream({name!r}).result())"
            )
        inputs: tuple[Any, ...] = ()
        if input_watermarks:
            from .inputs import observe_inputs

            df, inputs = observe_inputs(df)  # only when asked: ordinary queries stay as written
        table_warn_rows = _table_warn_rows()
        with self._lock:
            self._refuse_foreign(df.sparkSession, name)
            # Spark's own start-time check, run while the previous stream still runs, so that
            # a re-run Spark would refuse leaves the old stream as it was (classic sessions).
            problem = output_mode_problem(df, mode)
            if problem is not None:
                raise StreamStartError(f"Spark cannot start stream {name!r}: {refusal_line(problem, plan_text(df))}",
                                       problem)
            replacing = name in self._handles and self._handles[name].status == "active"
            self.stop(name, missing_ok=True)
            spec = StreamSpec(
                name=name, sink=spec_sink, output_mode=mode, trigger=parsed_trigger,
                checkpoint=str(checkpoint) if checkpoint is not None else self.new_checkpoint(name),
                rows=rows, truncate=bool(truncate), poll_interval=float(interval),
                history_cap=self.history_cap, table_warn_rows=table_warn_rows,
            )
            facts = plan_facts(df)  # read before the start; None when the plan is unreadable
            resumed_from = _resumed_from(checkpoint)  # before Spark commits anything new
            try:
                handle = run_query(
                    df.sparkSession, df, spec, console=console, on_event=self._finished, history=history,
                    foreach_batch=foreach_batch,
                )
            except StreamStartError as exc:
                if checkpoint is None:  # a refused query leaves no checkpoint folder behind
                    shutil.rmtree(spec.checkpoint, ignore_errors=True)
                if replacing:
                    raise StreamStartError(f"{exc} (the previous stream {name!r} was stopped)", exc.details) from None
                raise
            except BaseException:  # StreamInterrupted too: run_query stopped what it started
                if checkpoint is None:
                    shutil.rmtree(spec.checkpoint, ignore_errors=True)
                raise
            try:
                handle.plan = facts
                handle.resumed_from = resumed_from
                if inputs:
                    from .inputs import watermark_policy

                    handle.inputs, handle.watermark_policy = inputs, watermark_policy(df.sparkSession)
                if self._watcher is not None:
                    # Its poller keeps its history complete (and fills in what the listener cannot
                    # know, such as the console sink's row counts): no second copy.
                    self._watcher.recorder.release(handle.run_id)
            except KeyboardInterrupt:
                # Started but not yet registered: nobody could stop it later, so stop it now.
                self._undo_start(handle, remove_checkpoint=checkpoint is None)
                raise StreamInterrupted(
                    f"interrupted: stream {name!r} was not started (stopped the half-started query)"
                ) from None
            previous = self._handles.get(name)
            if previous is not None:
                previous.replaced_by = handle
            self._handles[name] = handle
        for callback in list(self.on_stream_started):
            try:
                callback(handle)
            except Exception:
                log.exception("stream-started callback failed")
        return handle

    @staticmethod
    def _undo_start(handle: StreamHandle, *, remove_checkpoint: bool) -> None:
        stopper = handle.begin_stop(0.0)
        if stopper is not None:
            stopper.wait()
        if remove_checkpoint:
            shutil.rmtree(handle.checkpoint, ignore_errors=True)

    def _refuse_foreign(self, spark: Any, name: str) -> None:
        """Refuse a name held by an active query the workbench did not start: it is the user's."""
        handle = self._handles.get(name)
        for query in spark.streams.active:
            if query.name != name:
                continue
            if handle is not None and handle.started_by != "user" and handle.run_id == str(query.runId):
                continue  # an earlier start of this stream (or of its cell): replaced as usual
            raise ValueError(
                f"a streaming query named {name!r} that the workbench did not start is running; it is left "
                f"alone: stop it first (workbench.stream({name!r}).stop() or %stream stop {name}) or choose "
                "another name"
            )

    def watch(
        self, query: Any, *, poll_interval: float | None = None, started_by: str = "user",
        name: str | None = None,
    ) -> StreamHandle:
        """The handle of any query of the session: see :func:`workbench.watch`.

        ``started_by`` marks who started it (``"cell"`` for a ``%%stream`` body's own query);
        ``name`` names a query that has no ``queryName``.
        """
        spark = self.session()
        target = find_query(spark, query)
        run_id = str(target.runId)
        interval = self.poll_interval if poll_interval is None else float(poll_interval)
        with self._lock:
            for handle in self._handles.values():
                if handle.run_id == run_id:
                    return handle
            handle = watched_handle(
                spark, target, self._watcher, poll_interval=interval, history_cap=self.history_cap,
                on_event=self._finished, started_by=started_by, name=name,
            )
            previous = self._handles.get(handle.name)
            if previous is not None:
                previous.replaced_by = handle
            self._handles[handle.name] = handle
            return handle

    def watch_all(self) -> list[StreamHandle]:
        """Handles of every active query of the session (watching those not yet watched).

        Lists only: a session that is not running yet is not started for it.
        """
        spark = self.adopt_active()
        if spark is None:
            return []
        handles = []
        for query in list(spark.streams.active):
            try:
                handles.append(self.watch(query))
            except Exception:  # it ended meanwhile
                log.debug("watching %s failed", query, exc_info=True)
        return handles

    def adopt_active(self) -> Any:
        """The workbench's session, or one the user built before loading it; never starts Spark.

        An adopted session keeps its settings; it gets the session-wide listener, so its
        later queries are recorded from their first batch. None when no session runs.
        """
        with self._lock:
            if self._spark is not None and spark_is_gone(self._spark):
                return None  # its JVM died: nothing to list; the next session() builds a new one
            if self._spark is not None and not _is_stopped(self._spark):
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
            self._spark = active
            self._listen(active)
            return active

    def _finished(self, handle: StreamHandle) -> None:
        for callback in list(self.on_stream_finished):
            try:
                callback(handle)
            except Exception:
                log.exception("stream-finished callback failed")

    def get(self, name: str) -> StreamHandle:
        """The handle of stream ``name``, watching an active query of that name or id if needed.

        ValueError listing the known names if there is none.
        """
        with self._lock:
            if name in self._handles:
                return self._handles[name]
            if self.adopt_active() is not None:
                try:
                    return self.watch(name)
                except ValueError:
                    pass
            known = ", ".join(self._handles) or "none started yet"
        raise ValueError(f"no stream named {name!r} (streams: {known})")

    def handles(self) -> list[StreamHandle]:
        """Every stream started in this process (the latest start of each name)."""
        with self._lock:
            return list(self._handles.values())

    def streams(self) -> pd.DataFrame:
        """One row per stream: see :func:`workbench.streams`."""
        self.watch_all()
        return pd.DataFrame([h.summary() for h in self.handles()], columns=list(STREAM_COLUMNS))

    def stop(self, name: str, *, missing_ok: bool = False) -> None:
        """Stop stream ``name``."""
        with self._lock:
            handle = self._handles.get(name)
        if handle is None:
            if not missing_ok:
                self.get(name)  # raises with the known names
            return
        handle.stop()

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
        import time

        spark = self._spark

        def stop_others() -> None:
            if spark is None or spark_is_gone(spark):
                return
            try:
                for query in spark.streams.active:
                    if grace > 0:
                        query.stop()
                    else:
                        threading.Thread(target=query.stop, daemon=True, name="workbench-stop-query").start()
            except Exception:
                log.debug("stopping remaining queries failed", exc_info=True)

        if grace > 0:
            # Every stop begins at once on its own thread, then this waits for them all: an
            # interrupt while it waits leaves no stream running, only stops still under way.
            stoppers = [(handle, handle.begin_stop(grace)) for handle in self.handles()]
            try:
                for _, stopper in stoppers:
                    if stopper is not None:
                        stopper.wait()
            except KeyboardInterrupt:
                still = [handle.name for handle, stopper in stoppers
                         if stopper is not None and not stopper.done.is_set()]
                raise StreamInterrupted(
                    f"interrupted: {_streams_are(still)} still stopping in the background (Spark ends each once its "
                    "running batch returns); spark.streams.active lists them until then, and stopping again "
                    "waits for them"
                ) from None
            stop_others()
            return
        log.debug("stopping the streams side by side, for at most %.1f s", wait)
        # Reading a status is a JVM call: each thread reads its own.
        stops = {h.name: (lambda h=h: h.status == "active" and h.stop(0.0)) for h in self.handles()}
        stops[" others"] = stop_others
        stoppers = {name: threading.Thread(target=stop, daemon=True, name=f"workbench-stop-{name.strip()}")
                    for name, stop in stops.items()}
        deadline = time.monotonic() + wait
        for stopper in stoppers.values():
            stopper.start()
        for stopper in stoppers.values():
            stopper.join(max(0.0, deadline - time.monotonic()))
        late = [name.strip() for name, stopper in stoppers.items() if stopper.is_alive()]
        if late and wait > 0:
            log.info("still stopping after %.1f s, going on: %s", wait, ", ".join(late))

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

        from .session import end_session

        began = time.monotonic()
        # Usually a second call (the kernel's shutdown hook stops the streams first): the
        # stops are under way, and the JVM ends next anyway, so no waiting here.
        self.stop_all(grace=0.0, wait=0.0)
        streams_done = time.monotonic()
        log.debug("streams stopped after %.2f s", streams_done - began)
        with self._lock:
            spark, self._spark = self._spark, None
            self._watcher = None  # its listener ends with the JVM
            temp_dir, self._temp_dir = self._temp_dir, None
        folders = (temp_dir,) if temp_dir is not None else ()
        if spark is not None:  # running, stopped or dead: its JVM and folders end here
            end_session(spark, grace=1.0, folders=folders)  # the grace is for a cluster only
        else:
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)
        spark_done = time.monotonic()
        done = time.monotonic()
        log.info("shutdown took %.2f s (streams %.2f s, Spark %.2f s, folders %.2f s)",
                 done - began, streams_done - began, spark_done - streams_done, done - spark_done)
        return {"streams": streams_done - began, "spark": spark_done - streams_done,
                "folders": done - spark_done, "total": done - began}

    def close(self, grace: float = 1.0) -> None:
        """Stop everything and remove the temporary folder (the session itself stays)."""
        self.stop_all(grace)
        with self._lock:
            if self._temp_dir is not None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None


def _streams_are(names: list[str]) -> str:
    """``stream 'a' is`` or ``streams 'a', 'b' are``."""
    quoted = ", ".join(repr(name) for name in names)
    return f"stream {quoted} is" if len(names) == 1 else f"streams {quoted} are"


def _resumed_from(checkpoint: str | os.PathLike[str] | None) -> int | None:
    """The batch a restart from a user's checkpoint continues with, or None for a fresh start.

    Read from the checkpoint's ``commits`` folder (one file per committed batch) before
    Spark adds to it; only local folders are read (None for other file systems).
    """
    if checkpoint is None or "://" in str(checkpoint):
        return None
    commits = Path(checkpoint) / "commits"
    ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    return max(ids) + 1 if ids else None


def _table_warn_rows() -> int:
    """``WORKBENCH_TABLE_WARN_ROWS``: memory-table rows past which a stream warns (default 1,000,000)."""
    text = os.environ.get("WORKBENCH_TABLE_WARN_ROWS", "").strip()
    if not text:
        return 1_000_000
    if not text.isdigit():
        raise ValueError(
            f"WORKBENCH_TABLE_WARN_ROWS must be a whole number of rows (0 never warns), got {text!r}"
        )
    return int(text)


def _is_stopped(spark: Any) -> bool:
    # Classic sessions lose their JVM context when stopped; Connect sessions report it.
    context = getattr(spark, "_sc", None)
    if context is not None:
        return getattr(context, "_jsc", None) is None
    return bool(getattr(spark, "is_stopped", False))


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
    env = _holder.env
    if env is not None:
        env.shutdown()
