/**
 * The workbench's widget module `spark-streaming-workbench`: the chart grid (charts.ts) and
 * the "Spark UI" button, registered once with the ipywidgets manager of the page.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { DOMWidgetModel, DOMWidgetView, IJupyterWidgetRegistry } from '@jupyter-widgets/base';
import { CommandRegistry } from '@lumino/commands';

import { ChartGridModel, ChartGridView } from './charts';
import { OPEN_SPARK_UI } from './sparkui';
import { MODULE_NAME, MODULE_VERSION } from './version';

/** The model of `workbench.views.sparkui.SparkUIButton`. */
export class SparkUIButtonModel extends DOMWidgetModel {
  defaults(): Backbone.ObjectHash {
    return {
      ...super.defaults(),
      _model_name: 'SparkUIButtonModel',
      _view_name: 'SparkUIButtonView',
      _model_module: MODULE_NAME,
      _view_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_module_version: MODULE_VERSION,
      port: 0,
      path: '/',
      title: 'Spark UI',
      reason: ''
    };
  }
}

/** The base of the button's view; the plugin gives it the app's command registry. */
export class SparkUIButtonView extends DOMWidgetView {
  /** Set by the plugin that registers the module; null only outside JupyterLab. */
  static commands: CommandRegistry | null = null;

  render(): void {
    this.el.classList.add('jupyter-widgets', 'jp-workbench-SparkUIButton');
    this._button.className = 'jupyter-button widget-button jp-workbench-SparkUIButton-button';
    this._button.type = 'button';
    this._button.textContent = 'Spark UI';
    this._button.addEventListener('click', this._onClick);
    this.el.appendChild(this._button);
    this.listenTo(this.model, 'change:port change:path change:title change:reason', this._update);
    this._update();
  }

  remove(): this {
    this._button.removeEventListener('click', this._onClick);
    return super.remove();
  }

  private _update(): void {
    const port = Number(this.model.get('port')) || 0;
    const commands = SparkUIButtonView.commands;
    this._button.disabled = port <= 0 || commands === null;
    this._button.title =
      port <= 0
        ? String(this.model.get('reason') || 'No Spark UI in this session')
        : commands === null
          ? 'Opening the Spark UI needs JupyterLab'
          : `Open ${String(this.model.get('path'))} of the Spark UI in a tab`;
  }

  private _onClick = (): void => {
    const commands = SparkUIButtonView.commands;
    const port = Number(this.model.get('port')) || 0;
    if (commands === null || port <= 0) {
      return;
    }
    void commands.execute(OPEN_SPARK_UI, {
      port,
      path: String(this.model.get('path') || '/'),
      title: String(this.model.get('title') || 'Spark UI')
    });
  };

  private _button = document.createElement('button');
}

/** Registers the widget module with the page's ipywidgets manager. */
export const widgetsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'spark-streaming-workbench:widgets',
  description: 'The workbench widget views: chart grid and Spark UI button.',
  autoStart: true,
  requires: [IJupyterWidgetRegistry],
  activate: (app: JupyterFrontEnd, registry: IJupyterWidgetRegistry) => {
    SparkUIButtonView.commands = app.commands;
    registry.registerWidget({
      name: MODULE_NAME,
      version: MODULE_VERSION,
      exports: { ChartGridModel, ChartGridView, SparkUIButtonModel, SparkUIButtonView }
    });
  }
};
