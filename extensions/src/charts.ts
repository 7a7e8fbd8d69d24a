// The ChartGrid widget's view: several plotly charts fed point by point from the kernel.
//
// An anywidget-style definition (`render({model, el})`), used by the JupyterLab extension
// (plotly.js from its own static chunk) and by the module the kernel sends to front ends
// without the extension (plotly.js sent once per page by the kernel). Each view keeps its
// charts' rolling window of points: the kernel sends only new points ({kind: "data",
// reset: false}); a view that starts asks for the whole window with {kind: "ready"}. See
// workbench/views/charts.py for the wire format; drawing is in draw.ts.
//
// Drawing is the page's main cost, so a view draws only what changed, at most once per
// animation frame, and only while it can be seen: a grid scrolled out of view, in a
// collapsed output or a hidden JupyterLab tab (IntersectionObserver), or in a background
// browser tab (document.visibilityState) keeps taking points but draws nothing; when it
// shows again it draws the latest state in one update. The view also tells the kernel
// whether it can be seen ({kind: "seen", view, visible}), and the kernel sends no points (and
// no header or preview updates) while none of a widget's views can: a hidden monitor costs
// the page nothing; when one shows again the kernel sends the whole window once. The grid's
// `data-draws` attribute counts the drawn updates and `data-pass` names the page's draw
// pass of the latest (what the browser tests and bench/bench_draw_passes.py watch).
//
// A grid may have a caption, one line of HTML over its charts (the monitor's newest batch,
// rates and watermark): it comes in the data messages with the points and is shown with
// their draw, in the same frame (once the charts' pictures are drawn: `afterPictures` in
// canvas.ts), as a picture where it can be (caption.ts).
//
// The grids of a page draw together (`DrawPasses`): the grids with something to draw draw
// it in one animation frame, a draw pass, and the page's passes are at least `passGap` ms
// apart: 250 ms while one or two grids draw, a second once eight or more do. A frame costs
// the page its paint, raster and compositing whatever it draws (about 12 ms of CPU in
// JupyterLab's page with software rendering, and more the more of the window it covers), so
// ten monitors whose batches arrive at different times share one frame a second instead of
// taking ten; one monitor at a batch a second still draws each batch in the frame after it
// arrives.

import { afterPictures, forgetCanvas } from './canvas';
import { CaptionLine } from './caption';
import { CHART_WIDTH, drawChart, Plotly } from './draw';
import { watchHolder } from './holder';
import { IModel, IRenderProps, IWidgetDef } from './host';
import { applyData, IChartSpec, IDataMessage, ISeries } from './series';
import { passGapAsked } from './switches';

/** The chart grid, drawing with the plotly.js that `loadPlotly` gives (once per page). */
export function chartGrid(loadPlotly: () => Promise<Plotly>): IWidgetDef {
  return {
    render: ({ model, el }: IRenderProps) => new ChartGridView(model, el, loadPlotly).dispose
  };
}

class ChartGridView {
  private grid = document.createElement('div');
  private caption = document.createElement('div');
  /** The caption the kernel sent last, and whether it is still to be written (null: written). */
  private captionDue: string | null = null;
  private captionShown = '';
  /** Counts the captions drawn: one shown late (its pictures slow) gives way to a newer one. */
  private captionTurn = 0;
  private captionLine = new CaptionLine(this.caption);
  private plots = new Map<string, HTMLDivElement>();
  private series = new Map<string, ISeries>();
  private plotly: Plotly | null = null;
  /** Whether this view waits for the page's next draw pass. */
  private queued = false;
  private removed = false;
  /** Charts whose points or spec changed since they were last drawn. */
  private dirty = new Set<string>();
  /** Whether the grid intersects the viewport (true where IntersectionObserver is missing). */
  private onScreen = typeof IntersectionObserver === 'undefined';
  private observer: IntersectionObserver | null = null;
  /**
   * The grid and the notebook cell holding it, watched in the box the notebook scrolls in
   * (`near`, with a margin), and whether each is near its view. JupyterLab's boxes round the
   * notebook contain their paint, which clips what the window's observer sees to the view,
   * margin or not; and a cell out of view gets `content-visibility: auto`, which skips its
   * content, so that nothing in it intersects anything until the cell shows.
   */
  private near: IntersectionObserver | null = null;
  private gridNear = false;
  private cell: Element | null = null;
  private cellNear = false;
  private draws = 0;
  /** This view's name in its "seen" messages, and what it last said (null: nothing yet). */
  private viewId = Math.random().toString(36).slice(2);
  private reported: boolean | null = null;
  /** Stops watching the kernel for the widget holding the grid (holder.ts). */
  private unwatch: () => void;

  constructor(
    private model: IModel,
    private el: HTMLElement,
    loadPlotly: () => Promise<Plotly>
  ) {
    el.classList.add('workbench-charts');
    // Fixed-width charts in a grid that wraps to one column when two do not fit. The grid
    // is an inner element: ipywidgets' layout styles own el's own style.
    this.grid.classList.add('workbench-chart-grid');
    Object.assign(this.grid.style, {
      display: 'grid',
      gridTemplateColumns: `repeat(auto-fill, ${CHART_WIDTH}px)`,
      gap: '4px',
      width: '100%'
    });
    this.caption.classList.add('workbench-chart-caption');
    // A line of its own: its text changes every batch, its box (and what follows) does not.
    Object.assign(this.caption.style, { minHeight: '20px', lineHeight: '20px', margin: '2px 0' });
    this.caption.hidden = true; // until the kernel sends one
    el.append(this.caption, this.grid);
    this.grid.dataset.draws = '0';
    this.build();
    this.specs().forEach(spec => this.dirty.add(spec.key));
    model.on('change:charts', this.onCharts);
    model.on('change:empty_message', this.onCharts);
    model.on('msg:custom', this.onMessage);
    // The kernel answers with the whole rolling window (a reload, a second view).
    model.send({ kind: 'ready' });
    if (!this.onScreen) {
      // A node with no box (display: none, a hidden tab) never intersects; the margins
      // draw a grid just before it scrolls in.
      this.observer = new IntersectionObserver(this.onIntersection, MARGINS);
      this.observer.observe(this.grid); // its first call says whether the grid is in view
      requestAnimationFrame(this.watchNear); // the view's element is in the page by then
    } else {
      this.report();
    }
    document.addEventListener('visibilitychange', this.onVisibility);
    window.addEventListener('pagehide', this.onPageHide);
    window.addEventListener('pageshow', this.onPageShow);
    this.unwatch = watchHolder(model, el, 'these charts');
    loadPlotly()
      .then(plotly => {
        this.plotly = plotly;
        this.schedule();
      })
      .catch(reason => {
        this.el.textContent = `The charts could not load plotly.js: ${reason}`;
      });
  }

  private onCharts = (): void => {
    this.build();
    for (const spec of this.specs()) {
      this.dirty.add(spec.key);
    }
    this.schedule();
  };

  private onMessage = (content: IDataMessage): void => {
    if (content && content.kind === 'data') {
      applyData(this.series, content, this.window());
      for (const key of Object.keys(content.charts ?? {})) {
        this.dirty.add(key);
      }
      if (typeof content.caption === 'string') {
        this.captionDue = content.caption;
      }
      this.schedule();
    }
  };

  private onIntersection = (entries: IntersectionObserverEntry[]): void => {
    // The last entry is the newest state of the one observed node.
    this.onScreen = entries[entries.length - 1].isIntersecting;
    this.watchNear();
    this.onVisibility();
  };

  /** Once in the page, watch the grid and its cell in the box the notebook scrolls in, if any. */
  private watchNear = (): void => {
    const box = this.near || this.removed ? null : scrollingBox(this.grid);
    if (box) {
      this.near = new IntersectionObserver(this.onNear, { root: box, rootMargin: '200px' });
      this.near.observe(this.grid);
      this.cell = this.grid.closest('.jp-Cell');
      if (this.cell) {
        this.near.observe(this.cell);
      }
    }
  };

  private onNear = (entries: IntersectionObserverEntry[]): void => {
    for (const entry of entries) {
      // In order, the newest last.
      if (entry.target === this.grid) {
        this.gridNear = entry.isIntersecting;
      } else {
        this.cellNear = entry.isIntersecting;
      }
    }
    this.onVisibility();
  };

  private onVisibility = (): void => {
    this.report();
    this.schedule();
  };

  /** The page goes (a reload, a closed tab): the view goes with it, and the kernel is told. */
  private onPageHide = (): void => {
    this.report(true);
  };

  /** Back from the browser's page cache: the view lives again. */
  private onPageShow = (event: PageTransitionEvent): void => {
    if (event.persisted && !this.removed) {
      this.reported = null;
      this.onVisibility();
    }
  };

  /**
   * Tell the kernel when whether this view can be seen changes, and always when it goes
   * (`gone`: disposed, or its page hidden for good), whatever it said before: the kernel
   * forgets the view then, and a view that said it could be seen no longer counts as seen.
   */
  private report(gone = false): void {
    const visible = !gone && (this.visible() || this.skippedNear());
    if (gone || visible !== this.reported) {
      this.reported = visible;
      try {
        this.model.send({ kind: 'seen', view: this.viewId, visible, gone });
      } catch {
        // A model closed by the kernel takes no messages; nothing to tell it then.
      }
    }
  }

  /** Points kept per live trace. */
  private window(): number {
    return Math.max(1, Number(this.model.get('window')) || 60);
  }

  /**
   * Whether the grid's cell is near the view with its content skipped: the grid cannot say
   * where it is then, and the kernel is told it can be seen, so that its points are here when
   * it shows (it draws once it does).
   */
  private skippedNear(): boolean {
    return (
      this.cellNear &&
      document.visibilityState !== 'hidden' &&
      !!this.cell &&
      getComputedStyle(this.cell).contentVisibility === 'auto'
    );
  }

  /** Whether a user could see the grid now, or will as it scrolls on. */
  private visible(): boolean {
    return (this.onScreen || this.gridNear) && document.visibilityState !== 'hidden';
  }

  private specs(): IChartSpec[] {
    return (this.model.get('charts') as IChartSpec[]) ?? [];
  }

  /** One div per chart, kept across redraws (plotly updates them in place). */
  private build(): void {
    const keys = new Set(this.specs().map(spec => spec.key));
    for (const [key, div] of this.plots) {
      if (!keys.has(key)) {
        forgetCanvas(div);
        this.plotly?.purge(div);
        div.remove();
        this.plots.delete(key);
      }
    }
    for (const spec of this.specs()) {
      let div = this.plots.get(spec.key);
      if (!div) {
        div = document.createElement('div');
        div.classList.add('workbench-chart');
        div.dataset.chart = spec.key;
        this.plots.set(spec.key, div);
      }
      contain(div, spec);
      this.grid.appendChild(div); // keeps the specs' order
    }
  }

  /**
   * Draw in the page's next draw pass, once however many messages arrived, and only while
   * visible (what changed meanwhile stays in `dirty` until the grid shows again).
   */
  private schedule = (): void => {
    const due = this.dirty.size > 0 || this.captionDue !== null;
    if (this.queued || this.removed || !due || !this.visible()) {
      return;
    }
    this.queued = true;
    drawPasses().request(this.draw);
  };

  private draw = (pass: number): void => {
    this.queued = false;
    const plotly = this.plotly;
    if (!plotly || this.removed || !this.visible()) {
      return;
    }
    // The caption shows with the charts' new pictures, in the same frame (canvas.ts).
    const caption = this.captionDue;
    this.captionDue = null;
    try {
      const fallback = String(this.model.get('empty_message') ?? '');
      const window = this.window();
      // Each chart on its own: one that fails stays due (tried again with the next update),
      // and the others of the grid draw.
      const failed = new Set<string>();
      for (const spec of this.specs()) {
        const div = this.plots.get(spec.key);
        if (div && this.dirty.has(spec.key)) {
          try {
            drawChart(plotly, div, spec, this.series.get(spec.key), fallback, window);
          } catch (error) {
            failed.add(spec.key);
            console.error(`workbench: the chart ${spec.key} failed to draw`, error);
          }
        }
      }
      this.dirty = failed;
      this.grid.dataset.draws = String(++this.draws);
      this.grid.dataset.pass = String(pass);
    } finally {
      if (caption !== null) {
        const turn = ++this.captionTurn;
        afterPictures(() => turn === this.captionTurn && this.writeCaption(caption));
      }
    }
  };

  /** HTML the kernel made (it escapes what it quotes), as ipywidgets' HTML widget takes it. */
  private writeCaption(caption: string): void {
    if (this.removed) {
      return;
    }
    if (this.captionShown !== caption) {
      this.captionLine.write(caption);
      this.captionShown = caption;
    }
    this.caption.hidden = caption === '';
  }

  /** anywidget calls it when the view goes away. */
  dispose = (): void => {
    this.report(true);
    this.removed = true;
    this.model.off('change:charts', this.onCharts);
    this.model.off('change:empty_message', this.onCharts);
    this.model.off('msg:custom', this.onMessage);
    this.observer?.disconnect();
    this.near?.disconnect();
    this.captionLine.dispose();
    document.removeEventListener('visibilitychange', this.onVisibility);
    window.removeEventListener('pagehide', this.onPageHide);
    window.removeEventListener('pageshow', this.onPageShow);
    this.unwatch();
    drawPasses().cancel(this.draw); // no pass draws it, nor counts it among the grids that draw
    this.queued = false;
    for (const div of this.plots.values()) {
      forgetCanvas(div);
      this.plotly?.purge(div);
    }
    this.plots.clear();
  };
}

/**
 * How near the window a grid counts as seen, so that it draws just before it scrolls in:
 * `rootMargin` widens the window alone, `scrollMargin` each scrolling box the grid is in
 * (`scrollMargin` is not in lib.dom of this TypeScript). Neither reaches past a box that
 * contains its paint (JupyterLab's notebook is in some): `ChartGridView.near` does there.
 */
const MARGINS = { rootMargin: '200px', scrollMargin: '200px' } as IntersectionObserverInit;

/** The box `node` scrolls in: JupyterLab's notebook's, or the first that scrolls; null: the window. */
function scrollingBox(node: HTMLElement): Element | null {
  const notebook = node.closest('.jp-WindowedPanel-outer');
  if (notebook) {
    return notebook;
  }
  for (let up = node.parentElement; up; up = up.parentElement) {
    const overflow = getComputedStyle(up).overflowY;
    if ((overflow === 'auto' || overflow === 'scroll') && up.scrollHeight > up.clientHeight) {
      return up;
    }
  }
  return null;
}

/**
 * A chart's changes stay inside its box: with the size its layout gives, the page need not
 * lay out or restyle anything around it when a chart redraws (`contain: strict`); without
 * one, its layout and paint are still its own (`contain: content`).
 */
function contain(div: HTMLDivElement, spec: IChartSpec): void {
  const { width, height } = spec.layout ?? {};
  if (typeof height === 'number' && height > 0) {
    Object.assign(div.style, {
      width: `${typeof width === 'number' && width > 0 ? width : CHART_WIDTH}px`,
      height: `${height}px`,
      contain: 'strict'
    });
  } else {
    Object.assign(div.style, { width: '', height: '', contain: 'content' });
  }
}

/**
 * The least time between two of the page's draw passes, in milliseconds, when `drawing` grids
 * drew in the last `RECENT` ms: `GAP_PER_GRID` each, from `PASS_GAP` (one or two grids: each
 * batch of a stream a second drawn in the frame after it arrives) to `MAX_PASS_GAP` (eight or
 * more: the page draws them in one, fuller frame a second; a grid's points wait at most that).
 */
const PASS_GAP = 250;
const GAP_PER_GRID = 125;
const MAX_PASS_GAP = 1000;
const RECENT = 2000;

function passGap(drawing: number): number {
  return Math.min(MAX_PASS_GAP, Math.max(PASS_GAP, GAP_PER_GRID * drawing));
}

/** What a view asks of the page's draw passes (kept on the window: one per page). */
interface IDrawPasses {
  /** Call `draw` (with the pass's number) in the next pass; a function asked twice is called once. */
  request(draw: (pass: number) => void): void;
  /** Forget `draw`: not called in the next pass, nor counted among the grids that draw. */
  cancel(draw: (pass: number) => void): void;
}

/**
 * The page's draw passes: each is one animation frame in which every grid that asked draws,
 * at least `passGap` ms after the one before (none while nothing asks). A page may say
 * `data-workbench-passes` on its document element: `frame` to draw in the next frame always,
 * or a number of milliseconds for a fixed gap (what bench/bench_draw_passes.py and
 * bench/browser_cpu.py compare with).
 */
class DrawPasses implements IDrawPasses {
  private due = new Set<(pass: number) => void>();
  /** When each grid (its draw function) last drew, for those that drew in the last `RECENT` ms. */
  private drawn = new Map<(pass: number) => void, number>();
  private waiting = false;
  private last = -Infinity;
  private passes = 0;

  request(draw: (pass: number) => void): void {
    this.due.add(draw);
    if (this.waiting) {
      return;
    }
    this.waiting = true;
    const wait = this.last + this.gap() - performance.now();
    if (wait > 0) {
      setTimeout(() => requestAnimationFrame(this.run), wait);
    } else {
      requestAnimationFrame(this.run);
    }
  }

  private gap(): number {
    const fixed = passGapAsked();
    if (fixed !== null) {
      return fixed;
    }
    const since = performance.now() - RECENT;
    for (const [draw, at] of this.drawn) {
      if (at < since) {
        this.drawn.delete(draw);
      }
    }
    return passGap(this.drawn.size);
  }

  cancel(draw: (pass: number) => void): void {
    this.due.delete(draw);
    this.drawn.delete(draw);
  }

  private run = (): void => {
    this.waiting = false;
    this.last = performance.now();
    const pass = ++this.passes;
    const draws = [...this.due];
    this.due.clear();
    for (const draw of draws) {
      this.drawn.set(draw, this.last);
      try {
        draw(pass);
      } catch (error) {
        // One grid's failure must not keep the others from drawing.
        console.error('workbench: a chart grid failed to draw', error);
      }
    }
  };
}

/**
 * The page's one `DrawPasses`, shared by the extension's views and the module the kernel
 * sends to front ends without it (each bundles this file).
 */
function drawPasses(): IDrawPasses {
  const page = window as unknown as { workbenchDrawPasses?: IDrawPasses };
  return (page.workbenchDrawPasses ??= new DrawPasses());
}
