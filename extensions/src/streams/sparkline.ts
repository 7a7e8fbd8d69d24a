/**
 * A tiny inline SVG line of recent values (the watermark gap), drawn without a chart library.
 */
const SVG_NS = 'http://www.w3.org/2000/svg';

/** The `points` attribute of a polyline for `values` in a `width` x `height` box (nulls skipped). */
export function sparklinePoints(values: readonly (number | null)[], width: number, height: number): string {
  const known = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (known.length === 0) {
    return '';
  }
  const low = Math.min(0, ...known);
  const high = Math.max(...known);
  const span = high - low || 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const points: string[] = [];
  values.forEach((value, index) => {
    if (typeof value === 'number' && Number.isFinite(value)) {
      const x = values.length > 1 ? index * step : width / 2;
      const y = height - 1 - ((value - low) / span) * (height - 2);
      points.push(`${x.toFixed(1)},${y.toFixed(1)}`);
    }
  });
  return points.join(' ');
}

/** An SVG element showing `values`; update it with `updateSparkline`. */
export function createSparkline(width = 120, height = 22): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.classList.add('jp-workbench-Sparkline');
  const title = document.createElementNS(SVG_NS, 'title');
  const line = document.createElementNS(SVG_NS, 'polyline');
  line.setAttribute('fill', 'none');
  svg.append(title, line);
  return svg;
}

export function updateSparkline(svg: SVGSVGElement, values: readonly (number | null)[]): void {
  const width = Number(svg.getAttribute('width'));
  const height = Number(svg.getAttribute('height'));
  const known = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  svg.querySelector('polyline')!.setAttribute('points', sparklinePoints(values, width, height));
  svg.querySelector('title')!.textContent = known.length
    ? `Watermark gap (newest event time minus watermark) over the last ${values.length} batches; ` +
      `now ${known[known.length - 1].toFixed(1)} s`
    : 'No watermark gap yet (no watermark, or no event times)';
  svg.dataset.points = String(known.length);
}
