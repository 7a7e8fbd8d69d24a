// The page's switches: `data-workbench-*` attributes that tests and benches set on the
// document element to compare the way the charts draw with another way (bench/README.md has
// what each comparison measured). A user's page sets none, and the charts draw the default
// way. Every switch is read here, at the moment it matters, so that a bench may flip it
// between phases on a live page.
//
// - `data-workbench-draw`, how updates are drawn (draw.ts, patch.ts, canvas.ts): unset, new
//   points go into a canvas over each chart (or into the SVG where no worker can draw);
//   `svg` writes them into the SVG; `plotly` has plotly draw every update; `full-axes` has
//   plotly draw the whole chart whenever its axes move; `fixed-axes` never moves a patched
//   chart's axes once drawn; `none` keeps the points and draws nothing. Any value but unset
//   keeps the canvas out.
// - `data-workbench-moves` (draw.ts): `all-points` has plotly move the axes with every point
//   of the live traces under the canvas, not only their ends.
// - `data-workbench-caption` (caption.ts): `html` shows every grid's caption as HTML, not as
//   a picture.
// - `data-workbench-pointer` (draw.ts): `plotly` has plotly draw every update of a chart under
//   the pointer (as until 2026-12-06), instead of patching it into the chart's SVG;
//   `full-axes` has plotly draw the whole chart under the pointer when its points pass the
//   axes (as until 2026-12-06 16:50), instead of moving the axes alone.
// - `data-workbench-passes` (charts.ts): a fixed gap between the page's draw passes, in ms,
//   or `frame` for the frame after an update arrives, instead of a gap that grows with the
//   grids drawing.

/** The values `data-workbench-draw` may take. */
const DRAWS = ['svg', 'plotly', 'full-axes', 'fixed-axes', 'none'] as const;

export type DrawSwitch = 'default' | (typeof DRAWS)[number];

/** How the page asked for updates to be drawn; an unknown value counts as `svg`. */
export function drawSwitch(): DrawSwitch {
  const asked = document.documentElement.dataset.workbenchDraw;
  if (asked === undefined) {
    return 'default';
  }
  return DRAWS.find(way => way === asked) ?? 'svg';
}

/** Whether the page asked for the axes to move with every point of the traces under a canvas. */
export function movesWithAllPoints(): boolean {
  return document.documentElement.dataset.workbenchMoves === 'all-points';
}

/** The gap between draw passes the page asked for (ms, 0 for the next frame), or null for none. */
export function passGapAsked(): number | null {
  const asked = document.documentElement.dataset.workbenchPasses;
  const fixed = asked === 'frame' ? 0 : asked ? Number(asked) : NaN;
  return fixed >= 0 ? fixed : null;
}

/** How the page asked for the grids' captions to show: `html`, or `default` (a picture where it can be). */
export function captionSwitch(): 'default' | 'html' {
  return document.documentElement.dataset.workbenchCaption === 'html' ? 'html' : 'default';
}

/**
 * How the page asked a chart under the pointer to be drawn: `plotly` every update,
 * `full-axes` in full when its axes move, or `default`.
 */
export function pointerSwitch(): 'default' | 'plotly' | 'full-axes' {
  const asked = document.documentElement.dataset.workbenchPointer;
  return asked === 'plotly' || asked === 'full-axes' ? asked : 'default';
}
