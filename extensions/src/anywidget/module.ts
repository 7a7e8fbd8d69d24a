// The workbench widgets' code as the kernel sends it to a page without the JupyterLab
// extension (built to workbench/views/static/widgets.js; see loader.ts).

import { chartGrid } from '../charts';
import { API_VERSION, IWorkbenchWidgets } from '../host';

/** The widgets, drawing with the plotly.js `loadPlotly` gives; no Spark UI tab here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function makeWidgets(loadPlotly: () => Promise<any>): IWorkbenchWidgets {
  return { api: API_VERSION, chartGrid: chartGrid(loadPlotly), openSparkUI: null };
}
