// Live traces drawn as pictures: a canvas over each patched chart.
//
// A batch patched into the SVG (patch.ts) changes a few shapes, which the page then
// restyles, lays out, paints and rasterises in a main-thread frame. A canvas's picture needs
// none of that: the page works out the shapes (the points of the lines, bands and bars as
// numbers, where the SVG's paths have them, a marker's path, and the styles plotly gave the
// SVG), draws each chart's picture into an `OffscreenCanvas` at the end of the draw pass's
// task, and puts the pictures (`ImageBitmap`s, not copied) into the charts' canvases
// (`bitmaprenderer`), with whatever else the pass shows (the grids' captions,
// `afterPictures`): the pass reaches the screen in the frame it runs in. The live traces' SVG
// groups are hidden meanwhile, and shown again whenever plotly itself draws the chart (a
// full draw, the hover while the pointer is over it): the canvas is then cleared.
// bench/README.md has what it saves. (The pictures were once drawn by a worker: its answer
// came after the pass's frame, so each batch took a second frame, which cost more than the
// drawing the worker took off the main thread; bench/README.md, "Pictures drawn in the
// page".)
//
// Where an OffscreenCanvas, an ImageBitmap renderer or Path2D is not available (an old
// browser), or drawing a picture fails, the patches write the SVG as before (on a failure,
// each chart's latest points at once).

import { drawSwitch } from './switches';

/**
 * One shape, in the layer's coordinates: an SVG path `d` (a marker's), drawn once or at each
 * of `at`; or made from numbers, which the page works out without a string per point and the
 * picture draws without parsing one: a `line` through x, y pairs (a NaN x breaks it; `step`:
 * plotly's `hv`, across then up or down; `closed`: a band's outline), or the bars' `rects`
 * (x0, y0, x1, y1 each, where plotly's bar paths put them and drawn as they go:
 * `M x0,y0 V y1 H x1 V y0 Z`; NaN: no bar).
 */
export interface IShape {
  d?: string;
  line?: Float64Array;
  step?: boolean;
  closed?: boolean;
  rects?: Float64Array;
  /** The bars' edges drawn crisp, as plotly renders a stack of bar traces (no anti-aliasing). */
  crisp?: boolean;
  at?: [number, number][];
  fill?: string;
  fillOpacity?: number;
  stroke?: string;
  strokeOpacity?: number;
  width?: number;
  dash?: number[];
  /** The stroke's miter limit (plotly sets 2 on scatter traces: blunter spikes). */
  miter?: number;
}

/** The shapes of one trace: clipped to its subplot, moved to its origin, with its opacity. */
export interface ILayer {
  clip: [number, number, number, number];
  opacity: number;
  shapes: IShape[];
}

/** A picture a chart asks for: its origin and size in the chart (CSS pixels) and what it shows. */
interface IPicture {
  x: number;
  y: number;
  width: number;
  height: number;
  ratio: number;
  layers: ILayer[];
}

/** The page's picture drawer: one `OffscreenCanvas` that draws each picture asked of it in turn. */
function pictureDrawer(): (picture: IPicture) => ImageBitmap {
  const paths = new Map<string, any>();
  const path = (d: string) => {
    let found = paths.get(d);
    if (!found) {
      found = new Path2D(d);
      if (paths.size > 4096) {
        paths.clear();
      }
      paths.set(d, found);
    }
    return found;
  };
  const same = (at: number) => at;
  // The bars' edges into `made`, each x and y through `fx` and `fy`: in the order patch.ts
  // writes a bar's SVG path in (its bars' fallback), so both draw alike.
  const bars = (made: any, rects: Float64Array, fx = same, fy = same) => {
    for (let i = 0; i + 3 < rects.length; i += 4) {
      if (!Number.isNaN(rects[i])) {
        made.moveTo(fx(rects[i]), fy(rects[i + 1]));
        made.lineTo(fx(rects[i]), fy(rects[i + 3]));
        made.lineTo(fx(rects[i + 2]), fy(rects[i + 3]));
        made.lineTo(fx(rects[i + 2]), fy(rects[i + 1]));
        made.closePath();
      }
    }
    return made;
  };
  // Crisp edges (SVG's `shape-rendering: crispEdges`) as Chromium renders them, in device
  // pixels (`scale` and `shift` map a coordinate there): a shape covers the pixels whose
  // centres lie inside it (a centre on its far edge in, on its near edge out), so a stroke
  // `n` pixels wide moves to the middle of the `n` pixels it covers, and a fill's edge
  // (`n` = 0) to the nearest pixel border.
  const crispEdge = (scale: number, shift: number, n = 0) => (at: number) =>
    (Math.round(scale * at + shift - n / 2) + n / 2 - shift) / scale;
  // Where the browser's rasteriser puts an SVG clip path's edge at `at` (in device pixels),
  // across and down: it samples a clip four times down a pixel (an edge row is covered in
  // quarters), and across it covers a column in part unless the edge lies within an eighth
  // of the column's side (then whole or not at all). An offscreen canvas clips to whole
  // pixels, with no anti-aliasing: e.g. a line along a subplot's bottom at 308.16 px (a
  // HiDPI page) shows a quarter of row 308 in the SVG, none of it under such a clip.
  const clipAcross = (at: number) => {
    const part = at - Math.floor(at);
    return part < 1 / 8 ? Math.floor(at) : part > 7 / 8 ? Math.ceil(at) : at;
  };
  const clipDown = (at: number) => Math.ceil(4 * at - 0.5) / 4;
  // A line's or the bars' outline from their numbers, as the SVG path of the same numbers goes.
  const outline = (shape: IShape) => {
    const made = bars(new Path2D(), shape.rects ?? new Float64Array(0));
    const line = shape.line ?? [];
    let pen = false;
    let lastY = 0;
    for (let i = 0; i + 1 < line.length; i += 2) {
      const x = line[i];
      const y = line[i + 1];
      if (Number.isNaN(x)) {
        pen = false;
      } else if (!pen) {
        made.moveTo(x, y);
        pen = true;
      } else if (shape.step) {
        made.lineTo(x, lastY);
        made.lineTo(x, y);
      } else {
        made.lineTo(x, y);
      }
      lastY = y;
    }
    if (shape.closed) {
      made.closePath();
    }
    return made;
  };
  // A layer's shapes, clipped to `box` (left, top, right, bottom in the picture's pixels):
  // drawn into `into` at the picture's place and ratio.
  const paint = (into: any, picture: IPicture, layer: ILayer, box: number[]) => {
    const [x, y] = layer.clip;
    into.save();
    into.setTransform(1, 0, 0, 1, 0, 0);
    into.beginPath();
    into.rect(box[0], box[1], box[2] - box[0], box[3] - box[1]);
    into.clip();
    const ratio = picture.ratio;
    into.setTransform(ratio, 0, 0, ratio, -picture.x * ratio, -picture.y * ratio);
    into.translate(x, y);
    for (const shape of layer.shapes) {
      let drawn;
      let edges;
      let lineWidth = shape.width;
      if (shape.crisp && shape.rects) {
        const m = into.getTransform();
        drawn = edges = bars(new Path2D(), shape.rects, crispEdge(m.a, m.e), crispEdge(m.d, m.f));
        if (shape.stroke && (shape.width ?? 0) > 0) {
          const n = Math.max(1, Math.round((shape.width ?? 0) * m.a));
          edges = bars(new Path2D(), shape.rects, crispEdge(m.a, m.e, n), crispEdge(m.d, m.f, n));
          lineWidth = n / m.a;
        }
      } else {
        drawn = edges = shape.d === undefined ? outline(shape) : path(shape.d);
      }
      for (const [dx, dy] of shape.at ?? [[0, 0]]) {
        into.translate(dx, dy);
        if (shape.fill) {
          into.globalAlpha = layer.opacity * (shape.fillOpacity ?? 1);
          into.fillStyle = shape.fill;
          into.fill(drawn);
        }
        if (shape.stroke && (shape.width ?? 0) > 0) {
          into.globalAlpha = layer.opacity * (shape.strokeOpacity ?? 1);
          into.strokeStyle = shape.stroke;
          into.lineWidth = lineWidth;
          into.miterLimit = shape.miter ?? 4; // SVG's default (a canvas's is 10)
          into.setLineDash(shape.dash ?? []);
          into.stroke(edges);
        }
        into.translate(-dx, -dy);
      }
    }
    into.restore();
  };
  let canvas: any = null;
  let context: any = null;
  const draw = (picture: IPicture): ImageBitmap => {
    const width = Math.max(1, Math.round(picture.width * picture.ratio));
    const height = Math.max(1, Math.round(picture.height * picture.ratio));
    if (!canvas) {
      canvas = new OffscreenCanvas(width, height);
      context = canvas.getContext('2d');
    } else if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    context.setTransform(1, 0, 0, 1, 0, 0);
    context.clearRect(0, 0, width, height);
    const { layers, ratio } = picture;
    const boxes: number[][] = []; // the whole pixels each group of layers so far may have drawn in
    for (let i = 0; i < layers.length; ) {
      // The layers of one subplot (the same clip) in a row: clipped together.
      const clip = layers[i].clip;
      let j = i + 1;
      while (j < layers.length && layers[j].clip.every((at, k) => at === clip[k])) {
        j++;
      }
      const group = layers.slice(i, j);
      i = j;
      // The clip's edges in the picture's pixels, where the SVG's clip path puts them, and
      // the whole pixels around them.
      const edges = [clip[0] - picture.x, clip[1] - picture.y, clip[0] + clip[2] - picture.x, clip[1] + clip[3] - picture.y]
        .map((at, k) => (k % 2 === 0 ? clipAcross : clipDown)(at * ratio));
      const box = [...edges.slice(0, 2).map(Math.floor), ...edges.slice(2).map(Math.ceil)];
      const strips = [
        [box[0], box[1], box[2], Math.ceil(edges[1])],
        [box[0], Math.floor(edges[3]), box[2], box[3]],
        [box[0], box[1], Math.ceil(edges[0]), box[3]],
        [Math.floor(edges[2]), box[1], box[2], box[3]],
      ].filter(([x0, y0, x1, y1]) => x1 > x0 && y1 > y0);
      // An edge inside a pixel: the group is drawn over the whole pixels around its clip,
      // then the edge pixels keep the share of them inside (`destination-in` with an
      // anti-aliased rectangle, over those pixels alone). That takes away from whatever
      // else lies there too: where a group before drew in them (a subplot over or touching
      // another), the group is clipped to the nearest whole pixels instead.
      const cut = strips.length > 0 && !boxes.some(other =>
        other[0] < box[2] && box[0] < other[2] && other[1] < box[3] && box[1] < other[3]);
      const whole = cut ? box : edges.map(Math.round);
      group.forEach(layer => paint(context, picture, layer, whole));
      boxes.push(box);
      if (cut) {
        context.save();
        context.beginPath();
        strips.forEach(([x0, y0, x1, y1]) => context.rect(x0, y0, x1 - x0, y1 - y0));
        context.clip();
        context.globalCompositeOperation = 'destination-in';
        context.fillStyle = '#000';
        context.fillRect(edges[0], edges[1], edges[2] - edges[0], edges[3] - edges[1]);
        context.restore();
      }
    }
    return canvas.transferToImageBitmap(); // the canvas starts blank again
  };
  return draw;
}

/** A chart's canvas: its picture renderer, its turn, and the SVG groups it stands in for. */
interface ICanvas {
  gd: HTMLElement;
  canvas: HTMLCanvasElement;
  context: ImageBitmapRenderingContext;
  /** Counts the pictures asked and the clears: a picture is shown only if no later one was asked. */
  turn: number;
  /** Whether the canvas holds a picture or waits for one (the chart's live SVG hidden then). */
  shown: boolean;
  hidden: SVGGElement[];
  /** Writes the chart's latest points into the SVG under it (when drawing fails). */
  writeSvg: () => void;
}

const canvases = new Map<HTMLElement, ICanvas>();
/** A picture asked for, the canvas it is for and that canvas's turn when it was asked. */
interface IAsked {
  entry: ICanvas;
  turn: number;
  picture: IPicture;
}
/** The pictures this task asked for (null: none yet), and what waits for them. */
let outbox: { asked: IAsked[]; then: (() => void)[] } | null = null;
/** Made on first use by pageDrawer. */
let drawer: ((picture: IPicture) => ImageBitmap) | null | undefined;

/** The page's picture drawer; null where the browser cannot draw a picture or drawing failed. */
function pageDrawer(): ((picture: IPicture) => ImageBitmap) | null {
  if (drawer === undefined) {
    const able =
      typeof OffscreenCanvas !== 'undefined' &&
      typeof (OffscreenCanvas.prototype as any).transferToImageBitmap === 'function' &&
      typeof ImageBitmapRenderingContext !== 'undefined' &&
      typeof Path2D !== 'undefined';
    drawer = able ? pictureDrawer() : null;
  }
  return drawer;
}

/**
 * Draw the pictures this task asked for, each into its canvas (unless a later turn came),
 * then call what waited for them. When drawing fails, no picture is drawn from then on:
 * every chart's SVG shows again, with its latest points, and the patches write it instead.
 */
function flush(): void {
  const message = outbox;
  outbox = null;
  if (!message) {
    return;
  }
  const draw = pageDrawer();
  try {
    for (const { entry, turn, picture } of message.asked) {
      if (draw && entry.turn === turn && entry.canvas.isConnected) {
        show(entry, draw(picture));
      }
    }
  } catch (error) {
    console.warn('spark-streaming-workbench: the charts cannot be drawn as pictures here; their SVG is patched', error);
    drawer = null;
    // The SVG under a picture holds what plotly last drew there (after an axis move, the
    // live lines through their two ends): each chart's latest points are written into it as
    // the canvas goes, not left for its next batch (a stopped stream has none).
    const shown = [...canvases.values()].filter(entry => entry.shown);
    for (const entry of [...canvases.values()]) {
      forgetCanvas(entry.gd);
    }
    shown.forEach(entry => entry.writeSvg());
  }
  message.then.forEach(call => call());
}

/** A chart's new picture into its canvas, over its live traces' SVG (hidden under it). */
function show(entry: ICanvas, picture: ImageBitmap): void {
  entry.context.transferFromImageBitmap(picture);
  for (const group of entry.hidden) {
    if (group.style.visibility !== 'hidden') {
      group.style.visibility = 'hidden';
    }
  }
  entry.gd.dataset.canvasDraws = String(Number(entry.gd.dataset.canvasDraws ?? 0) + 1);
}

/**
 * Call `then` when the pictures asked for in this task are in their canvases (at once when
 * none were): what a draw pass shows besides its charts then reaches the screen in the same
 * frame.
 */
export function afterPictures(then: () => void): void {
  if (outbox) {
    outbox.then.push(then);
  } else {
    then();
  }
}

/** Whether this page draws pictures: the browser can, and drawing one has not failed. */
export function picturesDrawable(): boolean {
  return pageDrawer() !== null;
}

/**
 * Whether live traces may be drawn into a canvas on this page: the browser can, and the page
 * asked for no other way (switches.ts; e.g. `svg` for the SVG patches: what tests and
 * benches compare with).
 */
export function canvasWanted(): boolean {
  return drawSwitch() === 'default' && picturesDrawable();
}

/**
 * Draw `layers` over chart `gd` (a plotly div) in its canvas, made on first use; `hidden`
 * are the SVG groups the canvas stands in for (hidden when the picture shows), `writeSvg`
 * writes the chart's latest points into them instead (called if drawing fails). False when
 * there is no canvas to draw in.
 */
export function drawCanvas(gd: HTMLElement, layers: ILayer[], hidden: SVGGElement[], writeSvg: () => void): boolean {
  const under = gd.querySelector('.svg-container > svg.main-svg');
  if (!pageDrawer() || !under) {
    return false;
  }
  let entry = canvases.get(gd);
  if (!entry || !entry.canvas.isConnected) {
    const canvas = document.createElement('canvas');
    const context = canvas.getContext('bitmaprenderer');
    if (!context) {
      return false;
    }
    canvas.classList.add('workbench-trace-canvas');
    Object.assign(canvas.style, { position: 'absolute', pointerEvents: 'none' });
    entry = { gd, canvas, context, turn: 0, shown: false, hidden: [], writeSvg };
    canvases.set(gd, entry);
  }
  place(entry.canvas, under, overPlot(gd));
  // The canvas covers the layers' subplots only, in whole pixels: what the compositor
  // redraws with each batch is the plot, not the axes and margins around it.
  const [x, y, width, height] = box(layers);
  const style = { left: `${x}px`, top: `${y}px`, width: `${width}px`, height: `${height}px` };
  for (const [key, value] of Object.entries(style)) {
    if (entry.canvas.style.getPropertyValue(key) !== value) {
      entry.canvas.style.setProperty(key, value);
    }
  }
  entry.shown = true;
  entry.hidden = hidden;
  entry.writeSvg = writeSvg;
  if (!outbox) {
    outbox = { asked: [], then: [] };
    queueMicrotask(flush);
  }
  const picture = { x, y, width, height, ratio: window.devicePixelRatio || 1, layers };
  outbox.asked.push({ entry, turn: ++entry.turn, picture });
  return true;
}

/** Whether the chart's live traces show in its canvas (their SVG hidden under it). */
export function canvasShown(gd: HTMLElement): boolean {
  return canvases.get(gd)?.shown === true;
}

/**
 * Whether plotly may draw something of its own over the plot area above the traces:
 * annotations, shapes, images, selections, menus and sliders (plotly's upper SVG holds
 * them, or may), or a legend placed inside the plot (read from the chart's layout,
 * `gd.layout`). The workbench's charts have none of these once they have points (the note
 * an empty chart shows is an annotation): their legends sit under or beside the plot, and
 * the hover labels show only while the pointer is over the chart, when plotly draws it and
 * the canvas is cleared.
 */
function overPlot(gd: HTMLElement): boolean {
  const layout = (gd as HTMLElement & { layout?: Record<string, any> }).layout ?? {};
  const above = ['annotations', 'shapes', 'images', 'selections', 'updatemenus', 'sliders'];
  if (above.some(key => (layout[key] ?? []).length > 0)) {
    return true;
  }
  const legend = layout.legend ?? {};
  const inside = (value: unknown) => typeof value === 'number' && value >= 0 && value <= 1;
  return layout.showlegend !== false && inside(legend.x) && inside(legend.y);
}

/**
 * Put the canvas over plotly's upper layers (legend, titles, hover labels: SVGs the size of
 * the chart, and the mode bar) unless something of theirs may lie over the plot: then
 * right after the plot's SVG, under them. Layers over a canvas whose picture changes are
 * composited again with each picture: over ten grids this way the page's compositor spends
 * about a quarter less (bench/README.md, "The canvases over plotly's upper layers").
 */
function place(canvas: HTMLCanvasElement, under: Element, below: boolean): void {
  const container = under.parentElement;
  if (!container) {
    return;
  }
  if (below && canvas.previousElementSibling !== under) {
    under.after(canvas);
  } else if (!below && container.lastElementChild !== canvas) {
    container.append(canvas);
  }
}

/** The smallest box of whole pixels around the layers' clips: [x, y, width, height]. */
function box(layers: ILayer[]): [number, number, number, number] {
  if (layers.length === 0) {
    return [0, 0, 1, 1];
  }
  const left = Math.floor(Math.min(...layers.map(layer => layer.clip[0])));
  const top = Math.floor(Math.min(...layers.map(layer => layer.clip[1])));
  const right = Math.ceil(Math.max(...layers.map(layer => layer.clip[0] + layer.clip[2])));
  const bottom = Math.ceil(Math.max(...layers.map(layer => layer.clip[1] + layer.clip[3])));
  return [left, top, Math.max(1, right - left), Math.max(1, bottom - top)];
}

/** Plotly draws the chart's traces itself now: show their SVG again and clear the canvas. */
export function releaseCanvas(gd: HTMLElement): void {
  const entry = canvases.get(gd);
  if (!entry?.shown) {
    return; // no canvas, or one cleared already (plotly draws every update while the pointer is over it)
  }
  entry.shown = false;
  entry.turn++; // a picture on its way is dropped
  for (const group of gd.querySelectorAll<SVGGElement>('g.trace')) {
    if (group.style.visibility === 'hidden') {
      group.style.visibility = '';
    }
  }
  entry.context.transferFromImageBitmap(null); // cleared
}

/** The chart is gone: so is its canvas. */
export function forgetCanvas(gd: HTMLElement): void {
  const entry = canvases.get(gd);
  if (entry) {
    releaseCanvas(gd);
    entry.canvas.remove();
    canvases.delete(gd);
  }
}
