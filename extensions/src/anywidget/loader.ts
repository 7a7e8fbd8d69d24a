// Where a loader finds the workbench widgets' code: the JupyterLab extension's copy when
// the page has it, otherwise the module the kernel sends, fetched once per page.
//
// Without the extension, the first chart grid of a page asks its kernel ({kind: "code"});
// the kernel answers with two binary buffers: the widgets' module (src/anywidget/module.ts
// built to one ES module) and plotly.js, gzip-compressed (plotly.py's own copy). Every
// loader of the page (each widget evaluates its own copy of its `_esm`) shares the result
// through a global, so plotly.js crosses the websocket once per page whatever the number of
// widgets, kernels or re-runs. Nothing comes from a CDN.

import { extensionWidgets, IModel, IWorkbenchWidgets } from '../host';

const KERNEL_KEY = Symbol.for('spark-streaming-workbench.kernel-widgets');
/** How long a page waits for the kernel's answer (a busy kernel answers between cells). */
const ANSWER_TIMEOUT_MS = 600_000;

/** The widgets' code for this page: the extension's, or the kernel's (asked once). */
export function workbenchWidgets(model: IModel): Promise<IWorkbenchWidgets> {
  const extension = extensionWidgets();
  if (extension) {
    return Promise.resolve(extension);
  }
  const shared = globalThis as any;
  let pending = shared[KERNEL_KEY] as Promise<IWorkbenchWidgets> | undefined;
  if (!pending) {
    pending = fromKernel(model);
    shared[KERNEL_KEY] = pending;
    // A failed attempt (the widget closed before its kernel answered) lets the next try.
    pending.catch(() => {
      if (shared[KERNEL_KEY] === pending) {
        delete shared[KERNEL_KEY];
      }
    });
  }
  return pending;
}

async function fromKernel(model: IModel): Promise<IWorkbenchWidgets> {
  const [code, plotly] = await ask(model);
  const module = await importModule([code]);
  let plotlyPromise: Promise<any> | null = null;
  const loadPlotly = (): Promise<any> => {
    // plotly.min.js is a UMD bundle: given a `module`, it exports itself there.
    plotlyPromise ??= gunzip(plotly)
      .then(text => importModule(['const module = {exports: {}};\n', text, '\nexport default module.exports;\n']))
      .then(imported => imported.default);
    return plotlyPromise;
  };
  return module.makeWidgets(loadPlotly) as IWorkbenchWidgets;
}

function ask(model: IModel): Promise<DataView<ArrayBuffer>[]> {
  return new Promise((resolve, reject) => {
    const answered = (content: any, buffers: DataView<ArrayBuffer>[]): void => {
      if (content && content.kind === 'code') {
        clearTimeout(timer);
        model.off('msg:custom', answered);
        if (buffers && buffers.length === 2) {
          resolve(buffers);
        } else {
          reject(new Error(String(content.error || 'the kernel sent no chart code')));
        }
      }
    };
    const timer = setTimeout(() => {
      model.off('msg:custom', answered);
      reject(new Error('the kernel did not send the chart code'));
    }, ANSWER_TIMEOUT_MS);
    model.on('msg:custom', answered);
    model.send({ kind: 'code' });
  });
}

async function importModule(parts: BlobPart[]): Promise<any> {
  const url = URL.createObjectURL(new Blob(parts, { type: 'text/javascript' }));
  try {
    return await import(/* webpackIgnore: true */ url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function gunzip(data: DataView<ArrayBuffer>): Promise<string> {
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}
