// Drawing one chart of a chart grid with plotly.js: a spec (layout, trace styles, static
// traces) plus the live points of the chart's traces become one `Plotly.react` call.
//
// Kept apart from the widget plumbing (charts.ts) and the point store (series.ts) so how
// charts draw can change on its own.

import type { ISeries, Value } from './series';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Plotly = any;

export interface ITrace {
  x?: Value[];
  y?: Value[];
  [key: string]: unknown;
}

export interface IChartSpec {
  key: string;
  empty_message?: string;
  layout: Record<string, any>;
  traces: ITrace[];
}

/** Fixed chart width in px (the grid wraps to one column when two do not fit). */
export const CHART_WIDTH = 560;

/**
 * Draw chart `spec` into `div`: live traces (no x/y in the spec) take the series' lanes
 * in order; the others (overlays, static charts) carry their own points. A chart without
 * traces, or a live chart without a single value yet, shows `fallback` (or the spec's own
 * empty message) instead of axes.
 */
export function drawChart(
  plotly: Plotly,
  div: HTMLElement,
  spec: IChartSpec,
  series: ISeries | undefined,
  fallback: string
): void {
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
  // A live chart whose lanes hold only nulls (no watermark yet, or none at all) is empty too.
  const hasPoint =
    !!series &&
    series.x.length > 0 &&
    series.y.some(values => values.some(v => v !== null && v !== undefined));
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
