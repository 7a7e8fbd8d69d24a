/**
 * A widget output whose model is gone shows its picture instead of an error box.
 *
 * The workbench's monitors, replay panels and `compare` put a PNG of their charts (and a text
 * summary) in the same display output as the live widget view. A notebook saved from a live
 * page keeps both. Reopened once its kernel is gone (or with a fresh kernel), the widget's
 * model no longer exists and JupyterLab's widget renderer (jupyterlab-manager) picks the
 * widget view anyway and says "Error displaying widget: model not found": it never falls
 * back to the other entries of the bundle. This plugin makes it do so: when the renderer
 * ends in its error state and the output carries an `image/png`, the picture is shown in the
 * renderer's place, with the `text/plain` summary as its alternative text; an output the
 * workbench marked in its metadata (`spark-streaming-workbench.fallback`) with no picture,
 * such as the console sink's, shows its text. A live widget is never touched, nor another
 * package's output without a picture.
 *
 * An update of a workbench output that keeps its widget (a newer picture and text: a replay
 * panel publishes them after every cell that moved it) leaves a live view as it is:
 * jupyterlab-manager would build a second view of the same model, drawing every chart anew,
 * and keep the first one, detached, in its renderer for as long as the output lives.
 *
 * A notebook opened without a kernel ("No Kernel") never gets a widget manager, and its
 * widget outputs would say "Loading widget..." for ever: there too the fallback is shown.
 *
 * jupyterlab-manager replaces its renderer factory in every notebook's registry once that
 * notebook's kernel is known, and finds its renderers again by class; so the fallback wraps
 * the method of the renderer's class (found from the factory every notebook starts with),
 * once per page, rather than putting another renderer in front of it.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

export const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
const PATCHED = Symbol.for('spark-streaming-workbench.widget-fallback');
/** The class of the picture shown in place of a widget whose model is gone. */
export const PICTURE_CLASS = 'jp-workbench-WidgetPicture';

/** The part of jupyterlab-manager's `WidgetRenderer` (a Lumino Panel) the fallback uses. */
interface IWidgetRenderer {
  node: HTMLElement;
  widgets: ReadonlyArray<{ isDisposed: boolean }>;
  isDisposed: boolean;
  disposed: { connect(callback: () => void): void };
  hasClass(name: string): boolean;
  removeClass(name: string): void;
  renderModel(model: IRenderMime.IMimeModel): Promise<void>;
}

/** Renderers not drawn yet, with the output each was asked to render. */
const waiting = new Map<IWidgetRenderer, IRenderMime.IMimeModel>();
/** The widget model whose view each renderer shows (set once the view is in). */
const viewOf = new WeakMap<IWidgetRenderer, string>();
/** Renderers whose disposal already takes them out of `waiting` (one handler each, however often they render). */
const watched = new WeakSet<IWidgetRenderer>();
let notebooks: INotebookTracker | null = null;

/** Whether the notebook has no kernel ("No Kernel"): no widget manager will come. */
function withoutKernel(panel: NotebookPanel): boolean {
  return panel.sessionContext.hasNoKernel && !panel.sessionContext.session?.kernel;
}

/** Show the fallback of every waiting renderer of a notebook that has no kernel. */
function settle(panel: NotebookPanel | null | undefined): void {
  if (!panel || !withoutKernel(panel)) {
    return;
  }
  for (const [renderer, model] of waiting) {
    if (renderer.widgets.length === 0 && panel.node.contains(renderer.node) && showFallback(renderer.node, model)) {
      renderer.removeClass('jupyter-widgets');
      waiting.delete(renderer);
    }
  }
}

/** Whether the renderer ended in its error state: no view added, the error class set. */
function failed(renderer: IWidgetRenderer): boolean {
  return renderer.widgets.length === 0 && renderer.hasClass('jupyter-widgets');
}

/** The class of the text shown in place of a workbench widget without a picture. */
export const TEXT_CLASS = 'jp-workbench-WidgetText';

/** Whether the workbench marked the output's other entries as standing in for its widget. */
function marked(model: IRenderMime.IMimeModel): boolean {
  const ours = model.metadata?.['spark-streaming-workbench'] as { fallback?: boolean } | undefined;
  return !!ours?.fallback;
}

/** The widget model an output shows (its widget view's `model_id`), or ''. */
function modelId(model: IRenderMime.IMimeModel): string {
  const view = model.data[WIDGET_VIEW] as { model_id?: unknown } | undefined;
  return typeof view?.model_id === 'string' ? view.model_id : '';
}

/**
 * Whether `model` is a workbench output whose widget the renderer already shows in a live
 * view: an update that brings only a newer picture and text (the output's data, which
 * JupyterLab has stored by now, is what a saved notebook keeps).
 */
function sameLiveView(renderer: IWidgetRenderer, model: IRenderMime.IMimeModel): boolean {
  const id = modelId(model);
  const views = renderer.widgets;
  return !!id && marked(model) && viewOf.get(renderer) === id && views.length === 1 && !views[0].isDisposed;
}

/**
 * Show the bundle's picture (or, for a workbench output without one, its text) in the
 * renderer's place; false when there is nothing to show.
 */
export function showFallback(node: HTMLElement, model: IRenderMime.IMimeModel): boolean {
  const png = model.data['image/png'];
  const text = model.data['text/plain'];
  const summary = typeof text === 'string' ? text : Array.isArray(text) ? text.join('') : '';
  let shown: HTMLElement;
  if (typeof png === 'string' && png) {
    const image = document.createElement('img');
    image.className = PICTURE_CLASS;
    image.src = `data:image/png;base64,${png.replace(/\s/g, '')}`;
    image.alt = summary;
    image.title = summary;
    image.style.maxWidth = '100%';
    shown = image;
  } else if (summary && marked(model)) {
    shown = document.createElement('pre');
    shown.className = TEXT_CLASS;
    shown.textContent = summary;
  } else {
    return false;
  }
  node.textContent = '';
  node.appendChild(shown);
  return true;
}

/** Settle ``renderer`` once it is in the page (checked every 100 ms, for 5 s at most). */
function whenAttached(renderer: IWidgetRenderer, tries = 50): void {
  if (renderer.isDisposed || !waiting.has(renderer)) {
    return;
  }
  if (!renderer.node.isConnected) {
    if (tries > 0) {
      setTimeout(() => whenAttached(renderer, tries - 1), 100);
    }
    return;
  }
  settle(notebooks?.find(panel => panel.node.contains(renderer.node)));
}

/** Wrap `renderModel` of the renderer's class, once per page. */
function patch(prototype: any): void {
  if (!prototype || prototype[PATCHED] || typeof prototype.renderModel !== 'function') {
    return;
  }
  const original = prototype.renderModel;
  prototype.renderModel = async function (this: IWidgetRenderer, model: IRenderMime.IMimeModel): Promise<void> {
    if (sameLiveView(this, model)) {
      return;
    }
    viewOf.delete(this);
    if (!watched.has(this)) {
      watched.add(this);
      this.disposed.connect(() => waiting.delete(this));
    }
    waiting.set(this, model);
    // Once attached (a cell scrolled into view renders first, attaches later): in a notebook
    // without a kernel it would wait for ever.
    whenAttached(this);
    await original.call(this, model);
    waiting.delete(this);
    if (this.isDisposed) {
      return; // closed (cell run again, outputs cleared) while the manager looked for the model
    }
    if (failed(this) && showFallback(this.node, model)) {
      this.removeClass('jupyter-widgets');
    } else if (this.widgets.length === 1) {
      viewOf.set(this, modelId(model));
    }
  };
  prototype[PATCHED] = true;
}

function patchFrom(panel: NotebookPanel): void {
  const rendermime = panel.content.rendermime;
  const factory = rendermime.getFactory(WIDGET_VIEW);
  if (!factory) {
    return;
  }
  // A throwaway renderer, only to reach its class (it reads nothing but the mime type).
  const renderer = factory.createRenderer({
    mimeType: WIDGET_VIEW,
    sanitizer: rendermime.sanitizer,
    resolver: rendermime.resolver,
    linkHandler: rendermime.linkHandler,
    latexTypesetter: rendermime.latexTypesetter
  });
  patch(Object.getPrototypeOf(renderer));
  renderer.dispose();
  // Outputs drawn before "No Kernel" was chosen.
  const context = panel.sessionContext;
  for (const changed of [context.kernelChanged, context.statusChanged, context.propertyChanged]) {
    changed.connect(() => settle(panel));
  }
}

/** Shows a widget output's picture when its model is gone (a saved notebook reopened). */
export const fallbackPlugin: JupyterFrontEndPlugin<void> = {
  id: 'spark-streaming-workbench:widget-fallback',
  description: "Shows a widget output's picture instead of an error when the widget's model is gone.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    notebooks = tracker;
    tracker.forEach(patchFrom);
    tracker.widgetAdded.connect((_sender, panel) => patchFrom(panel));
  }
};
