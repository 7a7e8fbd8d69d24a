// Where a chart's points fall in its pixels, and the paths through them: the numbers the
// patches (patch.ts) write into plotly's SVG and hand to the canvas, worked out from the
// axes plotly set up. Nothing here reads or writes the page.

import { remember } from './memo';
import type { Value } from './series';

/** A plotly axis as its full layout holds it (the converters plotly set up). */
export interface IAxis {
  type: string;
  d2c: (value: unknown) => number;
  c2p: (value: number) => number;
  /** Where the axis's subplot starts, and its length, in the chart's pixels. */
  _offset: number;
  _length: number;
}

/** A point's place in the chart's pixels; null where it has none (a line breaks there). */
export type Point = [number, number] | null;

/** The layout key of a trace's axis id: `x` -> `xaxis`, `y2` -> `yaxis2`. */
export function axisName(id: string): string {
  return `${id[0]}axis${id.slice(1)}`;
}

/** Where the value pair (x, y) falls in the chart's pixels, by the axes' own conversions. */
export function pixel(xa: IAxis, ya: IAxis, x: Value, y: Value): Point {
  if (x === null || x === undefined || y === null || y === undefined) {
    return null;
  }
  const px = xa.c2p(calc(xa, x));
  const py = ya.c2p(calc(ya, y));
  return Number.isFinite(px) && Number.isFinite(py) ? [px, py] : null;
}

/**
 * The times (strings) each axis converted before, by axis: a window's points come again
 * with every batch, and plotly parses a time with regular expressions. Plotly makes new axis
 * objects whenever it draws the chart's layout, which starts their memory afresh.
 */
const times = new WeakMap<IAxis, Map<string, number>>();

const AXIS_TIMES = 4096;

/** A value as plotly's axis computes with it (`d2c`), a time converted once per axis. */
function calc(axis: IAxis, value: Value): number {
  if (typeof value !== 'string') {
    return axis.d2c(value);
  }
  let known = times.get(axis);
  if (!known) {
    known = new Map();
    times.set(axis, known);
  }
  return remember(known, value, axis.d2c, AXIS_TIMES);
}

/** A pixel position as the paths write it: to a hundredth of a pixel. */
export const hundredths = (value: number): number => Math.round(value * 100) / 100;

export const round = (value: number): string => String(hundredths(value));

/**
 * A line's points for the canvas, as `linePath` writes them: x, y pairs to a hundredth of a
 * pixel, a NaN pair where the line breaks; written into `into` from pair `at` on.
 */
export function lineNumbers(points: Point[], into: Float64Array = new Float64Array(2 * points.length), at = 0): Float64Array {
  points.forEach((point, i) => {
    into[2 * (at + i)] = point === null ? NaN : hundredths(point[0]);
    into[2 * (at + i) + 1] = point === null ? NaN : hundredths(point[1]);
  });
  return into;
}

/** A line through `points`, broken where a point is missing (plotly's `connectgaps: false`). */
export function linePath(points: Point[], shape: string): string {
  let path = '';
  let previous: Point = null;
  for (const point of points) {
    if (point === null) {
      previous = null;
      continue;
    }
    const [x, y] = point;
    if (previous === null) {
      path += `M${round(x)},${round(y)}`;
    } else if (shape === 'hv') {
      path += `H${round(x)}V${round(y)}`;
    } else {
      path += `L${round(x)},${round(y)}`;
    }
    previous = point;
  }
  return path;
}

/** Batches per path of a patched line (see lineParts). */
const PART = 8;

/**
 * A line as several paths, (key, `d`) in order: one per `PART` batches (by x), each from the
 * last point of the part before. When the window moves on, only the newest part (a point
 * more) and the oldest (a point less) change, and the browser repaints their boxes, not the
 * whole line's. Dashed lines, and lines whose x are not all numbers, are one path.
 */
export function lineParts(xs: Value[], points: Point[], shape: string, dashed: boolean): [string, string][] {
  // A dash pattern starts again with each path: a dashed line stays whole.
  const numbers = !dashed && xs.every(x => typeof x === 'number' && Number.isFinite(x));
  const parts: [string, string][] = [];
  let start = 0;
  while (start < points.length) {
    const key = numbers ? Math.floor((xs[start] as number) / PART) : 0;
    let end = start + 1;
    while (end < points.length && numbers && Math.floor((xs[end] as number) / PART) === key) {
      end++;
    }
    if (!numbers) {
      end = points.length;
    }
    const d = linePath(points.slice(Math.max(0, start - 1), end), shape);
    parts.push([String(key), d || 'M0,0Z']);
    start = end;
  }
  return parts.length > 0 ? parts : [['0', 'M0,0Z']];
}

/** The points a line goes through: all, or (`connectgaps`) those present, with their x. */
export function joined(trace: any, xs: Value[], points: Point[]): [Value[], Point[]] {
  if (!trace.connectgaps) {
    return [xs, points];
  }
  const kept = points.map((_, i) => i).filter(i => points[i] !== null);
  return [kept.map(i => xs[i]), kept.map(i => points[i])];
}
