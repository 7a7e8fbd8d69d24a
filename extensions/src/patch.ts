// New points drawn straight into the SVG plotly drew, without a plotly call.
//
// Even plotly's lightest update (`Plotly.animate` without redraw) recomputes the whole
// figure's defaults and calc data: some 5 ms of main-thread time per chart, 20-30 ms per
// monitor per batch. When only points changed and they fit the axes (draw.ts decides), the
// shapes a live chart uses are plain enough to redraw from the axes plotly already set:
// line paths (linear or step `hv`, with or without `connectgaps`), markers, the `tonexty`
// band between two lines, stacked bars. This module writes those (one `d` or `transform` attribute per shape, no layout
// read) and puts the points into the chart's `data`, so that plotly's next draw (a zoom,
// a full draw, the hover sync in draw.ts) starts from them.
//
// What the browser repaints is what changed: an attribute is written only when its value
// changes, and markers and bars keep the batch (x) they drew, so that when the window moves
// on, the shape of the batch that left draws the new batch and the others stay untouched
// (rather than every shape taking its neighbour's place, which repaints them all). Anything else (a trace kind,
// shape or fill it does not know) makes it answer 'plotly': draw.ts then lets plotly draw the
// points; a shape plotly has not made yet (a line that had no points at plotly's last draw)
// makes it answer 'missing': draw.ts then has plotly draw the chart in full, which makes it.
//
// Plotly's hover reads its own calc data, which this leaves as the last plotly draw made
// it: draw.ts has plotly draw once when the pointer enters the chart, and draws every
// update with plotly while it stays there.

import { canvasWanted, drawCanvas, releaseCanvas } from './canvas';
import type { ILayer, IShape } from './canvas';
import {
  axisName,
  hundredths,
  IAxis,
  joined,
  lineNumbers,
  lineParts,
  linePath,
  pixel,
  Point,
  round
} from './paths';
import { drawSwitch } from './switches';
import type { ITrace, Value } from './series';

/**
 * The canvas's picture of the live traces (canvas.ts), made beside the SVG writes: a layer
 * per trace (bars first, as plotly's bar layer lies under its scatter layer), and the SVG
 * groups it stands in for. `ok` false: something the canvas does not draw as plotly would
 * (per-point marker styles), so the SVG is written instead.
 */
interface IScene {
  bars: Map<number, ILayer>;
  lines: Map<number, ILayer>;
  hidden: SVGGElement[];
  ok: boolean;
}

/** One attribute write, made only once every trace is known to be patchable. */
type Write = () => void;

/**
 * What `patchPoints` did: drew the points, found a shape plotly has not made yet (a line
 * without points at plotly's last draw: a full draw makes it), or left a trace to plotly.
 */
export type PatchResult = 'patched' | 'missing' | 'plotly';

/** Thrown when a shape the points need is not there yet. */
class MissingShape extends Error {}

/** Thrown when a trace is plotly's to draw; its message says why (the chart's `data-patch-declined`). */
class Declined extends Error {}

/**
 * Draw the live traces' new points into `gd` (a chart plotly drew); nothing is written
 * unless it answers 'patched'. `traces` are the chart's traces with their points, `live`
 * the indexes of the live ones. `svg`: into the SVG plotly drew even where a canvas could
 * show them (under the pointer, where plotly's hover labels must stay over the points).
 */
export function patchPoints(gd: any, traces: ITrace[], live: number[], svg = false): PatchResult {
  try {
    // The `none` switch: nothing drawn, the points only kept (what bench_browser_parts.py
    // measures).
    if (drawSwitch() !== 'none') {
      const scene: IScene | null =
        !svg && canvasWanted() ? { bars: new Map(), lines: new Map(), hidden: [], ok: true } : null;
      const writes = plan(gd, traces, live, scene);
      const layers = scene?.ok ? [...sorted(scene.bars), ...sorted(scene.lines)] : null;
      if (!scene || !layers || !drawCanvas(gd, layers, scene.hidden, () => rewriteSvg(gd, live))) {
        releaseCanvas(gd);
        writes.forEach(write => write());
      }
    }
    for (const index of live) {
      // plotly's next draw (and anyone reading the chart's data) starts from these points.
      gd.data[index].x = traces[index].x;
      gd.data[index].y = traces[index].y;
    }
    return 'patched';
  } catch (error) {
    if (error instanceof MissingShape) {
      return 'missing';
    }
    // Why the last update went to plotly (a trace it declines, or a plotly it does not know),
    // for tests and benches.
    gd.dataset.patchDeclined = error instanceof Declined ? error.message : `error: ${String(error)}`;
    return 'plotly';
  }
}

/**
 * Write the live traces' points the chart's data holds (the latest patched) into its SVG, as
 * without a canvas: what canvas.ts calls when a picture cannot be drawn. Planned again from
 * the data rather than kept from the batch's plan, so that no batch's pixel pairs outlive it.
 */
function rewriteSvg(gd: any, live: number[]): void {
  try {
    plan(gd, gd.data as ITrace[], live, null).forEach(write => write());
  } catch {
    // A shape plotly has not made or a trace it declines (the patch before planned the same
    // points, so neither is expected): the chart's next draw sees to it.
  }
}

/** A scene's layers by trace index, in order. */
function sorted(layers: Map<number, ILayer>): ILayer[] {
  return [...layers.entries()].sort((a, b) => a[0] - b[0]).map(([, layer]) => layer);
}

function plan(gd: any, traces: ITrace[], live: number[], scene: IScene | null): Write[] {
  const layout = gd._fullLayout;
  const full: any[] = gd._fullData;
  if (!layout || !full || full.length !== traces.length) {
    throw new Declined('plotly has not drawn these traces');
  }
  const groups = traceGroups(gd);
  const writes: Write[] = [];
  const pixels = new Map<number, Point[]>();
  const stacks = new Map<string, Map<number, number>>();
  for (const index of live) {
    const trace = full[index];
    if (trace.visible === 'legendonly') {
      if (traces[index + 1]?.fill === 'tonexty' || trace.fill === 'tonexty') {
        throw new Declined('a band with a hidden edge');
      }
      continue;
    }
    const group = groups.get(index);
    const xa: IAxis | undefined = layout[axisName(trace.xaxis)];
    const ya: IAxis | undefined = layout[axisName(trace.yaxis)];
    if (trace.visible !== true || !xa || !ya) {
      throw new Declined(`trace ${index} hidden or without axes`);
    }
    if (!group) {
      throw new MissingShape();
    }
    const xs = traces[index].x ?? [];
    const ys = traces[index].y ?? [];
    const layer: ILayer | null = scene && {
      clip: [xa._offset, ya._offset, xa._length, ya._length],
      opacity: Number(trace.opacity ?? 1),
      shapes: []
    };
    if (scene && layer) {
      scene.hidden.push(group);
      (trace.type === 'bar' ? scene.bars : scene.lines).set(index, layer);
      const marker = trace.marker ?? {};
      if (['color', 'size', 'symbol', 'opacity'].some(key => Array.isArray(marker[key]))) {
        scene.ok = false; // a style per point: the SVG has it
      }
    }
    if (trace.type === 'scatter') {
      const points = xs.map((x, i) => pixel(xa, ya, x, ys[i]));
      pixels.set(index, points);
      scatter(trace, group, xs, points, writes, layer);
      if (trace.fill === 'tonexty') {
        const below = index > 0 ? pixels.get(index - 1) : undefined;
        const band = below && full[index - 1].type === 'scatter' ? groups.get(index - 1) : undefined;
        if (below && !band) {
          throw new MissingShape();
        }
        if (!below || !band) {
          throw new Declined(`trace ${index}: a band over a trace that is not a live line`);
        }
        fillBetween(trace, full[index - 1], band, points, below, writes, scene?.lines.get(index - 1) ?? null);
      } else if (trace.fill !== 'none') {
        throw new Declined(`trace ${index}: fill ${trace.fill}`);
      }
    } else if (trace.type === 'bar') {
      bars(layout, trace, group, xa, ya, xs, ys, stacks, traces, live, writes, layer);
    } else {
      throw new Declined(`trace ${index}: type ${trace.type}`);
    }
  }
  return writes;
}

/** Each drawn trace's SVG group, by trace index (plotly binds its calc data to the group). */
function traceGroups(gd: any): Map<number, SVGGElement> {
  const groups = new Map<number, SVGGElement>();
  for (const group of gd.querySelectorAll('.scatterlayer > g.trace, .barlayer > g.trace')) {
    const index = (group as any).__data__?.[0]?.trace?.index;
    if (typeof index === 'number') {
      groups.set(index, group as SVGGElement);
    }
  }
  return groups;
}

/** A scatter trace's line and markers. */
function scatter(
  trace: any,
  group: SVGGElement,
  xs: Value[],
  points: Point[],
  writes: Write[],
  layer: ILayer | null
): void {
  const mode = String(trace.mode ?? '');
  const shape = String(trace.line?.shape ?? 'linear');
  if (shape !== 'linear' && shape !== 'hv') {
    throw new Declined(`line shape ${shape}`);
  }
  const drawn = points.filter((point): point is [number, number] => point !== null);
  if (mode.includes('lines')) {
    const holder = group.querySelector<SVGGElement>('g.lines');
    const paths = holder ? Array.from(holder.querySelectorAll<SVGPathElement>(':scope > path.js-line')) : [];
    if (!holder || paths.length === 0) {
      if (drawn.length > 1) {
        throw new MissingShape(); // plotly makes the path with the second point
      }
    } else {
      const dash = String(trace.line?.dash ?? 'solid');
      const [lineXs, linePoints] = joined(trace, xs, points);
      if (layer && drawn.length > 0) {
        layer.shapes.push({ line: lineNumbers(linePoints), step: shape === 'hv', ...shapeStyle(paths[0]) });
      }
      writes.push(() => {
        const parts = lineParts(lineXs, linePoints, shape, dash !== 'solid' && dash !== '');
        const all = place(holder, paths, parts.map(([key]) => key));
        all.forEach((path, i) => write(path, 'd', parts[i][1]));
      });
    }
  }
  if (mode.includes('markers')) {
    const holder = group.querySelector<SVGGElement>('g.points');
    const markers = holder ? Array.from(holder.querySelectorAll<SVGPathElement>(':scope > path.point')) : [];
    if (!holder || (markers.length === 0 && drawn.length > 0)) {
      throw new MissingShape();
    }
    const template = markers[0]?.getAttribute('d');
    if (layer && template && drawn.length > 0) {
      layer.shapes.push({ d: template, at: drawn, ...shapeStyle(markers[0]) });
    }
    writes.push(() => {
      const keys = xs.filter((_, i) => points[i] !== null).map(String);
      const all = place(holder, markers, keys);
      all.forEach((marker, i) => write(marker, 'transform', `translate(${round(drawn[i][0])},${round(drawn[i][1])})`));
    });
  }
}

/** The `tonexty` band between `points` (this trace) and `below` (the trace before it). */
function fillBetween(
  trace: any,
  belowTrace: any,
  belowGroup: SVGGElement,
  points: Point[],
  below: Point[],
  writes: Write[],
  layer: ILayer | null
): void {
  // plotly draws a trace's tonexty band in the group of the trace before it.
  const fills = belowGroup.querySelectorAll<SVGPathElement>('.fills path.js-fill');
  const linear = (t: any) => String(t.line?.shape ?? 'linear') === 'linear';
  if (fills.length === 0 && points.some(point => point !== null) && below.some(point => point !== null)) {
    throw new MissingShape();
  }
  if (fills.length !== 1 || belowTrace.fill !== 'none' || !linear(trace) || !linear(belowTrace)) {
    throw new Declined(`band: ${fills.length} fill paths, fill below ${belowTrace.fill}, shapes ${trace.line?.shape}/${belowTrace.line?.shape}`);
  }
  // A line that connects its gaps (plotly's `connectgaps`) bounds the band without them.
  points = trace.connectgaps ? points.filter(point => point !== null) : points;
  below = belowTrace.connectgaps ? below.filter(point => point !== null) : below;
  if (!oneRun(points) || !oneRun(below)) {
    throw new Declined('band with gaps'); // gaps split a band: plotly's job (missing points at either end do not)
  }
  const fill = fills[0];
  const present = (point: Point) => point !== null;
  const edges = points.some(present) && below.some(present);
  if (layer && edges) {
    // The band's outline: along this line, back along the one below (one run each: no breaks).
    const top = points.filter(present);
    const bottom = below.filter(present).reverse();
    const outline = lineNumbers(top, new Float64Array(2 * (top.length + bottom.length)));
    lineNumbers(bottom, outline, top.length);
    layer.shapes.unshift({ line: outline, closed: true, ...shapeStyle(fill) }); // under the line below's own shapes, as plotly's fills
  }
  writes.push(() => {
    const top = linePath(points, 'linear');
    const bottom = linePath([...below].reverse(), 'linear').replace(/^M/, 'L');
    write(fill, 'd', top && bottom ? `${top}${bottom}Z` : 'M0,0Z');
  });
}

/** Whether the points present are all in one run (what is missing is at the ends). */
function oneRun(points: Point[]): boolean {
  const first = points.findIndex(point => point !== null);
  const last = points.length - 1 - [...points].reverse().findIndex(point => point !== null);
  return first < 0 || points.slice(first, last + 1).every(point => point !== null);
}

/**
 * One stacked bar trace (`barmode: 'stack'`, values >= 0): each bar from the top of the
 * bars below it at its x. `stacks` carries those tops per pair of axes across the traces.
 */
function bars(
  layout: any,
  trace: any,
  group: SVGGElement,
  xa: IAxis,
  ya: IAxis,
  xs: Value[],
  ys: Value[],
  stacks: Map<string, Map<number, number>>,
  traces: ITrace[],
  live: number[],
  writes: Write[],
  layer: ILayer | null
): void {
  if (layout.barmode !== 'stack' || trace.orientation !== 'v' || xa.type !== 'linear' || ya.type !== 'linear') {
    throw new Declined(`bars: barmode ${layout.barmode}, orientation ${trace.orientation}, axes ${xa.type}/${ya.type}`);
  }
  const width = barWidth(traces, live) * (1 - Number(layout.bargap ?? 0.2));
  const holder = group.querySelector<SVGGElement>('g.points');
  const points = holder ? Array.from(holder.querySelectorAll<SVGGElement>(':scope > g.point')) : [];
  if (!Number.isFinite(width)) {
    throw new Declined('bars without a width');
  }
  if (!holder || (points.length === 0 && xs.length > 0)) {
    throw new MissingShape();
  }
  const key = `${trace.xaxis}${trace.yaxis}`;
  const tops = stacks.get(key) ?? new Map<number, number>();
  stacks.set(key, tops);
  const style = shapeStyle(points[0]?.firstElementChild);
  const edge = plotlyEdge(layout, style);
  // Each bar's edges (x0, y0, x1, y1: its path `M x0,y0 V y1 H x1 V y0 Z`) as plotly puts
  // them, NaN for a bar without a value.
  const rects = new Float64Array(4 * xs.length).fill(NaN);
  for (let i = 0; i < xs.length; i++) {
    const value = ys[i];
    const x = Number(xs[i]);
    const base = tops.get(x) ?? 0;
    if (value === null || value === undefined || !Number.isFinite(Number(value)) || !Number.isFinite(x)) {
      continue;
    }
    if (Number(value) < 0) {
      throw new Declined('a negative bar'); // negative bars stack downwards: plotly's job
    }
    const top = base + Number(value);
    tops.set(x, top);
    const x0 = xa.c2p(x - width / 2);
    const x1 = xa.c2p(x + width / 2);
    const y0 = ya.c2p(base);
    const y1 = ya.c2p(top);
    // One edge after the other, each against the other edge as fixed (plotly's order).
    rects[4 * i] = edge(x0, x1);
    rects[4 * i + 2] = edge(x1, rects[4 * i]);
    rects[4 * i + 1] = edge(y0, y1, true);
    rects[4 * i + 3] = edge(y1, rects[4 * i + 1], true);
  }
  // Plotly renders a stack of bar traces with crisp edges (each edge on a pixel's border,
  // no anti-aliasing), and marks their group so: the canvas draws them alike.
  const crisp = group.getAttribute('shape-rendering') === 'crispEdges';
  if (layer) {
    if (style.stroke && (style.width ?? 0) > 0) {
      // Outlines one by one, as plotly strokes each bar's path (where two meet, both show).
      for (let i = 0; i < rects.length; i += 4) {
        if (!Number.isNaN(rects[i])) {
          layer.shapes.push({ rects: rects.slice(i, i + 4), crisp, ...style });
        }
      }
    } else {
      layer.shapes.push({ rects, crisp, ...style }); // side by side, never overlapping: filled at once
    }
  }
  writes.push(() => {
    const all = place(holder, points, xs.map(String));
    all.forEach((point, i) => {
      const [x0, y0, x1, y1] = [rects[4 * i], rects[4 * i + 1], rects[4 * i + 2], rects[4 * i + 3]];
      // plotly's own drawing of a bar (the canvas worker's `bars` draws the same edges in
      // this order; see IShape.rects), and of a bar without a value: M0,0Z
      const d = Number.isNaN(x0) ? 'M0,0Z' : `M${x0},${y0}V${y1}H${x1}V${y0}Z`;
      if (point.firstElementChild) {
        write(point.firstElementChild, 'd', d);
      }
    });
  });
}

/**
 * Where plotly puts a bar's edge at `at` (its other edge at `other`), as its bar drawing
 * does (plotly.js 4.1, traces/bar/plot.js): an outlined or translucent bar's edges round to
 * whole pixels less half the outline's width when the bars have no gaps, and stay where they
 * fall otherwise; an opaque bar without an outline under 2 px grows outwards to whole pixels
 * to stay visible (one of zero height stays so, when `keepZero`).
 */
function plotlyEdge(layout: any, style: { width?: number; fillOpacity?: number }): (at: number, other: number, keepZero?: boolean) => number {
  const width = style.width ?? 0;
  const gapless = Number(layout.bargap ?? 0.2) === 0 && Number(layout.bargroupgap ?? 0) === 0;
  const offset = hundredths((width / 2) % 1);
  const withLine = (at: number): number => (gapless ? hundredths(Math.round(at) - offset) : at);
  if (width > 0.01 || (style.fillOpacity ?? 1) < 1) {
    return withLine;
  }
  return (at, other, keepZero = false) => {
    if (keepZero && at === other) {
      return at;
    }
    if (Math.abs(at - other) >= 2) {
      return withLine(at);
    }
    return at > other ? Math.ceil(at) : Math.floor(at);
  };
}

/** The smallest step between bar positions (plotly's bar width before the gap), 1 with one bar. */
function barWidth(traces: ITrace[], live: number[]): number {
  const positions = new Set<number>();
  for (const index of live) {
    if (traces[index].type === 'bar') {
      (traces[index].x ?? []).forEach(x => positions.add(Number(x)));
    }
  }
  const sorted = [...positions].filter(Number.isFinite).sort((a, b) => a - b);
  let step = Infinity;
  for (let i = 1; i < sorted.length; i++) {
    step = Math.min(step, sorted[i] - sorted[i - 1]);
  }
  return Number.isFinite(step) ? step : 1;
}

/** The paint of a shape plotly drew (its inline style), for the canvas to draw alike. */
function shapeStyle(element: Element | null | undefined): Omit<IShape, 'd' | 'at' | 'line' | 'step' | 'closed' | 'rects' | 'crisp'> {
  const style = (element as SVGElement | null | undefined)?.style;
  if (!style) {
    return {};
  }
  const paint = (value: string) => (value && value !== 'none' ? value : undefined);
  const number = (value: string, otherwise: number) => (value === '' || !Number.isFinite(Number(value)) ? otherwise : Number(value));
  const opacity = number(style.opacity, 1);
  const dash = style.strokeDasharray && style.strokeDasharray !== 'none'
    ? style.strokeDasharray.split(/[\s,]+/).map(parseFloat).filter(Number.isFinite)
    : undefined;
  return {
    fill: paint(style.fill),
    fillOpacity: number(style.fillOpacity, 1) * opacity,
    stroke: paint(style.stroke),
    strokeOpacity: number(style.strokeOpacity, 1) * opacity,
    width: parseFloat(style.strokeWidth) || 0,
    dash,
    miter: parseFloat(style.strokeMiterlimit || (element?.closest('g.trace') as SVGElement | null)?.style.strokeMiterlimit || '') || 4
  };
}

/** Set an attribute only when its value changes (an unchanged shape is not repainted). */
function write(element: Element, name: string, value: string): void {
  if (element.getAttribute(name) !== value) {
    element.setAttribute(name, value);
  }
}

/** The x (batch) each marker or bar shape of a patched chart drew last. */
const drawnAt = new WeakMap<Element, string>();

/**
 * One shape in `holder` per key (the points' x values, in order): a shape that drew the
 * same x before draws it again; the others take the shapes left over, then copies of the
 * last shape; shapes still left over are removed.
 */
function place<T extends Element>(holder: Element, shapes: T[], keys: string[]): T[] {
  const byKey = new Map<string, T>();
  const spare: T[] = [];
  for (const shape of shapes) {
    const key = drawnAt.get(shape);
    if (key !== undefined && !byKey.has(key)) {
      byKey.set(key, shape);
    } else {
      spare.push(shape);
    }
  }
  const kept = keys.map(key => {
    const shape = byKey.get(key);
    byKey.delete(key);
    return shape;
  });
  spare.push(...byKey.values());
  const template = shapes[shapes.length - 1];
  const all = kept.map(shape => {
    if (shape) {
      return shape;
    }
    const reused = spare.shift();
    if (reused) {
      return reused;
    }
    const copy = template.cloneNode(true) as T;
    holder.appendChild(copy);
    return copy;
  });
  spare.forEach(shape => shape.remove());
  all.forEach((shape, i) => drawnAt.set(shape, keys[i]));
  return all;
}
