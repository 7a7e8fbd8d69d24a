"""The warm-up: the first streaming job's one-time cost, paid in the background.

The first micro-batch a fresh JVM runs is slow (1.2-2.9 s for batch 0, and the first query
~1.5-2x slower than later ones): classes load and the JIT compiles the streaming code paths
once. :class:`WarmUp` runs a tiny stateful query (a windowed count of a few generated rows
into the ``noop`` sink) for two batches, on a thread of its own, right after the workbench
builds a local session, so that the user's first stream finds those paths ready.

It runs in a session of its own (``spark.newSession()``): it shares the JVM, but not the
user's query manager, so it never appears in ``spark.streams.active``,
``workbench.streams()``, ``%stream list`` or the Streams panel, and the workbench's
listener never hears of it. The Spark UI lists every query of the JVM: there it is the
finished query named ``workbench warm-up``. Its checkpoint is a folder of the workbench's
private temporary folder.

It is off unless ``WORKBENCH_WARM_UP=1``: on a 2-core machine shared with other Spark jobs
(load average 15-30) it made the user's first batch end later, not sooner (it competes for
the same cores while the user's query starts; ``bench/bench_first_chart.py`` compares both).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

__all__ = ["WarmUp", "WARM_UP_NAME", "warm_up_wanted"]

log = logging.getLogger(__name__)

#: The warm-up query's name (what the Spark UI shows).
WARM_UP_NAME = "workbench warm-up"


def warm_up_wanted() -> bool:
    """Whether ``WORKBENCH_WARM_UP`` asks for the warm-up (``1``, ``true``, ``yes`` or ``on``; off by default).

    Examples
    --------
    >>> import os
    >>> os.environ["WORKBENCH_WARM_UP"] = "1"
    >>> warm_up_wanted()
    True
    >>> del os.environ["WORKBENCH_WARM_UP"]
    >>> warm_up_wanted()
    False
    """
    return os.environ.get("WORKBENCH_WARM_UP", "0").strip().lower() in ("1", "true", "yes", "on")


class WarmUp:
    """One background run of a tiny streaming query, stoppable at any time.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The user's session; the warm-up runs in a new session of the same JVM.
    checkpoint : str
        An empty folder for the warm-up query's checkpoint.
    batches : int, default 2
        Batches to run (batch 0 and one with state carried over).

    Examples
    --------
    >>> warm = WarmUp(spark, "/tmp/workbench-x/warm-up").start()     # doctest: +SKIP
    >>> warm.wait(60)                                                   # doctest: +SKIP
    True
    """

    def __init__(self, spark: Any, checkpoint: str, *, batches: int = 2) -> None:
        self._spark = spark
        self._checkpoint = checkpoint
        self._batches = batches
        self._stop = threading.Event()
        self._done = threading.Event()
        self._query: Any = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="workbench-warm-up", daemon=True)
        #: Seconds the warm-up took (None while it runs, or when it was stopped or failed).
        self.seconds: float | None = None

    def start(self) -> WarmUp:
        """Start the warm-up thread; returns self."""
        self._thread.start()
        return self

    @property
    def query(self) -> Any:
        """The warm-up's ``StreamingQuery`` once started (None before), for inspection."""
        with self._lock:
            return self._query

    @property
    def running(self) -> bool:
        """Whether the warm-up thread is alive."""
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the warm-up to end (done, stopped or failed); True when it has."""
        done = self._done.wait(timeout)
        if done and self._thread is not threading.current_thread():
            self._thread.join(5.0)  # its last lines after setting the event
        return done

    def stop(self, timeout: float = 0.0) -> None:
        """End the warm-up: its query is told to stop (on a thread of its own when ``timeout`` is 0)."""
        self._stop.set()
        with self._lock:
            query = self._query
        if query is not None:
            _stop_query(query, wait=timeout > 0)
        if timeout > 0 and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        began = time.monotonic()
        try:
            query = self._start_query()
            if query is None:
                return
            while not self._stop.wait(0.05):
                progress = query.lastProgress
                if progress is not None and progress["batchId"] >= self._batches - 1 or not query.isActive:
                    break
            _stop_query(query, wait=True)
            if not self._stop.is_set():
                self.seconds = time.monotonic() - began
                log.debug("the warm-up took %.1f s", self.seconds)
        except Exception:
            # The session ended under it, or Spark refused: nothing for the user to see.
            log.debug("the warm-up stopped on an error", exc_info=True)
        finally:
            self._done.set()

    def _start_query(self) -> Any:
        from pyspark.sql import functions as F

        session = self._spark.newSession()
        rows = (session.readStream.format("rate-micro-batch").option("rowsPerBatch", 5)
                .option("advanceMillisPerBatch", 1000).load())
        counts = (rows.withWatermark("timestamp", "1 second")
                  .groupBy(F.window("timestamp", "2 seconds"), (F.col("value") % 2).alias("key")).count())
        query = (counts.writeStream.format("noop").queryName(WARM_UP_NAME).outputMode("append")
                 .option("checkpointLocation", self._checkpoint).trigger(processingTime="0 seconds").start())
        with self._lock:
            self._query = query
            stopped = self._stop.is_set()
        if stopped:  # stop() came while the query started
            _stop_query(query, wait=True)
            return None
        return query


def _stop_query(query: Any, *, wait: bool) -> None:
    if wait:
        try:
            query.stop()
        except Exception:
            log.debug("stopping the warm-up query failed", exc_info=True)
    else:
        threading.Thread(target=_stop_query, args=(query,), kwargs={"wait": True}, daemon=True,
                         name="workbench-warm-up-stop").start()
