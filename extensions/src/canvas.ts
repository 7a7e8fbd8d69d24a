// Live traces drawn off the main thread: a canvas over each patched chart, drawn by one
// worker per page.
//
// A batch patched into the SVG (patch.ts) changes a few shapes, which the page then
// restyles, lays out, paints and rasterises in a main-thread frame. A canvas whose control a
// worker holds (`transferControlToOffscreen`) reaches the compositor without one: the page
// works out the shapes (the same paths, and the styles plotly gave the SVG) and posts them;
// the worker draws them and commits. The live traces' SVG groups are hidden meanwhile, and
// shown again whenever plotly itself draws the chart (a full draw, the hover while the
// pointer is over it): the canvas is then cleared. bench/README.md has what it saves.
//
// Where a worker or an OffscreenCanvas is not available (an old browser, a page whose
// content security policy forbids workers from blobs) the patches write the SVG as before.

/** One shape: a path (in the layer's coordinates), drawn once or at each of `at`. */
export interface IShape {
  d: string;
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

interface IDraw {
  id: number;
  width: number;
  height: number;
  ratio: number;
  layers: ILayer[] | null;
}

/**
 * The worker's code, turned into a string and started from a blob (so that it needs no file
 * of its own next to the extension's or the kernel-served bundle). It must not refer to
 * anything outside itself.
 */
function workerMain(): void {
  const scope = self as any;
  const contexts = new Map<number, any>();
  const paths = new Map<string, any>();
  const path = (d: string) => {
    let found = paths.get(d);
    if (!found) {
      found = new scope.Path2D(d);
      if (paths.size > 4096) {
        paths.clear();
      }
      paths.set(d, found);
    }
    return found;
  };
  scope.onmessage = (event: MessageEvent) => {
    const message = event.data;
    if (message.canvas) {
      contexts.set(message.id, message.canvas.getContext('2d'));
      return;
    }
    if (message.drop) {
      contexts.delete(message.id);
      return;
    }
    const context = contexts.get(message.id);
    if (!context) {
      return;
    }
    const canvas = context.canvas;
    if (!message.layers) {
      context.setTransform(1, 0, 0, 1, 0, 0);
      context.clearRect(0, 0, canvas.width, canvas.height);
      return;
    }
    const width = Math.round(message.width * message.ratio);
    const height = Math.round(message.height * message.ratio);
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    context.setTransform(1, 0, 0, 1, 0, 0);
    context.clearRect(0, 0, width, height);
    for (const layer of message.layers) {
      const [x, y, w, h] = layer.clip;
      context.save();
      context.setTransform(message.ratio, 0, 0, message.ratio, 0, 0);
      context.beginPath();
      context.rect(x, y, w, h);
      context.clip();
      context.translate(x, y);
      for (const shape of layer.shapes) {
        const drawn = path(shape.d);
        for (const [dx, dy] of shape.at ?? [[0, 0]]) {
          context.translate(dx, dy);
          if (shape.fill) {
            context.globalAlpha = layer.opacity * (shape.fillOpacity ?? 1);
            context.fillStyle = shape.fill;
            context.fill(drawn);
          }
          if (shape.stroke && (shape.width ?? 0) > 0) {
            context.globalAlpha = layer.opacity * (shape.strokeOpacity ?? 1);
            context.strokeStyle = shape.stroke;
            context.lineWidth = shape.width;
            context.miterLimit = shape.miter ?? 4; // SVG's default (a canvas's is 10)
            context.setLineDash(shape.dash ?? []);
            context.stroke(drawn);
          }
          context.translate(-dx, -dy);
        }
      }
      context.restore();
    }
  };
}

let worker: Worker | null | undefined;
let nextId = 0;
/**
 * The charts whose traces a canvas draws: their canvas, its id in the worker, and whether it
 * holds a picture now (the chart's live SVG hidden).
 */
const canvases = new Map<HTMLElement, { canvas: HTMLCanvasElement; id: number; shown: boolean }>();

/**
 * The page's worker, started on first use; null where the browser cannot draw a canvas off
 * the main thread, or after the worker failed (every chart's SVG is then shown again).
 */
function pageWorker(): Worker | null {
  if (worker !== undefined) {
    return worker;
  }
  worker = null;
  try {
    if (
      typeof Worker === 'undefined' ||
      typeof OffscreenCanvas === 'undefined' ||
      typeof (HTMLCanvasElement.prototype as any).transferControlToOffscreen !== 'function' ||
      typeof Path2D === 'undefined'
    ) {
      return null;
    }
    const url = URL.createObjectURL(new Blob([`(${workerMain.toString()})()`], { type: 'text/javascript' }));
    const started = new Worker(url);
    URL.revokeObjectURL(url);
    started.onerror = () => {
      worker = null;
      started.terminate();
      for (const gd of [...canvases.keys()]) {
        releaseCanvas(gd);
        canvases.get(gd)?.canvas.remove();
        canvases.delete(gd);
      }
    };
    worker = started;
  } catch {
    worker = null;
  }
  return worker;
}

/**
 * Whether live traces may be drawn into a canvas on this page: a worker can, and the page
 * asked for no other way (`data-workbench-draw`, e.g. `svg` for the SVG patches: what tests
 * and benches compare with).
 */
export function canvasWanted(): boolean {
  return document.documentElement.dataset.workbenchDraw === undefined && pageWorker() !== null;
}

/**
 * Draw `layers` over chart `gd` (a plotly div) in its canvas, made on first use; `hidden`
 * are the SVG groups the canvas stands in for. False when there is no canvas to draw in.
 */
export function drawCanvas(gd: HTMLElement, layers: ILayer[], hidden: SVGGElement[]): boolean {
  const target = pageWorker();
  const layout = (gd as any)._fullLayout;
  const under = gd.querySelector('.svg-container > svg.main-svg');
  if (!target || !layout || !under) {
    return false;
  }
  let entry = canvases.get(gd);
  if (!entry || !entry.canvas.isConnected) {
    if (entry) {
      target.postMessage({ id: entry.id, drop: true });
    }
    const canvas = document.createElement('canvas');
    canvas.classList.add('workbench-trace-canvas');
    Object.assign(canvas.style, { position: 'absolute', left: '0', top: '0', pointerEvents: 'none' });
    under.after(canvas); // over the plot, under the legend and the hover labels
    const offscreen = (canvas as any).transferControlToOffscreen();
    entry = { canvas, id: nextId++, shown: false };
    target.postMessage({ id: entry.id, canvas: offscreen }, [offscreen]);
    canvases.set(gd, entry);
  }
  const width = Number(layout.width);
  const height = Number(layout.height);
  const size = [`${width}px`, `${height}px`];
  if (entry.canvas.style.width !== size[0] || entry.canvas.style.height !== size[1]) {
    entry.canvas.style.width = size[0];
    entry.canvas.style.height = size[1];
  }
  const message: IDraw = { id: entry.id, width, height, ratio: window.devicePixelRatio || 1, layers };
  target.postMessage(message);
  entry.shown = true;
  for (const group of hidden) {
    if (group.style.visibility !== 'hidden') {
      group.style.visibility = 'hidden';
    }
  }
  gd.dataset.canvasDraws = String(Number(gd.dataset.canvasDraws ?? 0) + 1);
  return true;
}

/** Plotly draws the chart's traces itself now: show their SVG again and clear the canvas. */
export function releaseCanvas(gd: HTMLElement): void {
  const entry = canvases.get(gd);
  if (!entry?.shown) {
    return; // no canvas, or one cleared already (plotly draws every update while the pointer is over it)
  }
  entry.shown = false;
  for (const group of gd.querySelectorAll<SVGGElement>('g.trace')) {
    if (group.style.visibility === 'hidden') {
      group.style.visibility = '';
    }
  }
  worker?.postMessage({ id: entry.id, width: 0, height: 0, ratio: 1, layers: null } as IDraw); // cleared
}

/** The chart is gone: the worker forgets its canvas. */
export function forgetCanvas(gd: HTMLElement): void {
  const entry = canvases.get(gd);
  if (entry) {
    worker?.postMessage({ id: entry.id, drop: true });
    entry.canvas.remove();
    canvases.delete(gd);
  }
}
