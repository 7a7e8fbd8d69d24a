// The `_esm` of workbench.views.charts.ChartGrid: a small loader (no plotly.js, no chart
// code) that draws with the code loader.ts finds for this page.

import { IRenderProps } from '../host';
import { askForCode, workbenchWidgets } from './loader';

export default {
  initialize: ({ model }: Pick<IRenderProps, 'model'>) => askForCode(model),
  async render(props: IRenderProps): Promise<void | (() => void)> {
    // A page whose asker closed unanswered: this view asks, and lets the next one ask if it
    // goes first (a cell run again closes its model, whose answer then never arrives; a
    // view gone while its model lives may still get it, and the code then crosses twice).
    const stopAsking = askForCode(props.model);
    if (stopAsking) {
      props.signal?.addEventListener('abort', stopAsking, { once: true });
    }
    try {
      return await (await workbenchWidgets()).chartGrid.render(props);
    } catch (reason) {
      props.el.textContent = `The charts could not load: ${reason}`;
    }
  }
};
