"""The "why no output?" rules: plain-word reasons why an append-mode stream has emitted nothing.

This module owns the rules, as pure functions over small values:

- :class:`PlanFacts`: what the query's plan says (aggregation? watermark and its delay?
  window duration, slide and offset?), parsed from Spark's plan text by
  :meth:`PlanFacts.from_plan_text`. The Spark layer fetches the text; nothing here
  imports Spark.
- :class:`OutputSummary`: what the progress history says, folded incrementally from
  :class:`~workbench.progress.BatchProgress` records so that a live monitor never rereads
  the whole history.
- :class:`HeldTimers`: the timers a transformWithState processor holds (the caller reads
  them from the state store and passes them in, only when a rule asks).
- :func:`why_no_output`: the rules, returning a message or None.

Spark facts the rules rely on (measured on Spark 4.3): a query with a watermark reports
``eventTime.watermark`` from batch 0 on (epoch 0 until the first event times are seen);
without one it reports no watermark at all. A source with no data runs no batch at all
(Spark only re-reports progress every 10 s while idle), so "no input" is also judged by
time since the start. Spark refuses an aggregation without a watermark in append mode
when the query starts, so the "no watermark" message is reached for stateful queries that
Spark does accept (and serves as the explanation when plan facts say so).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable, Sequence

from .input_watermarks import InputWatermark
from .records import AGGREGATION_OPERATORS, TWS_OPERATORS, BatchProgress, parse_interval

__all__ = [
    "PlanFacts", "OutputSummary", "HeldTimers", "why_no_output", "earliest_window_end", "parse_interval",
    "format_time", "format_duration", "held_back_by",
]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# `'window('timestamp, 10 minutes, 5 minutes, 1 minute)` in the parsed logical plan.
_WINDOW_CALL = re.compile(r"'window\('?`?([\w.]+)`?((?:,\s*[^,()]+){1,3})\)", re.IGNORECASE)
# `'session_window('timestamp, 5 minutes)`; a gap computed per row is not an interval.
_SESSION_CALL = re.compile(r"'session_window\('?`?([\w.]+)`?,\s*", re.IGNORECASE)
_SESSION_GAP = re.compile(r"([^(),]+)\)")
# `EventTimeWatermark <uuid>, timestamp#0: timestamp, 10 seconds`
#: A ``workbench.testing.MemoryStream`` in a plan: the ``workbench_memory`` relation and its options.
_MEMORY_INPUT = re.compile(r"\bworkbench_memory,[^\n]*?\[([^\]\n]*folder[^\]\n]*)\]")
_FOLDER_HEX = re.compile(r"(?:^|, )folder_hex=([0-9a-f]+)(?:,|$)")
_FOLDER = re.compile(r"(?:^|, )folder=([^,]+)(?:,|$)")
_WATERMARK = re.compile(r"EventTimeWatermark\s+(?:[0-9a-f-]{36},\s*)?([\w.`]+)#\d+(?::\s*\w+)?,\s*([^\n]+)")
# A plan tree's line: the tree's prefix (`:  +- `), the node's state (`'` unresolved, `~` streaming), its name.
_NODE = re.compile(r"^((?:[: ] {2})*(?:[:+]- )?)([~'!]*)(\w+)")


def _streaming_aggregation(text: str) -> bool:
    """Whether a plan's text aggregates a stream (an aggregate over a join's static side does not count).

    Spark marks a resolved node that reads a stream with ``~``; an unresolved one (``'``)
    aggregates a stream when a node below it reads one, or when the text shows nothing below it.

    Examples
    --------
    >>> _streaming_aggregation("~Join Inner\\n:- ~StreamingRelationV2 rate\\n+- Aggregate [v#1L]\\n   +- Range (0, 5)")
    False
    >>> _streaming_aggregation("'Aggregate ['v], ['count(1)]\\n+- ~StreamingRelationV2 rate")
    True
    """
    nodes = [(len(m.group(1)), m.group(2), m.group(3)) for m in map(_NODE.match, text.splitlines()) if m]
    for index, (depth, state, name) in enumerate(nodes):
        if name != "Aggregate" or not ("~" in state or "'" in state):
            continue
        below = list(itertools.takewhile(lambda node: node[0] > depth, nodes[index + 1:]))
        if "~" in state or not below or any("~" in s or n.startswith("Streaming") for _, s, n in below):
            return True
    return False


def _memory_folder(options: str) -> str:
    """A memory stream's folder from its options as a plan prints them (``folder=..., folder_hex=...``).

    The hex copy survives Spark's redaction of option values in printed plans.

    Examples
    --------
    >>> _memory_folder("folder=*********(redacted), folder_hex=2f746d702f75726c")
    '/tmp/url'
    >>> _memory_folder("folder=/data/b")
    '/data/b'
    """
    match = _FOLDER_HEX.search(options)
    if match:
        try:
            return bytes.fromhex(match.group(1)).decode()
        except ValueError:
            pass
    match = _FOLDER.search(options)
    return match.group(1) if match else options


@dataclass(frozen=True)
class PlanFacts:
    """What a streaming query's plan says, as far as the "why no output?" rules need.

    ``has_aggregation`` means a streaming (stateful) aggregation: an aggregate on a
    stream-static join's static side is none.

    Examples
    --------
    >>> facts = PlanFacts.from_plan_text(
    ...     "'Aggregate ['window('timestamp, 10 minutes, 5 minutes)], [count(1)]\\n"
    ...     "+- ~EventTimeWatermark 1e47e321-4793-4e33-a037-8a197a8b17cb, timestamp#0: timestamp, 10 seconds")
    >>> facts.has_aggregation, facts.watermark_delay, facts.window_duration, facts.window_slide
    (True, datetime.timedelta(seconds=10), datetime.timedelta(seconds=600), datetime.timedelta(seconds=300))
    >>> PlanFacts.from_plan_text("'Aggregate ['session_window('ts, 5 minutes), 'user]").session_gap
    datetime.timedelta(seconds=300)
    """

    has_aggregation: bool = False
    has_watermark: bool = False
    watermark_column: str | None = None
    watermark_delay: timedelta | None = None
    window_column: str | None = None
    window_duration: timedelta | None = None
    window_slide: timedelta | None = None
    window_offset: timedelta = timedelta(0)
    has_session_window: bool = False
    session_gap: timedelta | None = None
    #: How many ``withWatermark`` calls the query has (a stream-stream join has one per side).
    watermarks: int = 0
    #: The folders of the ``workbench.testing.MemoryStream`` inputs the query reads, in plan order.
    memory_folders: tuple[str, ...] = ()

    @classmethod
    def from_plan_text(cls, text: str) -> PlanFacts:
        """Read the facts from a plan's text (parsed and/or analysed logical plan)."""
        facts = cls(has_aggregation=_streaming_aggregation(text),
                    memory_folders=tuple(dict.fromkeys(_memory_folder(options) for options in _MEMORY_INPUT.findall(text))))
        match = _WATERMARK.search(text)
        if match:
            delay = parse_interval(match.group(2).split(",")[0])
            facts = replace(facts, has_watermark=True, watermark_column=match.group(1).strip("`"),
                            watermark_delay=delay)
        elif "EventTimeWatermark" in text:
            facts = replace(facts, has_watermark=True)
        if facts.has_watermark:
            # Parsed and analysed plans name the same nodes: count distinct ids.
            ids = set(re.findall(r"EventTimeWatermark\s+([0-9a-f-]{36})", text))
            facts = replace(facts, watermarks=max(len(ids), 1))
        match = _WINDOW_CALL.search(text)
        if match:
            values = [parse_interval(part) for part in match.group(2).split(",")[1:]]
            if values and all(v is not None for v in values):
                duration = values[0]
                slide = values[1] if len(values) > 1 else duration
                offset = values[2] if len(values) > 2 else timedelta(0)
                facts = replace(facts, window_column=match.group(1), window_duration=duration,
                                window_slide=slide, window_offset=offset)
        match = _SESSION_CALL.search(text)
        if match:
            gap = _SESSION_GAP.match(text, match.end())
            facts = replace(facts, has_session_window=True, window_column=match.group(1),
                            session_gap=parse_interval(gap.group(1)) if gap else None)
        return facts


def earliest_window_end(event_time: datetime, duration: timedelta, slide: timedelta | None = None,
                        offset: timedelta = timedelta(0)) -> datetime:
    """End of the earliest window holding ``event_time`` (windows are ``[start, end)``).

    Examples
    --------
    >>> t = datetime(2024, 1, 1, 12, 7, tzinfo=timezone.utc)
    >>> earliest_window_end(t, timedelta(minutes=10)).time()
    datetime.time(12, 10)
    >>> earliest_window_end(t, timedelta(minutes=10), timedelta(minutes=5)).time()
    datetime.time(12, 10)
    >>> earliest_window_end(t, timedelta(minutes=10), timedelta(minutes=5), timedelta(minutes=1)).time()
    datetime.time(12, 11)
    """
    slide = slide or duration
    # Window ends fall on offset + duration + k * slide; the earliest one after event_time
    # closes the earliest window that holds it.
    anchor = EPOCH + offset + duration
    steps = (event_time - anchor) // slide + 1
    return anchor + steps * slide


@dataclass(frozen=True)
class OutputSummary:
    """What the whole progress history says about output, folded batch by batch.

    Examples
    --------
    >>> batch = lambda i, rows, out: BatchProgress.from_json({"batchId": i, "numInputRows": rows,
    ...     "durationMs": {"addBatch": 1}, "sink": {"numOutputRows": out}})
    >>> summary = OutputSummary().add([batch(0, 5, 0), batch(1, 0, 0)])
    >>> summary.batches, summary.input_rows, summary.output_rows, summary.quiet_batches
    (2, 5, 0, 1)
    >>> OutputSummary().add([batch(0, 5, -1)]).output_known  # foreachBatch and files cannot count
    False
    """

    batches: int = 0
    input_rows: int = 0
    output_rows: int = 0
    #: False once a batch's sink could not count its rows (Spark reports -1: foreachBatch, files).
    output_known: bool = True
    #: Newest batches in a row that read no input rows.
    quiet_batches: int = 0
    stateful: bool = False
    #: A streaming aggregation's operator ran (a join or ``dropDuplicates`` is stateful but no aggregation).
    aggregating: bool = False
    watermark_seen: bool = False
    watermark: datetime | None = None
    #: The earliest event time a batch kept: its ``eventTime.min``, but no earlier than its watermark,
    #: since ``eventTime.min`` also counts the rows dropped as late.
    earliest_event_time: datetime | None = None
    latest_event_time: datetime | None = None
    #: A transformWithState processor, and the timers it registered and removed so far.
    processor: bool = False
    timers_registered: int = 0
    timers_deleted: int = 0

    def add(self, records: Iterable[BatchProgress]) -> OutputSummary:
        """A summary that also covers ``records`` (newer batches, in order)."""
        values = dict(self.__dict__)
        for r in records:
            values["batches"] += 1
            values["input_rows"] += r.num_input_rows
            values["output_rows"] += r.num_output_rows or 0
            values["output_known"] = values["output_known"] and r.num_output_rows is not None
            values["quiet_batches"] = values["quiet_batches"] + 1 if r.num_input_rows == 0 else 0
            values["stateful"] = values["stateful"] or bool(r.operators)
            values["aggregating"] = values["aggregating"] or any(
                op.operator_name in AGGREGATION_OPERATORS for op in r.operators)
            values["processor"] = values["processor"] or any(op.operator_name in TWS_OPERATORS for op in r.operators)
            values["timers_registered"] += r.timers_registered
            values["timers_deleted"] += r.timers_deleted
            if r.watermark is not None:
                values["watermark_seen"] = True
                values["watermark"] = r.watermark
            if r.event_time_min is not None:
                kept = r.event_time_min if r.watermark is None else max(r.event_time_min, r.watermark)
                earliest = values["earliest_event_time"]
                values["earliest_event_time"] = kept if earliest is None else min(earliest, kept)
            if r.event_time_max is not None:
                latest = values["latest_event_time"]
                values["latest_event_time"] = r.event_time_max if latest is None else max(latest, r.event_time_max)
        return OutputSummary(**values)


@dataclass(frozen=True)
class HeldTimers:
    """The timers a transformWithState processor holds after one batch, as "why no output?" names them.

    Examples
    --------
    >>> t = datetime(2024, 1, 1, 10, 32, tzinfo=timezone.utc)
    >>> held = HeldTimers(2, "event time", "bob", t, t - timedelta(minutes=11))
    >>> held.count, held.earliest_key
    (2, 'bob')
    """

    #: How many timers are registered.
    count: int
    #: ``"event time"``, ``"processing time"`` or ``"none"``.
    time_mode: str
    #: The grouping key of the timer that expires first (its values, as text), and its expiry.
    earliest_key: str | None = None
    earliest_at: datetime | None = None
    #: The watermark of the batch the timers were read after (event time only).
    watermark: datetime | None = None


def format_time(value: datetime) -> str:
    """A readable UTC time, with milliseconds only when there are some.

    Examples
    --------
    >>> format_time(datetime(2024, 1, 1, 12, 7, tzinfo=timezone.utc))
    '2024-01-01 12:07:00 UTC'
    >>> format_time(datetime(2024, 1, 1, 12, 7, 0, 250000, tzinfo=timezone.utc))
    '2024-01-01 12:07:00.250 UTC'
    """
    value = value.astimezone(timezone.utc)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + " UTC"


def format_duration(value: timedelta) -> str:
    """A readable duration: ``1 h 5 min``, ``46 min 43 s``, ``11 s``, ``250 ms``.

    Examples
    --------
    >>> format_duration(timedelta(minutes=46, seconds=43)), format_duration(timedelta(milliseconds=250))
    ('46 min 43 s', '250 ms')
    >>> format_duration(timedelta(days=2, hours=3))
    '2 d 3 h'
    """
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    if value < timedelta(seconds=1):
        return f"{sign}{value // timedelta(milliseconds=1)} ms"
    seconds = int(value.total_seconds())
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "min"),
             (seconds % 60, "s")]
    shown = [f"{n} {unit}" for n, unit in parts if n][:2]
    return sign + " ".join(shown)


def held_back_by(inputs: Sequence[InputWatermark], policy: str = "min") -> str | None:
    """Which input holds the global watermark back, in plain words; None when none does.

    Under Spark's default ``min`` policy the global watermark is the lowest of the
    inputs' watermarks, so one quiet or slow input stops it for the whole query.

    Parameters
    ----------
    inputs : sequence of InputWatermark
        Each input after the latest batch (one row per input, as from
        ``InputWatermarkTracker.add``).
    policy : {"min", "max"}
        Spark's ``multipleWatermarkPolicy``; under ``max`` no input holds the others back.

    Examples
    --------
    >>> from workbench.progress.input_watermarks import InputWatermark
    >>> t = lambda hm: datetime.fromisoformat(f"2024-01-01T{hm}:00+00:00")
    >>> rows = [InputWatermark(20, "clicks", t("10:06"), timedelta(minutes=2), t("10:04"), 0, 12, t("10:04")),
    ...         InputWatermark(20, "views", t("10:30"), timedelta(minutes=5), t("10:25"), 4, 0, t("10:04"))]
    >>> print(held_back_by(rows))
    Input `clicks` has had no rows for 12 batches; its watermark stays at 2024-01-01 10:04:00 UTC and holds the global watermark back (the lowest input watermark wins; input `views` is at 2024-01-01 10:25:00 UTC).
    >>> held_back_by(rows, policy="max") is None
    True
    """
    if policy != "min" or len(inputs) < 2:
        return None
    lowest = min(inputs, key=lambda r: r.watermark)
    ahead = max(inputs, key=lambda r: r.watermark)
    if ahead.watermark <= lowest.watermark:
        return None
    name = f"Input `{lowest.input}`"
    shown = format_time(lowest.watermark) if lowest.watermark > EPOCH else "epoch 0 (not set)"
    if lowest.max_event_time is None:
        why = f"{name} has had no rows yet, so its watermark stays at epoch 0"
    elif lowest.quiet_batches > 0:
        batches = "batch" if lowest.quiet_batches == 1 else "batches"
        why = f"{name} has had no rows for {lowest.quiet_batches} {batches}; its watermark stays at {shown}"
    else:
        why = (f"{name} is behind: its latest event time ({format_time(lowest.max_event_time)}) minus its "
               f"{format_duration(lowest.delay)} delay puts its watermark at {shown}")
    return (f"{why} and holds the global watermark back (the lowest input watermark wins; input "
            f"`{ahead.input}` is at {format_time(ahead.watermark)}).")


def why_no_output(
    summary: OutputSummary,
    *,
    output_mode: str | None,
    plan: PlanFacts | None = None,
    elapsed: timedelta | None = None,
    min_batches: int = 3,
    quiet_time: timedelta = timedelta(seconds=10),
    inputs: Sequence[InputWatermark] | None = None,
    policy: str = "min",
    timers: Callable[[], HeldTimers | None] | None = None,
    batch_running: Callable[[], bool] | None = None,
) -> str | None:
    """Why an append-mode stream has emitted nothing yet, in plain words; None if no reason applies.

    Parameters
    ----------
    summary : OutputSummary
        The stream's whole history, folded.
    output_mode : str or None
        The query's output mode (None means Spark's default, append). Other modes emit
        updated rows as they come, so no reason is given for them.
    plan : PlanFacts, optional
        Facts from the query plan; without them the rules fall back to what progress
        shows (stateful operators, reported watermark) and cannot name the window end.
    elapsed : timedelta, optional
        Time since the stream started: judges a source that has run no batch at all.
    min_batches : int, default 3
        Batches to wait before judging ("after a few batches").
    quiet_time : timedelta, default 10 s
        Time to wait for a first batch before saying that no input arrives.
    inputs : sequence of InputWatermark, optional
        Each watermarked input after the latest batch (streams started with
        ``input_watermarks=True``): names the input that holds the watermark back.
    policy : {"min", "max"}, default "min"
        Spark's ``multipleWatermarkPolicy``.
    timers : callable, optional
        Returns the timers a transformWithState processor holds now (None when they cannot
        be read); called only when the processor rule applies, since reading them is a
        state-store read.
    batch_running : callable, optional
        Whether Spark's query status says a micro-batch with data is running; called only
        when no batch has finished ``quiet_time`` after the start, to tell a slow first
        batch from a source without data.

    A sink that cannot count its rows (foreachBatch, files) gets no reason that rests on
    "nothing was output". With several watermarked inputs, progress's event times are one
    input's, so no window end is computed from them. Progress reports the watermark a batch
    ran with; a window that the last batch's event times closed is output by the next batch.

    Examples
    --------
    >>> batch = lambda i: BatchProgress.from_json({"batchId": i, "numInputRows": 0,
    ...     "durationMs": {"addBatch": 1}, "sink": {"numOutputRows": 0}})
    >>> summary = OutputSummary().add(batch(i) for i in range(3))
    >>> why_no_output(summary, output_mode="append")
    'No input rows arrive: 3 micro-batches have read 0 rows from the source, so there is nothing to output.'
    >>> why_no_output(summary, output_mode="update") is None
    True
    """
    silent = summary.output_known and summary.output_rows == 0
    if summary.processor and silent and summary.batches >= min_batches and summary.input_rows:
        return _processor_reason(summary, timers() if timers is not None else None)
    if (output_mode or "append") != "append" or summary.output_rows > 0:
        return None
    if summary.batches == 0:
        if elapsed is None or elapsed < quiet_time:
            return None
        if batch_running is not None and batch_running():
            return (f"The first micro-batch is still running: Spark's query status says it has data, and no batch "
                    f"has finished in the {format_duration(elapsed)} since the stream started.")
        return (f"No input rows arrive: no micro-batch has run in the {format_duration(elapsed)} "
                "since the stream started, because the source has no new data.")
    if summary.batches < min_batches:
        return None
    if summary.input_rows == 0:
        return (f"No input rows arrive: {summary.batches} micro-batches have read 0 rows from the "
                "source, so there is nothing to output.")
    if not silent:
        return None
    held = held_back_by(inputs, policy) if inputs else None
    if not (plan.has_aggregation if plan is not None else summary.aggregating):
        if held is None:
            return None
        return (f"{held} Output that waits for the watermark (outer-join rows without a match, windows after the "
                "join) waits for this input.")
    if not (summary.watermark_seen or (plan is not None and plan.has_watermark)):
        return ("No watermark is defined for this aggregation: in append mode Spark outputs an "
                "aggregate only once the watermark has passed it, so nothing will ever be output. "
                "Add .withWatermark(\"<event-time column>\", \"<delay>\") before the aggregation, "
                "or use update or complete mode.")
    watermark, latest = summary.watermark, summary.latest_event_time
    if watermark is None or latest is None or summary.earliest_event_time is None:
        return None
    shown_watermark = "not set yet (epoch 0)" if watermark <= EPOCH else format_time(watermark)
    several = plan is not None and plan.watermarks > 1  # progress's event times are then one input's
    trail = (f" The watermark trails the latest event time ({format_time(latest)}) by "
             f"{format_duration(latest - watermark)}" if watermark > EPOCH and not several else "")
    delay = plan.watermark_delay if plan is not None else None
    if trail:
        trail += f" (watermark delay {format_duration(delay)})." if delay is not None else "."
    if several:
        trail = (f" The query has {plan.watermarks} watermarked inputs and progress reports the event times of one "
                 "of them only, so which window closes first cannot be told from progress.")
    elif plan is not None and (plan.window_duration is not None or plan.session_gap is not None):
        if plan.window_duration is not None:
            end = earliest_window_end(summary.earliest_event_time, plan.window_duration,
                                      plan.window_slide, plan.window_offset)
            what, when, short = "window", f"({format_time(end)})", ""
        else:  # a session ends one gap after its last event, so no earlier than this
            end = summary.earliest_event_time + plan.session_gap
            what, short = "session", "at least "
            when = (f"(at {format_time(end)} or later: its last event plus the "
                    f"{format_duration(plan.session_gap)} gap)")
        if watermark >= end:
            return None  # it has passed: the window or session is output with the next batch
        moved = latest - delay if delay is not None and not held else watermark
        if what == "window" and moved >= end:
            ran = "not set yet" if watermark <= EPOCH else f"at {format_time(watermark)}"
            return (f"The next micro-batch outputs the earliest open window {when}: the last batch ran with the "
                    f"watermark {ran} and moved it to {format_time(moved)} (latest event time {format_time(latest)} "
                    f"minus the {format_duration(delay)} delay), past the window's end. Spark runs that batch without "
                    "new rows only while the query keeps running (a processing-time trigger); trigger once, and "
                    "availableNow on a Python data source such as workbench.testing.MemoryStream, end before it.")
        earliest = "earliest open window" if what == "window" else "earliest session"
        # Against an unset (epoch 0) watermark a shortfall is decades long and says nothing.
        gap = (f"; it is {short}{format_duration(end - watermark)} short" if watermark > EPOCH
               else "; the watermark starts once a batch with event times has run")
        return (f"The watermark ({shown_watermark}) has not yet passed the end of the {earliest} {when}"
                f"{gap}. In append mode a {what} is output only once the watermark passes its end.{trail}"
                + (f" {held}" if held else ""))
    return (f"The watermark ({shown_watermark}) has not yet passed the end of any aggregate: in "
            f"append mode an aggregate is output only once the watermark passes it.{trail}"
            + (f" {held}" if held else ""))


def _processor_reason(summary: OutputSummary, held: HeldTimers | None = None) -> str:
    """Why a transformWithState processor has output nothing (in any output mode).

    ``held`` (the timers read from the state store, when the caller could) names the
    earliest timer and how far it is ahead of the watermark; without it the reason rests
    on progress's timer counts.

    Examples
    --------
    >>> op = lambda registered: {"operatorName": "transformWithStateInPandasExec",
    ...                          "customMetrics": {"numRegisteredTimers": registered}}
    >>> batch = lambda i, registered: BatchProgress.from_json({"batchId": i, "numInputRows": 4,
    ...     "stateOperators": [op(registered)], "sink": {"numOutputRows": 0},
    ...     "eventTime": {"watermark": "2024-01-01T12:00:00.000Z"}})
    >>> why_no_output(OutputSummary().add(batch(i, 0) for i in range(3)), output_mode="update")[:59]
    'The transformWithState processor has output nothing and reg'
    >>> waiting = OutputSummary().add(batch(i, 1) for i in range(3))
    >>> why_no_output(waiting, output_mode="update")[:48]
    'The transformWithState processor has 3 timers wa'
    >>> t = datetime(2024, 1, 1, 12, 11, tzinfo=timezone.utc)
    >>> print(why_no_output(waiting, output_mode="update",
    ...                     timers=lambda: HeldTimers(3, "event time", "bob", t, t - timedelta(minutes=11))))
    The transformWithState processor has 3 timers waiting and none has fired: an event-time timer fires in the first batch whose watermark reaches its expiry. Earliest timer: key bob at 2024-01-01 12:11:00 UTC, 11 min ahead of the watermark (2024-01-01 12:00:00 UTC). handle.timers() lists each timer and the batch that fires it.
    """
    if held is not None and held.count == 0:
        registered = "no timer is registered now" if summary.timers_registered else "no timer is registered yet"
        return (f"The transformWithState processor has output nothing and {registered}: it outputs only the rows "
                "handleInputRows returns, or handleExpiredTimer once a timer fires.")
    if held is None and summary.timers_registered == 0:
        return ("The transformWithState processor has output nothing and registered no timer yet: it outputs only "
                "the rows handleInputRows returns, or handleExpiredTimer once a timer fires.")
    waiting = held.count if held is not None else summary.timers_registered - summary.timers_deleted
    timers_waiting = f"{waiting} timer{'s' if waiting != 1 else ''} waiting"
    head = f"The transformWithState processor has {timers_waiting} and none has fired"
    if held is not None and held.time_mode == "processing time" and held.earliest_at is not None:
        return (f"{head}: a processing-time timer fires in the first batch that runs at or after its expiry. "
                f"Earliest timer: key {held.earliest_key} at {format_time(held.earliest_at)}. "
                "handle.timers() lists each timer.")
    watermark = held.watermark if held is not None else summary.watermark
    rule = "an event-time timer fires in the first batch whose watermark reaches its expiry"
    if held is not None and held.earliest_at is not None:
        if watermark is None or watermark <= EPOCH:
            ahead = "the watermark is not set yet"
        elif held.earliest_at > watermark:
            ahead = f"{format_duration(held.earliest_at - watermark)} ahead of the watermark ({format_time(watermark)})"
        else:
            ahead = f"already reached by the watermark ({format_time(watermark)}): the next batch fires it"
        return (f"{head}: {rule}. Earliest timer: key {held.earliest_key} at {format_time(held.earliest_at)}, "
                f"{ahead}. handle.timers() lists each timer and the batch that fires it.")
    at = (f"the watermark is at {format_time(watermark)}" if watermark is not None and watermark > EPOCH
          else "the watermark is not set yet")
    return (f"{head}: {rule}, and {at}. "
            "handle.timers() shows each timer's expiry and how far ahead of the watermark it is.")
