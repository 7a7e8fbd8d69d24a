"""The end of a query: stopping it so that no interrupt leaves it half stopped, and settling how it ended.

Owns :class:`Worker` (a call on a daemon thread of its own, which a KeyboardInterrupt cannot
cut short), :class:`Stopper` (a stream's stop, begun once on such a thread and waited for),
:func:`wait_between_batches` (the grace a running micro-batch gets), :class:`QueryEnd` (the
status and error a query ended with, settled once, and the callbacks told when it has) and
:class:`StreamInterrupted`, the one-line interrupt a start, stop or step raises after
clean-up.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from typing import Any, Callable

from ..errors import StreamStopError, summarize_error
from .progress_source import SPARK_STOPPED, jvm_query
from .session_end import spark_is_gone

__all__ = ["StreamInterrupted", "Worker", "QueryEnd", "Stopper", "wait_between_batches", "jvm_cause", "describe_cause"]

log = logging.getLogger(__name__)

#: What Spark's one line says of a cause without a message: "null" before Spark 4.3,
#: "(no cause message)" since (and "unknown error" is what summarize_error makes of nothing).
_NO_MESSAGE = frozenset({"null", "(no cause message)", "unknown error"})


class StreamInterrupted(KeyboardInterrupt):
    """A KeyboardInterrupt (Kernel > Interrupt) that reached a start, stop or step, after clean-up.

    It is still a ``KeyboardInterrupt`` (a notebook stops running the queued cells), but
    the cell shows only its one-line message, which says what state the stream was left
    in, instead of a traceback through Py4J.

    Examples
    --------
    >>> str(StreamInterrupted("interrupted: stream 'x' was not started"))
    "interrupted: stream 'x' was not started"
    """

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback.
        return [str(self)]


class Worker:
    """A call on a daemon thread of its own, waited for through an Event.

    An interrupt must not cut a start or a stop of a query short: a KeyboardInterrupt that
    reaches the Python side of a Py4J call leaves the JVM going on with the call, unknown to
    the workbench. Run on a thread, the call always completes, and the caller decides what
    to do once it has. (Waiting with ``Thread.join`` is no good: in CPython before 3.13 an
    interrupted ``join`` marks the thread as ended while it still runs.)

    With ``session``, the thread is pyspark's ``InheritableThread``, so that a query started
    on it inherits the calling thread's local properties.

    Examples
    --------
    >>> worker = Worker(lambda: 6 * 7, "answer").start()
    >>> worker.wait(), worker.result, worker.error
    (True, 42, None)
    """

    def __init__(self, target: Callable[[], Any], name: str, session: Any = None) -> None:
        self._target = target
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        if session is None:
            self.thread = threading.Thread(target=self._run, daemon=True, name=name)
        else:
            from pyspark.util import InheritableThread

            # A query started from the notebook's thread inherits its local properties (such as
            # spark.scheduler.pool): pyspark's InheritableThread passes them on.
            self.thread = InheritableThread(self._run, session=session, daemon=True, name=name)

    def _run(self) -> None:
        try:
            self.result = self._target()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def start(self) -> Worker:
        """Start the call on its thread; returns this worker."""
        self.thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the call to end (interruptible); True once it has and its thread is gone."""
        if not self.done.wait(timeout):
            return False
        self.thread.join(1.0)  # the call has returned: the thread is only ending
        return True


class QueryEnd:
    """How one query ended (its status and error, settled once) and who is told once it has.

    ``subject`` is what the finish callbacks receive (the stream's handle). ``lock`` guards
    the settled state, the callbacks and the :class:`Stopper`'s running stop.

    Examples
    --------
    >>> end = QueryEnd(handle.query, spark, subject=handle)   # doctest: +SKIP
    >>> end.settle()                                          # doctest: +SKIP
    'stopped'
    """

    def __init__(self, query: Any, spark: Any, subject: Any) -> None:
        self._query = query
        self._spark = spark
        self._subject = subject
        self.lock = threading.Lock()
        #: ``"stopped"`` or ``"failed"`` once settled, else None.
        self.status: str | None = None
        self.error: str | None = None
        self.error_details: str | None = None
        #: Set by the workbench's own stop once it found the query active and without error
        #: just before stopping it (see :meth:`settle`).
        self.stopped_while_healthy = False
        self._callbacks: list[Callable[[Any], None]] = []
        self._finished = threading.Event()

    def settle(self) -> str:
        """Record how a query that is no longer active ended (once)."""
        with self.lock:
            if self.status is not None:
                return self.status
            if spark_is_gone(self._spark):
                self.error = self.error_details = SPARK_STOPPED
                self.status = "failed"
                return self.status
            try:
                exc = self._query.exception()
            except Exception:  # the session is gone: nothing more to learn
                exc = None
                if spark_is_gone(self._spark, wait=2.0):  # a JVM that was killed may still be exiting
                    self.error = self.error_details = SPARK_STOPPED
                    self.status = "failed"
                    return self.status
            if exc is not None:
                cause = jvm_cause(self._query, self._spark)
                details = str(exc) + (f"\n\nCaused by: {cause[1]}" if cause else "")
                if self.stopped_while_healthy:
                    # Spark counts an interruption it caused by stopping as a clean stop, but
                    # not every exception the interrupt sets off in its own code (a stream-stream
                    # join can end with a NullPointerException): the user asked for the stop.
                    self.error_details = f"Spark reported an error while the query was being stopped:\n{details}"
                    log.warning("query %s raised while being stopped; counted as stopped: %s",
                                getattr(self._subject, "name", "?"), summarize_error(details))
                    self.status = "stopped"
                    return self.status
                self.error_details = details
                self.error = summarize_error(details)
                if cause and self.error in _NO_MESSAGE:
                    self.error = cause[0]
                self.status = "failed"
            else:
                self.status = "stopped"
            return self.status

    @property
    def finished(self) -> bool:
        """Whether :meth:`mark_finished` has run."""
        return self._finished.is_set()

    def wait_finished(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`mark_finished` has run."""
        return self._finished.wait(timeout)

    def on_finished(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(subject)`` once finished (at once if already)."""
        with self.lock:
            if not self._finished.is_set():
                self._callbacks.append(callback)
                return
        callback(self._subject)

    def mark_finished(self) -> None:
        """Note that the query has ended and its last batches are in the history; run the callbacks (once)."""
        with self.lock:
            if self._finished.is_set():
                return
            self._finished.set()
            callbacks, self._callbacks = self._callbacks, []  # once: let the monitors go
        for callback in callbacks:
            try:
                callback(self._subject)
            except Exception:
                log.exception("stream-finished callback failed")


class Stopper:
    """One stream's stop: begun once on a thread of its own, then waited for.

    The stop runs on a :class:`Worker` so that an interrupt while the caller waits cannot
    cut it short, and a second stop while one is under way waits for that one instead of
    starting another. It stops the query (after :func:`wait_between_batches`) and the
    ``poller``, reads the last batches the poller missed, calls ``find_cut_batch`` and
    settles ``end``.

    Examples
    --------
    >>> stopper = Stopper("counts", query, spark, poller, end, find_cut_batch)   # doctest: +SKIP
    >>> stopper.stop(1.0)                                                       # doctest: +SKIP
    """

    def __init__(self, name: str, query: Any, spark: Any, poller: Any, end: QueryEnd,
                 find_cut_batch: Callable[[], None]) -> None:
        self._name = name
        self._query, self._spark, self._poller, self._end = query, spark, poller, end
        self._find_cut_batch = find_cut_batch
        self._lock = end.lock
        self._running: Worker | None = None

    def stop(self, grace: float) -> None:
        """Stop and wait for the stop to end (see ``StreamHandle.stop``).

        Raises
        ------
        StreamInterrupted
            On a KeyboardInterrupt while waiting; the stop goes on in the background.
        StreamStopError
            When Spark could not stop the query and it still runs.
        """
        worker = self.begin(grace)
        if worker is None:
            return
        try:
            worker.wait()
        except KeyboardInterrupt:
            raise StreamInterrupted(
                f"interrupted: stream {self._name!r} is still stopping in the background (Spark ends it once its "
                "running batch returns); spark.streams.active lists it until then, and stop() again waits for it"
            ) from None
        if isinstance(worker.error, Exception):  # a StreamStopError, or a fault of the stop itself
            raise worker.error

    def begin(self, grace: float) -> Worker | None:
        """Start stopping on a thread of its own (once); the worker to wait for, or None when done here."""
        with self._lock:
            worker = self._running
            if worker is None:
                worker = self._running = Worker(functools.partial(self._stop_now, grace), f"workbench-stop-{self._name}")
                try:
                    worker.start()
                except RuntimeError:  # no new threads at interpreter shutdown: stop right here
                    self._running = None
                    worker = None
        if worker is None:
            try:
                self._stop_now(grace)
            except StreamStopError as exc:  # at interpreter shutdown: nobody to tell
                log.debug("%s", exc)
            return None
        if worker.thread is threading.current_thread():
            return None
        return worker

    def _stop_now(self, grace: float) -> None:
        try:
            gone = spark_is_gone(self._spark)
            if not gone:
                wait_between_batches(self._query, grace, self._name)
                try:
                    if self._query.isActive and self._query.exception() is None:
                        self._end.stopped_while_healthy = True
                except Exception:
                    log.debug("reading the state of %s before stopping it failed", self._name, exc_info=True)
                try:
                    self._query.stop()
                except Exception as exc:
                    log.debug("stopping %s failed", self._name, exc_info=True)
                    self._unless_stopped(exc)
            self._poller.stop()
            if gone:
                self._end.settle()
                self._end.mark_finished()
            elif not self._end.finished:
                # The poller was stopped before it noticed the end: read the last batches here.
                try:
                    self._poller.fill()
                except Exception:
                    log.debug("final progress read for %s failed", self._name, exc_info=True)
                self._end.settle()
                self._find_cut_batch()
                self._end.mark_finished()
        finally:
            with self._lock:
                self._running = None

    def _unless_stopped(self, exc: Exception) -> None:
        """After ``query.stop()`` raised: raise :class:`StreamStopError` unless the query has ended after all.

        Spark ends a query's run before its stop returns, so a query still active (or one
        whose state cannot be read, as when a Spark Connect server is out of reach) was not
        stopped: it keeps its status and its poller, and the next stop tries again.
        """
        try:
            active = not spark_is_gone(self._spark) and bool(self._query.isActive)
            known = True
        except Exception:
            active, known = True, False
        if not active:
            return
        self._end.stopped_while_healthy = False
        line = summarize_error(f"{type(exc).__name__}: {exc}")
        state = "it still runs" if known else "whether it still runs cannot be read"
        raise StreamStopError(f"stream {self._name!r} could not be stopped: {line}; {state} (stop() again tries again)",
                              details=f"{type(exc).__name__}: {exc}") from None


def jvm_cause(query: Any, spark: Any) -> tuple[str, str] | None:
    """What a failed classic query's exception was caused by: a one-line name and the JVM's trace.

    Spark's ``StreamingQueryException`` carries its cause's message only ("terminated with
    exception: null" for a cause without one, which says nothing). The one line names the
    cause's class and where it was thrown when it has no message; the trace goes into the
    stream's ``error_details``. None on Spark Connect or when the JVM cannot tell.
    """
    jvm = jvm_query(query)
    if jvm is None:
        return None
    try:
        failure = jvm.exception()
        cause = failure.get().getCause() if failure.isDefined() else None
        if cause is None:
            return None
        # Spark's own trace text, in one call (not one per frame): the cause's message (which
        # may span lines), its frames, then its own causes; the frames are kept.
        lines = str(spark._jvm.org.apache.spark.util.Utils.exceptionString(cause)).splitlines()
        first = next((i for i, line in enumerate(lines) if line.startswith("\tat ")), len(lines))
        frames = list(itertools.takewhile(lambda line: line.startswith("\tat "), lines[first:]))
        frames = [line[len("\tat "):] for line in frames]
        return describe_cause(str(cause.getClass().getName()), cause.getMessage(), frames)
    except Exception:
        log.debug("reading the cause of a query's failure failed", exc_info=True)
        return None


def describe_cause(name: str, message: str | None, frames: list[str]) -> tuple[str, str]:
    """The one line and the trace text for a JVM exception (see :func:`jvm_cause`).

    Examples
    --------
    >>> line, trace = describe_cause("java.lang.NullPointerException", None,
    ...                              ["org.example.Joiner.next(Joiner.scala:12)", "java.lang.Thread.run(Thread.java:840)"])
    >>> line
    'NullPointerException without a message, thrown at org.example.Joiner.next(Joiner.scala:12)'
    >>> trace.splitlines()[:2]
    ['java.lang.NullPointerException', '\\tat org.example.Joiner.next(Joiner.scala:12)']
    >>> describe_cause("java.io.IOException", "disk full", [])[0]
    'IOException: disk full'
    """
    short = name.rsplit(".", 1)[-1]
    if message:
        line = f"{short}: {summarize_error(message)}"
    else:
        line = f"{short} without a message" + (f", thrown at {frames[0]}" if frames else "")
    trace = "\n".join([name + (f": {message}" if message else "")] + [f"\tat {frame}" for frame in frames])
    return line, trace


def wait_between_batches(query: Any, grace: float, name: str, *, or_next_report: bool = False) -> None:
    """Wait up to ``grace`` seconds for ``query``'s running micro-batch (if any) to end.

    With back-to-back batches there is no idle moment to wait for; with ``or_next_report``
    the end of a batch is also told by Spark reporting it (a new ``batchId`` in
    ``lastProgress``): a stop right then interrupts the next batch before it writes
    anything, and that batch runs again on restart instead of being cut after its sink write.

    Examples
    --------
    >>> wait_between_batches(handle.query, 1.0, handle.name)                         # doctest: +SKIP
    >>> wait_between_batches(handle.query, 30.0, handle.name, or_next_report=True)   # doctest: +SKIP
    """
    deadline = time.monotonic() + grace
    try:
        first = (query.lastProgress or {}).get("batchId") if or_next_report else None
        while time.monotonic() < deadline and query.isActive and query.status.get("isTriggerActive"):
            if or_next_report and (query.lastProgress or {}).get("batchId") != first:
                return
            time.sleep(0.002)
    except Exception:
        log.debug("reading the status of %s failed", name, exc_info=True)
