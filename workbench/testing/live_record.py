"""Save a live stream as a test: what a stream over a memory stream did, as a runnable pytest module.

:func:`record` reads a stream the workbench started (``workbench.start`` or ``%%stream``)
on a :class:`~workbench.testing.MemoryStream`: each data batch's input rows, the rows it and
the watermark-only batch after it emitted, the watermark and the late rows' fates
(:func:`workbench.spark.stream_record.live_steps`). It writes a module that feeds the same
rows to a fresh memory stream in a :class:`~workbench.testing.StreamTest`, batch by batch as
the live stream read them, and checks each of those. What would make the module fail on its
first run is refused before anything is written: a query function other than the stream's
(their analysed plans compared), one ``query(df)`` cannot call, source that is not Python, an
input the stream did not read, a file pytest does not collect or one already there.
"""

from __future__ import annotations

import os
import re
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable

from ..errors import error_line
from ..spark.inputs import OBSERVED_PREFIX
from ..spark.memory_stream import MemoryStream
from ..spark.plan import analyzed_plan_text, query_plan_text
from ..spark.stream_record import input_stream, live_steps
from .recording import (check_target, ddl_text, function_name, module_query, module_source, query_function_source,
                        result_row, write_module)

__all__ = ["record"]


def record(handle: Any, path: str | os.PathLike[str], *, query: Callable[[Any], Any] | None = None,
           query_source: str | None = None, stream: MemoryStream | None = None, name: str | None = None,
           overwrite: bool = False) -> Path:
    """Write a pytest module that feeds the input's rows batch by batch as ``handle``'s stream read them.

    The module checks what the live stream showed, step by step: the rows each batch (and
    the watermark-only batch that followed it, if one did) emitted, the watermark, and the
    late rows' fates. It passes as written and fails, with the StreamTest's message, when
    the query changes. Before writing, ``record`` builds the query from the module's code
    on the input and compares its plan with the one the stream ran (classic sessions).

    Parameters
    ----------
    handle : StreamHandle
        A stream the workbench started (``workbench.start``, ``%%stream``), on the memory
        sink in append or update mode, reading one :class:`~workbench.testing.MemoryStream`
        alone; stopped or still running (batches not yet reported are left out).
    path : str or path
        The file to write, ``test_*.py`` or ``*_test.py`` (the names pytest collects); its
        folder must exist.
    query : callable, optional
        The function that builds the query from the input DataFrame alone (``query(df)``),
        defined with ``def`` in a file or a notebook cell (its source is copied into the
        module); it must build the query the stream ran.
    query_source : str, optional
        Or the source of ``def query(df): ...`` itself. One of the two, not both, is needed:
        a running query does not keep the Python code that built it.
    stream : MemoryStream, optional
        The input; found from the query's plan (the memory stream's folder) when left
        out. The stream must still be open: its folder holds the rows it was given.
    name : str, optional
        The test is ``test_<name>``; defaults to the stream's name.
    overwrite : bool, default False
        Replace ``path`` when it exists (else that is refused: it may be a test edited since).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TypeError, ValueError
        For a handle or stream this cannot replay (another sink, complete mode, several
        inputs, a closed input, a ``stream=`` the query does not read), no query source or
        both, a query other than the stream's (or that ``query(df)`` cannot call, or source
        that is not Python), a folder that does not exist, a file name pytest does not
        collect, or a file that exists (without ``overwrite``); nothing is written then.

    Examples
    --------
    >>> handle = workbench.start(counts(events.df), "counts", trigger="1 second")   # doctest: +SKIP
    >>> events.add([("2024-01-01 12:07", "dog")])                                   # doctest: +SKIP
    >>> workbench.testing.record(handle, "tests/test_counts.py", query=counts)      # doctest: +SKIP
    PosixPath('tests/test_counts.py')
    """
    if not all(hasattr(handle, attr) for attr in ("progress", "checkpoint", "sink", "result")):
        raise TypeError(f"record needs a stream's handle (workbench.start(...), workbench.stream(name)), "
                        f"got {type(handle).__name__}")
    if isinstance(path, MemoryStream):
        raise TypeError("record's second argument is the file to write; the input, when given, is stream=: "
                        "record(handle, 'test_x.py', query=..., stream=events)")
    if stream is not None and not isinstance(stream, MemoryStream):
        raise TypeError(f"stream= is the stream's input, a workbench.testing.MemoryStream, got "
                        f"{type(stream).__name__}")
    target = check_target(path, overwrite=overwrite)
    if query is not None and query_source is not None:
        raise ValueError("record takes query= or query_source=, not both: pass the function, or the source of "
                         "def query(df): ...")
    if query is None and query_source is None:
        raise ValueError("record needs the query's code, which a running query does not keep: pass query=<the "
                         "function that builds it from the input DataFrame> or query_source='def query(df): ...'")
    if query_source is None:
        query_source = query_function_source(query)
    elif not isinstance(query_source, str):
        raise TypeError(f"query_source is the source of def query(df): ..., a str, got {type(query_source).__name__}")
    if stream is None:
        stream = input_stream(handle)
    else:
        _check_input(handle, stream)
    steps, flat_columns = live_steps(handle, stream)
    columns = list(handle.output_columns) or flat_columns
    for step in steps:
        step["new_answer"] = [result_row(r, columns) for r in step["new_answer"]]
    text = module_source(name=function_name(name or handle.name), schema=ddl_text(stream.schema),
                         query_source=query_source, output_mode=handle.output_mode or "append", steps=steps,
                         origin=f"stream {handle.name!r}", no_data_batches=True)
    _check_same_query(handle, stream, module_query(text, query_source), "query=" + query.__name__
                      if query is not None else "query_source")
    return write_module(target, text, overwrite=overwrite)


def _check_input(handle: Any, stream: MemoryStream) -> None:
    """Refuse a ``stream=`` that ``handle``'s query does not read (when its plan is known)."""
    folders = getattr(handle.plan, "memory_folders", None)
    if folders and os.path.abspath(stream.folder) not in {os.path.abspath(f) for f in folders}:
        raise ValueError(f"stream= is the MemoryStream in {stream.folder!r}, which stream {handle.name!r} does not "
                         f"read (it reads {', '.join(folders)}): pass the one it reads, or leave stream= out")


def _check_same_query(handle: Any, stream: MemoryStream, query: Any, what: str) -> None:
    """Refuse a query function that does not build the query ``handle`` ran, on ``stream``.

    Compares the analysed plans, with expression ids, generated ids, object addresses,
    random seeds and the input's folder left out; on Spark Connect, whose queries do not
    show their plan, nothing is compared.
    """
    try:
        df = query(stream.df)
    except Exception as exc:  # the test would fail the same way
        raise ValueError(f"{what} fails on the input ({type(exc).__name__}: {error_line(exc)}): pass the function "
                         f"that built stream {handle.name!r}") from None
    ran, built = query_plan_text(handle.query), analyzed_plan_text(df)
    if ran is None or built is None:  # Spark Connect, or a plan Spark cannot give: nothing to compare
        return
    # input_watermarks=True observed the stream's inputs: nodes the workbench added, not the query's.
    ran_lines = [line for line in _normalised(ran, stream.folder) if not line.startswith(_OBSERVED)]
    built_lines = _normalised(built, stream.folder)
    if ran_lines == built_lines:
        return
    # From the input up: the first node that differs is where the queries part.
    for was, now in zip_longest(reversed(ran_lines), reversed(built_lines), fillvalue="(nothing)"):
        if was != now:
            break
    shown_now, shown_was = _shown(now, was), _shown(was, now)
    raise ValueError(f"{what} builds another query than stream {handle.name!r} ran: its plan has {shown_now!r} "
                     f"where the stream's has {shown_was!r}; pass the function and arguments the stream ran with "
                     "(query_source='def query(df): ...' for arguments other than the input)")


_NOISE = [(re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12},? ?"), ""),  # generated ids
          (re.compile(r"#\d+L?"), ""),                                                         # expression ids
          (re.compile(r"@[0-9a-f]+\b"), ""),                                                   # object addresses
          (re.compile(r"\b(rand|randn|uuid|shuffle)\((?:Some\()?-?\d+\)?\)"), r"\1()"),     # random seeds
          (re.compile(r"^[\s:+|-]*~?"), "")]                                                   # the tree's drawing


_OBSERVED = f"CollectMetrics {OBSERVED_PREFIX}"


def _normalised(plan: str, folder: str) -> list[str]:
    text = plan.replace(folder.encode().hex(), "<input>").replace(folder, "<input>")
    lines = []
    for line in text.splitlines():
        for pattern, replacement in _NOISE:
            line = pattern.sub(replacement, line)
        lines.append(line)
    return lines


def _shown(line: str, other: str, width: int = 100) -> str:
    """``line`` where it departs from ``other``: its node's name, then up to ``width`` characters from a
    little before the first that differs.

    >>> watermark = "EventTimeWatermark event_time: timestamp, {} minutes"
    >>> _shown(watermark.format(10), watermark.format(5))
    'EventTimeWatermark event_time: timestamp, 10 minutes'
    >>> _shown("Project [" + "a, " * 50 + "b, c]", "Project [" + "a, " * 50 + "c]", 20)
    'Project ...a, a, a, a, b, c]'
    """
    same = next((i for i, (a, b) in enumerate(zip(line, other)) if a != b), min(len(line), len(other)))
    node = line.split(" ", 1)[0]
    start = line.rfind(" ", 0, max(same - 12, 0)) + 1  # from the start of a word a little before
    if start <= len(node) + 1:
        return line if len(line) <= width else line[:width] + "..."
    return f"{node} ...{line[start:start + width]}" + ("..." if start + width < len(line) else "")
