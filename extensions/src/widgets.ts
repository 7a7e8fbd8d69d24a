/**
 * The workbench's widgets in JupyterLab: the plugin offers the page its copy of the widgets'
 * code (chart grid, "Spark UI" button) through a global that the widgets' small anywidget
 * loaders look for (host.ts). With it, plotly.js comes from this extension's static files,
 * once per page, and the kernel sends no code at all.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { sparkUIButton } from './button';
import { chartGrid } from './charts';
import { API_VERSION, EXTENSION_KEY, ISparkUIArgs, IWorkbenchWidgets } from './host';
import { OPEN_SPARK_UI } from './sparkui';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
let plotlyPromise: Promise<any> | null = null;

/** plotly.js, loaded once per page: a chunk of its own among the extension's static files. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function loadPlotly(): Promise<any> {
  if (!plotlyPromise) {
    plotlyPromise = import(
      /* webpackChunkName: "plotly" */ 'plotly.js-dist-min'
    ).then(
      module => (module as any).default ?? module,
      (reason: unknown) => {
        plotlyPromise = null; // a failed load (a network hiccup) is tried again by the next chart
        throw reason;
      }
    );
  }
  return plotlyPromise;
}

/** Offers the widgets' code to the page's workbench widgets. */
export const widgetsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'spark-streaming-workbench:widgets',
  description: 'The workbench widget views (chart grid, Spark UI button), offered to their anywidget loaders.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    const widgets: IWorkbenchWidgets = {
      api: API_VERSION,
      chartGrid: chartGrid(loadPlotly),
      sparkUIButton: sparkUIButton((args: ISparkUIArgs) => void app.commands.execute(OPEN_SPARK_UI, { ...args }))
    };
    (globalThis as any)[EXTENSION_KEY] = widgets;
  }
};
