// The live points of a chart grid in the page: each chart's last `window` points, fed by
// the kernel's messages (see workbench/views/charts.py for the wire format). The types of
// what the kernel sends live here too (a chart's spec, its traces, their points), so that
// the modules that draw (draw.ts, ranges.ts, patch.ts) import them from below, not from
// one another.

export type Value = number | string | null;

/** One trace of a chart's spec: plotly's trace attributes, with the static points of a trace that has them. */
export interface ITrace {
  x?: Value[];
  y?: Value[];
  [key: string]: unknown;
}

/** A chart as the kernel specifies it: its key in the grid, plotly's layout and its traces' styles. */
export interface IChartSpec {
  key: string;
  empty_message?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  layout: Record<string, any>;
  traces: ITrace[];
}

export interface ISeries {
  x: Value[];
  y: Value[][];
}

export interface IDataMessage {
  kind: 'data';
  reset: boolean;
  charts: Record<string, ISeries>;
  /** The line of HTML over the charts, when it changed (the monitor's newest batch). */
  caption?: string;
}

/** Apply one data message to `series` (by chart key), keeping the last `window` points. */
export function applyData(series: Map<string, ISeries>, content: IDataMessage, window: number): void {
  for (const [key, incoming] of Object.entries(content.charts)) {
    const current = series.get(key);
    if (content.reset || !current) {
      series.set(key, {
        x: incoming.x.slice(-window),
        y: incoming.y.map(lane => lane.slice(-window))
      });
      continue;
    }
    current.x = current.x.concat(incoming.x).slice(-window);
    const lanes = Math.max(current.y.length, incoming.y.length);
    for (let index = 0; index < lanes; index++) {
      const before =
        current.y[index] ?? new Array(Math.max(0, current.x.length - incoming.x.length)).fill(null);
      const added = incoming.y[index] ?? new Array(incoming.x.length).fill(null);
      current.y[index] = before.concat(added).slice(-window);
    }
  }
}
