// The `_esm` of workbench.views.sparkui.SparkUIButton: the extension's button when the page
// has the extension; elsewhere a disabled button whose tooltip says where it works.

import { extensionWidgets, IRenderProps } from '../host';

export default {
  render(props: IRenderProps): void | (() => void) {
    const extension = extensionWidgets();
    if (extension?.sparkUIButton) {
      return extension.sparkUIButton.render(props) as () => void;
    }
    props.el.classList.add('jp-workbench-SparkUIButton');
    props.el.innerHTML =
      '<button class="jupyter-button widget-button" disabled style="width:auto" title="The Spark UI opens ' +
      "in a JupyterLab tab: it needs JupyterLab (or Notebook 7) with the workbench's extension, which this " +
      'page does not have">Spark UI</button>';
  }
};
