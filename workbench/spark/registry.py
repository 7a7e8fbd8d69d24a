"""The registry of streams: the handle of every stream of one workbench, by name.

:class:`StreamRegistry` keeps the latest handle of each name (started here, or a query of
the session that is watched), looks streams up, lists them, stops them, and tells
subscribers when one starts or ends. It does not own the SparkSession: it asks its owner
(a :class:`SessionOwner`, the :class:`~workbench.spark.environment.Workbench`) for the
session and its listener when it needs them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Protocol

import pandas as pd

from .session_end import run_aside, spark_is_gone
from .handle import StreamHandle
from ..errors import StreamStopError, summarize_error
from ..options import check_seconds
from .stopping import StreamInterrupted
from .watch import TEST_QUERY_PREFIX, SessionWatcher, find_query, is_streaming_query, watched_handle

__all__ = ["StreamRegistry", "SessionOwner", "STREAM_COLUMNS"]

log = logging.getLogger(__name__)

#: How often, at most, :meth:`StreamRegistry.watch_started` asks a session that has no
#: listener (Spark Connect) for its active queries, in seconds.
ACTIVE_ASKED_EVERY = 5.0

#: Columns of :meth:`StreamRegistry.streams` (and ``workbench.streams()``).
STREAM_COLUMNS = (
    "name", "id", "run_id", "status", "sink", "output_mode", "trigger", "batches",
    "last_batch_id", "watermark", "input_rows_per_second", "processed_rows_per_second", "error",
    "started_by",
    "table_rows", "cut_batch",
)


class SessionOwner(Protocol):
    """What the registry (and starting a stream) needs from the owner of the session."""

    poll_interval: float
    history_cap: int

    @property
    def watcher(self) -> SessionWatcher | None:
        """The session-wide listener, or None (no session yet, or Spark Connect)."""

    def session(self) -> Any:
        """The SparkSession, built if needed."""

    def adopt_active(self) -> Any:
        """The running SparkSession, or None; never starts Spark."""

    def peek_session(self) -> Any:
        """The SparkSession held (running, stopped or dead), or None; never builds one."""

    def new_checkpoint(self, name: str) -> str:
        """A fresh checkpoint folder for one start of stream ``name``."""


class StreamRegistry:
    """The handles of one workbench's streams: look up, list, watch, stop.

    Parameters
    ----------
    owner : SessionOwner
        Gives the session, its listener and the polling settings.
    lock : threading.RLock
        The owner's lock: one lock guards the session and the handles, since starting a
        stream holds it across building the session and replacing a stream.

    Examples
    --------
    >>> registry = current_env().registry               # doctest: +SKIP
    >>> registry.get("counts").stop()                     # doctest: +SKIP
    """

    def __init__(self, owner: SessionOwner, lock: threading.RLock) -> None:
        self._owner = owner
        self.lock = lock
        self._handles: dict[str, StreamHandle] = {}
        self._tried: set[str] = set()  # runs watch_started() watched, or could not
        self._asked = -ACTIVE_ASKED_EVERY  # when watch_started() last asked a session without a listener
        #: Called with a handle whenever one of its queries ends (views subscribe here).
        self.on_stream_finished: list[Callable[[StreamHandle], None]] = []
        #: Called with each new handle, on the starting thread, right after its query starts.
        self.on_stream_started: list[Callable[[StreamHandle], None]] = []

    def add(self, handle: StreamHandle) -> None:
        """Register ``handle`` under its name, replacing (and pointing from) the previous one.

        A memory-sink stream whose name differs only in case is replaced too: Spark's table
        names ignore case, so the newer stream's table took its place.
        """
        with self.lock:
            for previous in self._handles.values():
                same_table = previous.sink == handle.sink == "memory" and previous.name.lower() == handle.name.lower()
                if previous.name == handle.name or same_table:  # Spark's table names ignore case
                    previous.replaced_by = handle
            self._handles[handle.name] = handle

    def registered(self, name: str) -> StreamHandle | None:
        """The handle registered as ``name``, or None; never watches a query."""
        with self.lock:
            return self._handles.get(name)

    def started(self, handle: StreamHandle) -> None:
        """Tell the ``on_stream_started`` subscribers."""
        _call_each(self.on_stream_started, handle, "stream-started")

    def finished(self, handle: StreamHandle) -> None:
        """Tell the ``on_stream_finished`` subscribers (a handle's ``on_event``)."""
        _call_each(self.on_stream_finished, handle, "stream-finished")

    def watch(
        self, query: Any, *, poll_interval: float | None = None, started_by: str = "user",
        name: str | None = None,
    ) -> StreamHandle:
        """The handle of any query of the session: see :func:`workbench.watch`.

        ``started_by`` marks who started it (``"cell"`` for a ``%%stream`` body's own query);
        ``name`` names a query that has no ``queryName``.
        """
        owner = self._owner
        interval = check_seconds("poll_interval", owner.poll_interval if poll_interval is None else poll_interval)
        if isinstance(query, str):
            # A name needs a session already running (its query runs on it): none is started for it.
            spark = owner.adopt_active()
        elif is_streaming_query(query):
            # Its session runs already: the user's own (Spark Connect too) is adopted as it is,
            # not replaced by one the workbench would build with its settings.
            spark = owner.adopt_active() or owner.session()
        else:
            spark = None  # find_query says what is wrong with the argument
        target = find_query(spark, query)
        run_id = str(target.runId)
        with self.lock:
            for handle in self._handles.values():
                if handle.run_id == run_id:
                    return handle
            handle = watched_handle(
                spark, target, owner.watcher, poll_interval=interval, history_cap=owner.history_cap,
                on_event=self.finished, started_by=started_by, name=name,
            )
            self.add(handle)
            return handle

    def watch_all(self) -> list[StreamHandle]:
        """Handles of every active query of the session (watching those not yet watched).

        Lists only: a session that is not running yet is not started for it.
        """
        spark = self._owner.adopt_active()
        if spark is None:
            return []
        handles = []
        for query in list(spark.streams.active):
            try:
                handles.append(self.watch(query))
            except Exception:  # it ended meanwhile
                log.debug("watching %s failed", query, exc_info=True)
        return handles

    def watch_started(self) -> list[StreamHandle]:
        """Watch the queries the session's listener saw start that no handle follows (a plain
        ``df.writeStream...start()``), as :meth:`watch_all` would; the new handles.

        For views that list every stream (the Streams panel): no Spark call unless the listener
        heard of a new run, and each run is tried once. A ``StreamTest``'s queries are its own.
        A session without the listener (Spark Connect) is asked for its active queries instead,
        at most every :data:`ACTIVE_ASKED_EVERY` seconds.
        """
        watcher = self._owner.watcher
        if watcher is not None:
            runs = [(run.query_id, run.run_id, run.name) for run in watcher.recorder.runs() if not run.ended]
        elif time.monotonic() - self._asked < ACTIVE_ASKED_EVERY:
            return []
        else:
            self._asked = time.monotonic()
            spark = self._owner.adopt_active()
            # Spark Connect's queries carry their ids and name: no further call for them.
            runs = [(query, str(query.runId), query.name) for query in (spark.streams.active if spark else [])]
        with self.lock:
            known = {handle.run_id for handle in self._handles.values()} | self._tried
        handles = []
        for query, run_id, name in runs:
            if run_id in known or (name or "").startswith(TEST_QUERY_PREFIX):
                continue
            self._tried.add(run_id)
            try:
                handles.append(self.watch(query))
            except Exception:  # it ended meanwhile, or runs on another session
                log.debug("watching %s failed", name or run_id, exc_info=True)
        return handles

    def get(self, name: str) -> StreamHandle:
        """The handle of stream ``name``, watching an active query of that name or id if needed.

        ValueError listing the known names if there is none.
        """
        if not isinstance(name, str):
            raise TypeError(f"stream name must be a string, got {name!r}")
        with self.lock:
            if name in self._handles:
                return self._handles[name]
            if self._owner.adopt_active() is not None:
                try:
                    return self.watch(name)
                except ValueError:
                    pass
            known = ", ".join(self._handles) or "none started yet"
        raise ValueError(f"no stream named {name!r} (streams: {known})")

    def handles(self) -> list[StreamHandle]:
        """Every stream started in this process (the latest start of each name)."""
        with self.lock:
            return list(self._handles.values())

    def streams(self) -> pd.DataFrame:
        """One row per stream: see :func:`workbench.streams`."""
        self.watch_all()
        return pd.DataFrame([h.summary() for h in self.handles()], columns=list(STREAM_COLUMNS))

    def stop(self, name: str, *, missing_ok: bool = False) -> None:
        """Stop stream ``name``."""
        handle = self.registered(name)
        if handle is None:
            if missing_ok:
                return
            handle = self.get(name)  # an active query the workbench did not start, watched; else the known names
        handle.stop()

    def stop_all(self, grace: float = 1.0, wait: float = 0.0) -> None:
        """Stop every stream and poller; see :meth:`Workbench.stop_all`."""
        spark = self._owner.peek_session()

        def stop_others() -> None:
            if spark is None or spark_is_gone(spark):
                return
            try:
                active = list(spark.streams.active)
            except Exception:
                log.debug("listing the remaining queries failed", exc_info=True)
                return
            for query in active:  # one that cannot be stopped does not keep the others running
                try:
                    if grace > 0:
                        query.stop()
                    else:
                        run_aside(query.stop, "workbench-stop-query")
                except Exception as exc:
                    log.warning("stopping query %s failed: %s", getattr(query, "name", None) or query.id,
                                summarize_error(str(exc)))

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
            for _, stopper in stoppers:
                if stopper is not None and isinstance(stopper.error, StreamStopError):
                    log.warning("%s", stopper.error)  # everything else still stops
            stop_others()
            return
        log.debug("stopping the streams side by side, for at most %.1f s", wait)
        # Reading a status is a JVM call: each thread reads its own.
        stops = {h.name: (lambda h=h: h.status == "active" and h.stop(0.0)) for h in self.handles()}
        stops[" others"] = stop_others
        deadline = time.monotonic() + wait
        # At interpreter exit (a plain script's end) each stop runs in turn on this thread.
        stoppers = {name: run_aside(stop, f"workbench-stop-{name.strip()}") for name, stop in stops.items()}
        for stopper in stoppers.values():
            if stopper is not None:
                stopper.join(max(0.0, deadline - time.monotonic()))
        late = [name.strip() for name, stopper in stoppers.items() if stopper is not None and stopper.is_alive()]
        if late and wait > 0:
            log.info("still stopping after %.1f s, going on: %s", wait, ", ".join(late))


def _call_each(callbacks: list[Callable[[StreamHandle], None]], handle: StreamHandle, what: str) -> None:
    """Call every subscriber; one that fails is logged and does not keep the others from hearing."""
    for callback in list(callbacks):
        try:
            callback(handle)
        except Exception:
            log.exception("%s callback failed", what)


def _streams_are(names: list[str]) -> str:
    """``stream 'a' is`` or ``streams 'a', 'b' are``."""
    quoted = ", ".join(repr(name) for name in names)
    return f"stream {quoted} is" if len(names) == 1 else f"streams {quoted} are"
