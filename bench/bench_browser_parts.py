"""Where a visible monitor's browser CPU goes: the same page with parts of it switched off, side by side.

Run from the repository root (needs Chromium, as ``workbench test`` does)::

    .venv/bin/python bench/bench_browser_parts.py [--seconds 30] [--rounds 3]

The stream and page of ``bench_browser.py``'s browser-CPU arm (``bench/browser_cpu.py``:
``%%stream rates --trigger "1 second"`` over a ``rate`` source at 50 rows/s), one monitor
on screen. In one page and kernel, in rounds (the machine's noise is as large as the
differences, so every variant is measured in every round, one after the other, the order
rotating from round to round):

- **as is**: the monitor as a user sees it (new points drawn as pictures into a canvas
  over each chart, ``extensions/src/canvas.ts``);
- **svg patches**: new points written into the charts' SVG instead
  (``data-workbench-draw="svg"``, what a browser without ``OffscreenCanvas`` gets);
- **points not drawn**: the charts' points arrive and are kept but not drawn
  (``data-workbench-draw="none"``; the caption is written): what the kernel's message
  costs the page; **points and caption not drawn**: the caption hidden too;
- **charts not painted**: the charts' divs ``visibility: hidden``: every message arrives
  and every draw runs (script, style, layout), but nothing of the charts is painted,
  rasterised or composited;
- **no charts**: the chart grid ``display: none``: the charts report that nobody sees them,
  so the kernel sends them nothing and the header waits (what a hidden monitor costs);
- **no header**: the header's, the diagnosis's and the result preview's HTML ``display:
  none``: their updates still arrive and change the DOM, but are not laid out or painted;
  **no status line** and **no preview**: one of them alone; **no caption**: the newest
  batch's line over the charts;
- **a tick only**: as "no charts", and a script in the page writes a counter into a
  small box under the monitor once a second: the least a page can draw per batch (one
  frame, one text change), what a frame costs in this JupyterLab page whatever it draws;
  **a tick outside**: the same text change in a box fixed over the page, outside
  JupyterLab's widgets; **a tick moved**: a box of its own compositing layer moved once a
  second (a transform): a frame with nothing to paint or rasterise, only to composite;
  **a worker tick**: a canvas under the monitor whose control a worker holds, the counter
  drawn by the worker (a frame the main thread takes no part in);
- **axes fixed**: the charts' axes never move once drawn (``data-workbench-draw="fixed-axes"``,
  ``extensions/src/draw.ts``; points past them are patched but not seen): no axis moves,
  and once the points pass the axes no new points repainted on screen;
- **HiDPI**: the page as is on a HiDPI screen (device-pixel ratio 2: the canvases'
  pictures, the SVG's raster and the compositor's frames have four times the pixels);
  **HiDPI svg patches**: the SVG patches there;
- **pointer on a chart**: the pointer resting on the middle of the *Rates* chart (its new
  points then written into its SVG, under plotly's hover label, not into its canvas);
  **pointer on a chart by plotly**: the same with plotly drawing each of that chart's
  updates (``data-workbench-pointer="plotly"``, as until 2026-12-06); **pointer on a chart
  with axes in full**: the same with plotly drawing that chart in full when its points pass the
  axes (``data-workbench-pointer="full-axes"``, as until 2026-12-06 16:50); **pointer on the
  caption**: resting on the caption line over the charts (each caption then written as text);
- **as before**: the monitor and the Streams panel as they were before the status line's
  batch numbers moved into the charts' caption: the kernel sends the status line with each
  batch (and the caption is hidden), and a hidden Streams panel's page a snapshot per batch
  (a toggle in the kernel, undone after the phase).

The first three run by default; ``--variants`` picks others (comma-separated names, in that order).
``--trace SECONDS`` then records a Chromium trace and a JS profile of the page as is
(``bench_browser.py``'s ``--trace-seconds``): where the main thread, the compositor and the
GPU process spend their time, event by event; ``--trace-variants`` names other variants
to trace in turn. ``--allocations SECONDS`` then samples what the page's JS allocates with
the monitor as is (CDP's sampling heap profiler, the objects collected since included: the
garbage the page makes per batch), in MB per minute, by script file and by function;
``--survivors SECONDS`` then the same for what outlives the young generation (what a
scavenge leaves, moved to the old generation, which only the major collections free).

Per variant and round: Chromium's CPU per minute (all processes, and the renderer and GPU
process apart) and the page's main-thread task time (CDP ``Performance.getMetrics``). Then,
with the monitor as is, the messages the page receives over the kernel's websocket per
batch, by kind (comm updates of the header's widgets, the charts' data and caption, the Streams panel),
and those of the server's other websockets.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import browser_cpu  # noqa: E402
from bench.bench_browser import notebook  # noqa: E402
from bench.lab import lab_and_browser  # noqa: E402
from bench.stats import rotated  # noqa: E402
from tests.browser_support import JS_KERNEL_IDLE, LabServer, set_device_ratio  # noqa: E402

#: The monitor's status line (the first HTML of its header row), and the rule that hides an element.
STATUS_LINE = ".workbench-monitor > .widget-hbox:first-child > .widget-html"
HIDDEN = "{ display: none !important; }"
#: The chart grid hidden: the charts report that nobody sees them, so the kernel sends them nothing.
NO_CHARTS = f".workbench-monitor .workbench-chart-grid {HIDDEN}"
#: Variant -> CSS put on the page for its phase (none: the monitor as is).
VARIANTS = {
    "as is": "",
    "charts not painted": ".workbench-chart { visibility: hidden !important; }",
    "no charts": NO_CHARTS,
    # The header row's and the diagnosis's HTML (and the result preview's): their updates
    # still arrive and change the DOM, but nothing of them is laid out or painted.
    "no header": f"{STATUS_LINE}, .workbench-monitor > .widget-html {HIDDEN}",
    # One of them alone: the status line, or the result preview (the monitor's last child).
    "no status line": f"{STATUS_LINE} {HIDDEN}",
    "no preview": f".workbench-monitor > .widget-html:last-child {HIDDEN}",
    # The status line filling its row: the buttons after it stay put when its width changes.
    "header fills row": f"{STATUS_LINE} {{ flex: 1 1 auto; }}",
    # The newest batch's line over the charts.
    "no caption": f".workbench-chart-caption {HIDDEN}",
    "caption as HTML": "",
    "as before": f".workbench-chart-caption {HIDDEN}",
    "a tick only": NO_CHARTS,
    "a tick outside": NO_CHARTS,
    "a tick moved": NO_CHARTS,
    "axes fixed": "",
    "moves with all points": "",
    "passes in a task": "",
    "a worker tick": NO_CHARTS,
    "points not drawn": "",
    "svg patches": "",
    "points and caption not drawn": f".workbench-chart-caption {HIDDEN}",
    "HiDPI": "",
    "HiDPI svg patches": "",
    # Each chart, or the monitor's whole grid, a compositing layer of its own: a batch
    # re-rasterises that layer's tiles rather than the notebook's scrolling layer's.
    "charts layered": ".workbench-chart { will-change: transform; }",
    "grid layered": ".workbench-chart-grid { will-change: transform; }",
    "pointer on a chart": "",
    "pointer on a chart by plotly": "",
    "pointer on a chart with axes in full": "",
    "pointer on the caption": "",
}
#: Variant -> what the pointer rests on for its phase (the middle of the first such element;
#: the others: away from the monitor). Over a chart its new points go into its SVG, and plotly
#: draws it from its data when the pointer moves (draw.ts); over the caption line the caption
#: is text (caption.ts).
POINTERS = {
    "pointer on a chart": '.workbench-chart[data-chart="rates"]',
    "pointer on a chart by plotly": '.workbench-chart[data-chart="rates"]',
    "pointer on a chart with axes in full": '.workbench-chart[data-chart="rates"]',
    "pointer on the caption": ".workbench-chart-caption",
}


def _tick(change: str, parent: str = "document.querySelector('.workbench-monitor')",
          style: str = "{}") -> tuple[str, str]:
    """A page variant: a box under the monitor (or in ``parent``, styled ``style``) that
    ``change`` (JS of ``tick`` and a count ``n``) changes once a second; and the JS that removes it."""
    return (f"""() => {{
          const tick = document.createElement('div');
          tick.id = 'bench-tick';
          Object.assign(tick.style, {style});
          {parent}.appendChild(tick);
          let n = 0;
          window.benchTick = setInterval(() => {{ {change}; }}, 1000);
        }}""",
            "() => { clearInterval(window.benchTick); document.getElementById('bench-tick')?.remove(); }")


def _draw(how: str) -> tuple[str, str]:
    """A page variant: the charts drawn as ``data-workbench-draw`` = ``how`` asks (draw.ts, patch.ts)."""
    return (f"() => {{ document.documentElement.dataset.workbenchDraw = '{how}'; }}",
            "() => { delete document.documentElement.dataset.workbenchDraw; }")


def _pointer(how: str) -> tuple[str, str]:
    """A page variant: a chart under the pointer drawn as ``data-workbench-pointer`` = ``how`` asks (draw.ts)."""
    return (f"() => {{ document.documentElement.dataset.workbenchPointer = '{how}'; }}",
            "() => { delete document.documentElement.dataset.workbenchPointer; }")


TEXT_TICK = "tick.textContent = `tick ${++n}`"
#: A small box fixed over the page's bottom left corner, outside JupyterLab's widgets.
FIXED_BOX = "{position: 'fixed', left: '8px', bottom: '8px', zIndex: 10000, height: '20px', "
#: Variant -> (JS run in the page for its phase, JS that undoes it).
PAGE_VARIANTS = {
    "a tick only": _tick(TEXT_TICK),
    # The same text change in a box fixed over the page, outside JupyterLab's widgets: what
    # the frame costs when nothing of the notebook is restyled, laid out or repainted.
    "a tick outside": _tick(TEXT_TICK, "document.body",
                            FIXED_BOX + "width: '80px', background: 'white', contain: 'strict'}"),
    # A box of its own layer moved once a second (a transform): a frame with nothing to
    # paint or rasterise, only to composite.
    "a tick moved": _tick("tick.style.transform = `translateX(${(++n % 2) * 30}px)`", "document.body",
                          FIXED_BOX + "width: '20px', background: 'red', willChange: 'transform'}"),
    # A canvas under the monitor whose control a worker holds: the worker draws a counter
    # once a second and commits it to the compositor without a main-thread frame.
    "a worker tick": ("""() => {
          const canvas = document.createElement('canvas');
          canvas.id = 'bench-tick'; canvas.width = 120; canvas.height = 20;
          document.querySelector('.workbench-monitor').appendChild(canvas);
          const code = `onmessage = (e) => { const c = e.data.getContext('2d'); let n = 0;
            setInterval(() => { c.clearRect(0, 0, 120, 20); c.fillText('tick ' + (++n), 4, 14); }, 1000); };`;
          window.benchWorker = new Worker(URL.createObjectURL(new Blob([code])));
          const off = canvas.transferControlToOffscreen();
          window.benchWorker.postMessage(off, [off]);
        }""", "() => { window.benchWorker.terminate(); document.getElementById('bench-tick')?.remove(); }"),
    # The charts' points arrive and are kept but not drawn (data-workbench-draw="none"): what
    # the kernel's message costs the page before anything is drawn.
    "points not drawn": _draw("none"),
    # The caption over the charts as HTML (data-workbench-caption="html", caption.ts), as
    # before 2026-12-06, not as a picture.
    "caption as HTML": ("() => { document.documentElement.dataset.workbenchCaption = 'html'; }",
                        "() => { delete document.documentElement.dataset.workbenchCaption; }"),
    "points and caption not drawn": _draw("none"),
    # Plotly draws every update of the chart under the pointer (data-workbench-pointer="plotly",
    # draw.ts), as until 2026-12-06.
    "pointer on a chart by plotly": _pointer("plotly"),
    # Plotly draws the chart under the pointer in full when its points pass the axes
    # (data-workbench-pointer="full-axes", draw.ts), as until 2026-12-06 16:50.
    "pointer on a chart with axes in full": _pointer("full-axes"),
    # New points written into the charts' SVG (as before 2026-12-03) instead of a canvas.
    "svg patches": _draw("svg"),
    "HiDPI svg patches": _draw("svg"),
    # The charts' axes never move once drawn (data-workbench-draw="fixed-axes", draw.ts):
    # no moves, and points past the axes are patched but not seen.
    "axes fixed": _draw("fixed-axes"),
    # Plotly moves a chart's axes with every point of its live traces redrawn in the SVG
    # under the canvas (data-workbench-moves="all-points", draw.ts), not their ends only.
    "moves with all points": ("() => { document.documentElement.dataset.workbenchMoves = 'all-points'; }",
                              "() => { delete document.documentElement.dataset.workbenchMoves; }"),
    # The page's draw passes in a task of their own (a timer) instead of an animation frame
    # (a dev-only probe: the page's DrawPasses, charts.ts, rescheduled through its private
    # members, whose names the build keeps). With the canvas a pass draws its pictures in
    # that task; the frame that shows them is the next one.
    "passes in a task": ("""() => {
          const passes = window.workbenchDrawPasses;
          passes.benchRequest = passes.request;
          passes.request = function (draw) {
            this.due.add(draw);
            if (this.waiting) return;
            this.waiting = true;
            setTimeout(this.run, Math.max(0, this.last + this.gap() - performance.now()));
          };
        }""", "() => { const passes = window.workbenchDrawPasses; passes.request = passes.benchRequest; }"),
}
#: Variant -> the page's device-pixel ratio for its phase (a HiDPI screen, two device pixels
#: to a CSS pixel: the canvases' pictures, the SVG's raster and the compositor's frames have
#: four times the pixels; set through CDP's device-metrics override). The others: 1.
RATIOS = {"HiDPI": 2.0, "HiDPI svg patches": 2.0}
#: Variant -> (Python run in the kernel for its phase, printing how many objects it changed;
#: Python that undoes it): what CSS cannot switch, the messages themselves.
_MONITORS = ("[o for o in __import__('gc').get_objects() "
             "if type(o).__name__ == 'StreamMonitor' and o.__module__ == 'workbench.views.monitor']")
_READERS = ("[r for o in __import__('gc').get_objects() "
            "if type(o).__name__ == 'StreamsPublisher' and o.__module__ == 'workbench.views.streams_panel' "
            "for r in o._comms]")
_HEADER_PER_BATCH = f"""
def _bench_header(m):
    def update(summary, finished):
        type(m)._update_header(m, summary, finished)
        m.header.value += " · " + m.charts.caption
    return update
print(len([setattr(m, "_update_header", _bench_header(m)) for m in {_MONITORS}]
          + [setattr(r, "detail", True) for r in {_READERS}]))
"""
KERNEL_VARIANTS = {
    # The monitor and the Streams panel as they were before 2026-11-28 14:00 UTC: the status
    # line sent with each batch's numbers (a message and a frame of its own per batch; the
    # caption over the charts hidden), and the hidden panel's page sent a snapshot per batch.
    "as before": (_HEADER_PER_BATCH,
                  f"[m.__dict__.pop('_update_header', None) for m in {_MONITORS}]\n"
                  f"[setattr(r, 'detail', False) for r in {_READERS}]"),
}
JS_STYLE = """(css) => {
  document.getElementById('bench-parts')?.remove();
  if (css) {
    const style = document.createElement('style');
    style.id = 'bench-parts';
    style.textContent = css;
    document.head.appendChild(style);
  }
}"""


def message_kind(payload: Any) -> str:
    """A websocket frame's kind: the Jupyter message type, with a comm message's method and its first key."""
    text = payload.decode("latin-1") if isinstance(payload, (bytes, bytearray)) else str(payload)
    found = re.search(r'"msg_type":\s*"(\w+)"', text)
    if not found:
        return "other"
    kind = found.group(1)
    if kind == "comm_msg":
        # ipywidgets' messages name a method (a state update names its first key, a custom
        # message its kind); the workbench's own comm (the Streams panel) names its kind.
        method = re.search(r'"method":\s*"(\w+)"', text)
        state = re.search(r'"state":\s*\{"(\w+)"', text)
        key = state if method and method.group(1) == "update" else re.search(r'"kind":\s*"(\w+)"', text)
        kind += f" {method.group(1) if method else '(workbench)'} {key.group(1) if key else ''}".rstrip()
    elif kind == "status":
        state = re.search(r'"execution_state":\s*"(\w+)"', text)
        kind += f" {state.group(1) if state else ''}".rstrip()
    return kind


@contextmanager
def _variant(page: Any, name: str, cdp: Any) -> Iterator[None]:
    """Variant ``name`` switched on in the page (its CSS, page script, kernel toggle and the
    page's device-pixel ratio, through ``cdp``), then off."""
    on, off = KERNEL_VARIANTS.get(name, ("", ""))
    page_on, page_off = PAGE_VARIANTS.get(name, ("", ""))
    page.evaluate(JS_STYLE, VARIANTS[name])
    if page_on:
        page.evaluate(page_on)
    if on:  # says how many objects it changed (0: the variant measures nothing)
        print(f"{name}: {page.evaluate(browser_cpu.JS_KERNEL, on)} changed", file=sys.stderr)
    if name in RATIOS:
        set_device_ratio(page, cdp, RATIOS[name])
    if name in POINTERS:
        page.locator(POINTERS[name]).first.hover()
    try:
        yield
    finally:
        if name in POINTERS:
            page.mouse.move(1, 1)
        if name in RATIOS:
            set_device_ratio(page, cdp, 1.0)
        if off:
            page.evaluate(browser_cpu.JS_KERNEL, off)
        if page_off:
            page.evaluate(page_off)
        page.evaluate(JS_STYLE, "")


def allocations(page: Any, cdp: Any, seconds: float, top: int = 12, young: bool = True) -> dict[str, Any]:
    """What the page's JS allocates over ``seconds``: CDP's sampling heap profiler, the objects
    the garbage collector took back included (a batch's garbage is what it has to collect).
    MB per minute in all, by script file and by function (its own allocations, not its callees').

    ``young=False`` leaves out what a scavenge took back: what is left outlived the young
    generation, was moved to the old one, and is what the major collections mark and free.
    """
    cdp.send("HeapProfiler.enable")
    cdp.send("HeapProfiler.startSampling", {"samplingInterval": 4096, "includeObjectsCollectedByMajorGC": True,
                                            "includeObjectsCollectedByMinorGC": young})
    page.wait_for_timeout(seconds * 1000)
    head = cdp.send("HeapProfiler.stopSampling")["profile"]["head"]
    cdp.send("HeapProfiler.disable")
    by_file: Counter[str] = Counter()
    by_function: Counter[str] = Counter()
    nodes = [head]
    while nodes:
        node = nodes.pop()
        frame = node["callFrame"]
        script = frame["url"].rsplit("/", 1)[-1].split("?")[0] or "(built-in)"
        by_file[script] += node["selfSize"]
        by_function[f"{frame['functionName'] or '(anonymous)'} {script}:{frame['lineNumber'] + 1}:"
                    f"{frame['columnNumber'] + 1}"] += node["selfSize"]
        nodes.extend(node.get("children", []))
    per_minute = 60.0 / seconds / 1e6
    return {"MB/min": sum(by_file.values()) * per_minute,
            "by file": [(name, size * per_minute) for name, size in by_file.most_common(top)],
            "by function": [(name, size * per_minute) for name, size in by_function.most_common(top)]}


def measure(lab: LabServer, browser: Any, seconds: float, rounds: int, variants: dict[str, str],
            trace_seconds: float = 0.0, trace_variants: tuple[str, ...] = ("as is",),
            allocation_seconds: float = 0.0, survivor_seconds: float = 0.0,
            ) -> tuple[dict[str, list[dict[str, float]]], dict[str, float], dict[str, Any], dict[str, Any]]:
    """Each variant's phases (in rounds), the messages per batch by kind (the monitor as is), what
    the page allocates and what of it survives (empty when not asked for); the traces printed.

    ``trace_seconds`` > 0 traces the page in each of ``trace_variants``, one after another;
    ``allocation_seconds`` > 0 then samples what the page as is allocates (:func:`allocations`), and
    ``survivor_seconds`` > 0 what of it outlives the young generation.
    """
    (lab.server_root / browser_cpu.NOTEBOOK).write_text(json.dumps(notebook(browser_cpu.CELLS)), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1700, "height": 1200})
    page = context.new_page()
    frames: list[tuple[str, Any]] = []
    page.on("websocket", lambda socket: socket.on(
        "framereceived", lambda payload: frames.append(("kernel" if "/api/kernels/" in socket.url else "server",
                                                        payload))))
    phases: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    try:
        page.goto(lab.notebook_url(browser_cpu.NOTEBOOK) + "&reset")
        page.wait_for_function(JS_KERNEL_IDLE, timeout=120_000, polling=250)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        for index in (0, 1):
            browser_cpu._run_cell(page, index)
        page.wait_for_function(browser_cpu.JS_CHARTS_DRAWN, timeout=300_000, polling=250)
        page.locator(".workbench-chart-grid").first.scroll_into_view_if_needed()
        page.mouse.move(1, 1)  # away from the charts (plotly draws every update of a chart under the pointer)
        for round_index in range(rounds):
            for name in rotated(list(variants), round_index):
                with _variant(page, name, cdp):
                    phases[name].append(browser_cpu._phase(page, cdp, "rates", seconds))
        page.wait_for_timeout(3000)
        batches = lambda: int(page.evaluate(browser_cpu.JS_KERNEL, "print(workbench.stream('rates').progress.total)"))
        start, first = batches(), len(frames)
        page.wait_for_timeout(seconds * 1000)
        count = max(1, batches() - start)
        kinds = Counter(f"{socket}: {message_kind(payload) if socket == 'kernel' else 'any'}"
                        for socket, payload in frames[first:])
        for name in trace_variants if trace_seconds else ():
            with _variant(page, name, cdp):
                page.wait_for_timeout(browser_cpu.SETTLE_S * 1000)
                browser_cpu.print_trace(name, browser_cpu._trace(browser, page, cdp, trace_seconds))
        allocated = allocations(page, cdp, allocation_seconds) if allocation_seconds > 0 else {}
        survivors = allocations(page, cdp, survivor_seconds, young=False) if survivor_seconds > 0 else {}
        page.evaluate(browser_cpu.JS_KERNEL, "workbench.stop_all()")
    finally:
        browser_cpu.close_page(lab, context, browser_cpu.NOTEBOOK)
    return phases, {kind: n / count for kind, n in kinds.most_common()}, allocated, survivors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds per phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the variants")
    parser.add_argument("--variants", default=",".join(list(VARIANTS)[:3]),
                        help=f"comma-separated variants to measure, of: {', '.join(VARIANTS)}")
    parser.add_argument("--trace", type=float, default=0.0, metavar="SECONDS",
                        help="then a Chromium trace and a JS profile of the page as is, SECONDS each")
    parser.add_argument("--trace-variants", default="as is",
                        help="comma-separated variants that --trace records, one after another")
    parser.add_argument("--allocations", type=float, default=0.0, metavar="SECONDS",
                        help="then what the page as is allocates over SECONDS (MB per minute, by file and function)")
    parser.add_argument("--survivors", type=float, default=0.0, metavar="SECONDS",
                        help="then what of it outlives the young generation, over SECONDS (MB per minute)")
    args = parser.parse_args()
    names = [name.strip() for name in args.variants.split(",") if name.strip()]
    traced = tuple(name.strip() for name in args.trace_variants.split(",") if name.strip())
    unknown = [name for name in (*names, *traced) if name not in VARIANTS]
    if unknown or not names:
        parser.error(f"--variants/--trace-variants: unknown {unknown or args.variants!r}; "
                     f"choose from {', '.join(VARIANTS)}")
    variants = {name: VARIANTS[name] for name in names}
    with lab_and_browser("--js-flags=--expose-gc") as (lab, browser):
        phases, messages, allocated, survivors = measure(lab, browser, args.seconds, args.rounds, variants,
                                                         args.trace, traced, args.allocations, args.survivors)
    print(f"one visible monitor, %%stream rates --trigger '1 second', {args.rounds} rounds of {args.seconds:.0f} s "
          "per variant; per minute, each round, then the median")
    rows = [("Chromium CPU (s/min)", "cpu s/min"), ("  renderer (s/min)", "renderer s/min"),
            ("  GPU process (s/min)", "gpu-process s/min"), ("CDP task time (s/min)", "TaskDuration"),
            ("Chromium CPU (ms/batch)", "cpu ms/batch")]
    for name, runs in phases.items():
        print(name)
        for label, key in rows:
            values = [run[key] for run in runs]
            print(f"  {label:26}" + "".join(f"{value:8.2f}" for value in values)
                  + f"   median {statistics.median(values):.2f}")
    print("messages the page receives per batch (the monitor as is):")
    for kind, per_batch in messages.items():
        print(f"  {per_batch:5.2f}  {kind}")
    if allocated:
        print(f"what the page's JS allocates (the monitor as is, {args.allocations:.0f} s; collected objects "
              f"included): {allocated['MB/min']:.1f} MB per minute")
        _print_sizes(allocated)
    if survivors:
        print(f"what of it outlives the young generation (the monitor as is, {args.survivors:.0f} s; what the "
              f"major collections then free included): {survivors['MB/min']:.2f} MB per minute")
        _print_sizes(survivors)


def _print_sizes(allocated: dict[str, Any]) -> None:
    for label in ("by file", "by function"):
        for name, mb in allocated[label]:
            print(f"  {mb:6.2f} MB/min  {label[3:]:8} {name}")


if __name__ == "__main__":
    main()
