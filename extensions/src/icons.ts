import { LabIcon } from '@jupyterlab/ui-components';

/** The Streams panel's icon: three flowing lines. */
export const streamsIcon = new LabIcon({
  name: 'spark-streaming-workbench:streams',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="none" stroke="#616161" stroke-width="2" stroke-linecap="round">' +
    '<path d="M3 7c3-3 6 3 9 0s6 3 9 0"/><path d="M3 12c3-3 6 3 9 0s6 3 9 0"/>' +
    '<path d="M3 17c3-3 6 3 9 0s6 3 9 0"/></g></svg>'
});
