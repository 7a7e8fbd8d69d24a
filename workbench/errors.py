"""Readable errors: Spark's long messages reduced to the line a user needs.

Spark wraps a failure in layers (error class, query ids, offsets, the logical plan, and
for a Python UDF the worker's traceback). :func:`summarize_error` finds the essential
line; the full text always stays available as ``details``.
"""

from __future__ import annotations

import re

__all__ = ["summarize_error", "WorkbenchError", "StreamStartError"]

_PY_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)): ?(.*)$")
_ERROR_CLASS = re.compile(r"^\s*\[[A-Z0-9_.]+\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: [0-9A-Z]{5}\.?")
_WRAPPER = re.compile(r"^.*?terminated with exception:\s*", re.IGNORECASE | re.DOTALL)


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
    >>> summarize_error("[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming "
    ...     "output mode: append. SQLSTATE: 42KDE")
    'Invalid streaming output mode: append.'
    """
    text = str(text or "").strip()
    if "Traceback (most recent call last)" in text:
        tail = text.rsplit("Traceback (most recent call last)", 1)[1]
        for line in tail.splitlines():
            match = _PY_ERROR_LINE.match(line.strip())
            if match:
                name = match.group(1).rsplit(".", 1)[-1]
                message = _SQLSTATE.sub("", match.group(2)).strip()
                return f"{name}: {message}" if message else name
    first_line = text.splitlines()[0] if text else ""
    if "terminated with exception:" in first_line:
        text = _WRAPPER.sub("", text, count=1)
    for line in text.splitlines():
        line = _SQLSTATE.sub("", _ERROR_CLASS.sub("", line)).strip()
        if line:
            return line
    return "unknown error"


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
