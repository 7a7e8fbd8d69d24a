"""The workbench's pytest plugin: fixtures ``spark`` and ``stream_test``.

Installing the workbench registers it (a ``pytest11`` entry point), so a test file needs no
conftest::

    def test_counts(stream_test):
        events = stream_test.memory_stream("word string")
        test = stream_test(events.df.groupBy("word").count(), output_mode="complete")
        test.add(events, [("dog",), ("dog",)]).process().check_answer([("dog", 2)])

A project's own ``spark`` fixture (in its conftest) wins over this one. The plugin never
changes or stops a session it did not build: when one is already running (a project's
``spark_session`` fixture, say), the tests get a new session on its JVM with a SQL conf of
their own (:func:`session_for_tests`), and the running one is left as it was.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

__all__ = ["spark", "stream_test", "StreamTests", "session_for_tests", "TEST_SETTINGS"]

#: The runtime SQL settings (with the state store's) of the tests' session on a session the workbench
#: did not build; :func:`workbench.session` gives its own sessions these and more, which only a new JVM takes.
TEST_SETTINGS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}


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


def _workbench_session() -> Any:
    """The session :func:`workbench.session` built and still runs, or None (also for one it only adopted)."""
    from ..spark import current_env
    from ..spark.session import built_here, is_stopped
    from ..spark.session_end import spark_is_gone

    own = current_env().peek_session()
    if own is None or spark_is_gone(own) or is_stopped(own):
        return None
    return own if built_here(own) else None


def session_for_tests(running: Any) -> Any:
    """A new session on ``running``'s JVM (or Connect server) with :data:`TEST_SETTINGS`; ``running`` keeps its own.

    Spark's ``newSession()`` shares the SparkContext (on Spark Connect, the server) and the
    table cache, with a SQL conf, temporary views and UDFs of its own. Static settings (the
    master, the warehouse folder, the JVM's options) are the running session's: no session
    can change them on a running JVM. On an embedded Spark the state store and checkpoint file
    manager :func:`workbench.session` uses are set too.
    """
    from ..spark.session import (
        CHECKPOINT_MANAGER, STATE_STORE_CONF, is_connect_session, is_local_master, local_checkpoint_manager,
    )

    try:
        session = running.newSession()
    except NotImplementedError:  # a Spark Connect client before pyspark 4.3
        raise RuntimeError(
            "the pytest plugin needs a new session on the running Spark Connect session, which this pyspark's "
            "client cannot make (newSession() came in pyspark 4.3): it leaves your session as it is; build none "
            "before the plugin's spark fixture, or use pyspark 4.3 or later") from None
    settings = {**TEST_SETTINGS, **STATE_STORE_CONF}
    if not is_connect_session(running) and is_local_master(running.sparkContext.master) \
            and local_checkpoint_manager():
        settings[CHECKPOINT_MANAGER] = local_checkpoint_manager()
    for key, value in settings.items():
        session.conf.set(key, value)
    return session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The tests' SparkSession, with the workbench's settings, where ``SPARK_REMOTE`` or ``WORKBENCH_MASTER`` say.

    - a session :func:`workbench.session` built is running: that one, left running afterwards;
    - another session is running (a project's fixture built it): :func:`session_for_tests` of it,
      and the running one is neither changed nor stopped;
    - none: :func:`workbench.session` builds one, stopped after the last test.
    """
    import workbench

    from ..spark import current_env

    own = _workbench_session()
    if own is not None:
        own._workbench_plugin_shares = True
        yield own
        return
    from ..spark.session import running_session

    running = running_session()
    if running is not None:
        yield session_for_tests(running)
        return
    session = workbench.session()
    session._workbench_plugin_shares = True
    yield session
    current_env().close()
    session.stop()


def _check_still_utc(spark: Any) -> None:
    """Fail, saying why, when the workbench's session the ``spark`` fixture gave the tests has left UTC.

    Any ``getOrCreate()`` returns that session. A session of the tests' own (:func:`session_for_tests`),
    which none returns, or a project's own ``spark`` fixture is left to StreamTest's own check.
    """
    if not getattr(spark, "_workbench_plugin_shares", False):
        return
    from ..spark.frames import check_utc_session

    try:
        check_utc_session(spark, "stream_test")
        return
    except ValueError:
        zone = spark.conf.get("spark.sql.session.timeZone")
    pytest.fail(
        f"the spark fixture's session is in time zone {zone!r}, not UTC: a SparkSession.builder...getOrCreate() "
        "run after that session was built (a fixture of yours set up after the plugin's) returns that same "
        "session and sets its settings on it. Build your session first (a session-scoped autouse fixture, or "
        "ask for it before stream_test): the plugin then gives its tests a session of their own on its JVM",
        pytrace=False)


@pytest.fixture
def stream_test(spark: Any) -> Iterator[StreamTests]:
    """A factory of StreamTests (``stream_test(df, output_mode=...)``), all cleaned up after the test."""
    _check_still_utc(spark)
    tests = StreamTests(spark)
    yield tests
    tests.close()
    left = [q.name for q in spark.streams.active if (q.name or "").startswith("stream_test_")]
    assert not left, f"streaming queries of stream_test still running after the test: {left}"
