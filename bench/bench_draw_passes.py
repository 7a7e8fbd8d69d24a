"""Ten monitors whose batches come at different times: the page's shared draw passes against a frame each.

Run from the repository root (needs Chromium, as ``workbench test`` does)::

    .venv/bin/python bench/bench_draw_passes.py [--seconds 30] [--rounds 3] [--variants passes,...]

Ten chart grids of the monitor's four charts (``workbench.views.monitor_charts.chart_specs``)
under one cell, all on screen, each fed a batch a second from a thread in the kernel, the
grids a tenth of a second apart: what a teaching page of ten streams, each with its own
trigger, gets (no Spark runs, so that only the page's drawing is measured; the browser-CPU
arm's "ten monitors" watch one stream, whose batches reach all ten grids at once). In rounds,
one after the other in one page, the order rotating from round to round:

- **passes**: as the page draws by default: the grids that have something to draw draw it
  together in one animation frame, a pass, the passes apart by 125 ms per grid that drew in
  the last two seconds, from 250 ms to a second (here a second: ten grids;
  ``extensions/src/charts.ts``);
- **passes 250 ms apart**: the same, the passes at least 250 ms apart however many grids
  draw (``data-workbench-passes="250"`` on the page), as before the gap grew with the grids;
- **a frame each**: each grid draws in the animation frame after its points arrive
  (``data-workbench-passes="frame"`` on the page), ten frames a second;
- **moves with all points** (not run unless ``--variants`` names it): passes as by default,
  and when plotly moves a chart's axes it redraws every point of the live traces' SVG under
  the canvas (``data-workbench-moves="all-points"``), not only their ends (``draw.ts``).

``--variants`` picks variants (comma-separated, in that order); the first three by default.
Phases of 60 s hold each chart's axis moves of a whole window (they come in bursts), so that
variants compare with as many moves each.

Per variant and round: Chromium's CPU per minute (all processes; the renderer and the GPU
process apart), as a share of one core, per grid update, the draw passes per second, and
the charts' axis moves and full draws per grid update.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import browser_cpu  # noqa: E402
from bench.bench_browser import notebook  # noqa: E402
from bench.lab import lab_and_browser  # noqa: E402
from bench.stats import rotated  # noqa: E402
from tests.browser_support import JS_KERNEL_IDLE, LabServer  # noqa: E402

NOTEBOOK = "bench_draw_passes.ipynb"
GRIDS = 10
#: The grids, and a thread that feeds grid i its batch k at k + i / 10 seconds (with a caption, as a monitor's).
CELLS = [
    "import datetime, threading, time\n"
    "import ipywidgets\n"
    "from workbench.progress.records import DURATION_PARTS\n"
    "from workbench.views.charts import ChartGrid\n"
    "from workbench.views.monitor_charts import chart_specs\n"
    f"grids = [ChartGrid(chart_specs(), window=60) for _ in range({GRIDS})]\n"
    "fed = 0\n"
    "stop = threading.Event()\n"
    "def feed():\n"
    "    global fed\n"
    "    start = time.monotonic()\n"
    "    while not stop.is_set():\n"
    f"        batch, grid = divmod(fed, {GRIDS})\n"
    f"        stop.wait(max(0.0, start + fed / {GRIDS} - time.monotonic()))\n"
    "        now = datetime.datetime.now(datetime.timezone.utc)\n"
    "        text = lambda seconds: (now - datetime.timedelta(seconds=seconds)).strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]\n"
    "        grids[grid].extend({\n"
    "            'watermark': ([batch], [[text(6)], [text(1)], [text(11)], [10.0 + batch % 3]]),\n"
    "            'latency': ([batch], [[5 + (batch * 7 + i) % 20] for i in range(len(DURATION_PARTS))] + [[120 + batch % 40]]),\n"
    "            'rates': ([batch], [[50.0 + batch % 5], [48.0 + batch % 7]]),\n"
    "        }, caption=f'<b>batch {batch}</b> · 50 rows/s · watermark {text(11)}')\n"
    "        fed += 1\n"
    "threading.Thread(target=feed, daemon=True).start()\n"
    "ipywidgets.VBox(grids)",
]
#: The page's newest draw pass that drew a grid (each grid's ``data-pass`` names the pass of its latest draw).
JS_PASSES = """() => Math.max(0, ...[...document.querySelectorAll('.workbench-chart-grid')]
  .map(grid => Number(grid.dataset.pass || 0)))"""


def _page(passes: str | None = None, moves: str | None = None) -> str:
    """JS that sets the page's ``data-workbench-passes`` and ``data-workbench-moves`` (None: removed)."""
    return ("() => { const page = document.documentElement.dataset; "
            + "".join(f"delete page.{key}; " if value is None else f"page.{key} = {json.dumps(value)}; "
                      for key, value in (("workbenchPasses", passes), ("workbenchMoves", moves)))
            + "}")


VARIANTS = {"passes": _page(), "passes 250 ms apart": _page(passes="250"), "a frame each": _page(passes="frame"),
            "moves with all points": _page(moves="all-points")}


def measure(lab: LabServer, browser: Any, seconds: float, rounds: int,
            variants: dict[str, str]) -> dict[str, list[dict[str, float]]]:
    """Each of ``variants``' phases (name -> the JS that switches the page to it), in rounds, in one page and kernel."""
    (lab.server_root / NOTEBOOK).write_text(json.dumps(notebook(CELLS)), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1700, "height": 12000})  # all forty charts on screen
    page = context.new_page()
    phases: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    try:
        page.goto(lab.notebook_url(NOTEBOOK) + "&reset")
        page.wait_for_function(JS_KERNEL_IDLE, timeout=120_000, polling=250)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        browser_cpu._run_cell(page, 0)
        page.wait_for_function(f"() => ({browser_cpu.JS_CHARTS_WITH_POINTS})() >= {3 * GRIDS}",
                               timeout=120_000, polling=250)
        page.mouse.move(1, 1)  # away from the charts (plotly draws every update of a chart under the pointer)
        for round_index in range(rounds):
            for name in rotated(list(variants), round_index):
                page.evaluate(variants[name])
                passes = page.evaluate(JS_PASSES)
                phase = browser_cpu._phase(page, cdp, "", seconds, "print(fed)")
                # _phase waited SETTLE_S before its measured seconds: the passes of both.
                phase["passes/s"] = (page.evaluate(JS_PASSES) - passes) / (seconds + browser_cpu.SETTLE_S)
                phases[name].append(phase)
        page.evaluate(browser_cpu.JS_KERNEL, "stop.set()")
    finally:
        browser_cpu.close_page(lab, context, NOTEBOOK)
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds per phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the variants")
    parser.add_argument("--variants", default=",".join(list(VARIANTS)[:3]),
                        help=f"comma-separated variants to measure, of: {', '.join(VARIANTS)}")
    args = parser.parse_args()
    if args.seconds <= 0 or args.rounds < 1:
        parser.error(f"--seconds must be > 0 and --rounds >= 1, got {args.seconds} and {args.rounds}")
    names = [name.strip() for name in args.variants.split(",") if name.strip()]
    unknown = [name for name in names if name not in VARIANTS]
    if unknown or not names:
        parser.error(f"--variants: unknown {unknown or args.variants!r}; choose from {', '.join(VARIANTS)}")
    with lab_and_browser("--js-flags=--expose-gc") as (lab, browser):
        phases = measure(lab, browser, args.seconds, args.rounds, {name: VARIANTS[name] for name in names})
    print(f"{GRIDS} grids of the monitor's four charts on screen, a batch a second each, "
          f"{1000 // GRIDS} ms apart; {args.rounds} rounds of {args.seconds:.0f} s per variant, "
          "each round, then the median")
    rows = [("Chromium CPU (s/min)", "cpu s/min", 1.0), ("  renderer (s/min)", "renderer s/min", 1.0),
            ("  GPU process (s/min)", "gpu-process s/min", 1.0), ("% of one core", "cpu s/min", 100 / 60),
            ("ms per grid update", "cpu ms/batch", 1.0), ("draw passes per second", "passes/s", 1.0),
            ("axis moves per grid update", "axis draws/batch", 1.0),
            ("full draws per grid update", "full draws/batch", 1.0)]
    for name, runs in phases.items():
        print(name)
        for label, key, scale in rows:
            values = [run[key] * scale for run in runs]
            print(f"  {label:26}" + "".join(f"{value:8.2f}" for value in values)
                  + f"   median {statistics.median(values):.2f}")


if __name__ == "__main__":
    main()
