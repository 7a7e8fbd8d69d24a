"""What a live stream over a memory stream did, batch by batch: the facts a recorded test checks.

:func:`live_steps` reads a stream the workbench started (``workbench.start`` or a
``%%stream`` cell) whose input is one :class:`~workbench.spark.memory_stream.MemoryStream`:
which rows each batch read (the source offsets in the query's checkpoint, ``offsets/<batch>``),
the rows it emitted (the memory sink's table, cut into batches by each batch's
``numOutputRows``: Spark's memory sink keeps rows in batch order), the watermark it reported
and the fates of its late rows. :func:`memory_late_rows` tells those fates, for a live
stream and for a :class:`~workbench.spark.stream_test.StreamTest` alike.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd

from ..progress import BatchProgress
from ..replay.late import input_column
from .memory_stream import MemoryStream
from .replay_late import classify_late_rows

__all__ = ["memory_late_rows", "live_steps", "checkpoint_offsets", "input_stream"]


def memory_late_rows(stream: Any, offsets: dict[int, tuple[int, int]], records: list[BatchProgress], plan: Any,
                     output_mode: str | None) -> pd.DataFrame:
    """Every row of ``stream`` that its batches read behind the watermark, with its fate.

    Parameters
    ----------
    stream : MemoryStream or None
        The input whose rows the batches read.
    offsets : dict
        ``{batch id: (start, end)}``: the stream's offsets each batch read.
    records : list of BatchProgress
        The batches' progress.
    plan : PlanFacts or None
    output_mode : str or None

    Returns
    -------
    pandas.DataFrame
        The columns of ``workbench.replay.late.late_row_fates``; the event-time column is
        named ``event_time`` whatever the input calls it.

    Examples
    --------
    >>> memory_late_rows(events, {0: (0, 1), 1: (1, 2)}, handle.progress.records(), handle.plan,
    ...                  "append")                                                   # doctest: +SKIP
    """
    if stream is None or plan is None or plan.watermark_column is None:
        return pd.DataFrame(columns=["batch", "batch_id", "value", "fate"])
    names = stream.schema.fieldNames()
    if plan.watermark_column not in names:
        raise ValueError(
            f"late rows are told from the input's rows, but the watermark's column {plan.watermark_column!r} is made "
            f"in the query (renamed or computed), not one of the input's columns {names}: put the watermark on "
            "an input column to check late rows")
    added = stream.batches()
    inputs, data_batches = [], []
    for batch_id in sorted(offsets):
        start, end = offsets[batch_id]
        rows = [row for batch in added[start:end] for row in batch]
        if not rows:
            continue
        for row in rows:
            inputs.append({"batch": len(data_batches), **dict(zip(names, row))})
        data_batches.append(batch_id)
    frame = pd.DataFrame(inputs, columns=["batch", *names])
    if "value" not in frame.columns:  # late_row_fates orders rows by ``value``; an input's own one serves
        frame.insert(1, "value", range(len(frame)))
    return classify_late_rows(frame, event_time=plan.watermark_column, records=records,
                              data_batches=data_batches, plan=plan, output_mode=output_mode)


def checkpoint_offsets(checkpoint: str, name: str) -> dict[int, int]:
    """``{batch id: the memory stream's offset it read to}`` from a checkpoint's offset log.

    Raises
    ------
    ValueError
        When the checkpoint is not a local folder, or the query reads other or several inputs.

    Examples
    --------
    >>> checkpoint_offsets(handle.checkpoint, handle.name)      # doctest: +SKIP
    {0: 1, 1: 1, 2: 2}
    """
    path = checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint
    folder = os.path.join(path, "offsets")
    if not os.path.isdir(folder):
        raise ValueError(f"stream {name!r} has no offset log in a local folder ({checkpoint!r}): record reads "
                         "the checkpoint of a stream started on this machine")
    ends = {}
    for entry in os.listdir(folder):
        if not entry.isdigit():
            continue
        with open(os.path.join(folder, entry), encoding="utf-8") as handle:
            lines = handle.read().splitlines()[2:]
        try:
            offsets = [json.loads(line) for line in lines if line.strip()]
        except ValueError:
            offsets = []
        if len(offsets) != 1 or not isinstance(offsets[0], dict) or set(offsets[0]) != {"added"}:
            raise ValueError(f"stream {name!r} does not read exactly one workbench.testing.MemoryStream (batch "
                             f"{entry} read {lines}): record replays a stream over one MemoryStream")
        ends[int(entry)] = int(offsets[0]["added"])
    return ends


def input_stream(handle: Any) -> Any:
    """The :class:`~workbench.spark.memory_stream.MemoryStream` ``handle``'s query reads, found from its plan.

    Raises
    ------
    ValueError
        When the plan is unknown, names no memory stream or several, or the stream was closed.

    Examples
    --------
    >>> input_stream(handle).rows()                              # doctest: +SKIP
    [(datetime.datetime(2024, 1, 1, 12, 7), 'dog')]
    """
    folders = handle.plan.memory_folders if handle.plan is not None else None
    if folders is None:
        raise ValueError(f"the plan of stream {handle.name!r} is unknown, so its input cannot be found: pass "
                         "stream=<the workbench.testing.MemoryStream it reads>")
    if len(folders) != 1:
        raise ValueError(f"stream {handle.name!r} reads {len(folders)} workbench.testing.MemoryStreams "
                         f"({', '.join(folders) or 'none'}): record replays a stream over exactly one")
    return MemoryStream.at(handle.spark, folders[0])


def live_steps(handle: Any, stream: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """What each data batch of ``handle``'s stream read, emitted, reported and dropped.

    Returns
    -------
    (list of dict, list of str)
        One dict per data batch: ``rows`` (input tuples), ``new_answer`` (result rows, as
        dicts of the memory table's flat columns, its own and those of the watermark-only
        batches that followed it), ``watermark`` (the last of those batches'), ``late``
        (``{fate: input tuples}``) and ``no_data_batch`` (whether a watermark-only batch
        followed it before the next rows); and the result's columns.

    Raises
    ------
    ValueError
        For a stream this cannot replay, with the reason.

    Examples
    --------
    >>> steps, columns = live_steps(handle, events)             # doctest: +SKIP
    >>> [(len(s["rows"]), s["no_data_batch"]) for s in steps]   # doctest: +SKIP
    [(2, True), (1, False)]
    """
    if handle.sink != "memory":
        raise ValueError(f"stream {handle.name!r} writes to the {handle.sink} sink: record needs a memory-sink "
                         "stream, whose table holds what each batch emitted")
    if handle.output_mode == "complete":
        raise ValueError(f"stream {handle.name!r} runs in complete mode, whose memory table keeps only the "
                         "latest batch's rows: record needs append or update mode")
    records = sorted(handle.progress.records(), key=lambda r: r.batch_id)
    ends = checkpoint_offsets(handle.checkpoint, handle.name)
    records = [r for r in records if r.batch_id in ends]
    if not records:
        raise ValueError(f"stream {handle.name!r} has run no batch yet: add rows and let it process them first")
    if records[0].batch_id != 0 or [r.batch_id for r in records] != list(range(len(records))):
        raise ValueError(f"stream {handle.name!r}'s history does not start at batch 0 or has gaps "
                         f"({[r.batch_id for r in records][:10]}...): record needs every batch since the start")
    table = handle.result()
    emitted = sum(r.num_output_rows or 0 for r in records)
    if len(table) < emitted:
        raise ValueError(f"stream {handle.name!r}'s table holds {len(table)} rows, fewer than the {emitted} its "
                         "batches reported: record needs the table of this run alone")
    answers, at = {}, 0
    for record in records:
        answers[record.batch_id] = table.iloc[at:at + (record.num_output_rows or 0)].to_dict("records")
        at += record.num_output_rows or 0
    offsets = {r.batch_id: (ends.get(r.batch_id - 1, 0), ends[r.batch_id]) for r in records}
    names = stream.schema.fieldNames()
    event_time = handle.plan.watermark_column if handle.plan is not None else None
    # A watermark on a column the query makes: the recorded test checks no late rows.
    told = event_time is None or event_time in names
    late = memory_late_rows(stream if told else None, offsets, records, handle.plan, handle.output_mode)
    added = stream.batches()
    steps: list[dict[str, Any]] = []
    for record in records:
        start, end = offsets[record.batch_id]
        if end > start:
            batch_late = late[late["batch_id"] == record.batch_id] if len(late) else late
            steps.append({
                "rows": [row for batch in added[start:end] for row in batch],
                "new_answer": list(answers[record.batch_id]), "watermark": record.watermark,
                "late": _fates(batch_late, names, event_time) if told else None,
                "no_data_batch": False,
            })
        elif steps:  # a watermark-only batch: it belongs to the step before it
            steps[-1]["new_answer"] += answers[record.batch_id]
            steps[-1]["watermark"] = record.watermark
            steps[-1]["no_data_batch"] = True
    return steps, list(table.columns)


def _fates(late: pd.DataFrame, names: list[str], event_time: str | None) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for record in late.to_dict("records"):
        row = tuple(record["event_time"] if n == event_time else record[input_column(n)] for n in names)
        out.setdefault(record["fate"], []).append(row)
    return out
