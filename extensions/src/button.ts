// The "Spark UI" button's view (workbench/views/sparkui.py: SparkUIButton).
//
// In JupyterLab with the workbench's extension, clicking it opens the Spark UI page in a
// tab (the extension's `workbench:open-spark-ui` command). Elsewhere the button is disabled
// and its tooltip says where it works.

import { IRenderProps, ISparkUIArgs } from './host';

/** Tooltip of the button in a front end without the workbench's JupyterLab extension. */
export const NEEDS_JUPYTERLAB =
  'The Spark UI opens in a JupyterLab tab: it needs JupyterLab (or Notebook 7) with the ' +
  "workbench's extension, which this page does not have";

/** Render the button into `el`; `open` is null without the extension. */
export function renderSparkUIButton(
  { model, el }: IRenderProps,
  open: ((args: ISparkUIArgs) => void) | null
): () => void {
  const button = document.createElement('button');
  el.classList.add('jupyter-widgets', 'jp-workbench-SparkUIButton');
  button.className = 'jupyter-button widget-button jp-workbench-SparkUIButton-button';
  button.type = 'button';
  button.textContent = 'Spark UI';
  button.style.width = 'auto';
  el.appendChild(button);

  const update = (): void => {
    const port = Number(model.get('port')) || 0;
    button.disabled = port <= 0 || open === null;
    button.title =
      port <= 0
        ? String(model.get('reason') || 'No Spark UI in this session')
        : open === null
          ? NEEDS_JUPYTERLAB
          : `Open ${String(model.get('path'))} of the Spark UI in a tab`;
  };
  const click = (): void => {
    const port = Number(model.get('port')) || 0;
    if (open !== null && port > 0) {
      open({
        port,
        path: String(model.get('path') || '/'),
        title: String(model.get('title') || 'Spark UI')
      });
    }
  };
  const events = ['change:port', 'change:path', 'change:title', 'change:reason'];
  button.addEventListener('click', click);
  events.forEach(name => model.on(name, update));
  update();
  return () => {
    button.removeEventListener('click', click);
    events.forEach(name => model.off(name, update));
  };
}
