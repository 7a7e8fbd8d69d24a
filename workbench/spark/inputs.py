"""Observing each watermarked input of a query, for a watermark per input.

Spark reports only the global watermark. :func:`observe_inputs` rewrites a streaming
DataFrame's analysed plan so that right above each ``withWatermark`` the input's rows are
counted and its latest event time taken (``Dataset.observe``, which Spark 4 reports per
batch in progress ``observedMetrics``: measured on 4.3). The pure rules that turn those
figures into per-input watermarks live in :mod:`workbench.progress.input_watermarks`.

Only queries started with ``input_watermarks=True`` are rewritten, so ordinary queries pay
nothing. The rewrite goes through the JVM's plan objects, which only classic Spark
exposes: under Spark Connect it is refused with one line.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Callable

from ..progress.input_watermarks import InputSpec

__all__ = ["observe_inputs", "watermark_policy", "OBSERVED_PREFIX"]

log = logging.getLogger(__name__)

#: The name of each input's observation (``<prefix><index>``): a node of the workbench's, not the query's.
OBSERVED_PREFIX = "workbench_input_"


def _children(node: Any) -> list[Any]:
    children = node.children()
    return [children.apply(i) for i in range(children.size())]


def _kind(node: Any) -> str:
    return str(node.getClass().getSimpleName())


def _count_watermarks(node: Any) -> int:
    return int(_kind(node) == "EventTimeWatermark") + sum(_count_watermarks(c) for c in _children(node))


def _below(node: Any, kinds: tuple[str, ...], read: Callable[[Any], Any]) -> str | None:
    """``read`` of the nearest node of one of ``kinds`` under ``node`` (breadth first), or None."""
    queue = _children(node)
    while queue:
        child = queue.pop(0)
        if _kind(child) in kinds:
            return str(read(child))
        queue += _children(child)
    return None


def watermark_policy(spark: Any) -> str:
    """Spark's ``multipleWatermarkPolicy`` (``min`` or ``max``) for queries started now."""
    return str(spark.conf.get("spark.sql.streaming.multipleWatermarkPolicy", "min")).lower()


def observe_inputs(df: Any) -> tuple[Any, tuple[InputSpec, ...]]:
    """``df`` with each watermarked input observed, and a description of each input.

    An input is named after the temp view or alias it is read through (``clicks`` for
    ``spark.table("clicks")`` or ``df.alias("clicks")``), else after its source
    (``rate-micro-batch``); names that repeat get the event-time column added.

    Returns
    -------
    (pyspark.sql.DataFrame, tuple of InputSpec)

    Raises
    ------
    ValueError
        Under Spark Connect, or when the query has no ``withWatermark`` input.

    Examples
    --------
    >>> observed, inputs = observe_inputs(clicks.join(views, "ad_id"))      # doctest: +SKIP
    >>> [i.name for i in inputs]                                             # doctest: +SKIP
    ['clicks', 'views']
    """
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise ValueError("input_watermarks=True needs classic Spark: under Spark Connect the query plan cannot be "
                         "observed per input; leave input_watermarks out")
    spark = df.sparkSession
    jvm = spark._jvm
    logical = jvm.org.apache.spark.sql.catalyst.plans.logical
    dataset = jvm.org.apache.spark.sql.classic.Dataset
    found: list[tuple[str | None, str, timedelta]] = []

    def rewrite(node: Any, alias_above: str | None) -> Any:
        kind = _kind(node)
        if kind == "SubqueryAlias" and _count_watermarks(node) == 1:
            alias_above = str(node.alias())
        children = _children(node)
        rewritten = [rewrite(child, alias_above) for child in children]
        if any(not new.equals(old) for new, old in zip(rewritten, children)):
            java_list = jvm.java.util.ArrayList()
            for child in rewritten:
                java_list.add(child)
            node = node.withNewChildren(jvm.scala.jdk.javaapi.CollectionConverters.asScala(java_list).toSeq())
        if kind != "EventTimeWatermark":
            return node
        column = str(node.eventTime().name())
        delay = timedelta(milliseconds=int(logical.EventTimeWatermark.getDelayMs(node.delay())))
        index = len(found)
        # Named by the view or alias it is read through, else by its source.
        name = (_below(node, ("SubqueryAlias",), lambda n: n.alias()) or alias_above
                or _below(node, ("StreamingRelationV2", "StreamingRelation"), lambda n: n.sourceName()))
        found.append((name, column, delay))
        # Observing right above the watermark sees every row of the input, late ones included.
        child = DataFrame(dataset.ofRows(spark._jsparkSession, node), spark)
        observed = child.observe(f"{OBSERVED_PREFIX}{index}", F.unix_micros(F.max(F.col(f"`{column}`"))).alias(
            "max_event_time_us"), F.count(F.lit(1)).alias("rows"))
        return observed._jdf.logicalPlan()

    try:
        plan = rewrite(jdf.queryExecution().analyzed(), None)
    except Exception as exc:
        from ..errors import summarize_error

        raise ValueError(f"cannot observe the inputs of this query: {summarize_error(str(exc))}") from None
    if not found:
        raise ValueError("input_watermarks=True: this query has no watermarked input (no withWatermark); "
                         "leave input_watermarks out, or add .withWatermark(column, delay) to its inputs")
    names = [name or "input" for name, _, _ in found]
    labels = [f"{n}.{c}" if names.count(n) > 1 else n for n, (_, c, _) in zip(names, found)]
    labels = [f"{label}#{i + 1}" if labels.count(label) > 1 else label for i, label in enumerate(labels)]
    specs = [InputSpec(label, f"{OBSERVED_PREFIX}{i}", column, delay) for i, (label, (_, column, delay)) in
             enumerate(zip(labels, found))]
    return DataFrame(dataset.ofRows(spark._jsparkSession, plan), spark), tuple(specs)
