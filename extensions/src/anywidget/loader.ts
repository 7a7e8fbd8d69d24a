// Where a loader finds the workbench widgets' code: the JupyterLab extension's copy when
// the page has it, otherwise the module the kernel sends, fetched once per page.
//
// Kept small: it is part of every widget's state (its `_esm`). Without the extension, the
// first chart grid model of a page asks its kernel ({kind: "code"}); the kernel answers
// with two binary buffers: the widgets' module (module.ts, built to one ES module) and
// plotly.js, gzip-compressed, which that module inflates when a chart first draws. Every
// loader of the page (each widget evaluates its own copy of its `_esm`) shares the answer
// through a global, so plotly.js crosses the websocket once per page whatever the number of
// widgets, kernels or re-runs. Nothing comes from a CDN. When the asking widget closes
// before the answer (its cell re-run), the next chart grid model asks instead.

import { extensionWidgets, IModel, IWorkbenchWidgets } from '../host';

const KERNEL_KEY = Symbol.for('spark-streaming-workbench.kernel-widgets');

interface IShared {
  widgets: Promise<IWorkbenchWidgets>;
  settle: (widgets: IWorkbenchWidgets | null, error?: unknown) => void;
  asker: IModel | null;
  done: boolean;
}

function shared(): IShared {
  const page = globalThis as any;
  if (!page[KERNEL_KEY]) {
    let settle!: IShared['settle'];
    const widgets = new Promise<IWorkbenchWidgets>((ok, fail) => {
      settle = (given, error) => (given ? ok(given) : fail(error));
    });
    page[KERNEL_KEY] = { widgets, settle, asker: null, done: false };
  }
  return page[KERNEL_KEY];
}

/** For anywidget's `initialize`: without the extension, the page's first model asks the kernel. */
export function askForCode(model: IModel): void | (() => void) {
  const state = extensionWidgets() ? null : shared();
  if (!state || state.done || state.asker) {
    return;
  }
  state.asker = model;
  const answered = async (content: any, buffers: DataView<ArrayBuffer>[]): Promise<void> => {
    if (content?.kind === 'code') {
      model.off('msg:custom', answered);
      let url = '';
      try {
        url = URL.createObjectURL(new Blob([buffers[0]], { type: 'text/javascript' }));
        state.settle((await import(/* webpackIgnore: true */ url)).makeWidgets(buffers[1]));
        state.done = true;
      } catch (reason) {
        delete (globalThis as any)[KERNEL_KEY]; // the next model asks again
        state.settle(null, content.error ?? reason);
      } finally {
        if (url) {
          URL.revokeObjectURL(url); // imported (or failed): the module's text is no longer needed
        }
      }
    }
  };
  model.on('msg:custom', answered);
  model.send({ kind: 'code' });
  // The asker closed before the answer: the next model asks.
  return () => {
    if (!state.done && state.asker === model) {
      state.asker = null;
    }
  };
}

/** The widgets' code for this page: the extension's, or the kernel's. */
export function workbenchWidgets(): Promise<IWorkbenchWidgets> {
  return Promise.resolve(extensionWidgets() ?? shared().widgets);
}
