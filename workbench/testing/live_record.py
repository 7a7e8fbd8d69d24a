"""Save a live stream as a test: what a stream over a memory stream did, as a runnable pytest module.

:func:`record` reads a stream the workbench started (``workbench.start`` or ``%%stream``)
on a :class:`~workbench.testing.MemoryStream`: each data batch's input rows, the rows it and
the watermark-only batch after it emitted, the watermark and the late rows' fates
(:func:`workbench.spark.stream_record.live_steps`). It writes a module that feeds the same
rows to a fresh memory stream in a :class:`~workbench.testing.StreamTest`, batch by batch as
the live stream read them, and checks each of those.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from ..spark.memory_stream import MemoryStream
from ..spark.stream_record import input_stream, live_steps
from .recording import ddl_text, query_function_source, result_row, function_name, module_source

__all__ = ["record"]


def record(handle: Any, path: str | os.PathLike[str], *, query: Callable[[Any], Any] | None = None,
           query_source: str | None = None, stream: MemoryStream | None = None, name: str | None = None) -> Path:
    """Write a pytest module that feeds the input's rows batch by batch as ``handle``'s stream read them.

    The module checks what the live stream showed, step by step: the rows each batch (and
    the watermark-only batch that followed it, if one did) emitted, the watermark, and the
    late rows' fates. It passes as written and fails, with the StreamTest's message, when
    the query changes.

    Parameters
    ----------
    handle : StreamHandle
        A stream the workbench started (``workbench.start``, ``%%stream``), on the memory
        sink in append or update mode, reading one :class:`~workbench.testing.MemoryStream`
        alone; stopped or still running (batches not yet reported are left out).
    path : str or path
        The file to write (``test_*.py``); its folder must exist.
    query : callable, optional
        The function that builds the query from the input DataFrame, defined in a file or
        a notebook cell (its source is copied into the module).
    query_source : str, optional
        Or the source of ``def query(df): ...`` itself. One of the two is needed: a
        running query does not keep the Python code that built it.
    stream : MemoryStream, optional
        The input; found from the query's plan (the memory stream's folder) when left
        out. The stream must still be open: its folder holds the rows it was given.
    name : str, optional
        The test is ``test_<name>``; defaults to the stream's name.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TypeError, ValueError
        For a handle or stream this cannot replay (another sink, complete mode, several
        inputs, a closed input), no query source, or a folder that does not exist;
        nothing is written then.

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
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path such as 'tests/test_counts.py', got {path!r}")
    target = Path(os.fspath(path))
    if not target.parent.is_dir():
        raise ValueError(f"folder {str(target.parent)!r} does not exist: create it or write the test elsewhere")
    if (query is None) == (query_source is None):
        raise ValueError("record needs the query's code, which a running query does not keep: pass query=<the "
                         "function that builds it from the input DataFrame> or query_source='def query(df): ...'")
    if query_source is None:
        query_source = query_function_source(query)
    if stream is None:
        stream = input_stream(handle)
    steps, flat_columns = live_steps(handle, stream)
    columns = list(handle.output_columns) or flat_columns
    for step in steps:
        step["new_answer"] = [result_row(r, columns) for r in step["new_answer"]]
    text = module_source(name=function_name(name or handle.name), schema=ddl_text(stream.schema),
                         query_source=query_source, output_mode=handle.output_mode or "append", steps=steps,
                         origin=f"stream {handle.name!r}", no_data_batches=True)
    target.write_text(text)
    return target
