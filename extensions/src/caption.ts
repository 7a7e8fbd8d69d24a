// A grid's caption drawn as a picture.
//
// The line over a live grid's charts (the monitor's newest batch, its rates and watermark)
// changes with every batch. Text changed in the page costs its frame style, layout, paint,
// the page's layerisation (over the notebook's whole paint, plotly's SVG included) and a
// hit test for the pointer's hover: 3-5 ms per batch of one visible monitor here
// (bench/README.md, "The caption drawn as a picture"). A picture put into a canvas
// (`bitmaprenderer`, as the charts' pictures, canvas.ts) costs none of that.
//
// A caption of text alone that fits its line is drawn so, in the caption's own font and
// colour, where the page puts a line's text; the canvas carries the text as its accessible
// name (`role="img"`, `aria-label`). Only while the captions come fast: one that stays
// `SETTLE_MS` (a stream stopped, paused or slow) is written as text, which the reader can
// select and search and which the page's theme restyles. A caption with markup, one wider
// than its line, a caption before the page has laid its line out, or a page that draws no
// pictures (canvas.ts: the browser cannot, or drawing one failed), shows as HTML, as does
// every caption on a page that asks for it (`data-workbench-caption="html"`, switches.ts).
//
// The reader's pointer over the line makes it text at once, and every caption while the
// pointer stays: text there to select. While a selection holds part of the line, a newer
// caption waits (the line says so in `data-held` and its tooltip) and shows when the
// selection goes: what the reader selected is not rewritten under the mouse.

import { picturesDrawable } from './canvas';
import { captionSwitch } from './switches';

/** Parsed, not shown: a caption's HTML read into nodes that are neither styled nor laid out. */
let scratch: HTMLTemplateElement | null = null;

/**
 * The text of `html` when it is text alone (its entities decoded), else null.
 *
 * @example
 * plainText('batch 7 &middot; 50 rows/s');  // 'batch 7 · 50 rows/s'
 * plainText('batch <b>7</b>');              // null
 */
export function plainText(html: string): string | null {
  scratch ??= document.createElement('template');
  scratch.innerHTML = html;
  const nodes = Array.from(scratch.content.childNodes);
  return nodes.every(node => node.nodeType === Node.TEXT_NODE) ? nodes.map(node => node.textContent).join('') : null;
}

/** The page's one canvas the captions are drawn in, each in turn (its picture taken away whole). */
let offscreen: OffscreenCanvas | null = null;

/** How long a caption shows as a picture before it is written as text, if none follows (ms). */
const SETTLE_MS = 3000;

/** A grid's caption line (`holder`): each caption written as a picture where it can be, else as HTML. */
export class CaptionLine {
  private canvas = document.createElement('canvas');
  private renderer: ImageBitmapRenderingContext | null = null;
  /** The line's width in CSS pixels, as the page last laid it out (0: not yet). */
  private width = 0;
  /** The text the picture shows (null: the caption shows as HTML). */
  private drawn: string | null = null;
  private observer: ResizeObserver | null = null;
  /** Writes the picture's text as text once no caption followed it for `SETTLE_MS`. */
  private settle: ReturnType<typeof setTimeout> | undefined;
  /** The pointer is over the line: captions are written as text. */
  private inside = false;
  /** The newest caption, held while a selection holds part of the line (null: none held). */
  private held: string | null = null;

  constructor(private holder: HTMLElement) {
    this.canvas.classList.add('workbench-caption-picture');
    this.canvas.setAttribute('role', 'img');
    this.canvas.style.display = 'block';
    holder.addEventListener('pointerenter', () => {
      this.inside = true;
      clearTimeout(this.settle);
      this.settled();
    });
    holder.addEventListener('pointerleave', () => {
      this.inside = false; // the next caption is a picture again
    });
    if (typeof ResizeObserver !== 'undefined') {
      this.observer = new ResizeObserver(entries => {
        this.width = entries[entries.length - 1].contentRect.width;
        if (this.drawn !== null && !this.draw(this.drawn)) {
          this.settled(); // now too wide for the line
        }
      });
      this.observer.observe(holder);
    }
  }

  /**
   * Show caption `html` (HTML the kernel made): as a picture where it can be, else as HTML;
   * as HTML while the pointer is over the line; not yet while a selection holds the line.
   */
  write(html: string): void {
    clearTimeout(this.settle);
    if (this.selected()) {
      if (this.held === null) {
        this.holder.dataset.held = 'true';
        this.holder.title = 'A newer caption shows when the selection is cleared';
        document.addEventListener('selectionchange', this.onSelection);
      }
      this.held = html;
      return;
    }
    const text = captionSwitch() === 'html' || this.inside ? null : plainText(html);
    if (text !== null && this.draw(text)) {
      this.drawn = text;
      this.settle = setTimeout(this.settled, SETTLE_MS);
    } else {
      this.drawn = null;
      this.holder.innerHTML = html;
    }
  }

  dispose(): void {
    clearTimeout(this.settle);
    this.observer?.disconnect();
    document.removeEventListener('selectionchange', this.onSelection);
  }

  /** Whether the page's selection holds part of the line (a caption would rewrite it). */
  private selected(): boolean {
    const selection = document.getSelection();
    return !!selection && !selection.isCollapsed && selection.containsNode(this.holder, true);
  }

  /** The selection changed while a caption is held: once it holds none of the line, show it. */
  private onSelection = (): void => {
    if (this.held === null || this.selected()) {
      return;
    }
    const html = this.held;
    this.held = null;
    document.removeEventListener('selectionchange', this.onSelection);
    delete this.holder.dataset.held;
    this.holder.removeAttribute('title');
    this.write(html);
  };

  /** The picture's text written as text, in place of the picture. */
  private settled = (): void => {
    if (this.drawn !== null) {
      this.holder.textContent = this.drawn;
      this.drawn = null;
    }
  };

  /** Draw `text` into the line's canvas; false when it cannot be (nothing changed then). */
  private draw(text: string): boolean {
    try {
      return this.drawPicture(text);
    } catch {
      return false; // the browser cannot draw it (canvas.ts's pictures fail alike): HTML then
    }
  }

  private drawPicture(text: string): boolean {
    if (this.width <= 0 || !picturesDrawable()) {
      return false; // the line not laid out yet (or no ResizeObserver to say), or no pictures here
    }
    this.renderer ??= this.canvas.getContext('bitmaprenderer');
    if (!this.renderer) {
      return false;
    }
    const style = getComputedStyle(this.holder);
    const line = parseFloat(style.lineHeight) || 20;
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(this.width * ratio));
    const height = Math.max(1, Math.round(line * ratio));
    offscreen ??= new OffscreenCanvas(width, height);
    if (offscreen.width !== width || offscreen.height !== height) {
      offscreen.width = width;
      offscreen.height = height;
    }
    const context = offscreen.getContext('2d');
    if (!context) {
      return false;
    }
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, this.width, line);
    context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const measured = context.measureText(text);
    if (measured.width > this.width) {
      return false;
    }
    // Where the page puts a line's text: the font's ascent and descent in whole device
    // pixels, the leading left over shared with its smaller half above them (as Chromium
    // lays a line out), the baseline the ascent below that.
    const ascent = Math.round(measured.fontBoundingBoxAscent * ratio);
    const descent = Math.round(measured.fontBoundingBoxDescent * ratio);
    const baseline = Number.isFinite(ascent + descent)
      ? (Math.floor((line * ratio - ascent - descent) / 2) + ascent) / ratio
      : line * 0.75;
    context.fillStyle = style.color;
    context.textBaseline = 'alphabetic';
    context.fillText(text, 0, baseline);
    if (this.canvas.parentElement !== this.holder) {
      this.holder.replaceChildren(this.canvas);
    }
    // As wide as the line was when drawn, not `100%`: where the line is as wide as its
    // content (a grid in a flex row, as in the replay panel or an HBox), a picture of no
    // width of its own would narrow the line below its text's width, and the text no
    // longer fit it. The line's width follows the text it held until a wider caption comes
    // (as HTML, once) or the line is resized (the observer draws it again at its width).
    const cssWidth = `${this.width}px`;
    const cssHeight = `${line}px`;
    if (this.canvas.style.width !== cssWidth) {
      this.canvas.style.width = cssWidth;
    }
    if (this.canvas.style.height !== cssHeight) {
      this.canvas.style.height = cssHeight;
    }
    this.renderer.transferFromImageBitmap(offscreen.transferToImageBitmap());
    if (this.canvas.getAttribute('aria-label') !== text) {
      this.canvas.setAttribute('aria-label', text);
    }
    return true;
  }
}
