"""StreamTest: run a streaming query one step at a time and check each batch's answer.

Spark's Scala suites test streaming queries with a ``StreamTest`` DSL; this is that for
Python. A :class:`StreamTest` runs the query with a private checkpoint and a sink that keeps
each batch's rows by batch id, so a batch replayed after a restart replaces itself instead
of counting twice. (Spark's memory sink cannot restart from a checkpoint in append or
update mode: measured on 4.3.) Steps return the test, so they chain; a failing check raises
``AssertionError`` naming the step, the batch, its watermark and the rows missing and
unexpected.
"""

from __future__ import annotations

import logging
import os
import re
import weakref
from itertools import count
from typing import Any, Sequence

import pandas as pd

from ..errors import CallbackFailureFilter, summarize_error
from ..options import check_output_mode
from ..progress import BatchProgress
from ..replay.late import input_column
from .checkpoint_log import next_watermark_ms
from .frames import check_utc_session
from .memory_source import batch_saver, release, batches_added, saved_batches, saved_rows
from .memory_stream import MemoryStream, end_stream_test
from .plan import output_mode_problem, plan_facts, runs_by_the_clock
from .private_folders import private_folder
from .progress_source import progress_json
from .starting import check_streaming_frame
from .stream_record import memory_late_rows
from .stream_answers import Columns, as_time, describe_rows, loose_rows, row_diff, show_time, state_row
from .watch import TEST_QUERY_PREFIX

__all__ = ["StreamTest", "FATES_CHECKED"]

#: The fates :meth:`StreamTest.check_late` can check (see :mod:`workbench.replay.late`).
FATES_CHECKED = ("dropped", "partial", "counted", "late")

_NAMES = count()

#: Spark's (internal) setting for the watermark-only batches of a running query.
_NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


class StreamTest:
    """Run ``df`` as a streaming query one step at a time, with exact per-batch answers.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The streaming query under test, usually built on :class:`MemoryStream` inputs.
    output_mode : {"append", "update", "complete"}, default "append"
    no_data_batches : bool, default True
        Whether :meth:`process` also runs the watermark-only batch Spark runs when the
        watermark moves (a query left running does). ``False`` runs exactly one batch
        per :meth:`process`, with everything added since, as the replay panel's Step
        does; the moved watermark then first acts on the next batch.

    Raises
    ------
    TypeError, ValueError
        For a DataFrame that is not streaming or an unknown output mode, before any query
        starts; ``ValueError`` with Spark's reason when the query cannot run in that mode.

    Examples
    --------
    >>> events = MemoryStream(spark, "event_time timestamp, word string")       # doctest: +SKIP
    >>> counts = (events.df.withWatermark("event_time", "10 minutes")          # doctest: +SKIP
    ...           .groupBy(F.window("event_time", "10 minutes"), "word").count())
    >>> with StreamTest(counts) as test:                                         # doctest: +SKIP
    ...     (test.add(events, [("2024-01-01 12:07", "dog")]).process().check_new_answer([])
    ...          .add(events, [("2024-01-01 12:21", "owl")]).process()
    ...          .check_watermark("2024-01-01 12:11")
    ...          .check_new_answer([(("2024-01-01 12:00", "2024-01-01 12:10"), "dog", 1)]))
    """

    def __init__(self, df: Any, output_mode: str = "append", *, no_data_batches: bool = True) -> None:
        check_streaming_frame(df)
        check_utc_session(df.sparkSession, "StreamTest")
        mode = check_output_mode(output_mode) or "append"
        problem = output_mode_problem(df, mode)
        if problem is not None:
            raise ValueError(f"Spark cannot run this query in {mode} mode: {summarize_error(problem)}")
        self.df = df
        self.output_mode = mode
        if not isinstance(no_data_batches, bool):
            raise TypeError(f"no_data_batches must be True or False, got {no_data_batches!r}")
        self.no_data_batches = no_data_batches
        self.columns = Columns(df.schema)
        self.plan = plan_facts(df)
        self._by_the_clock = runs_by_the_clock(df)
        # A frame straight from load() prints its source unresolved, without options: a projection resolves it.
        self._reads = getattr(plan_facts(df.select("*")), "memory_folders", ())
        self.name = f"{TEST_QUERY_PREFIX}{os.getpid()}_{next(_NAMES)}"
        self._folder = str(private_folder("stream-test-"))
        # A test dropped without close() (no ``with``, no fixture) stops its query when collected
        # too, before its folder goes: else the query ran on without its checkpoint.
        self._running: list[Any] = []
        self._gated: list[str] = []  # the memory streams' folders this test holds a gate in
        self.checkpoint = os.path.join(self._folder, "checkpoint")
        self._results = os.path.join(self._folder, "batches")
        self._saver = batch_saver(self._results)
        # While the query runs, py4j's log of its batch failing (a UDF's error) with a traceback
        # through the saver is dropped: the step says it in one line, with the whole text in details.
        self._quiet = CallbackFailureFilter(self._saver)
        self._cleanup = weakref.finalize(self, end_stream_test, self._running, self._gated, self.name, self._folder,
                                         self._quiet)
        os.makedirs(self._results)
        self._query: Any = None
        self._streams: list[MemoryStream] = []
        self._progress: dict[int, dict[str, Any]] = {}   # batch id -> Spark's progress JSON
        self._last_process: list[int] = []               # the batch ids the last process() ran
        self._held_back: tuple[int, list[int]] | None = None  # a once-run's batch and the offsets it read
        self._answered = -1                              # the last batch check_new_answer covered
        self._steps = 0
        self._step = ""

    # -- running ---------------------------------------------------------------------------

    def _begin(self, step: str) -> None:
        if not self._cleanup.alive:  # its folder is gone: a step would write a gate nobody lifts
            raise RuntimeError(f"{step} on a closed StreamTest: make a new StreamTest to run the query again")
        self._steps += 1
        self._step = f"step {self._steps}, {step}"

    def _start(self, once: bool = False) -> None:
        if self._query is not None and self._query.isActive:
            return
        logging.getLogger("py4j.clientserver").addFilter(self._quiet)  # once: addFilter skips one it has
        writer = (self.df.writeStream.queryName(self.name).outputMode(self.output_mode)
                  .option("checkpointLocation", self.checkpoint).foreachBatch(self._saver))
        if once:  # one batch, then the query ends: Spark's watermark-only batch never follows it
            writer = writer.trigger(once=True)
        if self.no_data_batches or once:
            self._query = writer.start()
            self._running[:] = [self._query]
            return
        # A query reads this setting when it starts (its session is cloned then), so it
        # is set only around the start: other queries of the session keep Spark's default.
        conf = self.df.sparkSession.conf
        before = conf.get(_NO_DATA_BATCHES, None)
        conf.set(_NO_DATA_BATCHES, "false")
        try:
            self._query = writer.start()
            self._running[:] = [self._query]
        finally:
            if before is None:
                conf.unset(_NO_DATA_BATCHES)
            else:
                conf.set(_NO_DATA_BATCHES, before)

    def add(self, stream: MemoryStream, rows: Any, *, empty_batch: bool = False) -> StreamTest:
        """Add ``rows`` to ``stream`` (see :meth:`MemoryStream.add`); the next :meth:`process` reads them.

        ``empty_batch=True`` with no rows makes the next :meth:`process` run a batch that
        reads nothing (a replay's batch of padding only).

        Examples
        --------
        >>> test.add(events, [("2024-01-01 12:07", "dog")])    # doctest: +SKIP
        """
        self._begin(f"add({len(rows) if hasattr(rows, '__len__') else '?'} rows)")
        if not isinstance(stream, MemoryStream):
            raise TypeError(f"add needs a workbench.testing.MemoryStream, got {type(stream).__name__}")
        if self._reads and stream.folder not in self._reads:  # its rows would reach no batch (empty: cannot tell)
            raise ValueError(f"add: the query under test does not read this MemoryStream ({stream!r}): add rows "
                             "to a stream its DataFrame was built from (stream.df)")
        if stream not in self._streams:
            # From now on the query reads what process() releases: added rows wait for it,
            # however long the step takes (the query runs between steps).
            release(stream.folder, stream.offset, self.name)
            self._streams.append(stream)
            self._gated.append(stream.folder)
        stream.add(rows, empty_batch=empty_batch)
        return self

    def _run(self, once: bool = False) -> None:
        before = max(self._progress, default=-1)
        # A processor in processing time has a batch run at every trigger: no batch would be the last.
        once = once or (self._by_the_clock and self.no_data_batches)
        if once:
            self._stop()  # before the rows are released: the running query must not start on them
        elif self._held_back is not None and self._watermark_only_batch_due():
            # A query started again from its checkpoint runs no watermark-only batch of its own
            # (measured on 4.3): with no rows added since, a batch that reads nothing stands in for it.
            self._streams[0].add([], empty_batch=True)
        held, self._held_back = self._held_back, None
        for stream in self._streams:
            release(stream.folder, stream.offset, self.name)  # every row added so far, and no further
        self._start(once)
        try:
            if once:
                self._query.awaitTermination()
            else:
                self._query.processAllAvailable()
        finally:
            self._collect_progress()
        self._last_process = [b for b in sorted(self._progress) if b > before]
        if once:  # a run that ran nothing (nothing added) leaves the batch held back as it was
            self._held_back = ((self._last_process[-1], [stream.offset for stream in self._streams])
                               if self._last_process else held)

    def _watermark_only_batch_due(self) -> bool:
        """Whether a running query would run a watermark-only batch after the held-back batch.

        It would when nothing was added since, the query keeps state and the batch moved the
        watermark: the watermark the next batch runs with, in the batch's commit, is later.
        """
        batch, offsets = self._held_back or (None, [])
        if batch is None or [stream.offset for stream in self._streams] != offsets or not self._streams:
            return False
        raw = self._progress.get(batch) or {}
        if not raw.get("stateOperators"):
            return False
        next_mark = next_watermark_ms(self.checkpoint, batch)
        mark = BatchProgress.from_json(raw).watermark
        ran_with = 0 if mark is None else int(pd.Timestamp(mark).value // 1_000_000)
        return next_mark is not None and next_mark > ran_with

    def _collect_progress(self) -> None:
        if self._query is None:
            return
        for progress in self._query.recentProgress:
            raw = progress_json(progress)
            if not BatchProgress.from_json(raw).is_idle_report:
                self._progress[int(raw["batchId"])] = raw

    def process(self, *, no_data_batch: bool = True) -> StreamTest:
        """Run until every row added so far is processed, and no further.

        That includes the no-data batch Spark runs when the watermark moves, so windows
        the watermark closed are already emitted.

        Parameters
        ----------
        no_data_batch : bool, default True
            ``False`` runs the rows added so far as one batch and stops there, without the
            watermark-only batch Spark would run next: what a running query does when the
            next rows arrive before that batch starts. The moved watermark then first acts
            on the next batch, which runs with the query started again from its checkpoint;
            a ``process()`` with no rows added since runs that watermark-only batch as a
            batch that reads nothing (an empty batch of the first stream added), since a
            query started again runs none of its own. A processor in processing time (Spark
            runs a batch for it at every trigger, data or not) is always processed so.

        Raises
        ------
        AssertionError
            When the query fails; one line with the step and Spark's reason.

        Examples
        --------
        >>> test.add(events, [("2024-01-01 12:21", "owl")]).process(no_data_batch=False)   # doctest: +SKIP
        """
        __tracebackhide__ = True  # pytest shows the failing step, not this method
        if not isinstance(no_data_batch, bool):
            raise TypeError(f"no_data_batch must be True or False, got {no_data_batch!r}")
        self._begin("process()" if no_data_batch else "process(no_data_batch=False)")
        try:
            self._run(once=not no_data_batch and self.no_data_batches)
        except Exception as exc:
            error = AssertionError(f"{self._where(failing=True)}: the query failed: {summarize_error(str(exc))}")
            error.details = str(exc)  # Spark's whole text: the Python traceback, the plan
            raise error from None
        return self

    def expect_failure(self, match: str) -> StreamTest:
        """Process, and check that the query fails with an error matching ``match`` (a regex).

        ``match`` is searched in the error's one line (what a failing check shows, e.g.
        ``ValueError: negative value -7``) and in Spark's error classes (e.g.
        ``CAST_INVALID_INPUT``), not in the rest of Spark's message: the query's plan and a
        Python traceback's source lines there would match the wrong failure.

        Examples
        --------
        >>> test.add(events, [(-7,)]).expect_failure(r"ValueError: negative value")    # doctest: +SKIP
        """
        __tracebackhide__ = True
        self._begin(f"expect_failure({match!r})")
        try:
            pattern = re.compile(match)
        except (re.error, TypeError) as exc:
            raise ValueError(f"match {match!r} is not a regular expression: {exc}") from None
        try:
            self._run()
        except Exception as exc:
            text = str(exc)
            searched = [summarize_error(text), *re.findall(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", text)]
            if not any(pattern.search(part) for part in searched):
                error = AssertionError(f"{self._where(failing=True)}: the query failed, but not with {match!r}: "
                                       f"{summarize_error(text)}")
                error.details = text
                raise error from None
            self._stop()
            return self
        raise AssertionError(f"{self._where()}: expected the query to fail with {match!r}, but it processed "
                             f"batches {self._last_process or 'none'} without error")

    def restart(self) -> StreamTest:
        """Stop the query and start it again from its checkpoint; state and offsets carry over."""
        __tracebackhide__ = True
        self._begin("restart()")
        self._stop()
        self._start()
        return self

    def _stop(self) -> None:
        if self._query is not None:
            try:
                self._query.stop()
            finally:
                self._collect_progress()
                self._query = None
                self._running.clear()
                logging.getLogger("py4j.clientserver").removeFilter(self._quiet)

    # -- what happened ---------------------------------------------------------------------

    def _batch_rows(self, batch_id: int) -> list[tuple[Any, ...]]:
        return saved_rows(self._results, batch_id)

    def _batches(self) -> list[int]:
        return saved_batches(self._results)

    @property
    def last_batch(self) -> int | None:
        """The id of the last batch that ran, or None before the first."""
        return max(self._progress, default=None)

    def watermark(self) -> pd.Timestamp | None:
        """The watermark the last batch reported (Spark's ``eventTime.watermark``), or None."""
        last = self.last_batch
        if last is None:
            return None
        record = BatchProgress.from_json(self._progress[last])
        return None if record.watermark is None else pd.Timestamp(record.watermark).tz_convert("UTC").tz_localize(None)

    def _where(self, failing: bool = False) -> str:
        """``step N, <step>, batch B, watermark W``: where a check or a batch failed."""
        last = self.last_batch
        batch = (0 if last is None else last + 1) if failing else last
        if batch is None:
            return f"{self._step}, before the first batch"
        mark = self.watermark()
        return f"{self._step}, batch {batch}, watermark {'none' if mark is None else show_time(mark)}"

    def _check(self, what: str, expected: Sequence[Any], actual: list[tuple[Any, ...]]) -> None:
        __tracebackhide__ = True
        missing, unexpected = row_diff(expected, actual)
        if missing or unexpected:
            verb = "differ" if what.endswith("rows") else "differs"
            raise AssertionError(f"{self._where()}: {what} {verb}\n  missing:\n{describe_rows(missing)}\n"
                                 f"  unexpected:\n{describe_rows(unexpected)}")

    # -- checks ----------------------------------------------------------------------------

    def check_new_answer(self, rows: Sequence[Any]) -> StreamTest:
        """Check the rows emitted since the previous answer check (order ignored).

        In complete mode each batch emits the whole table: the newest one emitted since the
        previous check (as Spark's Scala ``CheckNewAnswer`` reads the sink's latest batch).

        Examples
        --------
        >>> test.process().check_new_answer([(("2024-01-01 12:00", "2024-01-01 12:10"), "dog", 1)])  # doctest: +SKIP
        """
        __tracebackhide__ = True
        self._begin("check_new_answer()")
        expected = self.columns.rows(rows)
        new = [b for b in self._batches() if b > self._answered]
        shown = new[-1:] if self.output_mode == "complete" else new
        actual = [self.columns.row(r) for b in shown for r in self._batch_rows(b)]
        self._answered = max([self._answered, *new, self.last_batch if self.last_batch is not None else -1])
        self._check("the new answer", expected, actual)
        return self

    def batch_answers(self) -> dict[int, list[tuple[Any, ...]]]:
        """Each batch's rows, as the sink received them: ``{batch id: rows}`` (batches that emitted none too).

        Examples
        --------
        >>> test.add(events, [(1,)]).process().add(events, [(2,)]).process().batch_answers()  # doctest: +SKIP
        {0: [(1,)], 1: [(2,)]}
        """
        return {b: [self.columns.row(r) for r in self._batch_rows(b)] for b in self._batches()}

    def answer(self) -> list[tuple[Any, ...]]:
        """The whole result so far: every batch's rows; in complete mode the last batch's table."""
        batches = self._batches()
        if self.output_mode == "complete":
            batches = batches[-1:]
        return [self.columns.row(r) for b in batches for r in self._batch_rows(b)]

    def check_answer(self, rows: Sequence[Any]) -> StreamTest:
        """Check the whole result so far (order ignored); in complete mode the current table."""
        __tracebackhide__ = True
        self._begin("check_answer()")
        expected = self.columns.rows(rows)
        self._answered = max([self._answered, *self._batches()])
        self._check("the answer", expected, self.answer())
        return self

    def check_watermark(self, expected: Any) -> StreamTest:
        """Check the watermark the last batch reported (a time, e.g. ``"2024-01-01 12:11"``; None: none)."""
        __tracebackhide__ = True
        self._begin(f"check_watermark({expected!r})")
        want = None if expected is None else as_time(expected, "watermark")
        got = self.watermark()
        if want != got:
            shown = "none" if got is None else show_time(got)
            raise AssertionError(f"{self._where()}: the watermark is {shown}, expected "
                                 f"{'none' if want is None else show_time(want)}")
        return self

    def check_state(self, rows: Sequence[Any], operator: int | str | None = None,
                    variable: str | None = None, side: str | None = None) -> StreamTest:
        """Check the rows a stateful operator holds after the last batch (order ignored).

        Rows are given in the state inspector's columns (keys, then values, e.g.
        ``(window_start, window_end, word, count)``), as tuples or dicts.

        Parameters
        ----------
        rows : list of tuple or dict
        operator : int or str, optional
            The operator's id or name, when the query has several stateful operators.
        variable : str, optional
            For a ``transformWithState`` processor: the state variable to check (the name
            ``init`` gave it), read as ``handle.state(variable=...)`` reads it: the
            grouping key's columns, then the value's (a list state has one row per
            element, a map state one row per map key).
        side : {"left", "right"}, optional
            For a stream-stream join: the side whose buffered rows to check.

        Examples
        --------
        >>> test.process().check_state([("dog", 2)], variable="count")    # doctest: +SKIP
        """
        __tracebackhide__ = True
        named = [f"{k}={v!r}" for k, v in (("operator", operator), ("variable", variable), ("side", side))
                 if v is not None]
        self._begin(f"check_state({', '.join(named)})")
        if not os.path.isdir(self.checkpoint):  # the state reader would call it removed
            raise ValueError("check_state needs a processed batch: no batch has run yet (call process() first)")
        from .state import StateInspector

        inspector = StateInspector(self.df.sparkSession, self.checkpoint, name=self.name)
        table = inspector.state(operator=operator, side=side, variable=variable).drop(columns=["partition_id"],
                                                                                     errors="ignore")
        columns = list(table.columns)
        normal = loose_rows([state_row(r, columns) for r in rows], columns)
        actual = loose_rows([tuple(r) for r in table.itertuples(index=False, name=None)], columns)
        self._check(f"the state {columns}", normal, actual)
        return self

    def late_rows(self) -> pd.DataFrame:
        """Every input row the query's batches read behind the watermark, with its fate.

        The columns of ``workbench.replay.late.late_row_fates``, for a query of one input.

        Raises
        ------
        ValueError
            For a query that reads several inputs (a join or a union), or whose watermark is on
            a column it makes (renamed or computed) rather than an input column.
        """
        if not self._streams:
            return memory_late_rows(None, {}, [], self.plan, self.output_mode)
        inputs = max((len(raw.get("sources") or []) for raw in self._progress.values()), default=1)
        if inputs > 1 or len(self._streams) > 1:
            raise ValueError(f"late rows follow one input, and this query reads {max(inputs, len(self._streams))} "
                             "streams (a join or a union): check what came out with check_new_answer instead")
        offsets = {}
        for batch_id in sorted(self._progress):
            source = (self._progress[batch_id].get("sources") or [{}])[0]
            offsets[batch_id] = (batches_added(source.get("startOffset")), batches_added(source.get("endOffset")))
        records = [BatchProgress.from_json(self._progress[b]) for b in sorted(self._progress)]
        return memory_late_rows(self._streams[0], offsets, records, self.plan, self.output_mode)

    def check_late(self, rows: Sequence[Any], fate: str = "dropped") -> StreamTest:
        """Check the input rows the last :meth:`process` read behind the watermark.

        Parameters
        ----------
        rows : list of tuple or dict
            Input rows, in the memory stream's columns.
        fate : {"dropped", "partial", "counted", "late"}, default "dropped"
            ``dropped``: in no result; ``partial``: dropped from some sliding windows;
            ``counted``: late but still aggregated; ``late``: all of them.

        Raises
        ------
        ValueError
            For a query that reads several inputs (a join or a union): late rows are
            followed for a query of one input.
        """
        __tracebackhide__ = True
        self._begin(f"check_late(fate={fate!r})")
        if fate not in FATES_CHECKED:
            raise ValueError(f"unknown fate {fate!r}: use one of {', '.join(FATES_CHECKED)}")
        if not self._streams:
            raise ValueError("check_late needs rows added through test.add(stream, rows)")
        if self.plan is not None and not self.plan.has_watermark:  # else every check of rows said "missing"
            raise ValueError("check_late: this query has no watermark: no row can be late (give it one with "
                             "withWatermark, or check its answer with check_answer)")
        stream = self._streams[0]
        inputs = Columns(stream.schema)
        late = self.late_rows()
        late = late[late["batch_id"].isin(self._last_process)]
        if fate != "late":
            late = late[late["fate"] == fate]
        names = stream.schema.fieldNames()
        when = self.plan.watermark_column if self.plan is not None else None  # given back as event_time
        actual = [inputs.key(*(r["event_time"] if n == when else r[input_column(n)] for n in names))
                  for r in late.to_dict("records")]
        self._check(f"the {fate} late rows", inputs.rows(rows), actual)
        return self

    # -- cleanup ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the query and remove its checkpoint and kept batches. Safe to call twice."""
        try:
            self._stop()
        finally:
            self._cleanup()  # the query stopped, this test's gates lifted, its folder removed

    def __enter__(self) -> StreamTest:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<StreamTest {self.name} {self.output_mode} last_batch={self.last_batch}>"

