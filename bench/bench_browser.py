"""What the page receives and keeps: the workbench's monitor next to a plain FigureWidget one.

Run from the repository root (needs Chromium, as ``workbench test`` does)::

    .venv/bin/python bench/bench_browser.py [--batches 20] [--reruns 10] [--monitors 10]

Starts a private JupyterLab (tests/browser_support.py: 127.0.0.1, token, isolated folders)
and drives it in headless Chromium. For each arm, in a fresh page and kernel:

- **first draw**: websocket bytes the page receives from running a cell that starts a
  stream with one monitor until its four charts are drawn;
- **per update**: websocket bytes per micro-batch while the stream runs and no cell runs;
- **freshness**: from a batch's end (progress ``timestamp`` + ``batchDuration``, kernel
  side) to its point being in plotly's own data in the page (``gd.data``, polled every
  animation frame in the page), and the part of it from the batch's record reaching the
  kernel's history (the progress poller's subscription) to that point: the rest is the
  wait for the next progress poll, which both arms share. A chart grid puts a message's
  points into plotly's data when it draws them (``extensions/src/series.ts`` keeps them
  apart until then), so the point is seen there in the animation frame after it is drawn;
- **ten monitors**: bytes until ten monitors of one stream are drawn on one page, in a
  window tall enough to show them all (a workbench chart grid out of view gets no points);
- **re-runs**: the page's JS heap (after a forced garbage collection) before and after
  re-running the monitored cell ``--reruns`` times;
- **kernel CPU**: the kernel's CPU time per batch per monitor (one monitor on one stream,
  minus the same stream without a monitor, in rounds), and the CPU of the threads that draw
  alone (the monitor's thread and the IOPub thread that sends its messages, read from each
  thread's own CPU clock), which other threads' noise cannot move.

The arms: the workbench's monitor (charts drawn by its JupyterLab extension, plotly.js
loaded once as a static file), and a baseline monitor made of four plotly
``FigureWidget``s updated in place, as the workbench drew them before.
Targets (issue budget): first draw <= 300 KB, update <= 20 KB, ten monitors <= 5 MB,
heap growth after ten re-runs <= 50 MB, kernel CPU <= 2 ms per batch per monitor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser_support import (  # noqa: E402
    ARTIFACTS, JS_KERNEL_IDLE, JS_KERNEL_PRINT, LabServer, page_context,
)
from bench.browser_cpu import (  # noqa: E402
    measure_browser_cpu, measure_browser_cpu_without_extension, print_browser_cpu,
)
from bench.lab import lab_and_browser  # noqa: E402
from bench.stats import p95  # noqa: E402

TRIGGER = "0.5 seconds"

SETUP = textwrap.dedent("""
    import time, workbench
    from pyspark.sql import functions as F
    spark = workbench.session()
    %load_ext workbench
    def events():
        return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 20)
                .option("startTimestamp", 1704067200000).option("advanceMillisPerBatch", 1000).load()
                .withWatermark("timestamp", "5 seconds")
                .groupBy(F.window("timestamp", "10 seconds"), (F.col("value") % 3).alias("key")).count())

    def cpu_ms_per_batch(handle, seconds, make=None):
        # The kernel's CPU time per batch of `handle` over `seconds`, with `make(handle)` watching:
        # the whole process, and the threads that draw (monitor threads and the IOPub thread
        # that sends their messages), as "process/threads".
        import gc, resource, threading
        watcher = make(handle) if make else None
        time.sleep(2.0)  # let the watcher's first draw pass
        gc.collect()
        def cpu():
            usage = resource.getrusage(resource.RUSAGE_SELF)
            return usage.ru_utime + usage.ru_stime
        def drawing():
            # Each drawing thread's own CPU clock (nanoseconds; /proc counts in 10 ms ticks).
            times = {}
            for t in threading.enumerate():
                if t.name.startswith(("workbench-monitor", "baseline-monitor", "IOPub")) and t.is_alive():
                    try:
                        times[t.ident] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
                    except OSError:  # it ended meanwhile
                        pass
            return times
        c0, d0, b0 = cpu(), drawing(), handle.progress.total
        time.sleep(seconds)
        c1, d1, b1 = cpu(), drawing(), handle.progress.total
        if hasattr(watcher, "close"):
            watcher.close()
        elif watcher is not None:
            watcher.stop.set()
        n = max(1, b1 - b0)
        drawn = sum(t - d0.get(ident, 0.0) for ident, t in d1.items())
        return f"{(c1 - c0) / n * 1000}/{drawn / n * 1000}"
""")

#: The baseline: the workbench's earlier monitor design, four FigureWidgets updated in place
#: with the whole rolling window on every batch.
BASELINE = textwrap.dedent("""
    import threading, numpy as np, plotly.graph_objects as go
    from workbench.views.monitor_charts import chart_specs, chart_points, operator_traces

    class FigureWidgetMonitor:
        def __init__(self, handle, window=60):
            self.handle, self.window = handle, window
            specs = chart_specs()
            specs[1]["traces"] = operator_traces(["stateStoreSave"])
            self.figures = {s["key"]: go.FigureWidget({"data": s["traces"], "layout": s["layout"]}) for s in specs}
            self.stop = threading.Event()
            self.wake = threading.Event()
            self.unsubscribe = handle.progress.subscribe(lambda records: self.wake.set())
            threading.Thread(target=self.run, daemon=True, name="baseline-monitor").start()
        def run(self):
            while not self.stop.is_set():
                self.wake.wait(0.5); self.wake.clear()
                records = self.handle.progress.tail(self.window)
                for key, (x, ys) in chart_points(records, 1).items():
                    fig = self.figures[key]
                    with fig.batch_update():
                        for trace, y in zip(fig.data, ys):
                            trace.x, trace.y = x, y
        def _ipython_display_(self):
            from IPython.display import display
            import ipywidgets as widgets
            display(widgets.GridBox(list(self.figures.values()),
                    layout=widgets.Layout(grid_template_columns="repeat(auto-fill, 560px)")))
""")

#: The re-run cell: what a user re-runs (the magic for the workbench, a hand-built monitor otherwise).
RERUN = {
    "workbench monitor": f'%%stream rerun --trigger "{TRIGGER}" --mode append\nevents()',
    "FigureWidget monitor": f"handle = workbench.start(events(), 'rerun', output_mode='append', "
                            f"trigger={TRIGGER!r})\nFigureWidgetMonitor(handle)",
}

ARMS = {
    "workbench monitor": "handle.monitor()",
    "FigureWidget monitor": "FigureWidgetMonitor(handle)",
}

#: Watchers whose kernel CPU is measured: charts alone (what both arms draw), and the
#: workbench's full monitor (header, "why no output?", result preview read from Spark).
CPU_WATCHERS = {
    "workbench monitor": {"charts only": "lambda h: h.monitor(preview_every=float('inf'))",
                          "full monitor": "lambda h: h.monitor()"},
    "FigureWidget monitor": {"charts only": "FigureWidgetMonitor"},
}

#: plotly's graph divs in the output of the current notebook's cell ``index``, with the
#: number of points of each (its longest trace).
JS_PLOTS = """(index) => [...window.jupyterapp.shell.currentWidget.content.widgets[index].node
    .querySelectorAll('.jp-OutputArea-output .js-plotly-plot')]
  .map(gd => (gd.data || []).reduce((n, t) => Math.max(n, (t.x || []).length), 0))"""

#: Scroll cell ``index`` to the top of the notebook. A workbench chart grid draws, and the
#: kernel sends it points, only while it is on screen: what each phase measures is on screen.
JS_SHOW_CELL = """(index) => window.jupyterapp.shell.currentWidget.content.widgets[index].node
  .scrollIntoView({block: 'start'})"""

#: How many of cell ``index``'s chart grids (a monitor's charts, or a baseline monitor's
#: grid of FigureWidgets) lie wholly inside the window.
JS_GRIDS_ON_SCREEN = """(index) => {
  const grids = [...window.jupyterapp.shell.currentWidget.content.widgets[index].node
    .querySelectorAll('.workbench-chart-grid, .jp-OutputArea-output .widget-gridbox')];
  const inside = grids.filter(grid => {
    const box = grid.getBoundingClientRect();
    return box.height > 0 && box.top >= 0 && box.bottom <= window.innerHeight;
  });
  return [inside.length, grids.length];
}"""

#: Window height per monitor in the many-monitors phase, more than a monitor (header, four
#: charts two by two, result table) takes at 1700 px wide: every monitor must be on screen to
#: be drawn, and the phase's note says when some were not.
MONITOR_HEIGHT = 1200

#: Record, every animation frame, when each batch id first appears in a chart's data.
JS_WATCH_FRESHNESS = """() => {
  window.__seen = {};
  const tick = () => {
    for (const gd of document.querySelectorAll('.jp-OutputArea-output .js-plotly-plot')) {
      for (const trace of gd.data || []) {
        const xs = trace.x || [];
        const last = xs[xs.length - 1];
        if (typeof last === 'number' && !(last in window.__seen)) window.__seen[last] = Date.now();
      }
    }
    window.__watching = requestAnimationFrame(tick);
  };
  tick();
}"""

JS_RUN_CELL = """(index) => {
  const app = window.jupyterapp;
  const notebook = app.shell.currentWidget.content;
  notebook.activeCellIndex = index;
  app.commands.execute('notebook:run-cell');
}"""

JS_CELL_DONE = """(index) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
  return cell.model.executionCount !== null && cell.model.executionState !== 'running'
    && !((cell.node.querySelector('.jp-InputPrompt') || {}).textContent || '').includes('*');
}"""

JS_HEAP = "async () => { window.gc(); await new Promise(r => setTimeout(r, 200)); window.gc(); " \
          "return performance.memory.usedJSHeapSize; }"


def notebook(cells: list[str]) -> dict[str, Any]:
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                       "outputs": [], "source": source} for i, source in enumerate(cells)],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


class Page:
    """One notebook open in Chromium, counting the kernel websocket's received bytes.

    Playwright's sync API delivers events only while one of its calls runs: waits go
    through ``page.wait_for_timeout`` so that frames are counted as they arrive.
    """

    def __init__(self, context: Any, lab: LabServer, name: str) -> None:
        self.page = context.new_page()
        self.received = 0
        self.page.on("websocket", self._on_socket)
        # "reset": a fresh workspace, not the previous arm's tabs restored around this one.
        self.page.goto(lab.notebook_url(name) + "&reset")
        self.page.wait_for_function(JS_KERNEL_IDLE, timeout=120_000, polling=250)

    def _on_socket(self, socket: Any) -> None:
        if "/api/kernels/" in socket.url:
            socket.on("framereceived", lambda payload: self._count(payload))

    def _count(self, payload: Any) -> None:
        self.received += len(payload) if isinstance(payload, (bytes, str)) else 0

    def run(self, index: int, timeout: float = 180, screenshot: bool = True) -> None:
        """Run cell ``index`` with the cell at the top of the window (its output on screen)."""
        self.page.evaluate(JS_RUN_CELL, index)
        self.show(index)
        self.page.wait_for_timeout(0.3 * 1000)
        try:
            self.page.wait_for_function(JS_CELL_DONE, arg=index, timeout=timeout * 1000, polling=100)
        except Exception:
            if not screenshot:
                raise
            ARTIFACTS.mkdir(exist_ok=True)
            self.page.screenshot(path=str(ARTIFACTS / "bench-browser-failure.png"), full_page=True)
            raise
        self.show(index)

    def show(self, index: int) -> None:
        self.page.evaluate(JS_SHOW_CELL, index)

    def kernel(self, code: str) -> str:
        return self.page.evaluate(JS_KERNEL_PRINT, code)

    def plots(self, index: int) -> list[int]:
        """The points of each chart drawn in cell ``index``'s output."""
        return self.page.evaluate(JS_PLOTS, index)

    def wait_plots(self, index: int, count: int, timeout: float = 120) -> None:
        """Wait until cell ``index``'s output has ``count`` charts drawn, three in four with points."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            drawn = self.plots(index)
            if len(drawn) >= count and sum(1 for n in drawn if n > 0) >= count - count // 4:
                return
            self.page.wait_for_timeout(0.1 * 1000)
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / "bench-browser-charts.png"), full_page=True, timeout=120_000)
        raise TimeoutError(f"{count} charts were not drawn in {timeout:.0f} s: {self.plots(index)}")

    def heap(self) -> int:
        return int(self.page.evaluate(JS_HEAP))


def batches(page: Page, name: str) -> int:
    return int(page.kernel(f"print(workbench.stream({name!r}).progress.total)"))


def measure(lab: LabServer, context: Any, arm: str, args: argparse.Namespace) -> dict[str, Any]:
    make = ARMS[arm]
    name = "bench_" + ("wb" if arm.startswith("workbench") else "fw")
    cells = [
        SETUP + (BASELINE if "FigureWidget" in arm else ""),
        f"handle = workbench.start(events(), 'one', output_mode='append', trigger={TRIGGER!r})\n{make}",
        f"handles = [workbench.start(events(), 'ten', output_mode='append', trigger={TRIGGER!r})]\n"
        f"from IPython.display import display\nmonitors = [{make.replace('handle', 'handles[0]')} "
        f"for _ in range({args.monitors})]\nfor m in monitors: display(m)",
        RERUN[arm],
        "workbench.stop_all()",
    ]
    (lab.server_root / f"{name}.ipynb").write_text(json.dumps(notebook(cells)), encoding="utf-8")
    page = Page(context, lab, f"{name}.ipynb")
    result: dict[str, Any] = {}
    try:
        page.run(0)
        # First draw: run the cell, wait for its four charts to hold points.
        before, started = page.received, time.monotonic()
        page.run(1, timeout=args.draw_timeout)
        page.wait_plots(1, 4, timeout=args.draw_timeout)
        result["first draw"] = page.received - before
        result["first draw seconds"] = time.monotonic() - started
        # Updates and freshness while no cell runs (and nothing asks the kernel anything).
        # When each batch's record reached the kernel's history (the poller's share of the delay).
        page.kernel("import time\narrived = {}\nworkbench.stream('one').progress.subscribe("
                    "lambda records: arrived.update({r.batch_id: time.time() for r in records}))")
        page.page.evaluate(JS_WATCH_FRESHNESS)
        start_batches, start_bytes = batches(page, "one"), page.received
        page.page.wait_for_timeout((args.batches * 0.5 + 1.0) * 1000)
        window_bytes = page.received - start_bytes
        seen_batches = batches(page, "one") - start_batches
        result["per update"] = window_bytes / max(1, seen_batches)
        ends = json.loads(page.kernel(
            "import json; h = workbench.stream('one').history(); print(json.dumps({int(r.batch_id): "
            "(r.timestamp.timestamp() + (r.batch_duration_ms or 0) / 1000, arrived.get(int(r.batch_id))) "
            "for r in h.itertuples()}))"))
        seen = page.page.evaluate("() => window.__seen")
        fresh = [(seen[str(b)] / 1000 - end, at - end) for b, (end, at) in ((int(k), v) for k, v in ends.items())
                 if str(b) in seen and at is not None and int(b) > start_batches]
        result["freshness"] = [total for total, _ in fresh]
        result["freshness polled"] = [polled for _, polled in fresh]
        page.page.evaluate("() => cancelAnimationFrame(window.__watching)")
        page.kernel("workbench.stream('one').stop()")
        # Kernel CPU per batch: a bare stream, then the same stream with one watcher, in turn.
        page.kernel(f"cpu = workbench.start(events(), 'cpu', output_mode='append', trigger={TRIGGER!r})")
        bare, watched = [], {label: [] for label in CPU_WATCHERS[arm]}

        def cpu_phase(watcher: str = "") -> tuple[float, float]:
            text = page.kernel(f"print(cpu_ms_per_batch(cpu, {args.cpu_seconds}{', ' + watcher if watcher else ''}))")
            process, threads = text.strip().split("/")
            return float(process), float(threads)

        for _ in range(args.cpu_rounds):
            bare.append(cpu_phase())
            for label, watcher in CPU_WATCHERS[arm].items():
                watched[label].append(cpu_phase(watcher))
        bare_process = statistics.median(p for p, _ in bare)
        bare_threads = statistics.median(t for _, t in bare)
        result["kernel cpu"] = {label: statistics.median(p for p, _ in w) - bare_process
                                for label, w in watched.items()}
        result["drawing threads cpu"] = {label: statistics.median(t for _, t in w) - bare_threads
                                         for label, w in watched.items()}
        result["kernel cpu bare"] = bare_process
        page.kernel("workbench.stream('cpu').stop()")
        # Re-runs: the page's heap before and after re-running the monitored cell.
        page.run(3)
        page.wait_plots(3, 4)
        heap_before = page.heap()
        for _ in range(args.reruns):
            page.run(3)
            page.page.wait_for_timeout(1.0 * 1000)
        page.page.wait_for_timeout(2.0 * 1000)
        result["heap growth"] = page.heap() - heap_before
        page.kernel("workbench.stop_all()")
        # Ten monitors on one page, last: the heaviest phase (it may not finish for the baseline).
        # A window tall enough for all of them, their cell at its top: a monitor out of view
        # would get no points and draw nothing. The monitors above and below it come into
        # view too (their streams are stopped): the kernel sends each its window once, before
        # the count starts.
        page.page.set_viewport_size({"width": 1700, "height": MONITOR_HEIGHT * (args.monitors + 1)})
        page.show(2)
        page.page.wait_for_timeout(3.0 * 1000)
        before = page.received
        started = time.monotonic()
        try:
            page.run(2, timeout=args.ten_timeout, screenshot=False)
            page.wait_plots(2, 4 * args.monitors,
                            timeout=max(10.0, args.ten_timeout - (time.monotonic() - started)))
            result["ten monitors"] = page.received - before
        except Exception:
            charts = len(page.plots(2))
            result["ten monitors"] = page.received - before
            result["ten monitors note"] = (f"not drawn in {args.ten_timeout:.0f} s "
                                           f"({charts} of {4 * args.monitors} charts on the page)")
        on_screen, grids = page.page.evaluate(JS_GRIDS_ON_SCREEN, 2)
        if on_screen < grids:
            result["ten monitors note"] = (result.get("ten monitors note", "") +
                                           f" only {on_screen} of {grids} monitors were wholly on screen").strip()
    finally:
        page.page.close()
        # End this arm's kernel (and its JVM) so that it does not run beside the next arm.
        for session in lab.api("GET", "/api/sessions") or []:
            if session.get("path", "").endswith(f"{name}.ipynb"):
                lab.api("DELETE", f"/api/sessions/{session['id']}", timeout=60)
    return result


#: The workbench's monitor in a front end without the workbench's JupyterLab extension.
NO_EXTENSION = "no extension"
#: Chromium's CPU for one monitor, visible, hidden and absent (bench/browser_cpu.py).
BROWSER_CPU = "browser cpu"


def measure_without_extension(browser: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The workbench monitor's arm in a JupyterLab whose page config disables the extension.

    What VS Code or Colab get: the chart code and plotly.js (gzip) come over the kernel
    websocket once per page, so "first draw" includes them; "ten monitors" is measured on the
    same page afterwards. Budgets: first monitor <= 5 MB, a further one <= 300 KB, update <=
    20 KB, ten monitors <= 8 MB.
    """
    from tests.test_browser_without_extension import WithoutExtension

    lab = WithoutExtension(ROOT / "notebooks").start()
    try:
        with page_context(browser) as context:
            return measure(lab, context, "workbench monitor", args)
    finally:
        problems = lab.stop()
        if problems:
            print("clean-up (no extension):", "; ".join(problems))


def fmt_bytes(value: float) -> str:
    return f"{value / 1e6:.2f} MB" if value >= 1e6 else f"{value / 1e3:.1f} KB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="batches to count per-update bytes over")
    parser.add_argument("--reruns", type=int, default=10, help="re-runs of the monitored cell")
    parser.add_argument("--monitors", type=int, default=10, help="monitors on one page")
    parser.add_argument("--cpu-seconds", type=float, default=15.0, help="seconds per kernel CPU phase")
    parser.add_argument("--cpu-rounds", type=int, default=3, help="rounds of the kernel CPU phases")
    parser.add_argument("--arms", default=",".join([*ARMS, NO_EXTENSION, BROWSER_CPU]),
                        help="comma-separated arms to run")
    parser.add_argument("--cpu-minute", type=float, default=60.0, metavar="SECONDS",
                        help=f"seconds (not minutes) per phase of the '{BROWSER_CPU}' arm (bench/browser_cpu.py)")
    parser.add_argument("--heap-minutes", type=float, default=5.0,
                        help=f"minutes of the '{BROWSER_CPU}' arm's heap phase (0: none)")
    parser.add_argument("--trace-seconds", type=float, default=0.0,
                        help=f"seconds of a Chromium trace after the '{BROWSER_CPU}' arm's visible, out-of-view, "
                             "no-monitor and ten-monitor phases, summarised by event (0: none)")
    parser.add_argument("--draw-timeout", type=float, default=300.0,
                        help="seconds a monitor's first draw may take")
    parser.add_argument("--ten-timeout", type=float, default=300.0,
                        help="seconds the many-monitors cell may take to draw")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    browser_cpu: dict[str, dict[str, float]] = {}
    with lab_and_browser("--enable-precise-memory-info", "--js-flags=--expose-gc") as (lab, browser):
        for arm in args.arms.split(","):
            if arm == BROWSER_CPU:
                browser_cpu = measure_browser_cpu(lab, browser, args.cpu_minute, notebook, args.heap_minutes,
                                                  args.trace_seconds)
                browser_cpu.update(measure_browser_cpu_without_extension(browser, args.cpu_minute, notebook))
                print(f"{arm}: {json.dumps(browser_cpu)}", flush=True)
                continue
            if arm == NO_EXTENSION:
                results[arm] = measure_without_extension(browser, args)
                print(f"{arm}: {json.dumps(results[arm])}", flush=True)
                continue
            with page_context(browser) as context:
                results[arm] = measure(lab, context, arm, args)
            print(f"{arm}: {json.dumps(results[arm])}", flush=True)

    targets = {"first draw seconds": None, "first draw": 300e3, "per update": 20e3, "ten monitors": 5e6, "heap growth": 50e6,
               "kernel cpu": 2.0}
    # The budgets of the arm without the extension (plotly.js comes over the websocket), for what it measures.
    no_extension_targets = {"first draw seconds": None, "first draw": 5e6, "per update": 20e3, "ten monitors": 8e6,
                            "heap growth": None}
    print_browser_cpu(browser_cpu, args.cpu_minute)
    if not results:
        return
    print(f"page and kernel costs of one monitor, stream of 20 rows per batch every {TRIGGER}")
    # Each target column right after the arms whose budget it is: the arms with the extension, then the one without.
    groups = [(arms, budget) for arms, budget in (([arm for arm in results if arm != NO_EXTENSION], targets),
                                                  ([arm for arm in results if arm == NO_EXTENSION], no_extension_targets))
              if arms]
    header = f"{'':34}" + "".join("".join(f"{arm:>24}" for arm in arms) + f"{'target':>14}" for arms, _ in groups)
    print(header)
    rows = [
        ("first draw (bytes)", "first draw", fmt_bytes),
        ("per batch update (bytes)", "per update", fmt_bytes),
        ("first draw (seconds)", "first draw seconds", lambda v: f"{v:.1f} s"),
        (f"{args.monitors} monitors (bytes)", "ten monitors", fmt_bytes),
        (f"JS heap growth after {args.reruns} re-runs", "heap growth", fmt_bytes),
    ]
    for label, key, show in rows:
        line = f"{label:34}"
        for arms, budget in groups:
            line += "".join(f"{show(results[arm][key]) + ('*' if key + ' note' in results[arm] else ''):>24}"
                            for arm in arms)
            line += f"{'<= ' + show(budget[key]):>14}" if budget[key] is not None else f"{'':14}"
        print(line.rstrip())
    for arm, r in results.items():
        for key, value in r.items():
            if key.endswith(" note"):
                print(f"* {arm}, {key[:-5]}: {value}")
    print(f"kernel CPU per batch per monitor (median of {args.cpu_rounds} rounds of {args.cpu_seconds:.0f} s, "
          f"minus the same stream without a monitor; target <= {targets['kernel cpu']:.1f} ms):")
    for arm, r in results.items():
        for label, value in r["kernel cpu"].items():
            print(f"  {arm}, {label}: {value:.2f} ms  (stream alone: {r['kernel cpu bare']:.2f} ms per batch); "
                  f"its drawing threads (monitor + IOPub): {r['drawing threads cpu'][label]:.2f} ms")
    for arm, r in results.items():
        delays = sorted(r["freshness"])
        if delays:
            drawn = sorted(total - polled for total, polled in zip(r["freshness"], r["freshness polled"]))
            print(f"freshness ({arm}): batch end -> point in the page's plotly data, {len(delays)} batches: "
                  f"median {statistics.median(delays) * 1000:.0f} ms, "
                  f"p95 {p95(delays) * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms; "
                  f"of which record in the kernel -> point in the page: median {statistics.median(drawn) * 1000:.0f} "
                  f"ms, max {drawn[-1] * 1000:.0f} ms (the rest is the wait for the next progress poll)")


if __name__ == "__main__":
    main()
