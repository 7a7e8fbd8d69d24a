// The `_esm` of workbench.views.sparkui.SparkUIButton: the button, opening the Spark UI
// through the JupyterLab extension when the page has it (disabled, saying so, elsewhere).

import { renderSparkUIButton } from '../button';
import { extensionWidgets, IRenderProps } from '../host';

export default {
  render(props: IRenderProps): () => void {
    return renderSparkUIButton(props, extensionWidgets()?.openSparkUI ?? null);
  }
};
