// The workbench widgets' code as the kernel sends it to a page without the JupyterLab
// extension (built to workbench/views/static/widgets.js; see loader.ts).

import { chartGrid } from '../charts';
import { API_VERSION, IWorkbenchWidgets } from '../host';

/** The widgets, drawing with plotly.js from `plotlyGzip` (inflated once, when first drawn). */
export function makeWidgets(plotlyGzip: DataView<ArrayBuffer>): IWorkbenchWidgets {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let plotly: Promise<any> | null = null;
  const loadPlotly = () =>
    (plotly ??= inflate(plotlyGzip)
      .then(text => importText(wrapUMD(text)))
      .then(
        m => m.default,
        (reason: unknown) => {
          plotly = null; // tried again by the next chart
          throw reason;
        }
      ));
  return { api: API_VERSION, chartGrid: chartGrid(loadPlotly), sparkUIButton: null };
}

/** plotly.min.js is a UMD bundle: given a `module`, it exports itself there. */
function wrapUMD(text: string): string[] {
  return ['const module = {exports: {}};\n', text, '\nexport default module.exports;\n'];
}

async function importText(parts: string[]): Promise<any> {
  const url = URL.createObjectURL(new Blob(parts, { type: 'text/javascript' }));
  try {
    return await import(/* webpackIgnore: true */ url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function inflate(data: DataView<ArrayBuffer>): Promise<string> {
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}
