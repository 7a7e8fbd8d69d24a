// The "Spark UI" button's view (workbench/views/sparkui.py: SparkUIButton), as the
// JupyterLab extension offers it: clicking it opens the Spark UI page in a tab (the
// `workbench:open-spark-ui` command). Without the extension the button's loader draws a
// disabled button instead (src/anywidget/sparkui_button.ts).

import { IRenderProps, ISparkUIArgs, IWidgetDef } from './host';

/** The button, opening pages with `open`. */
export function sparkUIButton(open: (args: ISparkUIArgs) => void): IWidgetDef {
  return { render: props => renderSparkUIButton(props, open) };
}

function renderSparkUIButton({ model, el }: IRenderProps, open: (args: ISparkUIArgs) => void): () => void {
  const button = document.createElement('button');
  el.classList.add('jupyter-widgets', 'jp-workbench-SparkUIButton');
  button.className = 'jupyter-button widget-button jp-workbench-SparkUIButton-button';
  button.type = 'button';
  button.textContent = 'Spark UI';
  button.style.width = 'auto';
  el.appendChild(button);

  const update = (): void => {
    const port = Number(model.get('port')) || 0;
    button.disabled = port <= 0;
    button.title =
      port <= 0
        ? String(model.get('reason') || 'No Spark UI in this session')
        : `Open ${String(model.get('path'))} of the Spark UI in a tab`;
  };
  const click = (): void => {
    const port = Number(model.get('port')) || 0;
    if (port > 0) {
      open({
        port,
        path: String(model.get('path') || '/'),
        title: String(model.get('title') || 'Spark UI')
      });
    }
  };
  // The widget manager marks its models' comms dead when their kernel restarts: that
  // kernel's Spark UI went with it (and a new Spark may answer on the same port).
  const gone = (): void => {
    button.disabled = true;
    button.title = 'The kernel restarted: this Spark UI is gone with it';
  };
  const events = ['change:port', 'change:path', 'change:title', 'change:reason'];
  button.addEventListener('click', click);
  events.forEach(name => model.on(name, update));
  model.on('comm_live_update', gone);
  update();
  return () => {
    button.removeEventListener('click', click);
    events.forEach(name => model.off(name, update));
    model.off('comm_live_update', gone);
  };
}
