"""The replay controller: play, pause, step and reset one query on a replay source.

A :class:`ReplayRun` owns one experiment: a :class:`~workbench.replay.Replay` or
:class:`~workbench.replay.Script`, the user's query, one checkpoint and one progress
history across every restart, and the results of every batch.

How the controls map onto Spark (measured on 4.3):

* **Step** starts the query with ``trigger(once=True)`` on the run's checkpoint and waits
  for it to end: exactly one more data batch, state carried over. ``availableNow`` would
  add a watermark-only batch after every step, which playing never runs on a
  ``rate-micro-batch`` source (it always has a next batch), so stepping with ``once``
  gives the same batch ids and results as playing.
* **Play** starts the same query with a processing-time trigger (batches per second) or
  back to back; **Pause** stops it (the state stays in the checkpoint).
* **Reset** stops, and starts over with a fresh checkpoint, history and results.

One limit follows from stepping by restarts: a query with several watermarks (a
stream-stream join) keeps only the global watermark in its checkpoint, not each input's
maximum event time. After a restart an input without rows yet counts as watermark 0, so
a step whose batch has rows on one side only cannot move the watermark (with the default
``min`` policy) where playing would move it. Compare such queries by playing them, or
script every batch that moves the watermark with rows on both sides (notebook 04 does).

Results are collected with ``foreachBatch``, one parquet folder per batch id: Spark's
memory sink refuses to restart from a checkpoint in append and update mode, and a
foreachBatch function that only writes files also works on Spark Connect (where it runs
on the server). A batch interrupted by a pause is not committed; Spark replays it on the
next start and its folder is overwritten, so each batch's output is kept exactly once.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..errors import ReplayError, StreamStartError, query_failed, replay_failed as _failed, summarize_error
from ..options import check_name, check_output_mode, check_seconds, check_sink
from ..progress import BatchProgress, ProgressHistory
from ..replay.late import late_totals, no_late_rows
from ..replay.spec import Replay, Script, WindowCount
from .checkpoint_log import uncommit_unreported
from .environment import Workbench, current_env
from .frames import flat_select
from .plan import output_mode_problem, plan_facts
from .private_folders import remove_folder
from .replay_late import classify_late_rows, next_watermark
from .replay_results import BatchResults, results_writer
from .replay_state import ReplayState
from .replay_source import build_stream, build_window_count, replay_input, script_input
from .replay_view import ReplayStreamView, StepReport, query_description
from .starting import check_streaming_frame
from .handle import StreamHandle
from .stopping import StreamInterrupted, wait_between_batches

__all__ = ["ReplayRun", "ReplayError"]

log = logging.getLogger(__name__)

QueryFunction = Callable[[Any], Any]


#: Seconds a pause waits for the running micro-batch to end before stopping anyway.
PAUSE_GRACE = 30.0


class ReplayRun(ReplayState):
    """Plays a query on a replay source: step, play, pause, reset; results and late rows.

    Parameters
    ----------
    source : Replay or Script
        The deterministic input.
    query : callable or WindowCount
        ``query(df) -> streaming DataFrame``, applied to the source's DataFrame.
    name : str
        The stream's name.
    output_mode : {"append", "update", "complete"}, optional
    sink : {"memory", "console"}, default "memory"
        Results are always collected; ``console`` also prints each batch (classic Spark).
    env : Workbench, optional
        Defaults to ``current_env()``.
    console : callable, optional
        Where console text goes.
    poll_interval : float, default 0.25

    Raises
    ------
    TypeError, ValueError
        For a bad source, name, mode or a query that does not return a streaming
        DataFrame, before any query starts.

    Examples
    --------
    >>> run = ReplayRun(scenarios.guide_word_count().source, scenarios.guide_word_count().query,
    ...                 name="words", output_mode="append")       # doctest: +SKIP
    >>> print(run.step())                                           # doctest: +SKIP
    >>> run.late_rows()                                             # doctest: +SKIP
    >>> run.close()                                                 # doctest: +SKIP
    """

    def __init__(
        self,
        source: Replay | Script,
        query: QueryFunction | WindowCount,
        *,
        name: str,
        output_mode: str | None = None,
        sink: str = "memory",
        env: Workbench | None = None,
        console: Callable[[str], None] | None = None,
        poll_interval: float = 0.25,
    ) -> None:
        if not isinstance(source, (Replay, Script)):
            raise TypeError(f"source must be a workbench.Replay or workbench.Script, got {type(source).__name__}")
        if not (callable(query) or isinstance(query, WindowCount)):
            raise TypeError(f"query must be a function from the source DataFrame to the result, got {query!r}")
        self.name = check_name(name)
        self.output_mode = check_output_mode(output_mode)
        self.sink = check_sink(sink)
        self.source = source
        self.query = query
        self.poll_interval = check_seconds("poll_interval", poll_interval)
        self.env = env or current_env()
        self._console = console if self.sink == "console" else None
        spark = self.env.session()
        self.input_df = build_stream(spark, source)
        try:
            result = build_window_count(self.input_df, query) if isinstance(query, WindowCount) else query(self.input_df)
        except Exception as exc:
            raise query_failed(exc) from exc
        try:
            check_streaming_frame(result)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"the query function must return a streaming DataFrame: {exc}") from None
        problem = output_mode_problem(result, self.output_mode)
        if problem is not None:
            raise StreamStartError(f"Spark cannot run replay {self.name!r}: {summarize_error(problem)}", problem)
        self.df = result
        self.plan = plan_facts(result)
        self._lock = threading.RLock()         # guards the run's state below
        self._action = threading.Lock()        # one control action at a time
        self._closed = False
        self._playing: StreamHandle | None = None
        self._stopping_play: StreamHandle | None = None  # the play run being stopped by a control
        self.handle: StreamHandle | None = None
        #: Called with no arguments after every reset (the panel rebuilds its monitor).
        self.on_reset: list[Callable[[], None]] = []
        #: Called with a StepReport after every step or pause (the panel's counters).
        self.on_report: list[Callable[[StepReport], None]] = []
        #: Called with the one-line error when a play run fails by itself (not at a step or pause).
        self.on_failed: list[Callable[[str], None]] = []
        self._input_cache: tuple[int, pd.DataFrame] | None = None
        self._fresh_state()

    # -- state ---------------------------------------------------------------------------

    def _fresh_state(self) -> None:
        with self._lock:
            self.checkpoint = self.env.new_checkpoint(self.name)
            # Read back by this process: always local, whatever the checkpoint root.
            self.results_dir = Path(self.env.new_temp_folder(f"{self.name}_results"))
            self.results_dir.mkdir(parents=True, exist_ok=True)
            #: Spark's own numbers, batch by batch, across every restart.
            self.raw_progress = ProgressHistory()
            #: The same batches with input rows counting scripted rows, not padding.
            self.progress = ProgressHistory()
            self._data_batches: list[int] = []
            #: late_rows() for (data batches, Spark records seen): a step, its report, the
            #: panel's summary and its chart overlay all ask for the same one.
            self._late_cache: tuple[tuple[int, int], pd.DataFrame] | None = None
            self._complete_tables: dict[int, pd.DataFrame] = {}
            self._error: str | None = None
            #: The committed batches' results, read back from :attr:`results_dir`.
            self.batch_output = BatchResults(self.results_dir, self.output_mode, self.raw_progress, self.progress)
            self._unsubscribe = self.raw_progress.subscribe(self._mirror)
            self.stream = ReplayStreamView(self, self.progress)

    def _mirror(self, records: list[BatchProgress]) -> None:
        """Copy Spark's records into :attr:`progress` with scripted input rows and output rows."""
        adjusted = []
        for record in records:
            record = dataclasses.replace(record, num_output_rows=self.batch_output.output_rows(record.batch_id))
            if record.num_input_rows > 0:
                index = len(self._data_batches)
                self._data_batches.append(record.batch_id)
                rows = self.source.scripted_rows(index + 1)[index]
                ratio = rows / record.num_input_rows
                record = dataclasses.replace(
                    record, num_input_rows=rows,
                    input_rows_per_second=None if not record.input_rows_per_second  # 0: a run's first batch (each step's)
                    else record.input_rows_per_second * ratio,
                    processed_rows_per_second=None if record.processed_rows_per_second is None
                    else record.processed_rows_per_second * ratio,
                )
            adjusted.append(record)
        self.progress.extend(adjusted)

    @property
    def status(self) -> str:
        """``"playing"``, ``"paused"`` (between steps or after a pause), ``"failed"`` or ``"closed"``."""
        self._check_playing()  # a play run that failed on its own
        with self._lock:
            if self._closed:
                return "closed"
            if self._error:
                return "failed"
            playing = self._playing
        if playing is not None and playing.status == "active":
            return "playing"
        return "paused"

    @property
    def error(self) -> str | None:
        """One line saying why the run failed, or None."""
        self._check_playing()
        return self._error

    @property
    def data_batches(self) -> int:
        """Data batches committed so far."""
        return len(self._data_batches)

    def _check_playing(self) -> None:
        playing = self._playing
        if playing is not None and playing.finished and playing.status == "failed":
            with self._lock:
                self._error = self._error or playing.error

    def _fail(self, error: str | None) -> str | None:
        """The run has failed (until reset): keep the first error; the run's stream ends (its
        monitor says "failed" and why, and its Stop goes disabled). Returns the error kept."""
        with self._lock:
            self._error = self._error or error
            error = self._error
        self.stream.finish()
        return error

    def _ensure_usable(self) -> None:
        if self._closed:
            raise ReplayError(f"replay {self.name!r} is closed: build a new panel to run it again")
        self._check_playing()
        if self._error:
            raise ReplayError(_failed(self.name, self._error))

    # -- controls ----------------------------------------------------------------------------

    def _start(self, trigger: str | None) -> StreamHandle:
        writer = results_writer(str(self.results_dir), self._console)
        handle = self.env.start(
            self.df, self.name, trigger=trigger, checkpoint=self.checkpoint, history=self.raw_progress,
            output_mode=self.output_mode, poll_interval=self.poll_interval, foreach_batch=writer,
        )
        self.handle = handle
        return handle

    def step(self, timeout: float = 120.0) -> StepReport:
        """Run exactly one more data batch and report what changed.

        Pauses first when playing. Returns once the batch is committed and its progress
        recorded.

        Raises
        ------
        ReplayError
            When the run failed (say why; ``reset()`` starts over), is closed, or the batch
            did not finish within ``timeout`` seconds.
        StreamInterrupted
            On a KeyboardInterrupt while the batch runs: the step's query is stopped in
            the background (its batch, not committed, runs again on the next step) and the
            run is paused, ready for the next step.
        """
        timeout = check_seconds("timeout", timeout)  # before the play run stops
        with self._action:
            self._ensure_usable()
            self._stop_playing()
            self._ensure_usable()  # the play run it stopped may have failed
            before = self.raw_progress.last_batch_id
            handle = self._start("once")
            try:
                finished = handle.wait_finished(timeout)
            except KeyboardInterrupt:
                raise self._interrupted_step(handle, before) from None
            if not finished:
                handle.stop()
                raise ReplayError(f"step of {self.name!r} did not finish within {timeout:g} s; it was stopped")
            if handle.status == "failed":
                self._fail(handle.error)
                raise ReplayError(_failed(self.name, handle.error))
            report = self._report(before)
        self._notify(report)
        return report

    def _interrupted_step(self, handle: StreamHandle, before: int | None) -> StreamInterrupted:
        """Stop an interrupted step's query without waiting for it; say what became of its batch."""
        handle.begin_stop(0.0)  # Spark waits for the running foreachBatch: not the user
        batch = 0 if before is None else before + 1
        last = self.raw_progress.last_batch_id
        if handle.finished and last is not None and last >= batch:
            return StreamInterrupted(f"interrupted: the step of replay {self.name!r} had already run batch {batch}")
        return StreamInterrupted(
            f"interrupted: the step of replay {self.name!r} was stopped before batch {batch} was committed; "
            "the next step runs it again"
        )

    def play(self, speed: float | None = None) -> None:
        """Run batches continuously: ``speed`` batches per second, or as fast as possible.

        Returns at once; :meth:`pause` stops.
        """
        if speed is not None and (isinstance(speed, bool) or not isinstance(speed, (int, float))
                                  or not 1 / 86_400 <= speed < float("inf")):  # NaN too; a trigger of a day at most
            raise ValueError(f"speed must be a number of batches per second, at least 1/86400 (one a day), or None "
                             f"for as fast as "
                             f"possible; got {speed!r}")
        with self._action:
            self._ensure_usable()
            self._stop_playing()
            self._ensure_usable()
            trigger = None if speed is None else f"{max(1, round(1000 / speed))} ms"
            self._play_before = self.raw_progress.last_batch_id
            self._playing = self._start(trigger)
            self._playing.on_finished(self._play_ended)

    def _play_ended(self, handle: StreamHandle) -> None:
        """A play run ended by itself (on its poller's thread): a failure is told at once."""
        if handle is not self._playing or handle is self._stopping_play or handle.status != "failed":
            return  # paused, stepped, reset or closed: whoever stopped it reports
        error = self._fail(handle.error)
        for callback in list(self.on_failed):
            try:
                callback(_failed(self.name, error))
            except Exception:
                log.exception("replay failure callback failed")

    def pause(self) -> StepReport | None:
        """Stop playing (state stays in the checkpoint); report what the play run did.

        The query is stopped right after a micro-batch ends (waiting up to
        :data:`PAUSE_GRACE` seconds), not in the middle of one, so that every batch that ran
        is in the history and the next step continues from the next batch id.

        Raises
        ------
        ReplayError
            When the play run it stopped had failed (a batch raised): says why; ``reset()``
            starts over.
        """
        with self._action:
            report = self._stop_playing()
            error = self._error if report is not None else None  # the play run this pause stopped had failed
        if report is not None:
            self._notify(report)
        if error is not None:
            raise ReplayError(_failed(self.name, error))
        return report

    def _stop_playing(self) -> StepReport | None:
        playing = self._playing
        if playing is None:
            return None
        # The play run stays this run's until it has stopped: an interrupt (or a stop Spark
        # could not carry out) leaves it "playing", and the next pause, reset or close stops it.
        try:
            wait_between_batches(playing.query, PAUSE_GRACE, self.name, or_next_report=True)
        except KeyboardInterrupt:
            raise StreamInterrupted(
                f"interrupted: replay {self.name!r} still plays (it was waiting for a batch to end); "
                "pause() again pauses it"
            ) from None
        self._end_play_run(0.0)
        if playing.status == "failed":
            self._fail(playing.error)
        else:
            uncommit_unreported(self.checkpoint, self.raw_progress.last_batch_id, self.name)
        return self._report(getattr(self, "_play_before", None))

    def _end_play_run(self, grace: float = 1.0) -> None:
        """Stop the play run, if any: it stays this run's until it has stopped (a stop that
        raises leaves it playing, for the next pause, reset or close)."""
        playing = self._playing
        if playing is None:
            return
        self._stopping_play = playing  # its end is this caller's to report
        try:
            playing.stop(grace=grace)
            self._playing = None
        finally:
            self._stopping_play = None

    def reset(self) -> None:
        """Stop, then start over: fresh checkpoint, empty history, no results."""
        with self._action:
            self._end_play_run()
            if (step := self._active_step()) is not None:
                step.stop()
            old = (self.checkpoint, self.results_dir)
            self._unsubscribe()
            self.stream.finish()
            self._input_cache = None
            self._fresh_state()
            self.handle = None
            for folder in old:
                remove_folder(folder)  # and again if the JVM's state store maintenance writes into it
        for callback in list(self.on_reset):
            try:
                callback()
            except Exception:
                log.exception("reset callback failed")

    def close(self) -> None:
        """Stop playing and end the run; its checkpoint goes (on this machine's disk, under a
        ``checkpoint_root`` too: a closed run never restarts from it), and its state with it; its
        results and history stay readable. When Spark cannot stop its query, the error is raised,
        the checkpoint stays (the query still writes there) and close() again tries again."""
        with self._action:
            step = self._active_step()
            if self._closed and self._playing is None and step is None:
                return  # closed, nothing left to stop
            stopped = False
            try:
                self._end_play_run()
                if step is not None:
                    step.stop()
                stopped = True
            finally:  # closed whatever Spark said; its error is raised (the stream is in workbench.streams())
                self._closed = True
                self._unsubscribe()
                self.stream.finish()
                # A query Spark could not stop still writes its checkpoint; a URI root (hdfs://,
                # s3a://) is Spark's to write, not ours.
                if stopped and "://" not in self.checkpoint:
                    remove_folder(self.checkpoint)

    def _active_step(self) -> StreamHandle | None:
        """A step's query still running (interrupted, or timed out), if any."""
        handle = self.handle
        return handle if handle not in (None, self._playing) and handle.status == "active" else None

    def _notify(self, report: StepReport) -> None:
        for callback in list(self.on_report):
            try:
                callback(report)
            except Exception:
                log.exception("report callback failed")

    # -- what happened -----------------------------------------------------------------------

    def _report(self, before: int | None) -> StepReport:
        records = [r for r in self.progress.records() if before is None or r.batch_id > before]
        return StepReport.of(records, self.progress.last(), self.late_rows(), self.next_watermark())

    def next_watermark(self) -> datetime | None:
        """The watermark the next batch will use (Spark reports it one batch late).

        :func:`next_watermark`'s; a batch without scripted rows (padding is none) leaves it as it was.
        """
        last, scripted = self.raw_progress.last(), self.progress.last()
        if last and scripted and last.batch_id == scripted.batch_id and last.watermark and not scripted.num_input_rows:
            return last.watermark  # however many inputs
        return next_watermark(last, self.plan)

    def history(self) -> pd.DataFrame:
        """Every batch since the last reset; ``num_input_rows`` counts scripted rows, ``spark_num_input_rows``
        Spark's (padding included); no input rate for a run's first batch (each step's: Spark says 0)."""
        frame = self.progress.to_frame()
        raw = {r.batch_id: r.num_input_rows for r in self.raw_progress.records()}
        frame.insert(4, "spark_num_input_rows", frame["batch_id"].map(raw).astype("int64"))
        return frame

    def batch_results(self) -> dict[int, pd.DataFrame]:
        """Each committed batch's output, by batch id (complete mode: the whole table)."""
        return self.batch_output.batch_results()

    def preview(self, rows: int) -> tuple[pd.DataFrame, int]:
        """The rows a monitor shows and the table's size; see :meth:`BatchResults.preview`.

        Examples
        --------
        >>> run.step(); run.preview(5)       # doctest: +SKIP
        """
        return self.batch_output.preview(rows)

    def results(self) -> pd.DataFrame:
        """What the query has output: every emitted row with its ``batch_id`` (append and
        update mode), or the latest complete table (complete mode)."""
        return self.batch_output.results()

    @property
    def result_columns(self) -> list[str]:
        """The columns of the query's results (struct columns split, as in :meth:`results`)."""
        return list(flat_select(self.df).columns)

    def _inspector(self) -> Any:
        if self._closed:
            raise ReplayError(f"replay {self.name!r} is closed: its state went with its checkpoint")
        if self.raw_progress.last_batch_id is None:
            raise ValueError(f"replay {self.name!r} has run no batch yet, so it holds no state: step or play first")
        from .state import inspector_for

        return inspector_for(self.env.session(), self.checkpoint, name=self.name, progress=self.raw_progress,
                             result_columns=self.df.columns)

    def inputs(self) -> pd.DataFrame:
        """The input rows of every data batch so far (scripted rows only, for a Script)."""
        count = len(self._data_batches)
        cached = self._input_cache
        if cached is not None and cached[0] == count:
            return cached[1]
        frame = (script_input(self.source, count) if isinstance(self.source, Script)
                 else replay_input(self.env.session(), self.source, count))
        self._input_cache = (count, frame)
        return frame

    def late_rows(self) -> pd.DataFrame:
        """Every input row that arrived behind the watermark, with its fate.

        Columns: ``batch`` (data batch index), ``batch_id``, ``value``, ``event_time`` (the
        time in the watermark's column, e.g. ``timestamp``; none for a column the query
        makes), ``watermark`` (the one Spark filtered it against), ``fate`` (``dropped``,
        ``partial`` or ``counted``), ``kept_windows`` and ``dropped_windows``, then the
        source's other columns. See :mod:`workbench.replay.late` for the rules.
        """
        key = (len(self._data_batches), self.raw_progress.total)
        cached = self._late_cache
        if cached is None or cached[0] != key:
            records, ids, inputs = self.raw_progress.records(), list(self._data_batches), self.inputs()
            # Late by the watermark's column (``timestamp`` too); one the query makes tells none.
            column = (self.plan.watermark_column if self.plan is not None else None) or self.source.event_time
            late = (classify_late_rows(inputs, event_time=column, records=records, data_batches=ids,
                                       plan=self.plan, output_mode=self.output_mode)
                    if column in inputs.columns else no_late_rows(inputs, column))
            cached = self._late_cache = (key, late)
        return cached[1].copy()

    def late_summary(self) -> dict[str, Any]:
        """Late rows by fate next to Spark's ``numRowsDroppedByWatermark`` total, with why they differ."""
        spark_total = sum(r.state_rows_dropped_by_watermark for r in self.raw_progress.records())
        return late_totals(self.late_rows(), spark_total)

    describe_query = query_description  #: how the query was built, for saved experiments

    def __repr__(self) -> str:
        return f"<ReplayRun {self.name!r} {self.status} batches={self.data_batches}>"
