"""Facts about a streaming query's plan (aggregation, watermark, window) for the monitor.

Spark knows the window duration and the watermark delay only in the plan, not in
progress reports. This module reads the plan's text and hands it to the pure parser
:meth:`workbench.progress.diagnosis.PlanFacts.from_plan_text`. Reading a plan must never
stop a stream from starting, so every failure gives None.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..progress.diagnosis import PlanFacts
from .progress_source import jvm_query

__all__ = ["plan_facts", "plan_text", "query_plan_facts", "query_plan_text", "analyzed_plan_text",
           "output_mode_problem", "runs_by_the_clock"]

log = logging.getLogger(__name__)

#: A stateful processor in processing time as a plan prints it: transformWithState's time mode
#: (``TransformWithStateInPySpark ..., ProcessingTime, ...``), applyInPandasWithState's timeout.
#: Its own argument, not a column of that name (printed as ``ProcessingTime#12``).
_BY_THE_CLOCK = re.compile(
    r"(?:TransformWithState\w*|FlatMapGroups\w*WithState)\b[^\n]*, ProcessingTime(?:Timeout)?(?=,|$)", re.MULTILINE)


def plan_text(df: Any) -> str | None:
    """The parsed and analysed logical plans of ``df`` as text, or None if unavailable.

    Classic sessions read them from the JVM's ``QueryExecution``; Spark Connect
    DataFrames from the server's extended explain string.
    """
    try:
        jdf = getattr(df, "_jdf", None)
        if jdf is not None:
            execution = jdf.queryExecution()
            # The parsed plan keeps `window(ts, 10 minutes, ...)` readable; the analysed
            # one names the watermark and aggregate after resolution.
            return f"{execution.logical().toString()}\n{execution.analyzed().toString()}"
        explain = getattr(df, "_explain_string", None)
        if explain is not None:
            return str(explain(extended=True))
    except Exception:
        log.debug("could not read the plan", exc_info=True)
    return None


def plan_facts(df: Any) -> PlanFacts | None:
    """What ``df``'s plan says about aggregation, watermark and window, or None.

    Examples
    --------
    >>> counts = (rate.withWatermark("timestamp", "10 seconds")          # doctest: +SKIP
    ...           .groupBy(F.window("timestamp", "1 hour")).count())
    >>> plan_facts(counts).window_duration                                # doctest: +SKIP
    datetime.timedelta(seconds=3600)
    """
    return _parsed(plan_text(df))


def runs_by_the_clock(df: Any) -> bool:
    """Whether ``df`` holds a stateful processor in processing time (a transformWithState time
    mode or an applyInPandasWithState timeout): Spark runs a batch for it at every trigger, new
    data or not, so a run "until everything is processed" (``processAllAvailable()``, an
    ``available-now`` trigger) never ends (measured on 4.3).

    Examples
    --------
    >>> runs_by_the_clock(sessions)      # transformWithStateInPandas(..., timeMode="ProcessingTime")  # doctest: +SKIP
    True
    """
    text = plan_text(df)
    return bool(text and _BY_THE_CLOCK.search(text))


def query_plan_facts(query: Any) -> PlanFacts | None:
    """What a running ``StreamingQuery``'s plan says (a query the workbench did not start), or None.

    Reads the analysed plan the query was started with, on classic sessions; Spark
    Connect's queries do not show theirs, so there it is None. The analysed plan names the
    aggregation, join or deduplication and each watermark, but not a window's duration.

    Examples
    --------
    >>> query_plan_facts(spark.streams.active[0]).has_aggregation      # doctest: +SKIP
    True
    """
    return _parsed(query_plan_text(query))


def query_plan_text(query: Any) -> str | None:
    """The analysed plan a running ``StreamingQuery`` was started with, as text; None on Spark
    Connect (its queries do not show theirs) or when Spark cannot give it."""
    jsq = jvm_query(query)
    if jsq is None:
        return None
    try:
        # The plan given at the start: ``logicalPlan`` may only be built on the query's own thread.
        return str(jsq.streamingQuery().analyzedPlan().toString())
    except Exception:
        log.debug("could not read the running query's plan", exc_info=True)
        return None


def analyzed_plan_text(df: Any) -> str | None:
    """``df``'s analysed plan as text, as :func:`query_plan_text` gives a running query's; None
    on Spark Connect or when Spark cannot analyse it."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    try:
        return str(jdf.queryExecution().analyzed().toString())
    except Exception:
        log.debug("could not read the plan", exc_info=True)
        return None


def _parsed(text: str | None) -> PlanFacts | None:
    if text is None:
        return None
    try:
        return PlanFacts.from_plan_text(text)
    except Exception:
        log.debug("could not parse the plan", exc_info=True)
        return None


def output_mode_problem(df: Any, output_mode: str | None) -> str | None:
    """Spark's full reason why ``df`` cannot run in ``output_mode`` (None: it can, or unknown).

    Runs the check Spark runs when a query starts (``UnsupportedOperationChecker``) without
    starting anything, so a query that would be refused is reported when it is built.
    Classic sessions only; on Spark Connect the query's start reports it.

    Examples
    --------
    >>> counts = rate.groupBy((F.col("value") % 2).alias("k")).count()   # doctest: +SKIP
    >>> output_mode_problem(counts, "append")                              # doctest: +SKIP
    '[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: append. ...'
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    try:
        jvm = df.sparkSession._jvm
        checker = getattr(jvm, "org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker")
        modes = getattr(jvm, "org.apache.spark.sql.streaming.OutputMode")
        mode = {"append": modes.Append, "update": modes.Update, "complete": modes.Complete}[output_mode or "append"]()
        plan = jdf.queryExecution().analyzed()
    except Exception:
        log.debug("cannot check the output mode before the start", exc_info=True)
        return None
    try:
        checker.checkForStreaming(plan, mode)
    except Exception as exc:  # Spark's AnalysisException, through py4j
        return str(exc)
    return None
