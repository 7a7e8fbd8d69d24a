"""Saved experiments and side-by-side comparison tables (pure: files and pandas).

A saved run is a folder: ``spec.json`` (the source), ``query.json`` (how the query was
built), ``history.parquet``, ``results.parquet`` and ``late_rows.parquet``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .spec import Replay, Script, source_from_json

__all__ = ["SavedRun", "save_run", "load_run", "run_metrics", "output_delays", "NON_TIMING_COLUMNS"]

#: History columns that do not depend on wall-clock timing: equal across repeated runs.
NON_TIMING_COLUMNS: tuple[str, ...] = (
    "batch_id", "num_input_rows", "event_time_min", "event_time_max", "watermark", "state_rows_total",
    "state_rows_updated", "state_rows_removed", "state_rows_dropped_by_watermark", "num_output_rows",
)


@dataclass
class SavedRun:
    """A run read back from a folder, or taken from a live controller."""

    label: str
    source: Replay | Script | None
    query: dict[str, Any]
    history: pd.DataFrame
    results: pd.DataFrame
    late_rows: pd.DataFrame


def _windows_text(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for name in ("kept_windows", "dropped_windows"):
        if name in frame:
            frame[name] = frame[name].map(lambda spans: json.dumps([[str(s), str(e)] for s, e in spans]))
    return frame


def save_run(run: Any, folder: str | Path) -> Path:
    """Write a controller's run (``source``, ``describe_query``, ``history``, ``results``,
    ``late_rows``) to ``folder``; returns the folder."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    (target / "spec.json").write_text(run.source.to_json(), encoding="utf-8")
    (target / "query.json").write_text(json.dumps(run.describe_query(), indent=2, default=str), encoding="utf-8")
    run.history().to_parquet(target / "history.parquet", index=False)
    run.results().to_parquet(target / "results.parquet", index=False)
    _windows_text(run.late_rows()).to_parquet(target / "late_rows.parquet", index=False)
    return target


def load_run(folder: str | Path, label: str | None = None) -> SavedRun:
    """Read a folder written by :func:`save_run`.

    Raises
    ------
    ValueError
        When the folder is not a saved run.
    """
    source_folder = Path(folder)
    if not (source_folder / "history.parquet").exists():
        raise ValueError(f"{str(source_folder)!r} is not a saved replay run (no history.parquet): "
                         "save one with panel.save(folder)")
    late = pd.read_parquet(source_folder / "late_rows.parquet")
    for name in ("kept_windows", "dropped_windows"):
        if name in late:
            late[name] = late[name].map(lambda text: [tuple(pd.Timestamp(t) for t in pair) for pair in json.loads(text)])
    return SavedRun(
        label=label or source_folder.name,
        source=source_from_json((source_folder / "spec.json").read_text(encoding="utf-8")),
        query=json.loads((source_folder / "query.json").read_text(encoding="utf-8")),
        history=pd.read_parquet(source_folder / "history.parquet"),
        results=pd.read_parquet(source_folder / "results.parquet"),
        late_rows=late,
    )


def output_delays(history: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """How long each window waited to be output, one row per emitted window.

    A window is *complete in the data* from the first batch whose newest event time
    (``event_time_max``, running maximum) reaches the window's end. Its output delay is
    counted from there to the batch that first emitted it, in batches and in event time
    (the stream's newest event time at emission minus the window end). In append mode this
    is the price of the watermark: a 10-minute delay holds every window back by at least
    10 minutes of event time. In update and complete mode windows appear while still open,
    so delays can be negative.

    Parameters
    ----------
    history : pandas.DataFrame
        ``handle.history()``: ``batch_id`` and ``event_time_max``.
    results : pandas.DataFrame
        Emitted rows with ``batch_id`` and ``window_start``/``window_end`` columns.

    Returns
    -------
    pandas.DataFrame
        ``window_start, window_end, emitted_batch, complete_batch, delay_batches,
        delay_event_time``; empty when the results have no window columns.

    Examples
    --------
    >>> h = pd.DataFrame({"batch_id": [0, 1, 2],
    ...                   "event_time_max": pd.to_datetime(["12:07", "12:14", "12:21"], format="%H:%M")})
    >>> r = pd.DataFrame({"batch_id": [2], "window_start": pd.to_datetime(["12:00"], format="%H:%M"),
    ...                   "window_end": pd.to_datetime(["12:10"], format="%H:%M")})
    >>> output_delays(h, r)[["complete_batch", "emitted_batch", "delay_batches", "delay_event_time"]]
       complete_batch  emitted_batch  delay_batches delay_event_time
    0               1              2              1  0 days 00:11:00
    """
    columns = ["window_start", "window_end", "emitted_batch", "complete_batch", "delay_batches", "delay_event_time"]
    if not {"window_start", "window_end", "batch_id"} <= set(results.columns) or results.empty or history.empty:
        return pd.DataFrame(columns=columns)
    newest = history.sort_values("batch_id").set_index("batch_id")["event_time_max"].cummax()
    ends = newest.dropna()
    first = results.groupby(["window_start", "window_end"], as_index=False)["batch_id"].min()
    rows = []
    for window in first.itertuples(index=False):
        end = _like(window.window_end, newest)
        reached = ends[ends >= end]
        emitted = int(window.batch_id)
        at_emission = ends.loc[:emitted].max()  # missing without a watermark: Spark reports no event times then
        rows.append((window.window_start, window.window_end, emitted,
                     int(reached.index[0]) if len(reached) else None,
                     emitted - int(reached.index[0]) if len(reached) else None,
                     at_emission - end if pd.notna(at_emission) else None))
    frame = pd.DataFrame(rows, columns=columns)
    frame["delay_event_time"] = pd.to_timedelta(frame["delay_event_time"])
    return frame


def _like(value: Any, reference: pd.Series) -> pd.Timestamp:
    """``value`` as a Timestamp with the same time-zone awareness as ``reference``."""
    stamp = pd.Timestamp(value)
    tz = getattr(reference.dtype, "tz", None)
    if tz is not None and stamp.tzinfo is None:
        return stamp.tz_localize(tz)
    if tz is None and stamp.tzinfo is not None:
        return stamp.tz_convert(None)
    return stamp


def run_metrics(run: SavedRun) -> dict[str, Any]:
    """One column of a comparison table: rows dropped, state, output timing."""
    history, late = run.history, run.late_rows
    delays = output_delays(history, run.results)
    fates = late["fate"].value_counts() if len(late) else pd.Series(dtype="int64")
    data_rows = history[history["num_input_rows"] > 0]
    metrics = {
        "query": (run.query.get("query") or {}).get("text") or (run.query.get("query") or {}).get("name"),
        "batches": int(len(history)),
        "input rows": int(history["num_input_rows"].sum()),
        "rows emitted": int(history["num_output_rows"].fillna(0).sum()),
        "late rows": int(len(late)),
        "late rows dropped": int(fates.get("dropped", 0)),
        "late rows partial": int(fates.get("partial", 0)),
        "late rows counted": int(fates.get("counted", 0)),
        "Spark numRowsDroppedByWatermark": int(history["state_rows_dropped_by_watermark"].sum()),
        "max state rows": int(history["state_rows_total"].max()) if len(history) else 0,
        "final watermark": history["watermark"].iloc[-1] if len(history) else None,
        "first batch with output": (int(history.loc[history["num_output_rows"].fillna(0) > 0, "batch_id"].min())
                                    if (history["num_output_rows"].fillna(0) > 0).any() else None),
        "mean output delay (batches)": (float(delays["delay_batches"].dropna().mean())
                                        if delays["delay_batches"].notna().any() else None),
        "mean output delay (event time)": (delays["delay_event_time"].mean()
                                           if delays["delay_event_time"].notna().any() else None),
        "mean batch duration (ms)": float(history["trigger_execution_ms"].astype("float").mean())
        if len(history) else None,
        "data batches": int(len(data_rows)),
    }
    return metrics
