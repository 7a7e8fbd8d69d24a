// The `_esm` of workbench.views.charts.ChartGrid: a small loader (no plotly.js, no chart
// code) that draws with the code loader.ts finds for this page.

import { IRenderProps } from '../host';
import { askForCode, workbenchWidgets } from './loader';

export default {
  initialize: ({ model }: Pick<IRenderProps, 'model'>) => askForCode(model),
  async render(props: IRenderProps): Promise<void | (() => void)> {
    askForCode(props.model); // a page whose asker closed unanswered
    try {
      return await (await workbenchWidgets()).chartGrid.render(props);
    } catch (reason) {
      props.el.textContent = `The charts could not load: ${reason}`;
    }
  }
};
