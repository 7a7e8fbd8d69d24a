"""Watching any streaming query of the session, whoever started it.

:class:`SessionWatcher` installs one ``StreamingQueryListener`` on the workbench's session
(when the workbench builds or adopts it) that records every run of every query into a
:class:`~workbench.progress.recorder.QueryRecorder`, so a query started afterwards has a
complete history from its first batch. :func:`watched_handle` turns a pyspark
``StreamingQuery`` the workbench did not start into a :class:`StreamHandle`: the same
history, status, error and monitor as a started one. Watching never stops or restarts the
query; the handle's ``stop()`` stops it only when called.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Sequence

from ..options import Trigger
from ..progress import ProgressHistory
from ..progress.recorder import QueryRecorder, RunRecord
from .handle import StreamHandle, StreamSpec
from .plan import query_plan_facts
from .progress_source import jvm_query, progress_json

__all__ = ["SessionWatcher", "find_query", "is_streaming_query", "watched_handle", "sink_kind", "describe_query",
           "TEST_QUERY_PREFIX"]

log = logging.getLogger(__name__)

#: How ``StreamTest`` names its queries (``stream_test_<pid>_<n>``): a test's own, which the
#: workbench does not watch unasked.
TEST_QUERY_PREFIX = "stream_test_"

#: Sink kinds recognised in the progress report's ``sink.description``, first match wins.
_SINK_KINDS: tuple[tuple[str, str], ...] = (
    ("MemorySink", "memory"),
    ("ForeachBatchSink", "foreach_batch"),
    ("ForeachWriter", "foreach"),
    ("FileSink", "file"),
    ("ConsoleTable", "console"),
    ("console", "console"),
    ("kafka", "kafka"),
    ("delta", "delta"),
    ("noop", "noop"),
)


def sink_kind(description: str | None) -> str:
    """A short sink name from Spark's ``sink.description`` (``"file"``, ``"kafka"``, ...).

    Parameters
    ----------
    description : str or None
        E.g. ``"FileSink[file:/data/out]"``; None before the first batch.

    Returns
    -------
    str
        ``memory``, ``foreach_batch``, ``foreach``, ``file``, ``console``, ``kafka``,
        ``delta``, ``noop``, the description itself for other sinks, or ``unknown``.

    Examples
    --------
    >>> sink_kind("FileSink[file:/tmp/out]")
    'file'
    >>> sink_kind("org.apache.spark.sql.kafka010.KafkaSourceProvider$KafkaTable@1f")
    'kafka'
    >>> sink_kind(None)
    'unknown'
    """
    if not description:
        return "unknown"
    lowered = description.lower()
    for marker, kind in _SINK_KINDS:
        if marker.lower() in lowered:
            return kind
    return description


class SessionWatcher:
    """The session-wide listener and the recorder it fills.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session to listen to (classic or Spark Connect).
    history_cap : int
        Most batches each run's history keeps.

    Examples
    --------
    >>> watcher = SessionWatcher.install(spark)                    # doctest: +SKIP
    >>> watcher.recorder.runs()                                    # doctest: +SKIP
    """

    def __init__(self, spark: Any, recorder: QueryRecorder) -> None:
        self.spark = spark
        self.recorder = recorder
        self._listener: Any = None

    @classmethod
    def install(cls, spark: Any, *, history_cap: int = 100_000) -> SessionWatcher:
        """Add the listener to ``spark``; a failure is logged and leaves watching to polling."""
        watcher = cls(spark, QueryRecorder(history_cap=history_cap))
        try:
            listener = _make_listener(watcher.recorder)
            spark.streams.addListener(listener)
            watcher._listener = listener
        except Exception:
            log.warning("cannot listen to the session's streaming queries; watched queries are polled only",
                        exc_info=True)
        return watcher

    @property
    def listening(self) -> bool:
        """Whether the listener was added."""
        return self._listener is not None

    def remove(self) -> None:
        """Remove the listener from the session (when the session is replaced)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                self.spark.streams.removeListener(listener)
            except Exception:
                log.debug("removing the listener failed", exc_info=True)


def _make_listener(recorder: QueryRecorder) -> Any:
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        """Forwards events to the recorder. Runs on Spark's listener thread: never blocks, never raises.

        pyspark turns each event into Python objects field by field before calling these
        methods: about forty py4j calls per progress event, which made the event arrive
        50-450 ms after the batch ended on a loaded 2-core machine (measured; 2-20 ms with
        one call). So the listener pyspark registers for it reads each event with one to
        four calls instead (:class:`_RawEvents`); these methods are the fallback when
        that cannot be set up.
        """

        def onQueryStarted(self, event: Any) -> None:
            _guarded(recorder.started, str(event.id), str(event.runId), event.name, event.timestamp)

        def onQueryProgress(self, event: Any) -> None:
            _guarded(lambda: recorder.progress(json.loads(event.progress.json)))

        def onQueryIdle(self, event: Any) -> None:
            pass  # idle re-reports are not batches

        def onQueryTerminated(self, event: Any) -> None:
            _guarded(recorder.terminated, str(event.runId), event.exception)

        @property
        def _jlistener(self) -> Any:
            # pyspark's addListener and removeListener register what this property gives
            # (built once); here, a py4j proxy reading the events' JSON directly.
            built = self.__dict__.get("_jlistenerobj")
            if built is None:
                try:
                    from pyspark import SparkContext

                    built = SparkContext._jvm.PythonStreamingQueryListenerWrapper(_RawEvents(recorder))
                except Exception:
                    log.debug("reading listener events directly failed; pyspark converts them", exc_info=True)
                    built = StreamingQueryListener._jlistener.fget(self)  # type: ignore[attr-defined]
                self.__dict__["_jlistenerobj"] = built
            return built

    return _Listener()


class _RawEvents:
    """Spark's ``PythonStreamingQueryListener`` interface, served to the JVM through py4j.

    Each event is read with as few JVM calls as it needs: a batch's progress as one JSON
    string. Runs on a py4j thread for Spark's listener bus: never blocks, never raises.
    """

    def __init__(self, recorder: QueryRecorder) -> None:
        self._recorder = recorder

    def onQueryStarted(self, jevent: Any) -> None:  # noqa: N802 (Spark's Java names)
        _guarded(lambda: self._recorder.started(
            jevent.id().toString(), jevent.runId().toString(), jevent.name(), jevent.timestamp()))

    def onQueryProgress(self, jevent: Any) -> None:  # noqa: N802
        _guarded(lambda: self._recorder.progress(json.loads(jevent.progress().json())))

    def onQueryIdle(self, jevent: Any) -> None:  # noqa: N802
        pass  # idle re-reports are not batches

    def onQueryTerminated(self, jevent: Any) -> None:  # noqa: N802
        def ended() -> None:
            exception = jevent.exception()
            self._recorder.terminated(jevent.runId().toString(),
                                      exception.get() if exception.isDefined() else None)

        _guarded(ended)

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def _guarded(call: Callable[..., None], *args: Any) -> None:
    """Call ``call(*args)``; a failure is logged (at debug level), never raised into Spark's listener bus."""
    try:
        call(*args)
    except Exception:
        log.debug("recording a streaming query event failed", exc_info=True)


def is_streaming_query(value: Any) -> bool:
    """Whether ``value`` is a pyspark ``StreamingQuery`` (classic or Spark Connect)."""
    # Classic and Spark Connect queries are different classes. Not duck typing: a Spark
    # Connect DataFrame answers any attribute (``df.lastProgress`` is a column).
    from pyspark.sql.streaming import StreamingQuery

    classes: tuple[type, ...] = (StreamingQuery,)
    try:
        from pyspark.sql.connect.streaming.query import StreamingQuery as ConnectStreamingQuery

        classes += (ConnectStreamingQuery,)
    except ImportError:  # pyspark without its Connect extras
        pass
    return isinstance(value, classes)


def describe_query(query: Any) -> str:
    """``'name' (id ...)`` or ``id ...`` for messages."""
    return f"{query.name!r} (id {query.id})" if query.name else f"id {query.id}"


def find_query(spark: Any, target: Any) -> Any:
    """The ``StreamingQuery`` that ``target`` names: a query, or an active query's name or id.

    ``spark`` is the session to look in, or None when none runs (a name then names nothing).

    Raises
    ------
    TypeError
        For anything but a query or a string.
    ValueError
        When no active query has that name, id or run id; the message lists the active ones.
    """
    if is_streaming_query(target):
        return target
    if not isinstance(target, str):
        raise TypeError(
            "watch() takes a StreamingQuery, or the name or id of an active streaming query, "
            f"got {type(target).__name__}"
        )
    wanted = target.strip()
    active = list(spark.streams.active) if spark is not None else []  # None: no session runs
    for query in active:
        if query.name == wanted:
            return query
    for query in active:
        if wanted in (str(query.id), str(query.runId)):
            return query
    names = ", ".join(describe_query(q) for q in active) or "none"
    raise ValueError(f"no active streaming query named or with id {target!r} (active queries: {names})")


def _conf_int(spark: Any, key: str, default: int) -> int:
    try:
        return int(spark.conf.get(key, str(default)))
    except Exception:
        return default


def _jvm_facts(query: Any) -> dict[str, str]:
    """Output mode, trigger and checkpoint of a classic query (Spark Connect does not say)."""
    jsq = jvm_query(query)
    if jsq is None:
        return {}
    facts: dict[str, str] = {}
    try:
        execution = jsq.streamingQuery()
        facts["checkpoint"] = str(execution.resolvedCheckpointRoot())
        facts["sink"] = str(execution.sink().toString())
        facts["trigger"] = str(execution.trigger().toString())
        facts["output_mode"] = str(execution.outputMode().toString()).lower()
    except Exception:
        log.debug("could not read the query's settings", exc_info=True)
    return facts


def _trigger(text: str | None) -> Trigger:
    """Spark's trigger description (``ProcessingTimeTrigger(300)``) in the workbench's words."""
    if not text:
        return Trigger("unknown", text="unknown")
    if text.startswith("ProcessingTimeTrigger("):
        millis = int(text[len("ProcessingTimeTrigger("):-1] or 0)
        if millis == 0:
            return Trigger("default")
        return Trigger("processing_time", interval=f"{millis} milliseconds", text=f"{millis / 1000:g} seconds")
    if "AvailableNow" in text:
        return Trigger("available_now", text="available-now")
    if "OneTime" in text:
        return Trigger("once", text="once")
    if text.startswith("ContinuousTrigger("):
        return Trigger("continuous", text=f"continuous {int(text[len('ContinuousTrigger('):-1] or 0) / 1000:g} seconds")
    return Trigger("unknown", text=text)


def watched_handle(
    spark: Any,
    query: Any,
    watcher: SessionWatcher | None,
    *,
    poll_interval: float,
    history_cap: int,
    on_event: Callable[[StreamHandle], None] | None = None,
    started_by: str = "user",
    name: str | None = None,
) -> StreamHandle:
    """A running :class:`StreamHandle` for a query the workbench did not start.

    Its history is the listener's record of the run (complete from batch 0 when the
    listener saw the start), back-filled from ``recentProgress`` otherwise;
    ``handle.history_note`` says which batches are missing. From then on the handle's poller
    is the only writer of that history (the recorder releases the run). Nothing is done to
    the query.
    """
    facts = _jvm_facts(query)
    description = facts.get("sink")
    if description is None:
        last = query.lastProgress
        description = (progress_json(last).get("sink") or {}).get("description") if last else None
    # A query without a queryName is known by ``name`` (a cell's stream name) or its id.
    name = query.name or name or str(query.id)
    spec = StreamSpec(
        name=name, sink=sink_kind(description), output_mode=facts.get("output_mode"),
        trigger=_trigger(facts.get("trigger")), checkpoint=facts.get("checkpoint", ""),
        poll_interval=poll_interval, history_cap=history_cap,
    )
    history = ProgressHistory(cap=history_cap)
    record: RunRecord | None = None
    if watcher is not None:
        run_id = str(query.runId)
        known = watcher.recorder.get(run_id)
        recent: list[Any] = []
        if known is None or not known.complete:
            recent = [progress_json(p) for p in query.recentProgress]
        # Spark keeps this many reports less one (measured); a shorter list holds the whole run.
        limit = _conf_int(spark, "spark.sql.streaming.numRecentProgressUpdates", 100) - 1
        record = watcher.recorder.attach(str(query.id), run_id, query.name, history, recent=recent,
                                         recent_limit=limit)
    handle = StreamHandle(spec, query, spark, on_event=on_event, history=history)
    if watcher is not None:
        # From here on the handle's poller is the history's one writer, as for a started
        # stream: with the listener writing too, two appends could reach a monitor in the
        # other order, and it would drop the older batch. The listener wakes the poller as
        # each batch ends and keeps the run's reports for it.
        wake = handle.poller.wake if watcher.listening else None  # unheard, the run's end would never drop it
        handle.hear_from(watcher.recorder.release(run_id, wake=wake))
    handle.started_by = started_by
    handle.sink_description = description
    handle.output_mode_known = spec.output_mode is not None
    # "Why no output?" tells an aggregation from a join or dropDuplicates by the plan (classic sessions only).
    handle.plan = query_plan_facts(query)
    if spec.sink == "unknown":  # watched before its first report on Spark Connect: the first one tells

        def learn(records: Sequence[Any]) -> None:  # on the poller's thread, as each batch comes
            described = [r.sink_description for r in records if r.sink_description]
            if described and handle.sink == "unknown":
                handle.learn_sink(described[0], sink_kind(described[0]))

        history.subscribe(learn)
        learn(history.records())
    if record is not None:
        handle.history_note = record.missing_note
        if record.started_at is not None:
            handle.started_at = record.started_at
    else:
        handle.poller.fill()
        first = handle.progress.records()[:1]
        handle.history_note = (
            f"batches before {first[0].batch_id} may be missing: Spark keeps only its recent progress reports"
            if first and first[0].batch_id > 0 else None
        )
    handle.poller.start()
    return handle
