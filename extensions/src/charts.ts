// The ChartGrid widget: several plotly charts fed point by point from the kernel.
//
// plotly.js is imported lazily (its own chunk of this extension's static files), so it
// reaches the page once, when the first chart is shown, and the browser caches it like any
// asset. The model keeps each chart's rolling window of points; views draw it. The kernel
// sends only new points ({kind: "data", reset: false}); a model that (re)loads asks for the
// whole window with {kind: "ready"}. See workbench/views/charts.py for the wire format.

import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';

import { MODULE_NAME, MODULE_VERSION } from './version';

type Value = number | string | null;

interface ITrace {
  x?: Value[];
  y?: Value[];
  [key: string]: unknown;
}

interface IChartSpec {
  key: string;
  empty_message?: string;
  layout: Record<string, any>;
  traces: ITrace[];
}

interface ISeries {
  x: Value[];
  y: Value[][];
}

interface IDataMessage {
  kind: 'data';
  reset: boolean;
  charts: Record<string, ISeries>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Plotly = any;

const CHART_WIDTH = 560;

let plotlyPromise: Promise<Plotly> | null = null;

/** plotly.js, loaded once per page. */
export function loadPlotly(): Promise<Plotly> {
  if (!plotlyPromise) {
    plotlyPromise = import(
      /* webpackChunkName: "plotly" */ 'plotly.js-dist-min'
    ).then(module => (module as any).default ?? module);
  }
  return plotlyPromise;
}

export class ChartGridModel extends DOMWidgetModel {
  defaults(): Backbone.ObjectHash {
    return {
      ...super.defaults(),
      _model_name: 'ChartGridModel',
      _view_name: 'ChartGridView',
      _model_module: MODULE_NAME,
      _view_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_module_version: MODULE_VERSION,
      charts: [],
      window: 60,
      empty_message: 'Waiting for the first batch…'
    };
  }

  /** Live points of each chart, by key: the last `window` of each trace. */
  readonly series = new Map<string, ISeries>();

  initialize(attributes: Backbone.ObjectHash, options: any): void {
    super.initialize(attributes, options);
    this.on('msg:custom', this.onMessage, this);
    // A model created in a page that was not there when the charts started (a reload, a
    // second window) asks for the kernel's window of points.
    if (this.comm) {
      this.send({ kind: 'ready' }, {});
    }
  }

  private onMessage(content: IDataMessage): void {
    if (!content || content.kind !== 'data') {
      return;
    }
    const window = Math.max(1, Number(this.get('window')) || 60);
    for (const [key, incoming] of Object.entries(content.charts)) {
      const current = this.series.get(key);
      if (content.reset || !current) {
        this.series.set(key, {
          x: incoming.x.slice(-window),
          y: incoming.y.map(lane => lane.slice(-window))
        });
        continue;
      }
      current.x = current.x.concat(incoming.x).slice(-window);
      const lanes = Math.max(current.y.length, incoming.y.length);
      for (let index = 0; index < lanes; index++) {
        const before =
          current.y[index] ?? new Array(current.x.length - incoming.x.length).fill(null);
        const added = incoming.y[index] ?? new Array(incoming.x.length).fill(null);
        current.y[index] = before.concat(added).slice(-window);
      }
    }
    this.trigger('data:changed');
  }

  static model_name = 'ChartGridModel';
  static model_module = MODULE_NAME;
  static model_module_version = MODULE_VERSION;
  static view_name = 'ChartGridView';
  static view_module = MODULE_NAME;
  static view_module_version = MODULE_VERSION;
}

export class ChartGridView extends DOMWidgetView {
  private grid!: HTMLDivElement;
  private plots = new Map<string, HTMLDivElement>();
  private plotly: Plotly | null = null;
  private frame: number | null = null;
  private removed = false;

  render(): void {
    this.el.classList.add('workbench-charts');
    // Fixed-width charts in a grid that wraps to one column when two do not fit. The grid
    // is an inner element: ipywidgets' layout styles own this.el's own style.
    this.grid = document.createElement('div');
    this.grid.classList.add('workbench-chart-grid');
    Object.assign(this.grid.style, {
      display: 'grid',
      gridTemplateColumns: `repeat(auto-fill, ${CHART_WIDTH}px)`,
      gap: '4px',
      width: '100%'
    });
    this.el.appendChild(this.grid);
    this.build();
    this.listenTo(this.model, 'change:charts', () => {
      this.build();
      this.schedule();
    });
    this.listenTo(this.model, 'change:empty_message', () => this.schedule());
    this.listenTo(this.model, 'data:changed', () => this.schedule());
    loadPlotly()
      .then(plotly => {
        this.plotly = plotly;
        this.schedule();
      })
      .catch(reason => {
        this.el.textContent = `The charts could not load plotly.js: ${reason}`;
      });
  }

  private specs(): IChartSpec[] {
    return (this.model.get('charts') as IChartSpec[]) ?? [];
  }

  /** One div per chart, kept across redraws (plotly updates them in place). */
  private build(): void {
    const keys = new Set(this.specs().map(spec => spec.key));
    for (const [key, div] of this.plots) {
      if (!keys.has(key)) {
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
      this.grid.appendChild(div); // keeps the specs' order
    }
  }

  /** Draw at most once per animation frame, however many messages arrived. */
  private schedule(): void {
    if (this.frame !== null || this.removed) {
      return;
    }
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this.draw();
    });
  }

  private draw(): void {
    const plotly = this.plotly;
    if (!plotly || this.removed) {
      return;
    }
    const model = this.model as ChartGridModel;
    const fallback = String(this.model.get('empty_message') ?? '');
    for (const spec of this.specs()) {
      const div = this.plots.get(spec.key);
      if (!div) {
        continue;
      }
      const series = model.series.get(spec.key);
      // Live traces (no x/y in the spec) take the model's lanes in order; the others
      // (overlays, static charts) carry their own points.
      let lane = 0;
      let live = false;
      const traces = spec.traces.map(trace => {
        if (trace.x !== undefined || trace.y !== undefined) {
          return { ...trace };
        }
        live = true;
        return { ...trace, x: series?.x ?? [], y: series?.y[lane++] ?? [] };
      });
      // uirevision keeps the user's zoom, pan and legend choices across updates.
      const layout: Record<string, any> = { ...spec.layout, uirevision: spec.key };
      // A chart is empty before its first point, and while it has no trace at all (e.g.
      // the state chart of a query that keeps no state).
      // A live chart whose lanes hold only nulls (no watermark yet, or none at all) is empty too.
      const hasPoint =
        !!series &&
        series.x.length > 0 &&
        series.y.some(lane => lane.some(v => v !== null && v !== undefined));
      if (traces.length === 0 || (live && !hasPoint)) {
        // No fake axes before the first batch: hide them and say what the chart waits for.
        for (const name of Object.keys(layout)) {
          if (/^[xy]axis\d*$/.test(name)) {
            layout[name] = { ...layout[name], visible: false };
          }
        }
        layout.annotations = [
          ...(layout.annotations ?? []),
          {
            text: spec.empty_message ?? fallback,
            showarrow: false,
            xref: 'paper',
            yref: 'paper',
            x: 0.5,
            y: 0.5,
            font: { size: 14, color: '#7f7f7f' }
          }
        ];
      }
      plotly.react(div, traces, layout, { displaylogo: false, responsive: false });
    }
  }

  remove(): void {
    this.removed = true;
    if (this.frame !== null) {
      cancelAnimationFrame(this.frame);
      this.frame = null;
    }
    for (const div of this.plots.values()) {
      this.plotly?.purge(div);
    }
    this.plots.clear();
    super.remove();
  }
}
