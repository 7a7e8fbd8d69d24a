"""How soon the page shows a stream: first chart after "Run all", and each batch's freshness.

Run from the repository root (needs Chromium, as ``workbench test`` does)::

    .venv/bin/python bench/bench_first_chart.py [--runs 3] [--batches 30]

Starts a private JupyterLab (tests/browser_support.py) and drives it in headless Chromium:

- **first chart after "Run all"**: a copy of ``notebooks/00-quickstart.ipynb`` opened in a
  fresh kernel; from the "Run all" command to the first point in a chart's plotly data in
  the page (Spark's start included), ``--runs`` times in each arm of :data:`ARMS`, their
  order rotating from run to run, each run in a kernel of its own: with the class data
  archive (the default; made first if missing), without it (``WORKBENCH_CLASS_ARCHIVE=0``),
  and with it and the background warm-up (``WORKBENCH_WARM_UP=1``). The page keeps the
  monitor in view, as a user watching it would ("Run all" scrolls on to the last cell). Its
  parts: "Run all" to ``workbench.session()`` returning (the first cell), to the first
  stream's start, to the end of its batch 0 (progress ``timestamp`` + ``batchDuration``),
  and from there to the point in the page;
- **every notebook** (``--notebooks [NAME ...]``, instead of the above): what a user sees
  after "Run all" in a fresh kernel, once for each notebook of ``notebooks/`` as it is (or
  those whose names start with a NAME): the time to the first chart that gains a point,
  wherever it lies in the notebook (the page is tall enough to show every output, as
  charts draw only where they can be seen), which code cell drew it, the time the whole
  notebook takes, and the first cell that failed ("no chart" for a notebook whose
  streams draw none: their panels show tables only);
- **freshness**: the stream of ``bench_browser.py`` (20 rows per batch, a windowed count,
  a batch every 0.5 s, the default poll interval of 0.5 s) with one monitor; for each
  batch, from its end to its point in the page's plotly data, with its two parts: the
  wait for the batch's record to reach the kernel's history (Spark's progress event and
  the poller it wakes) and from there to the page.

Targets (issue budget): first chart <= 8 s on a quiet 2-core machine; freshness p95 <= 250 ms.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_browser import JS_WATCH_FRESHNESS, SETUP, TRIGGER, Page, notebook  # noqa: E402
from bench.lab import lab_and_browser  # noqa: E402
from bench.stats import p95, rotated  # noqa: E402
from tests.browser_support import LabServer, page_context  # noqa: E402

#: When the first chart of the page first holds a point (Date.now(), in the page). Charts
#: draw only where they can be seen, and "Run all" scrolls the notebook on to its last cell:
#: like a user watching the monitor, the page keeps the first chart grid in view.
JS_WATCH_FIRST_POINT = """() => {
  window.__firstPoint = null;
  const tick = () => {
    const grid = document.querySelector('.jp-OutputArea-output .workbench-charts');
    if (grid) grid.scrollIntoView({block: 'center'});
    for (const gd of document.querySelectorAll('.jp-OutputArea-output .js-plotly-plot')) {
      if ((gd.data || []).some(trace => (trace.x || []).length > 0)) { window.__firstPoint = Date.now(); return; }
    }
    requestAnimationFrame(tick);
  };
  tick();
}"""

JS_RUN_ALL = """() => { const at = Date.now(); window.jupyterapp.commands.execute('notebook:run-all-cells'); return at; }"""

#: The kernel's side of the first chart: when the session was there, the stream started, batch 0 ended.
KERNEL_TIMES = """import json, workbench
from workbench.spark import current_env
h = workbench.stream('numbers')
r = h.progress.records()[0]
print(json.dumps({"session": SESSION_AT, "stream": h.started_at.timestamp(),
                  "batch 0 end": r.timestamp.timestamp() + (r.batch_duration_ms or 0) / 1000}))"""

#: A first cell that notes when ``workbench.session()`` returned (the quickstart's own first cell, plus one line).
SESSION_MARK = "\nimport time as _time\nSESSION_AT = _time.time()\n"

#: The first chart's arms: the environment the notebook's first cell sets before the session.
#: The class data archive is made (if missing) before the first run; the warm-up is off by default.
ARMS = {
    "class archive": {"WORKBENCH_CLASS_ARCHIVE": "1", "WORKBENCH_WARM_UP": "0"},
    "no class archive": {"WORKBENCH_CLASS_ARCHIVE": "0", "WORKBENCH_WARM_UP": "0"},
    "class archive + warm-up": {"WORKBENCH_CLASS_ARCHIVE": "1", "WORKBENCH_WARM_UP": "1"},
}


def quickstart_copy(lab: LabServer, name: str, environ: dict[str, str]) -> None:
    book = json.loads((ROOT / "notebooks" / "00-quickstart.ipynb").read_text(encoding="utf-8"))
    first = next(cell for cell in book["cells"] if cell["cell_type"] == "code")
    source = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    first["source"] = f"import os\nos.environ.update({environ!r})\n" + source + SESSION_MARK
    (lab.server_root / name).write_text(json.dumps(book), encoding="utf-8")


def end_kernel(lab: LabServer, name: str) -> None:
    for session in lab.api("GET", "/api/sessions") or []:
        if session.get("path", "").endswith(name):
            lab.api("DELETE", f"/api/sessions/{session['id']}", timeout=60)


def first_chart(lab: LabServer, context: Any, index: int, arm: int, timeout: float) -> dict[str, float]:
    name = f"first-chart-{index}-{arm}.ipynb"
    quickstart_copy(lab, name, list(ARMS.values())[arm])
    page = Page(context, lab, name)
    try:
        page.page.evaluate(JS_WATCH_FIRST_POINT)
        clicked = page.page.evaluate(JS_RUN_ALL) / 1000
        deadline = time.monotonic() + timeout
        while page.page.evaluate("() => window.__firstPoint") is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no chart after {timeout:.0f} s")
            page.page.wait_for_timeout(50)
        shown = page.page.evaluate("() => window.__firstPoint") / 1000
        # The rest of the notebook runs on; its last cells stop the streams.
        page.page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.widgets"
                                    ".every(c => c.model.type !== 'code' || c.model.executionCount !== null)",
                                    timeout=timeout * 1000, polling=250)
        times = json.loads(page.kernel(KERNEL_TIMES))
        return {"first chart": shown - clicked, "session": times["session"] - clicked,
                "stream started": times["stream"] - clicked, "batch 0 ended": times["batch 0 end"] - clicked,
                "drawn after batch 0": shown - times["batch 0 end"]}
    finally:
        page.page.close()
        end_kernel(lab, name)


#: For ``--notebooks``: which chart of the page first holds a point, and when "Run all" has
#: run its course. The page is tall enough to hold every output at once (charts draw, and
#: the kernel sends them points, only where they can be seen), so the first chart that
#: gains a point is found wherever it lies, not only in the first grid. "Run all" has run
#: its course once a cell was seen running and none is running or queued any more (after
#: an error the kernel skips the rest, which then end as not run).
JS_WATCH_NOTEBOOK = """() => {
  const cells = () => window.jupyterapp.shell.currentWidget.content.widgets.filter(c => c.model.type === 'code');
  window.__firstPoint = null; window.__firstCell = null; window.__busy = false; window.__done = null;
  window.__firstFrame = null;
  const tick = () => {
    const now = Date.now();
    const all = cells();
    if (window.__firstFrame === null
        && document.querySelector('.jp-OutputArea-output .workbench-monitor, .jp-OutputArea-output .workbench-replay-panel')) {
      window.__firstFrame = now;
    }
    if (window.__firstPoint === null) {
      all.forEach((cell, index) => {
        if (window.__firstPoint !== null) return;
        for (const gd of cell.node.querySelectorAll('.jp-OutputArea-output .js-plotly-plot')) {
          if ((gd.data || []).some(trace => (trace.x || []).length > 0)) {
            window.__firstPoint = now; window.__firstCell = index; return;
          }
        }
      });
    }
    const running = all.some(c => c.model.executionState === 'running');
    if (running) window.__busy = true;
    if (window.__busy && !running && window.__done === null) window.__done = now;
    if (window.__done === null) setTimeout(tick, 50);  // 50 ms resolution; nothing to watch after the run
  };
  tick();
}"""

#: For ``--notebooks``: the first code cell (counted among code cells) whose output is an error, or null.
JS_FIRST_ERROR = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets.filter(c => c.model.type === 'code');
  const index = cells.findIndex(c => [...Array(c.model.outputs.length).keys()]
    .some(i => c.model.outputs.get(i).type === 'error'));
  return index < 0 ? null : index;
}"""

#: For ``--notebooks``: each code cell's run as JupyterLab recorded it (``recordTiming``):
#: [started, ended] in ms since the epoch, or null for a cell that did not run.
JS_CELL_TIMES = """() => window.jupyterapp.shell.currentWidget.content.widgets.filter(c => c.model.type === 'code')
  .map(c => {
    const times = c.model.getMetadata('execution') || {};
    const began = times['shell.execute_reply.started'] || times['iopub.execute_input'];
    const ended = times['shell.execute_reply'];
    return began && ended ? [Date.parse(began), Date.parse(ended)] : null;
  })"""

#: Height of the page for ``--notebooks``: every notebook's outputs fit in it at once.
TALL_PAGE = 30_000


def notebook_first_chart(lab: LabServer, context: Any, source: Path, timeout: float) -> dict[str, Any]:
    """On a copy of ``source`` in a fresh kernel: seconds from "Run all" to the first monitor or
    replay panel in the page ("first frame"), to the first point of any
    chart ("first chart", None when the notebook ran to its end without one) and the code cell
    (0-based, among code cells) that drew it, to the end of the run ("whole notebook"), and the
    first code cell that failed, if one did ("error in cell"); "timed out" when the run outlasted
    ``timeout``; and each code cell's start and end ("cells", seconds after the click)."""
    name = f"first-chart-of-{source.name}"
    shutil.copy(source, lab.server_root / name)
    page = Page(context, lab, name)
    try:
        page.page.evaluate(JS_WATCH_NOTEBOOK)
        clicked = page.page.evaluate(JS_RUN_ALL) / 1000
        timed_out = False
        try:
            page.page.wait_for_function("() => window.__done !== null", timeout=timeout * 1000, polling=100)
        except Exception:  # Playwright's TimeoutError: say so and go on with the next notebook
            timed_out = True
        shown, cell, done, frame = page.page.evaluate(
            "() => [window.__firstPoint, window.__firstCell, window.__done, window.__firstFrame]")
        return {"first frame": None if frame is None else frame / 1000 - clicked,
                "first chart": None if shown is None else shown / 1000 - clicked, "chart cell": cell,
                "whole notebook": None if done is None else done / 1000 - clicked,
                "error in cell": page.page.evaluate(JS_FIRST_ERROR), "timed out": timed_out,
                "cells": [None if t is None else (t[0] / 1000 - clicked, t[1] / 1000 - clicked)
                          for t in page.page.evaluate(JS_CELL_TIMES)]}
    finally:
        page.page.close()
        end_kernel(lab, name)


#: The poll-only arm: the listener's progress events no longer wake the stream's poller.
POLL_ONLY = ("from workbench.spark import current_env\n"
             "current_env().watcher.recorder.release(workbench.stream('one').run_id, wake=lambda: None)")

FRESHNESS_ARMS = {"on the progress event": False, "poll only (as before)": True}


def freshness(lab: LabServer, context: Any, batches: int, poll_only: bool) -> list[tuple[float, float]]:
    """(batch end -> page, batch end -> kernel history) for each batch, in seconds."""
    name = f"freshness-{int(poll_only)}.ipynb"
    cells = [SETUP, f"handle = workbench.start(events(), 'one', output_mode='append', trigger={TRIGGER!r})\n"
                    "handle.monitor()"]
    (lab.server_root / name).write_text(json.dumps(notebook(cells)), encoding="utf-8")
    page = Page(context, lab, name)
    try:
        page.run(0)
        page.run(1)
        page.wait_plots(1, 4)
        if poll_only:
            page.kernel(POLL_ONLY)
        page.kernel("import time\narrived = {}\nworkbench.stream('one').progress.subscribe("
                    "lambda records: arrived.update({r.batch_id: time.time() for r in records}))")
        first = int(page.kernel("print(workbench.stream('one').progress.total)"))
        page.page.evaluate(JS_WATCH_FRESHNESS)
        deadline = time.monotonic() + max(120.0, batches * 5.0)  # a busy machine runs batches late
        while int(page.kernel("print(workbench.stream('one').progress.total)")) < first + batches + 1:
            if time.monotonic() > deadline:
                break
            page.page.wait_for_timeout(1000)
        ends = json.loads(page.kernel(
            "import json; h = workbench.stream('one').history(); print(json.dumps({int(r.batch_id): "
            "(r.timestamp.timestamp() + (r.batch_duration_ms or 0) / 1000, arrived.get(int(r.batch_id))) "
            "for r in h.itertuples()}))"))
        seen = page.page.evaluate("() => window.__seen")
        page.kernel("workbench.stop_all()")
        return [(seen[b] / 1000 - end, at - end) for b, (end, at) in ends.items()
                if b in seen and at is not None and int(b) > first]
    finally:
        page.page.close()
        end_kernel(lab, name)


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    return (f"median {statistics.median(ordered) * 1000:.0f} ms, p95 {p95(ordered) * 1000:.0f} ms, "
            f"max {ordered[-1] * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-first-chart", action="store_true", help="time freshness only")
    parser.add_argument("--runs", type=int, default=3, help="fresh kernels to time the first chart in")
    parser.add_argument("--batches", type=int, default=30, help="batches to time freshness over")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a first chart may take")
    parser.add_argument("--notebooks", nargs="*", metavar="NAME",
                        help="instead: the first chart of every notebook in notebooks/ (or of those whose "
                             "names start with a NAME given), class archive on, once each")
    args = parser.parse_args()
    if args.notebooks is not None:
        return every_notebook(args.timeout, args.notebooks)
    runs: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    fresh: dict[str, list[tuple[float, float]]] = {}
    with lab_and_archive(archive=not args.skip_first_chart) as (lab, browser):
        for index in range(0 if args.skip_first_chart else args.runs):
            for arm in rotated(list(ARMS), index):
                with page_context(browser) as context:
                    runs[arm].append(first_chart(lab, context, index, list(ARMS).index(arm), args.timeout))
                print(f"run {index + 1}, {arm}: "
                      + ", ".join(f"{k} {v:.2f} s" for k, v in runs[arm][-1].items()), flush=True)
        for arm, poll_only in FRESHNESS_ARMS.items():
            with page_context(browser) as context:
                fresh[arm] = freshness(lab, context, args.batches, poll_only)

    if any(runs.values()):
        print('first chart after "Run all" on 00-quickstart, fresh kernel, Spark start included (target <= 8 s), '
              "seconds after the click:")
    for arm, arm_runs in runs.items():
        if not arm_runs:
            continue
        print(f"  {arm}:")
        for key in arm_runs[0]:
            values = [run[key] for run in arm_runs]
            print(f"    {key:22} " + "  ".join(f"{v:6.2f}" for v in values)
                  + f"   median {statistics.median(values):.2f}")
    for arm, delays in fresh.items():
        if not delays:
            continue
        print(f"freshness, {arm}: batch end -> point in the page's plotly data, {len(delays)} batches of a "
              f"{TRIGGER} trigger, poll interval 0.5 s (target p95 <= 250 ms):")
        print(f"  total:                           {spread([total for total, _ in delays])}")
        print(f"  batch end -> kernel's history:   {spread([event for _, event in delays])}")
        print(f"  kernel's history -> page:        {spread([total - event for total, event in delays])}")

@contextmanager
def lab_and_archive(archive: bool) -> Iterator[tuple[LabServer, Any]]:
    """A private JupyterLab on the notebooks and headless Chromium; the class data archive made first."""
    if archive:
        from workbench import _class_archive

        print("class data archive:", _class_archive.ensure() or "none (WORKBENCH_CLASS_ARCHIVE=0?)", flush=True)
    with lab_and_browser() as (lab, browser):
        yield lab, browser


def every_notebook(timeout: float, names: list[str]) -> None:
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if names:
        unknown = [n for n in names if not any(s.name.startswith(n) for s in sources)]
        if unknown:
            raise SystemExit(f"--notebooks {' '.join(unknown)}: no notebook in notebooks/ starts so; "
                             f"there are {', '.join(s.name for s in sources)}")
        sources = [s for s in sources if any(s.name.startswith(n) for n in names)]
    seconds: dict[str, dict[str, Any]] = {}
    with lab_and_archive(archive=True) as (lab, browser):
        for source in sources:
            with page_context(browser, height=TALL_PAGE) as context:
                seconds[source.name] = notebook_first_chart(lab, context, source, timeout)
            print(f"{source.name}: {seconds[source.name]}", flush=True)
    print('"Run all" in a fresh kernel, Spark start included, seconds after the click: first monitor or replay '
          "panel in the page, first chart with a point (target <= 8 s), whole notebook")
    for name, run in seconds.items():
        first = (f"{run['first chart']:6.2f} s (code cell {run['chart cell']})" if run["first chart"] is not None
                 else "no chart")
        whole = f"{run['whole notebook']:6.1f} s" if run["whole notebook"] is not None else "-"
        frame = f"{run['first frame']:6.2f} s" if run["first frame"] is not None else "none"
        notes = (["TIMED OUT"] if run["timed out"] else []) + (
            [f"error in code cell {run['error in cell']}"] if run["error in cell"] is not None else [])
        print(f"  {name:42} first panel {frame:>8}   first chart {first:>22}   whole notebook {whole:>8}  "
              + "; ".join(notes))
    print("where the time went up to each first chart (code cells that took >= 0.3 s: index started-ended, s):")
    for name, run in seconds.items():
        until = run["first chart"] if run["first chart"] is not None else math.inf
        slow = [f"[{i}] {t[0]:.1f}-{t[1]:.1f}" for i, t in enumerate(run["cells"])
                if t is not None and t[0] < until and t[1] - t[0] >= 0.3]
        print(f"  {name:42} " + ", ".join(slow))


if __name__ == "__main__":
    main()
