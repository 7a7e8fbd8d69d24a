"""Readable errors: Spark's long messages reduced to the line a user needs.

Spark wraps a failure in layers (error class, query ids, offsets, the logical plan, and
for a Python UDF the worker's traceback). :func:`summarize_error` finds the essential
line; the full text always stays available as ``details``.
"""

from __future__ import annotations

import logging
import re
from types import CodeType

__all__ = [
    "summarize_error", "error_line", "WorkbenchError", "StreamStartError", "StreamStopError", "query_failed",
    "ReplayError", "replay_failed", "REFUSAL_HINTS", "refusal_hint", "refusal_line", "InterruptionNoiseFilter",
    "CheckpointWarning", "CallbackFailureFilter",
]

#: A Python exception's line: ``ValueError: message``, or its name alone (a bare ``assert``'s
#: ``AssertionError``), never a word such as ``Error`` on its own.
_PY_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))(?:: ?(.*))?$")
#: An exception named otherwise, by its module's path (``pyarrow.lib.ArrowInvalid: ...``).
_PY_OTHER_ERROR_LINE = re.compile(r"^((?:[a-z_]\w*\.)+[A-Z]\w*): ?(.*)$")
_ERROR_CLASS = re.compile(r"^\s*\[[A-Z0-9_.]+\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: [0-9A-Z]{5}\.?")
_WRAPPER = re.compile(r"^.*?terminated with exception:\s*", re.IGNORECASE | re.DOTALL)
#: Py4J's wrapper of a Java exception: "An error occurred while calling o1.load.\n: org.x.SomeException: message".
JAVA_CALL = re.compile(r"^An error occurred while calling [\w.]+\.\s*\n?:?\s*(?:([\w.$]+?)(?::\s|$))?",
                       re.DOTALL | re.MULTILINE)


def summarize_error(text: str) -> str:
    """Reduce a Spark or Python error message to one readable line.

    A Python traceback inside the message (a failing UDF or foreachBatch function) wins:
    its last ``SomeError: message`` line is the user's own error. Otherwise the first line
    is kept without Spark's ``[ERROR_CLASS]`` prefix and ``SQLSTATE`` codes.

    Parameters
    ----------
    text : str
        The full message, e.g. ``str(exception)``.

    Returns
    -------
    str
        One line.

    Examples
    --------
    >>> summarize_error("[STREAM_FAILED] Query [id = 1] terminated with exception: "
    ...     "[PYTHON_EXCEPTION] Traceback (most recent call last):\\n  File 'x', line 1\\n"
    ...     "ValueError: value 7 is too big\\n SQLSTATE: 38000\\n=== Streaming Query ===")
    'ValueError: value 7 is too big'
    >>> summarize_error("[FOREACH_BATCH_USER_FUNCTION_ERROR] ... Traceback (most recent call last):\\n"
    ...     "  File 'x', line 1\\npyarrow.lib.ArrowInvalid: Could not convert 'dog' with type str\\n")
    "ArrowInvalid: Could not convert 'dog' with type str"
    >>> summarize_error("[FOREACH_BATCH_USER_FUNCTION_ERROR] ... Traceback (most recent call last):\\n"
    ...     "py4j.protocol.Py4JJavaError: An error occurred while calling o123.save.\\n"
    ...     ": java.io.IOException: disk full\\n\\tat org.a")
    'IOException: disk full'
    >>> summarize_error("[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming "
    ...     "output mode: append. SQLSTATE: 42KDE")
    'Invalid streaming output mode: append.'
    >>> summarize_error("An error occurred while calling o459.start.\\n: org.apache.hadoop.fs."
    ...     "FileAlreadyExistsException: Destination exists and is not a directory: /tmp/x\\n\\tat org.a")
    'FileAlreadyExistsException: Destination exists and is not a directory: /tmp/x'
    """
    text = str(text or "").strip()
    java = JAVA_CALL.match(text)
    if java:  # the Java exception's own line, named, instead of Py4J's "while calling o459.start"
        name, rest = (java.group(1) or "").rsplit(".", 1)[-1], text[java.end():].strip()
        line = summarize_error(rest) if rest else ""
        return f"{name}: {line}" if name and line else (line or name or text.splitlines()[0])
    if "Traceback (most recent call last)" in text:
        tail = text.rsplit("Traceback (most recent call last)", 1)[1]
        lines = [line.strip() for line in tail.splitlines()]
        for match in [*map(_PY_ERROR_LINE.match, lines), *map(_PY_OTHER_ERROR_LINE.match, lines)]:
            if match:
                name = match.group(1).rsplit(".", 1)[-1]
                message = _SQLSTATE.sub("", match.group(2) or "").strip()
                if message.startswith("An error occurred while calling"):  # a Py4JJavaError: the Java one's line
                    return summarize_error(tail[tail.index(message):])
                return f"{name}: {message}" if message else name
    first_line = text.splitlines()[0] if text else ""
    if "terminated with exception:" in first_line:
        text = _WRAPPER.sub("", text, count=1)
    for line in text.splitlines():
        line = _SQLSTATE.sub("", _ERROR_CLASS.sub("", line)).strip()
        if line:
            return line
    return "unknown error"


def error_line(exc: BaseException) -> str:
    """An exception as the one line a widget shows: :func:`summarize_error` of its message, or its name.

    Examples
    --------
    >>> error_line(ValueError("[STREAM_FAILED] stream 'x' could not be stopped\\n=== plan ==="))
    "stream 'x' could not be stopped"
    >>> error_line(TimeoutError())
    'TimeoutError'
    """
    text = str(exc).strip()
    return summarize_error(text) if text else type(exc).__name__


class WorkbenchError(Exception):
    """An error with a one-line message and the full text one attribute away.

    Parameters
    ----------
    message : str
        The one line shown to the user.
    details : str, optional
        The full original text (e.g. Spark's message with the plan).

    Examples
    --------
    >>> err = WorkbenchError("it broke", details="it broke\\nbecause of many things")
    >>> str(err), err.details.splitlines()[1]
    ('it broke', 'because of many things')
    """

    def __init__(self, message: str, details: str | None = None) -> None:
        super().__init__(message)
        self.details = details if details is not None else message


class StreamStartError(WorkbenchError, ValueError):
    """Spark refused to start a query (analysis error, unsupported output mode, ...)."""


class StreamStopError(WorkbenchError, RuntimeError):
    """Spark could not stop a query and it still runs (or its state cannot be read).

    The stream stays active, its history goes on, and a later ``stop()`` tries again.
    Shown as its one line in a notebook; Spark's full text is in :attr:`details`.

    Examples
    --------
    >>> error = StreamStopError("stream 'x' could not be stopped: TimeoutException: ...", details="...")
    >>> error._render_traceback_()
    ["StreamStopError: stream 'x' could not be stopped: TimeoutException: ..."]
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class CheckpointWarning(UserWarning):
    """Checkpoints are kept on this machine while Spark runs elsewhere (a cluster, a Spark Connect server).

    Warned once, at the first query started there without a checkpoint or a checkpoint root;
    ``workbench.CheckpointWarning`` too.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", CheckpointWarning)  # or warnings.filterwarnings, for good
    """


class ReplayError(RuntimeError):
    """A replay control cannot do what was asked (run failed, closed, timed out)."""


def replay_failed(name: str, error: str | None) -> str:
    """The one-line message for stepping or playing a failed replay run.

    >>> replay_failed("words", "ValueError: bad row.")
    "replay 'words' failed: ValueError: bad row. Call reset() to start over."
    """
    return f"replay {name!r} failed: {(error or 'unknown error').rstrip('. ')}. Call reset() to start over."


QUERY_FAILED = "the query function failed on the replay source: "


def query_failed(exc: Exception) -> Exception:
    """The error to raise when a replay's query function failed on the replay's input.

    The user's own Python error keeps its type, its message led by what failed; Spark's
    (an analysis error: a misspelt column, a slide longer than its window) becomes a
    :class:`StreamStartError` with Spark's essential line, the whole text in ``details``
    (pyspark's exceptions cannot be rebuilt from a message).

    Examples
    --------
    >>> query_failed(KeyError("word"))
    StreamStartError("the query function failed on the replay source: KeyError: 'word'")
    >>> query_failed(ValueError("no such key"))
    ValueError('the query function failed on the replay source: no such key')
    """
    if not type(exc).__module__.startswith(("pyspark", "py4j")):
        try:
            rebuilt = type(exc)(QUERY_FAILED + str(exc))
        except Exception:
            rebuilt = None
        if rebuilt is not None and str(rebuilt) == QUERY_FAILED + str(exc):
            return rebuilt
    details = f"{type(exc).__name__}: {exc}"
    return StreamStartError(QUERY_FAILED + summarize_error(details), details)


#: Spark's most common streaming refusals (a fragment of its message, lower case) and what to do.
REFUSAL_HINTS: tuple[tuple[str, str], ...] = (
    ("not supported for streaming aggregations without watermark",
     "add .withWatermark(\"<event time column>\", \"10 minutes\") before the aggregation and group by a "
     "window of that column, or use update or complete mode"),
    ("not supported for no streaming aggregations",
     "complete mode re-outputs the whole result table, so it needs an aggregation: use append or update"),
    ("sorting is not supported on streaming",
     "sort only after an aggregation in complete mode, or sort each batch inside foreachBatch"),
    ("multiple streaming aggregations are not supported",
     "one aggregation per query in append mode: chain two queries, or aggregate each batch in foreachBatch"),
    ("distinct aggregations are not supported",
     "use approx_count_distinct, or dropDuplicates before counting"),
    ("must be executed with writestream.start()",
     "a streaming DataFrame cannot be shown or collected: start it (%%stream NAME) and read its result"),
    ("limit is not supported",
     "limit works only in complete mode after an aggregation; look at a few rows of the result instead"),
    ("join between two streaming dataframe/datasets is not supported without a watermark",
     "outer stream-stream joins need a watermark on both inputs and a time-range condition in the join"),
    ("non-time-based windows are not supported",
     "on streams, windows must be over an event-time column: window(\"timestamp\", \"10 minutes\")"),
    ("cannot start query with name",
     "a query with that name is already running: stop it first, or choose another name"),
)

# `EventTimeWatermark <id>, timestamp#12: timestamp, 10 minutes` in a logical plan.
_WATERMARK = re.compile(r"EventTimeWatermark [^,]+, (\w+)#(\d+): [^,]+, ([^\n]+)")
# A window over an already resolved column (`'window(timestamp#12, ...)`): one taken from
# a DataFrame before withWatermark; a named column stays unresolved (`'window('timestamp, ...)`).
_RESOLVED_WINDOW = re.compile(r"'?(window|session_window)\((\w+)#(\d+)\b")


def refusal_hint(details: str, plan: str | None = None) -> str | None:
    """What to do about Spark's refusal of a streaming query, or None when nothing is known.

    When Spark says "without watermark" although the plan has one, the grouping refers to
    the event-time column as it was *before* ``withWatermark`` (``words.timestamp``), which
    carries no watermark; the hint names both references and the fix.

    Parameters
    ----------
    details : str
        Spark's message.
    plan : str, optional
        The query's parsed and analysed logical plans (``workbench.spark.plan.plan_text``).

    Examples
    --------
    >>> refusal_hint("Invalid streaming output mode: complete. This output mode is not supported "
    ...              "for no streaming aggregations")
    'complete mode re-outputs the whole result table, so it needs an aggregation: use append or update'
    >>> plan = ("'Aggregate ['window(timestamp#0, 10 minutes, 5 minutes, 0 second), word#2]\\n"
    ...         "+- ~EventTimeWatermark b1ef, timestamp#0: timestamp, 10 minutes")
    >>> print(refusal_hint("... not supported for streaming aggregations without watermark ...", plan))
    the query has a watermark on `timestamp` (withWatermark, 10 minutes), but window(timestamp#0) groups by the column from before withWatermark (e.g. `words.timestamp`), which has none: name the column instead, window("timestamp", ...)
    """
    text = str(details or "").lower()
    if "without watermark" in text and plan:
        marked = _WATERMARK.search(plan)
        if marked is not None:
            column, delay = marked.group(1), marked.group(3).strip()
            for match in _RESOLVED_WINDOW.finditer(plan):
                function, name, number = match.groups()
                if name == column:
                    return (
                        f"the query has a watermark on `{column}` (withWatermark, {delay}), but "
                        f"{function}({name}#{number}) groups by the column from before withWatermark "
                        f"(e.g. `words.{column}`), which has none: name the column instead, "
                        f"{function}(\"{column}\", ...)"
                    )
    for fragment, hint in REFUSAL_HINTS:
        if fragment in text:
            return hint
    return None


def refusal_line(details: str, plan: str | None = None) -> str:
    """Spark's refusal as one line, with the hint from :func:`refusal_hint` when there is one.

    Examples
    --------
    >>> refusal_line("[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: "
    ...              "complete. This output mode is not supported for no streaming aggregations SQLSTATE: 42KDE")
    'Invalid streaming output mode: complete. This output mode is not supported for no streaming aggregations (hint: complete mode re-outputs the whole result table, so it needs an aggregation: use append or update)'
    """
    line = summarize_error(details)
    hint = refusal_hint(details, plan)
    return f"{line} (hint: {hint})" if hint else line


# The JVM's report of an uncaught error in a query's thread: `Exception in thread "stream
# execution thread for <name> [id = ..., runId = ...]" java.lang.StackOverflowError`, then
# up to 1,024 `\tat java.util.regex...` frames. It appears when a foreachBatch query is
# stopped while its Python function runs (the stop interrupts the py4j call); the query is
# stopped as asked and the batch replays on restart, so the wall carries nothing to act on.
_NOISE_HEADER = re.compile(
    r'^Exception in thread "stream execution thread for [^"]*" java\.lang\.StackOverflowError\s*$'
)
_HEADER_START = 'Exception in thread "stream execution thread for '
_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


class InterruptionNoiseFilter:
    """Drops the JVM's StackOverflowError wall printed when a foreachBatch stream is stopped mid-batch.

    Feed it text as it arrives (any chunking); it returns the text to pass on. Only that one
    report (its header line and the stack frames under it) is dropped: every other line,
    including other JVM errors, passes unchanged. A line is held back only while it may
    still become that header.

    Examples
    --------
    >>> noise = InterruptionNoiseFilter()
    >>> text = ('Exception in thread "stream execution thread for q [id = 1, runId = 2]" '
    ...         'java.lang.StackOverflowError\\n'
    ...         '\\tat java.base/java.util.regex.Pattern$Loop.match(Pattern.java:4898)\\n' * 1)
    >>> noise.feed(text[:30]) + noise.feed(text[30:] + "\\tat x.y(Z.java:1)\\nreal error\\n")
    'real error\\n'
    >>> noise.dropped
    1
    """

    def __init__(self) -> None:
        self._pending = ""
        self._inside = False
        #: How many walls were dropped.
        self.dropped = 0

    def feed(self, text: str) -> str:
        """The part of ``text`` (after anything held back) to pass on now."""
        text = self._pending + text
        self._pending = ""
        out: list[str] = []
        for line in text.splitlines(keepends=True):
            complete = line.endswith("\n")
            if not complete:
                could_be_header = _HEADER_START.startswith(line) or line.startswith(_HEADER_START)
                if self._inside or could_be_header:
                    self._pending = line  # decide once the line is whole
                    continue
                out.append(line)
                continue
            if self._inside and _FRAME.match(line):
                continue
            self._inside = False
            if _NOISE_HEADER.match(line.rstrip("\n")):
                self._inside = True
                self.dropped += 1
                continue
            out.append(line)
        return "".join(out)


class CallbackFailureFilter(logging.Filter):
    """Drops py4j's log record of a Python callback's failure when it failed in one of ``functions``.

    py4j logs "There was an exception while executing the Python Proxy" with the callback's
    whole traceback whenever a callback raises, e.g. a ``foreachBatch`` function whose batch
    failed (a UDF's error). The caller reports that failure itself, in one line, and keeps
    the full text as ``details``: in a test's log the traceback through the caller's function
    would make the user's error look like the caller's. Every other record passes.

    Examples
    --------
    >>> def save(): raise ValueError("bad")
    >>> quiet = CallbackFailureFilter(save)
    >>> try:
    ...     save()
    ... except ValueError:
    ...     import sys
    ...     record = logging.LogRecord("py4j.clientserver", logging.ERROR, "", 0, quiet.MESSAGE, None, sys.exc_info())
    >>> quiet.filter(record), quiet.filter(logging.LogRecord("py4j", logging.ERROR, "", 0, "other", None, None))
    (False, True)
    """

    MESSAGE = "There was an exception while executing the Python Proxy on the Python Side."

    def __init__(self, *functions: object) -> None:
        super().__init__()
        self.codes: set[CodeType] = {getattr(f, "__code__") for f in functions}

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or record.exc_info[2] is None or record.getMessage() != self.MESSAGE:
            return True
        frame = record.exc_info[2]
        while frame is not None:
            if frame.tb_frame.f_code in self.codes:
                return False
            frame = frame.tb_next
        return True
