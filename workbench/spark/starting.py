"""Starting a stream: the checks before Spark is asked, the start itself, and its undo.

:func:`start_stream` validates a streaming DataFrame and the options of
:func:`workbench.start`, refuses a name held by a query the workbench did not start,
replaces an active stream of the same name, starts the query and registers its handle;
a start that fails or is interrupted leaves no query and no checkpoint folder of its own
behind. :func:`check_streaming_frame` is the first check, shared with the magics and the
replay controller.
"""

from __future__ import annotations

import logging
import os
import shutil
from typing import Any, Callable

from ..errors import StreamStartError, refusal_line
from ..options import check_name, check_output_mode, check_rows, check_seconds, check_sink, parse_trigger
from ..progress import ProgressHistory
from .checkpoint_log import batch_ids, local_checkpoint
from .plan import output_mode_problem, plan_facts, plan_text
from .progress_source import progress_json
from .private_folders import remove_folder
from .registry import SessionOwner, StreamRegistry
from .session import is_connect_session, session_target
from .session_end import spark_is_gone
from .handle import StreamHandle, StreamSpec
from .query_start import not_started, run_query
from .stopping import StreamInterrupted
from .watch import sink_kind

log = logging.getLogger(__name__)

__all__ = ["start_stream", "check_streaming_frame"]


def check_streaming_frame(df: Any) -> None:
    """Raise TypeError/ValueError unless ``df`` is a streaming pyspark DataFrame."""
    from pyspark.sql import DataFrame

    if not isinstance(df, DataFrame):
        raise TypeError(
            f"expected a streaming pyspark DataFrame (from spark.readStream...), got {type(df).__name__}"
        )
    if spark_is_gone(df.sparkSession):
        raise ValueError(
            "this DataFrame belongs to a Spark session that has stopped: "
            "build it again from workbench.session()"
        )
    if not df.isStreaming:
        raise ValueError(
            "this DataFrame is not streaming (it was built with spark.read, not spark.readStream): "
            "start streams from spark.readStream sources"
        )


def start_stream(
    owner: SessionOwner,
    registry: StreamRegistry,
    df: Any,
    name: str,
    *,
    sink: str = "memory",
    output_mode: str | None = None,
    trigger: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    rows: int = 20,
    truncate: bool = True,
    console: Callable[[str], None] | None = None,
    poll_interval: float | None = None,
    history: ProgressHistory | None = None,
    foreach_batch: Callable[[Any, int], None] | None = None,
    input_watermarks: bool = False,
) -> StreamHandle:
    """Validate, replace any active stream of the same name, start and register it.

    ``owner`` gives the polling settings, fresh checkpoints and the session's listener;
    the handle goes into ``registry``. The other options are those of
    :func:`workbench.start`, and two more: ``history`` lets a caller that restarts one
    query many times (the replay panel) keep a single history across the runs.
    ``foreach_batch(batch_df, batch_id)`` replaces the sink (the handle's sink is then
    ``"foreach_batch"``): the replay panel collects results this way because Spark's
    memory sink cannot restart from a checkpoint in append or update mode.

    Examples
    --------
    >>> env = current_env()                                          # doctest: +SKIP
    >>> handle = start_stream(env, env.registry, df, "counts")        # doctest: +SKIP
    """
    name = check_name(name)
    spec_sink = "foreach_batch" if foreach_batch is not None else check_sink(sink)
    mode = check_output_mode(output_mode)
    parsed_trigger = parse_trigger(trigger)
    rows = check_rows(rows)
    interval = check_seconds("poll_interval", owner.poll_interval if poll_interval is None else poll_interval)
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a folder path (a string or a Path), got {checkpoint!r}")
    if not isinstance(truncate, bool):
        raise TypeError(f"truncate must be True (cells cut at 20 characters) or False, got {truncate!r}")
    if not isinstance(input_watermarks, bool):
        raise TypeError(f"input_watermarks must be True or False, got {input_watermarks!r}")
    if console is not None and not callable(console):
        raise TypeError(f"console must be a function that takes each batch's text, got {console!r}")
    if checkpoint is not None and not str(checkpoint).strip():
        raise ValueError("checkpoint is empty: give a folder path, or leave it out for a private temporary one")
    if checkpoint is not None and "://" not in str(checkpoint):
        checkpoint = os.path.expanduser(checkpoint)  # Spark would make a folder named "~"
    check_streaming_frame(df)
    if spec_sink == "console" and is_connect_session(df.sparkSession):
        raise ValueError(
            f"the console sink cannot print here: under Spark Connect ({session_target(df.sparkSession).url}) "
            "it would run on the server and print each batch into the server's log; use the memory sink "
            f"and read the table instead (%stream result {name}, or workbench.stream({name!r}).result())"
        )
    inputs: tuple[Any, ...] = ()
    if input_watermarks:
        from .inputs import observe_inputs

        df, inputs = observe_inputs(df)  # only when asked: ordinary queries stay as written
    table_warn_rows = _table_warn_rows()
    with registry.lock:
        _refuse_foreign(registry, df.sparkSession, name, spec_sink)
        # Spark's own start-time check, run while the previous stream still runs, so that
        # a re-run Spark would refuse leaves the old stream as it was (classic sessions).
        problem = output_mode_problem(df, mode)
        if problem is not None:
            raise StreamStartError(f"Spark cannot start stream {name!r}: {refusal_line(problem, plan_text(df))}",
                                   problem)
        if session_target(df.sparkSession).on_this_machine:  # elsewhere a path may be the cluster's
            _check_checkpoint(checkpoint, name, spec_sink, mode)
        previous = registry.registered(name)
        replacing = previous is not None and previous.status == "active"
        # Made before the old stream stops: a checkpoint root that cannot take it leaves it running.
        folder = str(checkpoint) if checkpoint is not None else owner.new_checkpoint(name)
        try:
            registry.stop(name, missing_ok=True)
        except BaseException:
            if checkpoint is None:
                remove_folder(folder)
            raise
        spec = StreamSpec(
            name=name, sink=spec_sink, output_mode=mode, trigger=parsed_trigger,
            checkpoint=folder,
            rows=rows, truncate=bool(truncate), poll_interval=float(interval),
            history_cap=owner.history_cap, table_warn_rows=table_warn_rows,
        )
        facts = plan_facts(df)  # read before the start; None when the plan is unreadable
        resumed_from = _resumed_from(checkpoint)  # before Spark commits anything new
        try:
            handle = run_query(
                df.sparkSession, df, spec, console=console, on_event=registry.finished, history=history,
                foreach_batch=foreach_batch,
            )
        except StreamStartError as exc:
            if checkpoint is None:  # a refused query leaves no checkpoint folder behind
                shutil.rmtree(spec.checkpoint, ignore_errors=True)
            if replacing:
                raise StreamStartError(f"{exc} (the previous stream {name!r} was stopped)", exc.details) from None
            raise
        except BaseException:  # StreamInterrupted too: run_query stopped what it started (or stops it)
            if checkpoint is None:
                remove_folder(spec.checkpoint)  # and again if a query still stopping writes into it
            raise
        try:
            handle.plan = facts
            handle.resumed_from = resumed_from
            if inputs:
                from .inputs import watermark_policy

                handle.inputs, handle.watermark_policy = inputs, watermark_policy(df.sparkSession)
            watcher = owner.watcher
            if watcher is not None:
                # Its poller keeps its history complete (and fills in what the listener cannot
                # know, such as the console sink's row counts): no second copy. The listener
                # wakes the poller as each batch ends, so that it is drawn without waiting a tick,
                # and keeps the run's reports for a poll that comes after a burst of batches.
                handle.hear_from(watcher.recorder.release(handle.run_id, wake=handle.poller.wake))
        except KeyboardInterrupt:
            # Started but not yet registered: nobody could stop it later, so stop it now.
            stopped = _undo_start(handle, remove_checkpoint=checkpoint is None)
            raise StreamInterrupted(not_started(name, stopped=stopped)) from None
        registry.add(handle)
    registry.started(handle)
    return handle


def _undo_start(handle: StreamHandle, *, remove_checkpoint: bool) -> bool:
    """Stop a started query that was never registered; False when a second interrupt left it stopping."""
    stopped = True
    stopper = handle.begin_stop(0.0)
    if stopper is not None:
        try:
            stopper.wait()
        except KeyboardInterrupt:  # the stop runs on its own thread: it goes on
            stopped = False
    if remove_checkpoint:
        remove_folder(handle.checkpoint)  # and again if the stopping query writes into it
    return stopped


def _refuse_foreign(registry: StreamRegistry, spark: Any, name: str, sink: str) -> None:
    """Refuse a name held by an active query the workbench did not start: it is the user's.

    Refuse a memory-sink name that differs only in case from an active query's: Spark's
    table names ignore case, so the two would write one table.
    """
    handle = registry.registered(name)
    if sink == "memory" and handle is None and _users_table(spark, name):
        raise ValueError(
            f"stream name {name!r} is taken by a table or view the workbench did not make (spark.table({name!r}) "
            "reads it): a memory-sink stream of that name would replace it; choose another name")
    for query in spark.streams.active:
        other = query.name
        if sink == "memory" and other and other != name and other.lower() == name.lower():
            if not _may_write_a_table(registry, query):
                continue  # a console or file stream keeps no table
            raise ValueError(
                f"stream name {name!r} differs from the running query {other!r} only in case: Spark's memory "
                f"tables ignore case, so both would write one table; stop {other!r} first "
                f"(%stream stop {other}) or choose another name"
            )
        if other != name:
            continue
        if handle is not None and handle.started_by != "user" and handle.run_id == str(query.runId):
            continue  # an earlier start of this stream (or of its cell): replaced as usual
        raise ValueError(
            f"a streaming query named {name!r} that the workbench did not start is running; it is left "
            f"alone: stop it first (workbench.stream({name!r}).stop() or %stream stop {name}) or choose "
            "another name"
        )


def _users_table(spark: Any, name: str) -> bool:
    """Whether ``name`` is a table or view of the user's (not a memory sink's, as an earlier stream's is).

    Only a classic session's plan tells; under Spark Connect nothing is refused.
    """
    if is_connect_session(spark):
        return False
    try:
        if not spark.catalog.tableExists(name):
            return False
        text = plan_text(spark.table(name))  # the plan reader's wrapper of pyspark's private plan access
    except Exception:  # unreadable (a view over a dropped source): not ours to judge
        log.debug("could not read table %r", name, exc_info=True)
        return False
    return text is not None and "MemoryPlan" not in text


def _may_write_a_table(registry: StreamRegistry, query: Any) -> bool:
    """Whether an active query writes to a memory sink (or may: nothing says otherwise yet)."""
    known = registry.registered(query.name)
    if known is not None and known.run_id == str(query.runId):
        return known.sink == "memory"
    try:
        last = query.lastProgress
        description = progress_json(last).get("sink", {}).get("description") if last else None
    except Exception:
        description = None
    return description is None or sink_kind(description) == "memory"


def _check_checkpoint(checkpoint: str | os.PathLike[str] | None, name: str, sink: str, mode: str | None) -> None:
    """Refuse, in one line and before the old stream stops, a user's checkpoint Spark would refuse.

    A local path that is a file or cannot be made; and a memory sink's checkpoint that holds
    a query's offsets outside complete mode (Spark's memory sink restarts only in complete
    mode: "This query does not support recovering from checkpoint location").
    """
    folder = local_checkpoint(checkpoint)
    if folder is None:
        return
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"checkpoint {str(checkpoint)!r} is a file: give a folder (new or a checkpoint of this query)")
    parent = next(p for p in [folder, *folder.parents] if p.exists())
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"checkpoint {str(checkpoint)!r} cannot be made: {str(parent)!r} is not a folder you can "
                         "write; give another folder")
    if sink == "memory" and mode != "complete" and (folder / "offsets").is_dir():
        raise ValueError(
            f"stream {name!r} cannot restart from checkpoint {str(checkpoint)!r}: Spark's memory sink restarts from "
            f"a checkpoint in complete mode only, and this one is {mode or 'append'}; give a new folder, or leave "
            "--checkpoint (checkpoint=) out for a fresh temporary one")


def _resumed_from(checkpoint: str | os.PathLike[str] | None) -> int | None:
    """The batch a restart from a user's checkpoint continues with, or None for a fresh start.

    Read from the checkpoint's ``commits`` folder (one file per committed batch) before
    Spark adds to it; only local folders are read (None for other file systems).
    """
    ids = batch_ids(checkpoint, "commits")
    return ids[-1] + 1 if ids else None


def _table_warn_rows() -> int:
    """``WORKBENCH_TABLE_WARN_ROWS``: memory-table rows past which a stream warns (default 1,000,000)."""
    text = os.environ.get("WORKBENCH_TABLE_WARN_ROWS", "").strip()
    if not text:
        return 1_000_000
    if not text.isdigit():
        raise ValueError(
            f"WORKBENCH_TABLE_WARN_ROWS must be a whole number of rows (0 never warns), got {text!r}"
        )
    return int(text)
