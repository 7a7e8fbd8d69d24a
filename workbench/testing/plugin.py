"""The workbench's pytest plugin: fixtures ``spark`` and ``stream_test``.

Installing the workbench registers it (a ``pytest11`` entry point), so a test file needs no
conftest::

    def test_counts(stream_test):
        events = stream_test.memory_stream("word string")
        test = stream_test(events.df.groupBy("word").count(), output_mode="complete")
        test.add(events, [("dog",), ("dog",)]).process().check_answer([("dog", 2)])

A project's own ``spark`` fixture (in its conftest) wins over this one.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

__all__ = ["spark", "stream_test", "StreamTests"]


class StreamTests:
    """The ``stream_test`` fixture: makes StreamTests and memory streams, and closes them all.

    Examples
    --------
    >>> def test_words(stream_test):                                             # doctest: +SKIP
    ...     events = stream_test.memory_stream("word string")
    ...     test = stream_test(events.df.groupBy("word").count(), output_mode="update")
    ...     test.add(events, [("dog",)]).process().check_new_answer([("dog", 1)])
    """

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._made: list[Any] = []

    def __call__(self, df: Any, output_mode: str = "append", **options: Any) -> Any:
        """A :class:`~workbench.testing.StreamTest` of ``df``, closed after the test."""
        from ..spark.stream_test import StreamTest

        test = StreamTest(df, output_mode, **options)
        self._made.append(test)
        return test

    def memory_stream(self, schema: Any) -> Any:
        """A :class:`~workbench.testing.MemoryStream` on the test session, removed after the test."""
        from .memory import MemoryStream

        stream = MemoryStream(self.spark, schema)
        self._made.append(stream)
        return stream

    def close(self) -> None:
        """Close every StreamTest (stop its query, remove its folder) and memory stream."""
        errors = []
        for item in reversed(self._made):
            try:
                item.close()
            except Exception as exc:  # close the rest, then report
                errors.append(exc)
        self._made.clear()
        if errors:
            raise errors[0]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession for the whole test run, with the workbench's settings."""
    import workbench

    from ..spark import current_env

    session = workbench.session()
    yield session
    current_env().close()
    session.stop()


@pytest.fixture
def stream_test(spark: Any) -> Iterator[StreamTests]:
    """A factory of StreamTests (``stream_test(df, output_mode=...)``), all cleaned up after the test."""
    tests = StreamTests(spark)
    yield tests
    tests.close()
    left = [q.name for q in spark.streams.active if (q.name or "").startswith("stream_test_")]
    assert not left, f"streaming queries of stream_test still running after the test: {left}"
