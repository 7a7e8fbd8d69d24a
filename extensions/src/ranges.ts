// The ranges a live chart's axes need: room to grow around its points, so that new points
// mostly land inside them and the chart draws in full (or moves its axes) only now and then.
//
// The chart's layout and traces in, ranges out; nothing here reads or writes the page, and
// draw.ts decides what to draw with them.

import { remember } from './memo';
import { axisName } from './paths';
import type { ITrace, Value } from './series';

/** What a chart's axes were given at its last full draw, and which of them the user took. */
export interface IAxes {
  /** The ranges the last full draw set, by axis name (`xaxis`, `yaxis2`, ...). */
  ranges: Record<string, [number, number]>;
  /** Axes the user zoomed or panned: their range is the user's until autoscaled. */
  user: Set<string>;
}

/**
 * The ranges of a live chart's managed axes: room to grow around its points (roomy), but for
 * an axis the user zoomed or panned, which keeps the range of the draw `before`.
 */
export function liveRanges(
  state: IAxes,
  before: IAxes | undefined,
  layout: Record<string, any>,
  traces: ITrace[],
  window: number
): Record<string, [number, number]> {
  const steps = growth(layout, traces);
  const ranges: Record<string, [number, number]> = {};
  for (const [name, extent] of Object.entries(extents(layout, traces))) {
    const range = state.user.has(name)
      ? before?.ranges[name]
      : roomy(name, extent, layout[name] ?? {}, window, steps[name]);
    if (range) {
      ranges[name] = range;
    }
  }
  return ranges;
}

/** The axis name (`xaxis`, `yaxis2`) a trace's `xaxis`/`yaxis` id (`x`, `y2`) refers to. */
function axisOf(trace: ITrace, letter: 'x' | 'y'): string {
  return axisName(String(trace[`${letter}axis`] ?? letter));
}

/** A value as a number on an axis (dates as epoch milliseconds); null when it has none. */
function numeric(value: Value, date: boolean): number | null {
  if (value === null || value === undefined) {
    return null;
  }
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : null;
  }
  const parsed = date ? parseTime(value) : Number(value);
  return Number.isFinite(parsed) ? parsed : null;
}

/**
 * Times parsed before: a window's points come again with every batch. Bounded (emptied when
 * full): room for ten monitors' windows of three time lines.
 */
const parsedTimes = new Map<string, number>();
const PARSED_TIMES = 16384;

/** A UTC wall-clock time (`YYYY-MM-DD HH:MM:SS.ffffff`, the wire format) as epoch milliseconds. */
function parseTime(value: string): number {
  return remember(parsedTimes, value, wallClock, PARSED_TIMES);
}

function wallClock(value: string): number {
  return Date.parse(`${value.slice(0, 23).replace(' ', 'T')}Z`);
}

/**
 * The smallest and largest value each managed axis must show: the plain linear and date
 * axes with no range of their own in the spec (stacked bars count by their stacks).
 */
function extents(layout: Record<string, any>, traces: ITrace[]): Record<string, [number, number]> {
  const found: Record<string, [number, number]> = {};
  const stacks: Record<string, number[]> = {};
  const add = (name: string, value: number | null) => {
    if (value === null) {
      return;
    }
    const extent = found[name];
    if (!extent) {
      found[name] = [value, value];
    } else if (value < extent[0]) {
      extent[0] = value;
    } else if (value > extent[1]) {
      extent[1] = value;
    }
  };
  for (const trace of traces) {
    const names = { x: axisOf(trace, 'x'), y: axisOf(trace, 'y') };
    const axes = { x: layout[names.x] ?? {}, y: layout[names.y] ?? {} };
    if (!managed(axes.x) || !managed(axes.y)) {
      continue;
    }
    const xs = trace.x ?? [];
    const ys = trace.y ?? [];
    xs.forEach(value => add(names.x, numeric(value, axes.x.type === 'date')));
    if (trace.type === 'bar' && layout.barmode === 'stack') {
      const sums = (stacks[names.y] ??= []);
      ys.forEach((value, index) => {
        const number = numeric(value, false);
        sums[index] = (sums[index] ?? 0) + (number !== null && number > 0 ? number : 0);
        add(names.y, Math.min(0, number ?? 0));
      });
    } else {
      ys.forEach(value => add(names.y, numeric(value, axes.y.type === 'date')));
    }
  }
  for (const [name, sums] of Object.entries(stacks)) {
    sums.forEach(sum => add(name, sum));
  }
  return found;
}

function managed(axis: Record<string, any>): boolean {
  return axis.range === undefined && (axis.type === undefined || axis.type === 'linear' || axis.type === 'date');
}

/** The span of a date axis whose values are all one time, in milliseconds. */
const ONE_TIME = 60_000;

/**
 * A range showing `extent` with room to grow, so that new points mostly land inside it:
 * batch x axes span the chart's `window` of points from the first and a quarter more (a
 * chart filling up keeps its axis), value axes gain a quarter above (and below, unless they
 * start at zero). A value axis whose lines only grow (event times, watermarks, state memory)
 * moves on by about the same `step` per batch: it also gets room for a quarter of a window
 * of such steps, so that a chart filling up (a short span, a quarter of it soon passed) does
 * not redraw in full at almost every batch.
 */
function roomy(
  name: string,
  [low, high]: [number, number],
  axis: Record<string, any>,
  window: number,
  step = 0
): [number, number] {
  const span = high - low || Math.abs(high) * 0.1 || 1;
  if (name.startsWith('x')) {
    const end = axis.type === 'date' ? high : Math.max(high, low + window - 1);
    return [low - 0.5, end + 0.5 + Math.max(2, (end - low) / 4)];
  }
  const room = (step * window) / 4;
  if (axis.type === 'date' && high === low) {
    // One time (a first batch, a replay stepped one row): a minute around it, as the static
    // picture has (pictures.py). A tenth of the time itself is a tenth of the epoch: an axis
    // years long whose every tick reads 00:00:00.
    return [low - ONE_TIME / 2, high + Math.max(ONE_TIME / 2, room)];
  }
  if (axis.rangemode === 'tozero' && low >= 0) {
    return [0, high + Math.max(high / 4 || 1, room)];
  }
  return [low - span / 10, high + Math.max(span / 4, room)];
}

/**
 * How far each managed value axis moves on per point: the largest rise per point, from its
 * first value to its last, of a live trace on it whose values never fall (stacked bars
 * left out: their stacks move).
 */
function growth(layout: Record<string, any>, traces: ITrace[]): Record<string, number> {
  const steps: Record<string, number> = {};
  for (const trace of traces) {
    const name = axisOf(trace, 'y');
    const axis = layout[name] ?? {};
    if (trace.type === 'bar' || !managed(axis) || !managed(layout[axisOf(trace, 'x')] ?? {})) {
      continue;
    }
    // The first and last values, and whether none falls (one pass, nothing kept per point).
    let first: number | null = null;
    let last: number | null = null;
    let count = 0;
    let rising = true;
    for (const value of trace.y ?? []) {
      const number = numeric(value, axis.type === 'date');
      if (number === null) {
        continue;
      }
      rising &&= last === null || number >= last;
      first ??= number;
      last = number;
      count++;
    }
    if (count > 1 && rising && first !== null && last !== null) {
      const step = (last - first) / (count - 1);
      steps[name] = Math.max(steps[name] ?? 0, step);
    }
  }
  return steps;
}

/** Whether the points of `traces` fit the ranges of the last full draw, not lost in them. */
export function within(state: IAxes, layout: Record<string, any>, traces: ITrace[], window: number): boolean {
  const steps = growth(layout, traces);
  for (const [name, extent] of Object.entries(extents(layout, traces))) {
    const range = state.ranges[name];
    if (state.user.has(name)) {
      continue;
    }
    if (!range || extent[0] < range[0] || extent[1] > range[1]) {
      return false;
    }
    // Points that shrank to a sliver of their axis (a spike scrolled out of the window).
    const fresh = roomy(name, extent, layout[name] ?? {}, window, steps[name]);
    if (fresh[1] - fresh[0] < 0.5 * (range[1] - range[0])) {
      return false;
    }
  }
  return true;
}
