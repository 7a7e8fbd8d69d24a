"""Save a run as a test: a replay turned into a readable pytest module that checks what was seen.

:func:`to_test` reads a replay run (or its panel) after its steps: each data batch's input
rows, the answer it emitted, the watermark it reported and the fates of its late rows. It
writes a pytest module that feeds the same rows to a :class:`~workbench.testing.MemoryStream`
one batch per step, runs the same query in a :class:`~workbench.testing.StreamTest` (one
batch per ``process()``, as the panel's Step runs them) and checks each of those. The module
passes as written and fails, with the StreamTest's message, when the query changes.
"""

from __future__ import annotations

import inspect
import keyword
import os
import re
import textwrap
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..replay.late import FATES
from ..replay.spec import WindowCount
from ..replay.values import duration_text

__all__ = ["to_test", "module_source", "ddl_text", "query_function_source", "result_row", "function_name",
           "check_one_argument", "check_target", "write_module", "module_query"]


def _literal(value: Any) -> str:
    if value is None or (not isinstance(value, (list, tuple, dict, str)) and pd.isna(value) is True):
        return "None"
    if isinstance(value, pd.Timestamp) or hasattr(value, "isoformat") and not isinstance(value, str):
        stamp = pd.Timestamp(value)
        if stamp.tzinfo is not None:
            stamp = stamp.tz_convert("UTC").tz_localize(None)
        text = stamp.isoformat(sep=" ")
        return repr(text[:-3] if text.endswith(":00") and len(text) == 19 else text)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _rows_literal(rows: Sequence[tuple[Any, ...]], indent: str, *, ordered: bool = False) -> str:
    if not rows:
        return "[]"
    if not ordered:  # answers compare as multisets: sorted, they read better
        rows = sorted(rows, key=lambda r: _literal(tuple(r)))
    lines = [f"{indent}    {_literal(tuple(r))}," for r in rows]
    return "[\n" + "\n".join(lines) + f"\n{indent}]"


def module_source(*, name: str, schema: str, query_source: str, output_mode: str,
                  steps: Sequence[dict[str, Any]], origin: str, no_data_batches: bool = False) -> str:
    """The text of a pytest module that replays ``steps`` and checks each one.

    Parameters
    ----------
    name : str
        The test function is ``test_<name>``.
    schema : str
        The input's DDL schema.
    query_source : str
        Python source defining ``query(df)``; may use ``F`` (``pyspark.sql.functions``).
    output_mode : str
    steps : list of dict
        One per batch: ``rows`` (input tuples), ``watermark`` (a time or None),
        ``new_answer`` (result tuples) and ``late`` (``{fate: input tuples}``).
    origin : str
        What the test was recorded from, for its docstring.
    no_data_batches : bool, default False
        False: each step runs exactly one batch (a replay's Step). True: each step also
        runs the watermark-only batch Spark runs next, unless the step's
        ``no_data_batch`` is False (a live stream whose next rows came first).

    Examples
    --------
    >>> text = module_source(name="demo", schema="t timestamp, w string",
    ...     query_source="def query(df):\\n    return df", output_mode="append",
    ...     steps=[{"rows": [("2024-01-01 12:07", "dog")], "watermark": None,
    ...             "new_answer": [("2024-01-01 12:07", "dog")], "late": {}}], origin="an example")
    >>> "def test_demo(stream_test):" in text and "check_new_answer" in text
    True
    """
    runs = ("runs its micro-batch and the watermark-only batch that followed it, if one did,"
            if no_data_batches else "runs exactly one micro-batch,")
    out = [f'"""Recorded from {origin} by workbench.testing.{"record" if no_data_batches else "to_test"}.', "",
           f"Each step adds one batch of the recorded input, {runs} and checks",
           "the rows it emitted, the watermark it reported and the input rows it read behind the",
           "watermark. Change the query and the step where its behaviour differs fails.",
           '"""', "", "from pyspark.sql import functions as F  # noqa: F401  (the query may use it)", "",
           f"SCHEMA = {schema!r}", "", "", query_source.rstrip(), "", "",
           f"def test_{name}(stream_test):",
           "    events = stream_test.memory_stream(SCHEMA)",
           f"    test = stream_test(query(events.df), output_mode={output_mode!r}"
           + (")" if no_data_batches else ", no_data_batches=False)")]
    indent = "    "
    for number, step in enumerate(steps):
        process = "process()" if not no_data_batches or step.get("no_data_batch", True) \
            else "process(no_data_batch=False)"
        # A played replay's batches after its script ends read padding only: a batch without
        # rows, which still applies the watermark the batch before it moved.
        feed = (f"test.add(events, {_rows_literal(step['rows'], indent, ordered=True)})." if step["rows"]
                else "test.add(events, [], empty_batch=True).")
        out += ["", f"    # {'step' if no_data_batches else 'batch'} {number}" + ("" if step["rows"] else ": no rows"),
                f"    {feed}{process}",
                f"    test.check_new_answer({_rows_literal(step['new_answer'], indent)})",
                f"    test.check_watermark({_literal(step['watermark'])})"]
        late = step.get("late", {})
        if late is None:  # late rows cannot be told (a watermark on a column the query makes)
            continue
        for fate in FATES:
            if late.get(fate):
                out.append(f"    test.check_late({_rows_literal(late[fate], indent)}, fate={fate!r})")
        if not any(late.values()):
            out.append("    test.check_late([], fate='late')")
    return "\n".join(out) + "\n"


def _window_count_source(query: WindowCount) -> str:
    head = f"df.withWatermark({query.time_column!r}, {duration_text(query.watermark)!r})" \
        if query.watermark is not None else "df"
    window = (f"F.window({query.time_column!r}, {duration_text(query.window)!r}, "
              f"{duration_text(query.slide)!r})")
    grouping = ", ".join([window, *(repr(k) for k in query.keys)])
    return f"def query(df):\n    return {head}.groupBy({grouping}).count()"


def query_function_source(query: Any) -> str:
    """The source of a query function, as ``query(df)`` (a ``def`` in a file or a notebook cell; no lambda).

    Raises
    ------
    ValueError
        For what is not a ``def`` whose source Python can read, saying what it is, and for a
        function that cannot be called with the input alone (``query(df)``).
    """
    name = getattr(query, "__name__", "")
    problem = _not_a_function(query)
    if problem is not None:
        raise ValueError(f"query= is {problem}, whose source the test module cannot copy: pass "
                         "query_source='def query(df):\\n    return ...'")
    try:
        source = textwrap.dedent(inspect.getsource(query))
    except (OSError, TypeError):
        source = ""
    if not source.startswith("def "):
        raise ValueError(f"cannot read the source of query={name} (defined in a notebook cell Python cannot read "
                         "back, or made by exec): pass query_source='def query(df):\\n    return ...'")
    check_one_argument(query, f"query={name}")
    prelude = _names_used(query)
    body = source if name == "query" else f"{source.rstrip()}\n\n\nquery = {name}"
    return f"{prelude}\n\n{body}" if prelude else body


def _not_a_function(query: Any) -> str | None:
    """What ``query`` is when it is not a plain ``def`` function (None when it is one).

    >>> import functools
    >>> _not_a_function(functools.partial(print, "x")), _not_a_function(lambda df: df)
    ('functools.partial(print, ...)', 'a lambda')
    """
    import functools

    if isinstance(query, functools.partial):
        return f"functools.partial({getattr(query.func, '__name__', type(query.func).__name__)}, ...)"
    if inspect.ismethod(query):
        return f"the bound method {query.__qualname__} of a {type(query.__self__).__name__} object"
    if not inspect.isfunction(query):
        return f"a {type(query).__name__} object, not a function"
    if query.__name__ == "<lambda>":
        return "a lambda"
    return None


def check_one_argument(query: Any, what: str) -> None:
    """Refuse ``query`` unless ``query(df)`` can call it: the test module passes the input alone.

    Examples
    --------
    >>> def counts(df, delay):
    ...     return df
    >>> check_one_argument(counts, "query=counts")
    Traceback (most recent call last):
    ...
    ValueError: query=counts takes (df, delay), but the test calls query(df) with the input alone: give delay a ...
    """
    try:
        signature = inspect.signature(query)
    except (TypeError, ValueError):
        return  # a builtin without a signature: the call will tell
    try:
        signature.bind(None)
    except TypeError:
        missing = [p.name for p in list(signature.parameters.values())[1:] if p.default is p.empty
                   and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        remedy = f"give {', '.join(missing)} a default" if missing else "make it take one argument, the input"
        raise ValueError(f"{what} takes ({', '.join(signature.parameters)}), but the test calls query(df) with the "
                         f"input alone: {remedy}, or pass query_source='def query(df):\\n    return ...'") from None


def module_query(text: str, query_source: str) -> Any:
    """The ``query`` a written module's ``text`` defines, run as pytest would import it.

    Raises
    ------
    ValueError
        When ``query_source`` is not Python, the module fails on import, or it defines no
        ``query`` that ``query(df)`` can call; in one line.

    Examples
    --------
    >>> module_query("def query(df):\\n    return df", "return df.groupBy(")
    Traceback (most recent call last):
    ...
    ValueError: query_source is not Python (line 1: '(' was never closed): give the source of def query(df): ...
    """
    try:
        compile(query_source, "query_source", "exec")
    except SyntaxError as exc:
        raise ValueError(f"query_source is not Python (line {exc.lineno}: {exc.msg}): give the source of "
                         "def query(df): ...") from None
    namespace: dict[str, Any] = {"__name__": "workbench_recorded_test"}
    try:
        exec(compile(text, "the test module", "exec"), namespace)
    except Exception as exc:  # what pytest would report when it imports the module
        raise ValueError(f"the test module fails when imported ({type(exc).__name__}: {exc}): fix query_source "
                         "or the names it uses") from None
    query = namespace.get("query")
    if not callable(query):
        raise ValueError(f"query_source defines no function query (it defines "
                         f"{', '.join(n for n in namespace if not n.startswith('__') and n != 'F') or 'nothing'}): "
                         "give the source of def query(df): ...")
    check_one_argument(query, "query_source's query" if getattr(query, "__name__", "query") == "query"
                       else f"query={query.__name__}")
    return query


_TEST_FILE = re.compile(r"(test_.*|.*_test)\.py")


def check_target(path: Any, *, overwrite: bool) -> Path:
    """The file a written test goes to: a ``test_*.py`` (or ``*_test.py``) file pytest collects, in
    a folder that exists, not there yet unless ``overwrite``.

    Examples
    --------
    >>> check_target("checks.py", overwrite=False)
    Traceback (most recent call last):
    ...
    ValueError: file name 'checks.py' is not one pytest collects: name it test_*.py or *_test.py
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path such as 'tests/test_counts.py', got {path!r}")
    target = Path(os.fspath(path))
    if target.is_dir():
        raise ValueError(f"path {str(target)!r} is a folder: name the file to write in it, such as "
                         f"{str(target / 'test_counts.py')!r}")
    if not _TEST_FILE.fullmatch(target.name):
        raise ValueError(f"file name {target.name!r} is not one pytest collects: name it test_*.py or *_test.py")
    if not target.parent.is_dir():
        raise ValueError(f"folder {str(target.parent)!r} does not exist: create it or write the test elsewhere")
    if target.exists() and not overwrite:
        raise _exists(target)
    return target


def _exists(target: Path) -> ValueError:
    return ValueError(f"file {str(target)!r} exists (a test written before, maybe edited since): pass "
                      "overwrite=True to replace it, or name another file")


def write_module(target: Path, text: str, *, overwrite: bool) -> Path:
    """Write ``text`` to ``target``; without ``overwrite``, only as a new file."""
    try:
        with open(target, "w" if overwrite else "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise _exists(target) from None
    return target


_CONSTANTS = (str, int, float, bool, type(None))
#: The names a written module defines itself (module_source), which a query's globals must not redefine.
_MODULE_NAMES = frozenset({"F", "SCHEMA", "query"})


def _is_literal(value: Any) -> bool:
    """Whether ``repr(value)`` is Python source giving ``value`` back (a plain constant, or a tuple of them).

    >>> import numpy as np
    >>> _is_literal("10 minutes"), _is_literal((1, "a")), _is_literal(np.float64(2.5)), _is_literal(float("inf"))
    (True, True, False, False)
    """
    import ast

    plain = type(value) in _CONSTANTS or (type(value) is tuple and all(type(v) in _CONSTANTS for v in value))
    if not plain:
        return False
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError):
        return False


def _names_used(query: Any) -> str:
    """The lines that define the global names ``query`` uses (imports and plain constants), for a module of its own.

    >>> import math
    >>> RATE = 2.5
    >>> def scaled(df):
    ...     return df.withColumn("x", df.value * RATE * math.pi)
    >>> print(_names_used(scaled))
    import math
    RATE = 2.5
    """
    code = getattr(query, "__code__", None)
    if code is None:
        return ""
    # The names the code loads as globals (not attributes: ``F.window`` uses F, not window),
    # and those its closure holds.
    namespace = getattr(query, "__globals__", {})
    found = {name: namespace[name] for name in _global_names(code) if name in namespace}
    closure = zip(code.co_freevars, getattr(query, "__closure__", None) or ())
    found.update((name, cell.cell_contents) for name, cell in closure)
    imports, constants, unknown, reserved = [], [], [], []
    for name, value in sorted(found.items()):
        module = getattr(value, "__name__", None) if inspect.ismodule(value) else None
        owner = getattr(value, "__module__", None)
        qualname = getattr(value, "__qualname__", None)
        if name == "F" and module == "pyspark.sql.functions":
            continue  # the module imports it
        if name in _MODULE_NAMES:
            reserved.append(name)
        elif module is not None:
            imports.append(f"import {module}" if module == name else f"import {module} as {name}")
        elif _is_literal(value):
            constants.append(f"{name} = {value!r}")
        elif (owner and qualname and owner != "__main__" and not owner.startswith("__")
              and "<" not in qualname and "." not in qualname):
            imports.append(f"from {_public_module(owner, qualname, value)} import {qualname}"
                           + (f" as {name}" if qualname != name else ""))
        else:
            unknown.append(name)
    if reserved:
        raise ValueError(f"the query function uses the global {', '.join(reserved)}, a name the test module "
                         "gives its own value: rename it in your code, or pass query_source=...")
    if unknown:
        raise ValueError(f"the query function uses {', '.join(unknown)}, which the test module cannot define: "
                         "define them inside the function, or pass query_source='def query(df):\\n    return ...'")
    return "\n".join(imports + constants)


def _global_names(code: Any) -> set[str]:
    """The global names ``code`` (and the functions and comprehensions inside it) loads."""
    import dis

    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for constant in code.co_consts:
        if inspect.iscode(constant):
            names |= _global_names(constant)
    return names


def _public_module(owner: str, qualname: str, value: Any) -> str:
    """The shortest parent of module ``owner`` giving the same ``value`` (``pyspark.sql.functions``
    for ``pyspark.sql.functions.builtin``)."""
    import importlib

    parts = owner.split(".")
    for length in range(1, len(parts)):
        try:
            module = importlib.import_module(".".join(parts[:length]))
        except ImportError:
            continue
        if getattr(module, qualname, None) is value:
            return module.__name__
    return owner


def result_row(record: dict[str, Any], columns: Sequence[str]) -> tuple[Any, ...]:
    """A flat result record (``window_start``, ``window_end``) as a tuple in the query's ``columns``.

    Examples
    --------
    >>> result_row({"window_start": 1, "window_end": 2, "n": 3}, ["window", "n"])
    ((1, 2), 3)
    """
    values = []
    for column in columns:
        if column in record:
            values.append(record[column])
        elif f"{column}_start" in record and f"{column}_end" in record:
            values.append((record[f"{column}_start"], record[f"{column}_end"]))
        else:
            raise ValueError(f"the run's results have no column {column!r}: {sorted(record)}")
    return tuple(values)


def ddl_text(schema: Any) -> str:
    """A StructType as a DDL string (``event_time timestamp, word string``)."""
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields)


def function_name(text: str) -> str:
    """A stream's name as the ``<name>`` of a test function ``test_<name>``.

    Examples
    --------
    >>> function_name("Guide word-count")
    'guide_word_count'
    """
    name = re.sub(r"\W+", "_", text).strip("_").lower() or "recorded_run"
    return f"{name}_" if keyword.iskeyword(name) or name[0].isdigit() else name


def to_test(run: Any, path: str | os.PathLike[str], *, query_source: str | None = None,
            name: str | None = None, overwrite: bool = False) -> Path:
    """Write a pytest module that replays ``run``'s input batch by batch and checks what it saw.

    Parameters
    ----------
    run : ReplayPanel or ReplayRun
        A replay that ran at least one batch, stepped with Step or played with Play and
        paused: on its ``rate-micro-batch`` source both run one data batch per trigger and
        no watermark-only batch, so the module repeats either one batch per step (a played
        Script's batches after its last scripted one read no rows: each is an empty batch,
        ``test.add(events, [], empty_batch=True)``).
    path : str or path
        The file to write, ``test_*.py`` or ``*_test.py`` (the names pytest collects); its
        folder must exist.
    query_source : str, optional
        Source defining ``query(df)``, for a query function whose source Python cannot
        read (a lambda). A :class:`~workbench.replay.WindowCount` and a ``def`` in a file
        need none.
    name : str, optional
        The test is ``test_<name>``; defaults to the run's name.
    overwrite : bool, default False
        Replace ``path`` when it exists (else that is refused: it may be a test edited since).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TypeError, ValueError
        For something that is not a replay, a run with no batches, a folder that does not
        exist, a file name pytest does not collect, or a file that exists (without
        ``overwrite``); nothing is written then.

    Examples
    --------
    >>> panel = workbench.replay_panel(workbench.scenarios.guide_word_count())   # doctest: +SKIP
    >>> for _ in range(4):                                                      # doctest: +SKIP
    ...     panel.step()
    >>> workbench.testing.to_test(panel, "tests/test_guide_word_count.py")     # doctest: +SKIP
    PosixPath('tests/test_guide_word_count.py')
    """
    run = getattr(run, "run", run)
    if not all(hasattr(run, attr) for attr in ("raw_progress", "inputs", "batch_results", "late_rows", "input_df")):
        raise TypeError(f"to_test needs a replay panel or run (workbench.replay_panel(...)), got {type(run).__name__}")
    target = check_target(path, overwrite=overwrite)
    records = run.raw_progress.records()
    if not records:
        raise ValueError(f"replay {run.name!r} has run no batch yet: step it first")
    if any(r.num_input_rows == 0 for r in records):
        raise ValueError(f"replay {run.name!r} ran watermark-only batches, which a test of one batch per step "
                         "cannot repeat: reset it and use Step, which runs one batch with input per step")
    if query_source is None:
        query_source = _window_count_source(run.query) if isinstance(run.query, WindowCount) \
            else query_function_source(run.query)
    input_columns = list(run.input_df.columns)
    result_columns = list(run.df.columns)
    inputs = run.inputs()
    results = run.batch_results()
    late = run.late_rows()
    steps = []
    for index, record in enumerate(sorted(records, key=lambda r: r.batch_id)):
        rows = inputs[inputs["batch"] == index][input_columns]
        batch_late = late[late["batch_id"] == record.batch_id] if len(late) else late
        steps.append({
            "rows": [tuple(r) for r in rows.itertuples(index=False, name=None)],
            "watermark": record.watermark,
            "new_answer": [result_row(r, result_columns)
                           for r in results.get(record.batch_id, pd.DataFrame()).to_dict("records")],
            "late": {fate: [tuple(r[c] for c in input_columns) for r in batch_late.to_dict("records")
                            if r["fate"] == fate] for fate in FATES},
        })
    text = module_source(name=function_name(name or run.name), schema=ddl_text(run.input_df.schema),
                              query_source=query_source, output_mode=run.output_mode or "append",
                              steps=steps, origin=f"replay {run.name!r}")
    module_query(text, query_source)
    return write_module(target, text, overwrite=overwrite)
