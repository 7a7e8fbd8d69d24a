// What the workbench's widgets share with the page: the anywidget-style widget shape, and
// the global through which the JupyterLab extension offers its copy of the widgets' code.
//
// The Python widgets (workbench/views/charts.py, sparkui.py) are anywidgets whose `_esm` is
// a small loader (src/anywidget/). A loader draws with the extension's code when the page
// has the extension (plotly.js then comes from the extension's static files), and otherwise
// asks the kernel, once per page, for the same code and plotly.js (src/anywidget/loader.ts).

import type { ISparkUIArgs } from './sparkui';

export type { ISparkUIArgs };

/** The part of anywidget's model a workbench widget uses. */
export interface IModel {
  get(name: string): any;
  on(name: string, callback: (...args: any[]) => void): void;
  off(name?: string | null, callback?: ((...args: any[]) => void) | null): void;
  send(content: any, callbacks?: any, buffers?: ArrayBuffer[] | ArrayBufferView[]): void;
}

/** What anywidget passes to `render`. */
export interface IRenderProps {
  model: IModel;
  el: HTMLElement;
  /** Aborted when the view goes (anywidget 0.10 and later). */
  signal?: AbortSignal;
}

/** An anywidget widget definition: `render` may return a clean-up function. */
export interface IWidgetDef {
  render(props: IRenderProps): void | (() => void) | Promise<void | (() => void)>;
}

/** The widgets' code, as the extension (or the module sent by the kernel) provides it. */
export interface IWorkbenchWidgets {
  /** The loader protocol's version: a loader uses only a provider of the same version. */
  api: number;
  chartGrid: IWidgetDef;
  /** The "Spark UI" button, opening its page in a JupyterLab tab; null without JupyterLab. */
  sparkUIButton: IWidgetDef | null;
}

export const API_VERSION = 1;

/** The global the extension sets to its IWorkbenchWidgets (read by the loaders). */
export const EXTENSION_KEY = Symbol.for('spark-streaming-workbench.widgets');

/** The extension's widgets, when the page has the extension (of the same API version). */
export function extensionWidgets(): IWorkbenchWidgets | null {
  const provided = (globalThis as any)[EXTENSION_KEY] as IWorkbenchWidgets | undefined;
  return provided && provided.api === API_VERSION ? provided : null;
}
