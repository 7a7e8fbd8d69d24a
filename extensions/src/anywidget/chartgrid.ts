// The `_esm` of workbench.views.charts.ChartGrid: a small loader (no plotly.js, no chart
// code) that draws with the code loader.ts finds for this page.

import { IRenderProps } from '../host';
import { workbenchWidgets } from './loader';

export default {
  async render(props: IRenderProps): Promise<void | (() => void)> {
    try {
      const widgets = await workbenchWidgets(props.model);
      return await widgets.chartGrid.render(props);
    } catch (reason) {
      props.el.textContent = `The charts could not load: ${reason}`;
    }
  }
};
