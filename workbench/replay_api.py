"""The replay facade: ``workbench.replay_stream``, ``workbench.replay_panel`` and ``workbench.compare``.

Composes the pure specs (``workbench.replay``) with the Spark layer (``workbench.spark.replay_source``
and ``workbench.spark.replay_run``) and the panel view (``workbench.views.replay_panel``); those
are imported on first call so that ``import workbench`` stays free of pyspark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .replay.saved import SavedRun, load_run, run_metrics
from .replay.scenarios import Scenario
from .replay.spec import Replay, Script, WindowCount

__all__ = ["replay_stream", "replay_panel", "replay_run", "compare"]


def replay_stream(spec: Replay | Script, spark: Any = None) -> Any:
    """The streaming DataFrame of a replay spec: generated (:class:`Replay`) or scripted (:class:`Script`) rows.

    The spec plays on Spark's ``rate-micro-batch`` source, so the same spec gives the same
    rows in the same micro-batches on every run. Start the query with :func:`workbench.start`
    (or ``%%stream``); :func:`replay_panel` adds play, pause and step controls instead.

    Parameters
    ----------
    spec : Replay or Script
        The input stream. For a scenario, pass its ``.source``.
    spark : pyspark.sql.SparkSession, optional
        The session to build the stream on; the workbench's session
        (:func:`workbench.session`) when left out.

    Returns
    -------
    pyspark.sql.DataFrame
        A streaming DataFrame with the spec's columns (a Replay's ``value`` and
        ``timestamp`` first, then the event time and generated columns; a Script's named columns).

    Raises
    ------
    TypeError
        For anything but a Replay or a Script.

    Examples
    --------
    >>> script = workbench.Script([[("12:07", "dog"), ("12:08", "owl")], [("12:14", "dog")]],
    ...                           ["event_time", "word"])                     # doctest: +SKIP
    >>> events = workbench.replay_stream(script)                              # doctest: +SKIP
    >>> events.columns                                                        # doctest: +SKIP
    ['event_time', 'word']
    >>> handle = workbench.start(events.groupBy("word").count(), "words", output_mode="complete")  # doctest: +SKIP
    """
    if not isinstance(spec, (Replay, Script)):
        if isinstance(spec, Scenario):
            raise TypeError(f"replay_stream needs a workbench.Replay or workbench.Script, got the scenario "
                            f"{spec.name!r}: pass its .source")
        text = repr(spec)
        shown = f"{text} ({type(spec).__name__})" if len(text) <= 60 and "\n" not in text else f"a {type(spec).__name__}"
        raise TypeError(f"replay_stream needs a workbench.Replay or workbench.Script, got {shown}")
    from .spark import current_env
    from .spark.replay_source import build_stream

    if spark is None:
        spark = current_env().session()  # what workbench.session() returns
    return build_stream(spark, spec)


def replay_run(source: Any, query: Any = None, *, name: str | None = None, output_mode: str | None = None,
               sink: str = "memory", console: Callable[[str], None] | None = None) -> Any:
    """The replay controller without widgets (see :func:`replay_panel` for the arguments)."""
    if isinstance(source, Scenario):
        query = source.query if query is None else query
        name = name or source.name
        output_mode = output_mode or source.output_mode
        source = source.source
    if not isinstance(source, (Replay, Script)):
        raise TypeError(f"source must be a workbench.Replay, workbench.Script or a scenario, got {type(source).__name__}")
    if query is None:
        raise TypeError("give the query: a function from the source DataFrame to the result DataFrame")
    if name is None:
        raise TypeError("give the replay a name, e.g. name='word_counts'")
    from .spark.replay_run import ReplayRun

    if console is None and sink == "console":
        from .views.console import cell_console

        console = cell_console()
    return ReplayRun(source, query, name=name, output_mode=output_mode, sink=sink, console=console)


def replay_panel(source: Any, query: Callable[[Any], Any] | WindowCount | None = None, *, name: str | None = None,
                 output_mode: str | None = None, sink: str = "memory", monitor: bool = True) -> Any:
    """A panel that plays, pauses, steps and resets a query on a deterministic source.

    Parameters
    ----------
    source : Replay, Script or Scenario
        The input stream (a scenario also brings its query, name and output mode).
    query : callable or WindowCount
        ``query(df)`` returns the streaming DataFrame to run.
    name : str
        The stream's name.
    output_mode : {"append", "update", "complete"}, optional
    sink : {"memory", "console"}, default "memory"
    monitor : bool, default True
        Embed the live monitor.

    Returns
    -------
    ReplayPanel

    Raises
    ------
    TypeError, ValueError
        For bad arguments, before Spark starts any query.

    Examples
    --------
    >>> panel = workbench.replay_panel(workbench.scenarios.guide_word_count())     # doctest: +SKIP
    >>> panel.step(); panel.step()                                                   # doctest: +SKIP
    >>> panel.late_rows()[["event_time", "watermark", "fate"]]                       # doctest: +SKIP
    """
    from .views.replay_panel import ReplayPanel

    return ReplayPanel(replay_run(source, query, name=name, output_mode=output_mode, sink=sink), monitor=monitor)


def _as_saved(run: Any, label: str) -> SavedRun:
    if isinstance(run, SavedRun):
        return run
    if isinstance(run, (str, Path)):
        return load_run(run, label)
    controller = getattr(run, "run", run)  # a panel or a controller
    if not hasattr(controller, "late_rows") or not hasattr(controller, "history"):
        raise TypeError(f"compare needs saved run folders, replay panels or runs, got {type(run).__name__}")
    return SavedRun(label=label if label else controller.name, source=controller.source,
                    query=controller.describe_query(), history=controller.history(),
                    results=controller.results(), late_rows=controller.late_rows())


def compare(a: Any, b: Any, *more: Any, labels: list[str] | None = None) -> Any:
    """Show runs side by side: a metrics table and an overlaid chart.

    Parameters
    ----------
    a, b, *more : str, path, ReplayPanel or ReplayRun
        Saved run folders (``panel.save(folder)``) or live panels/runs.
    labels : list of str, optional
        Column names; default the folder names or stream names.

    Returns
    -------
    Comparison
        ``.table`` (pandas, one column per run) and ``.figure`` (plotly).

    Examples
    --------
    >>> workbench.compare("runs/delay10", "runs/delay20").table     # doctest: +SKIP
    """
    runs = [a, b, *more]
    if labels is not None and len(labels) != len(runs):
        raise ValueError(f"labels names {len(labels)} runs but {len(runs)} were given")
    saved = [_as_saved(run, labels[i] if labels else "") for i, run in enumerate(runs)]
    names = [s.label for s in saved]
    if len(set(names)) != len(names):
        names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
    table = pd.DataFrame({n: run_metrics(s) for n, s in zip(names, saved)})
    from .views.replay_panel import Comparison, comparison_figure

    figure = comparison_figure({n: s.history for n, s in zip(names, saved)},
                               {n: s.late_rows for n, s in zip(names, saved)})
    return Comparison(table, figure)
