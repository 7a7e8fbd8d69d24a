"""Streaming queries under test: a memory stream, a step-by-step StreamTest, a pytest plugin, saved runs.

>>> import workbench.testing as wt                                          # doctest: +SKIP
>>> events = wt.MemoryStream(spark, "event_time timestamp, word string")    # doctest: +SKIP
>>> counts = events.df.withWatermark("event_time", "10 minutes").groupBy("word").count()  # doctest: +SKIP
>>> with wt.StreamTest(counts, output_mode="update") as test:               # doctest: +SKIP
...     test.add(events, [("2024-01-01 12:07", "dog")]).process().check_new_answer([("dog", 1)])

``to_test(panel, path)`` (or ``panel.to_test(path)``) saves a replay, ``record(handle, path,
query=...)`` a live stream over a memory stream, as a pytest module that repeats it.

Installing the workbench registers the pytest plugin :mod:`workbench.testing.plugin`
(fixtures ``spark`` and ``stream_test``). Importing this package does not import pyspark;
the first use of a name that needs Spark does.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = ["MemoryStream", "StreamTest", "to_test", "record"]

_LAZY = {
    "MemoryStream": ("workbench.testing.memory", "MemoryStream"),
    "StreamTest": ("workbench.spark.stream_test", "StreamTest"),
    "to_test": ("workbench.testing.recording", "to_test"),
    "record": ("workbench.testing.live_record", "record"),
}


__getattr__ = lazy_attributes(__name__, _LAZY)
