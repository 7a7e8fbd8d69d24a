/**
 * The Spark Streaming Workbench's JupyterLab extension.
 *
 * - `widgets`: the widget module `spark-streaming-workbench` (chart grid, Spark UI button);
 * - `spark-ui`: the `workbench:open-spark-ui` command (the Spark UI in a tab, via the proxy);
 * - `streams`: the Streams side panel and the status bar count;
 * - `widget-fallback`: a widget output whose model is gone shows its picture, not an error.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { fallbackPlugin } from './fallback';
import { addSparkUICommand } from './sparkui';
import { streamsPlugin } from './streams/plugin';
import { widgetsPlugin } from './widgets';

const sparkUIPlugin: JupyterFrontEndPlugin<void> = {
  id: 'spark-streaming-workbench:spark-ui',
  description: 'Opens pages of the Spark UI in JupyterLab tabs through the Jupyter server proxy.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => addSparkUICommand(app)
};

const plugins: JupyterFrontEndPlugin<void>[] = [sparkUIPlugin, widgetsPlugin, streamsPlugin, fallbackPlugin];
export default plugins;
