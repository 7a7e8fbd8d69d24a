"""What a monitor's static picture costs the kernel: the PNG a notebook keeps for viewers without widgets.

Run from the repository root::

    .venv/bin/python bench/bench_pictures.py [--pictures 10] [--rounds 3] [--batches 60]

A monitor publishes a picture of its four charts when its stream stops, after the cell that
started it (``nbconvert --execute``), on ``snapshot()``, and a replay panel after its steps
(``bench_panel_pictures.py``); each is drawn on the kernel's main thread. The grid here holds
``--batches`` batches of scripted progress (a windowed count with a watermark, one stateful
operator, every duration part), as a monitor's window does after a minute at one batch a
second; no Spark is needed. Arms, alternating in rounds, each drawing ``--pictures`` pictures:

- **as is**: :func:`workbench.views.pictures.grid_picture` (the grid's plain specs, each
  stacked bar trace one matplotlib collection);
- **through plotly figures**: the specs built and encoded as validated plotly figures first
  (``figure_spec(key, grid.figure(key))``), as before 2026-12-06;
- **plotly figures, a bar per artist**: that and the bars drawn by ``Axes.bar`` (a patch per
  bar), the picture as drawn before 2026-12-06.

Per arm: the process's CPU per picture (median over rounds) and the PNG's size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def scripted_grid(batches: int) -> Any:
    """A monitor's chart grid holding ``batches`` batches of a windowed count's progress."""
    from workbench.progress.records import DURATION_PARTS, BatchProgress
    from workbench.views.charts import ChartGrid
    from workbench.views.monitor_charts import chart_points, chart_specs, operator_traces

    def record(batch: int) -> BatchProgress:
        second = 1_000 + batch
        return BatchProgress.from_json({
            "batchId": batch, "numInputRows": 50, "inputRowsPerSecond": 50.0 + batch % 7,
            "processedRowsPerSecond": 120.0 + batch % 11,
            "durationMs": {**{part: 5 + (batch * (i + 3)) % 40 for i, part in enumerate(DURATION_PARTS)},
                           "triggerExecution": 150 + batch % 13},
            "eventTime": {"min": f"2024-01-01T00:{second // 60 % 60:02d}:{second % 60:02d}.000Z",
                          "max": f"2024-01-01T00:{second // 60 % 60:02d}:{second % 60:02d}.900Z",
                          "watermark": f"2024-01-01T00:{(second - 10) // 60 % 60:02d}:{(second - 10) % 60:02d}.000Z"},
            "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 20 + batch % 5,
                                "numRowsUpdated": 4, "numRowsRemoved": batch % 3,
                                "numRowsDroppedByWatermark": batch % 4, "memoryUsedBytes": 90_000 + batch}],
        })

    grid = ChartGrid(chart_specs(), window=batches)
    grid.add_traces("state", operator_traces(["stateStoreSave"]))
    grid.reset(chart_points([record(b) for b in range(batches)], 1))
    return grid


def bar_per_artist(ax: Any, x: Any, heights: Any, base: Any, colour: Any, label: Any) -> None:
    """The bars as drawn before 2026-12-06: ``Axes.bar``, one patch per bar."""
    ax.bar(x, heights, bottom=base, width=0.9, color=colour, label=label, linewidth=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pictures", type=int, default=10, help="pictures per arm and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the arms")
    parser.add_argument("--batches", type=int, default=60, help="batches in the monitor's window")
    args = parser.parse_args()

    from workbench.views import pictures
    from workbench.views.charts import figure_spec

    grid = scripted_grid(args.batches)
    bars = pictures._bars

    def through_figures() -> bytes:
        return pictures.figures_picture([figure_spec(key, grid.figure(key)) for key in grid.chart_keys()])

    def as_before() -> bytes:
        pictures._bars = bar_per_artist
        try:
            return through_figures()
        finally:
            pictures._bars = bars

    arms: dict[str, Callable[[], bytes]] = {
        "as is": lambda: pictures.grid_picture(grid),
        "through plotly figures": through_figures,
        "plotly figures, a bar per artist": as_before,
    }
    for draw in arms.values():  # imports, fonts and plotly's template: not measured
        draw()
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    size: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, draw in arms.items():
            start = time.process_time()
            for _ in range(args.pictures):
                size[name] = len(draw())
            cpu[name].append((time.process_time() - start) / args.pictures * 1000)
    print(f"a monitor's picture, {args.batches} batches in its window; {args.rounds} rounds of "
          f"{args.pictures} pictures per arm (CPU ms per picture each round, then the median)")
    for name, values in cpu.items():
        each = " ".join(f"{v:6.0f}" for v in values)
        print(f"  {name:34} {each}   median {statistics.median(values):6.0f} ms   PNG {size[name] / 1000:.0f} KB")


if __name__ == "__main__":
    main()
