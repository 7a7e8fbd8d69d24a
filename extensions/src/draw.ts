// Drawing one chart of a chart grid with plotly.js: a spec (layout, trace styles, static
// traces) plus the live points of the chart's traces.
//
// Kept apart from the widget plumbing (charts.ts) and the point store (series.ts) so how
// charts draw can change on its own.
//
// A full plotly draw (`react`, `extendTraces`, `restyle`) recomputes and redraws the whole
// chart: defaults, axes, ticks, legend, margins, with a forced layout per text it measures.
// New points alone are drawn without plotly (patch.ts: a picture in a canvas over the
// chart, canvas.ts, or written into the SVG plotly drew), or, for what that does not know,
// take plotly's animation path (`Plotly.animate` with no transition and no redraw), which
// redraws only the traces. Under the pointer they are written into the SVG (plotly's hover
// labels stay over them), and plotly's own data, which its hover reads, catches up when
// the pointer moves (one redraw a batch at most): a pointer resting on a chart costs the
// page no plotly draw per batch. For either the axes must not need to move: the axes of
// live charts get ranges with room to grow (ranges.ts); when the points leave them, plotly
// moves the axes alone (moveAxes) and the points are drawn over them as above, and a full
// draw happens only when that cannot be done (or the spec, the traces or the empty state
// change). An axis the user zoomed or panned keeps the user's range until autoscaled.

import { canvasShown, releaseCanvas } from './canvas';
import { patchPoints } from './patch';
import { IAxes, liveRanges, within } from './ranges';
import { drawSwitch, movesWithAllPoints, pointerSwitch } from './switches';
import type { IChartSpec, ISeries, ITrace } from './series';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Plotly = any;

/** Fixed chart width in px (the grid wraps to one column when two do not fit). */
export const CHART_WIDTH = 560;

/** How a chart was last drawn in a div (what decides whether new points need a full draw). */
interface IDrawn extends IAxes {
  spec: IChartSpec;
  fallback: string;
  traces: number;
  /** The live traces' modes (a line without one gains markers while short). */
  modes: string;
  /** Whether the last draw showed points (not the empty message). */
  points: boolean;
  /** Set when the user autoscaled an axis: the next update draws in full. */
  stale: boolean;
  /** Counts the autoscales: part of `uirevision`, so that plotly forgets the autoscale. */
  epoch: number;
  /** Points were patched in since plotly last drew: its hover data is behind. */
  patched: boolean;
  /** The pointer is over the chart: points are patched into the SVG, not a canvas (hover, zoom). */
  inside: boolean;
}

/** Lines with fewer points than this mark each point (plotly's default for a line without a mode). */
const SHORT_LINE = 20;

/**
 * Double-click and the Autoscale button give an axis back to the chart (plotly's reset
 * would restore the ranges of the chart's first draw, long gone in a live chart).
 */
const CONFIG = {
  displaylogo: false,
  responsive: false,
  doubleClick: 'autosize',
  modeBarButtonsToRemove: ['resetScale2d']
};

const drawn = new WeakMap<HTMLElement, IDrawn>();

/**
 * How updates are drawn (switches.ts): `plotly` has plotly draw every update, `full-axes` has
 * plotly draw the whole chart whenever its axes move, `fixed-axes` never moves the axes of a
 * patched chart (points past them are patched but not seen); otherwise new points are
 * patched and moved axes drawn alone.
 */
function draws(): 'plotly' | 'full-axes' | 'fixed-axes' | 'patch' {
  const asked = drawSwitch();
  return asked === 'plotly' || asked === 'full-axes' || asked === 'fixed-axes' ? asked : 'patch';
}

/**
 * Counts the draws per kind on the chart, for tests and benches: `data-full-draws` (plotly
 * drew it all), `data-point-draws` (new points alone), and of those `data-patched-draws`
 * (drawn without plotly), and `data-axis-draws` (moved axes, see moveAxes); of both,
 * `data-pointer-draws` counts those written into the SVG under the pointer (no picture).
 */
function count(div: HTMLElement, kind: 'fullDraws' | 'pointDraws' | 'patchedDraws' | 'pointerDraws' | 'axisDraws'): void {
  div.dataset[kind] = String(Number(div.dataset[kind] ?? 0) + 1);
}

/**
 * Draw chart `spec` into `div`: live traces (no x/y in the spec) take the series' lanes
 * in order; the others (overlays, static charts) carry their own points. A chart without
 * traces, or a live chart without a single value yet, shows `fallback` (or the spec's own
 * empty message) instead of axes. One plotly call per chart per drawn update. `window`
 * (the points kept per live trace) sizes the batch axis of a chart still filling up.
 */
export function drawChart(
  plotly: Plotly,
  div: HTMLElement,
  spec: IChartSpec,
  series: ISeries | undefined,
  fallback: string,
  window = 0
): void {
  let lane = 0;
  const live: number[] = [];
  const traces = spec.traces.map((trace, index) => {
    if (trace.x !== undefined || trace.y !== undefined) {
      return { ...trace };
    }
    live.push(index);
    const x = series?.x ?? [];
    // plotly's own default, made explicit so that a change of it draws in full.
    const mode = trace.mode ?? (x.length < SHORT_LINE ? 'lines+markers' : 'lines');
    return { ...trace, mode, x, y: series?.y[lane++] ?? [] };
  });
  const modes = live.map(index => traces[index].mode).join();
  // A live chart whose lanes hold only nulls (no watermark yet, or none at all) is empty too.
  const hasPoint =
    !!series &&
    series.x.length > 0 &&
    series.y.some(values => values.some(v => v !== null && v !== undefined));
  const points = traces.length > 0 && (live.length === 0 || hasPoint);
  const before = drawn.get(div);
  const gd = div as any;
  const pointsOnly = onlyPointsChanged(before, gd, { spec, fallback, traces: traces.length, modes, points }) &&
    live.length > 0;
  const asked = draws();
  const fixed = pointsOnly && before.patched && asked === 'fixed-axes';
  if (pointsOnly && (fixed || within(before, spec.layout, traces, window))) {
    // They fit the axes: draw them without plotly, or redraw the traces alone with plotly;
    // when plotly has yet to make a shape they need (a line that had no points at its last
    // full draw), draw in full below, which makes it.
    const byPlotly = asked === 'plotly' || (before.inside && pointerSwitch() === 'plotly');
    const patched = byPlotly ? 'plotly' : patchPoints(gd, traces, live, before.inside);
    if (patched !== 'missing') {
      count(div, 'pointDraws');
      before.patched = patched === 'patched';
      if (before.patched) {
        count(div, 'patchedDraws');
        if (before.inside) {
          count(div, 'pointerDraws');
        }
        return;
      }
      releaseCanvas(div);
      const update = plotly.animate(
        div,
        { data: live.map(index => ({ x: traces[index].x, y: traces[index].y })), traces: live },
        { transition: { duration: 0 }, frame: { duration: 0, redraw: false }, mode: 'immediate' }
      );
      // A newer update interrupting this one rejects it: nothing is lost, the newer one draws.
      Promise.resolve(update).catch(() => undefined);
      return;
    }
  } else if (pointsOnly && before.patched && asked === 'patch' && !(before.inside && pointerSwitch() !== 'default')) {
    // They left the axes, and the points before were patched: move the axes alone (under
    // the pointer too, the points then patched into the SVG, as above).
    if (moveAxes(plotly, gd, before, spec.layout, traces, live, window)) {
      count(div, 'axisDraws');
      if (before.inside) {
        count(div, 'pointerDraws');
      }
      return;
    }
  }
  const state: IDrawn = {
    spec,
    fallback,
    traces: traces.length,
    modes,
    points,
    ranges: {},
    user: before?.user ?? new Set<string>(),
    stale: false,
    epoch: before?.epoch ?? 0,
    patched: false,
    inside: before?.inside ?? false
  };
  // uirevision keeps the user's zoom, pan and legend choices across updates; after an
  // autoscale it changes, else plotly would keep autoscaling over the ranges set here.
  const layout: Record<string, any> = { ...spec.layout, uirevision: `${spec.key}:${state.epoch}` };
  for (const name of axisNames(layout)) {
    // plotly writes the ranges it autoscaled into the axes it is given: not into the spec's,
    // which would then look fixed (not managed) to every later update.
    layout[name] = { ...layout[name] };
  }
  if (!points) {
    // No fake axes before the first batch: hide them and say what the chart waits for.
    for (const name of axisNames(layout)) {
      layout[name] = { ...layout[name], visible: false };
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
  } else if (live.length > 0) {
    for (const [name, range] of Object.entries(liveRanges(state, before, spec.layout, traces, window))) {
      state.ranges[name] = range;
      layout[name] = { ...layout[name], range: [...range], autorange: false };
    }
  }
  releaseCanvas(div);
  plotly.react(div, traces, layout, CONFIG);
  count(div, 'fullDraws');
  if (!before && typeof gd.on === 'function') {
    gd.on('plotly_relayout', (event: Record<string, unknown>) => onRelayout(div, event));
    div.addEventListener('pointerenter', () => onPointer(plotly, div, true));
    div.addEventListener('pointerleave', () => onPointer(plotly, div, false));
    // Before plotly's own handlers (capture): its hover then reads points it has drawn.
    div.addEventListener('pointermove', event => onPointerMove(plotly, div, event), { capture: true });
  }
  drawn.set(div, state);
}

/**
 * Whether only points changed since the chart's last draw `before`: not the spec, the
 * traces, their modes or the empty state, with plotly's layout in place and no autoscale
 * pending. Says so to TypeScript too: `before` is then the last draw.
 */
function onlyPointsChanged(
  before: IDrawn | undefined,
  gd: any,
  now: Pick<IDrawn, 'spec' | 'fallback' | 'traces' | 'modes' | 'points'>
): before is IDrawn {
  return (
    before !== undefined &&
    !!gd._fullLayout &&
    before.spec === now.spec &&
    before.fallback === now.fallback &&
    before.traces === now.traces &&
    before.modes === now.modes &&
    before.points &&
    now.points &&
    !before.stale
  );
}

/**
 * New points that left the axes of a chart drawn by patches: plotly moves the axes
 * (`relayout` of their ranges: ticks, grid and its own, older points, about half the script
 * of a full draw, which also recomputes every default and trace), then the new points are
 * patched in over them (into the SVG under the pointer, where plotly's hover label shows).
 * False when the ranges did not change or the points cannot be patched: the caller then
 * draws in full.
 */
function moveAxes(
  plotly: Plotly,
  gd: any,
  state: IDrawn,
  layout: Record<string, any>,
  traces: ITrace[],
  live: number[],
  window: number
): boolean {
  const ranges = liveRanges(state, state, layout, traces, window);
  const update: Record<string, [number, number]> = {};
  for (const [name, range] of Object.entries(ranges)) {
    const old = state.ranges[name];
    if (!old || old[0] !== range[0] || old[1] !== range[1]) {
      update[`${name}.range`] = [...range];
    }
  }
  if (Object.keys(update).length === 0) {
    return false;
  }
  // Known before plotly tells of the relayout (onRelayout): these ranges are the chart's own.
  state.ranges = { ...state.ranges, ...ranges };
  // Plotly draws synchronously here (no transition, no asynchronous layout step): its promise
  // only says so; a rejection is left to the full draw the next update makes.
  const move = () =>
    Promise.resolve(plotly.relayout(gd, update)).catch(() => {
      state.stale = true;
    });
  if ((canvasShown(gd) || state.inside) && !movesWithAllPoints()) {
    withEnds(gd, live, move);
  } else {
    move();
  }
  return patchPoints(gd, traces, live, state.inside) === 'patched';
}

/**
 * Call `during` (plotly's move of the axes) with plotly's calc data of the live traces cut
 * to their first and last points, then put back. A move redraws every trace with the axes,
 * each point's shape and style (about three fifths of the move's script), but a chart drawn
 * in its canvas hides its live traces' SVG under it, and under the pointer the patches write
 * every point into that SVG right after: plotly then keeps two points of each, enough for
 * every shape the patches look for (a line's path, a marker, a bar, a band), and the canvas
 * or the patched SVG shows them all. Plotly's next draw of its own (the pointer moving over
 * the chart, a full draw) starts from the chart's data again. A trace whose first or last
 * point is missing keeps all its points: with fewer than two, plotly would remove its line.
 * `data-workbench-moves="all-points"` on the page keeps them all (what the bench compares with).
 */
function withEnds(gd: any, live: number[], during: () => void): void {
  const calcdata: any[][] = Array.isArray(gd.calcdata) ? gd.calcdata : [];
  const kept = new Map<number, any[]>();
  for (const index of live) {
    const points = calcdata[index];
    if (!Array.isArray(points) || points.length <= 2) {
      continue;
    }
    const ends = [points[0], points[points.length - 1]];
    if (ends[0].trace?.index === index && ends.every(present)) {
      kept.set(index, points);
      calcdata[index] = ends;
    }
  }
  try {
    during();
  } finally {
    kept.forEach((points, index) => {
      calcdata[index] = points;
    });
  }
}

/** Whether a point of plotly's calc data has both its values (a scatter's x, y; a bar's p, s). */
function present(point: any): boolean {
  const x = point.p ?? point.x;
  const y = point.s ?? point.y;
  return Number.isFinite(x) && Number.isFinite(y);
}

/**
 * The pointer entered or left the chart. Plotly's hover and zoom read its own calc data,
 * which patched points leave behind: on entering, plotly redraws the chart from its data
 * (and without the canvas, so that its hover labels show over the points); while the
 * pointer stays, new points are patched into that SVG (drawChart).
 */
function onPointer(plotly: Plotly, div: HTMLElement, inside: boolean): void {
  const state = drawn.get(div);
  if (!state) {
    return;
  }
  state.inside = inside;
  if (inside) {
    catchUp(plotly, div, state);
  }
}

/**
 * The pointer moved over the chart: plotly's hover is about to read its data, so points
 * patched in since plotly last drew are drawn by plotly first (once for all of them). Not
 * while a button is down: plotly's zoom or pan then owns the chart, and draws it when done.
 */
function onPointerMove(plotly: Plotly, div: HTMLElement, event: PointerEvent): void {
  const state = drawn.get(div);
  if (state && state.inside && event.buttons === 0) {
    catchUp(plotly, div, state);
  }
}

/** Plotly redraws the chart from its data, if points were patched in since it last drew. */
function catchUp(plotly: Plotly, div: HTMLElement, state: IDrawn): void {
  if (state.patched) {
    state.patched = false;
    releaseCanvas(div);
    plotly.redraw(div);
    count(div, 'fullDraws');
  }
}

/** A zoom or pan makes an axis the user's; autoscaling gives it back. */
function onRelayout(div: HTMLElement, event: Record<string, unknown>): void {
  const state = drawn.get(div);
  if (!state || !event) {
    return;
  }
  for (const key of Object.keys(event)) {
    const match = /^([xy]axis\d*)\.(range|autorange)/.exec(key);
    if (!match) {
      continue;
    }
    if (match[2] === 'autorange' && event[key] === true) {
      state.user.delete(match[1]);
      state.epoch += state.stale ? 0 : 1;
      state.stale = true;
    } else if (match[2] === 'range' && !ownRange(state, match[1], key, event[key])) {
      state.user.add(match[1]);
    }
  }
}

/** Whether a relayout event's range is the one moveAxes set (not the user's zoom or pan). */
function ownRange(state: IDrawn, axis: string, key: string, value: unknown): boolean {
  const range = state.ranges[axis];
  return key === `${axis}.range` && Array.isArray(value) && !!range && value[0] === range[0] && value[1] === range[1];
}

/** The axes a layout names (`xaxis`, `yaxis2`, ...). */
function axisNames(layout: Record<string, any>): string[] {
  return Object.keys(layout).filter(name => /^[xy]axis\d*$/.test(name));
}
