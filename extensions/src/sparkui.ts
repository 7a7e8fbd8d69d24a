/**
 * The Spark UI in a JupyterLab tab, through the Jupyter server's `/proxy/<port>/` route.
 *
 * The command `workbench:open-spark-ui` opens (or re-activates) a main-area tab for one
 * Spark UI page. The page is fetched first: when nothing answers (Spark stopped, no Spark UI
 * on that port, or port 0 meaning "this session has none") the tab says so in words instead
 * of showing an empty frame.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { IFrame, refreshIcon } from '@jupyterlab/ui-components';
import { Panel, Widget } from '@lumino/widgets';

export const OPEN_SPARK_UI = 'workbench:open-spark-ui';

/** Arguments of the `workbench:open-spark-ui` command. */
export interface ISparkUIArgs {
  port: number;
  path: string;
  title?: string;
}

/** The proxied URL of a Spark UI page: `<base>/proxy/<port><path>`. */
export function sparkUIUrl(port: number, path: string): string {
  const page = path.startsWith('/') ? path : `/${path}`;
  return URLExt.join(PageConfig.getBaseUrl(), 'proxy', String(port)) + page;
}

/** What checking a Spark UI page found: null when it answers, else why not. */
export async function checkSparkUI(port: number, url: string): Promise<string | null> {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    return (
      'This session has no Spark UI: Spark has not started in this kernel, or it is a ' +
      'Spark Connect session (the Spark UI then belongs to the Connect server).'
    );
  }
  const controller = new AbortController();
  const timer = window.setTimeout(() => controller.abort(), 10000);
  try {
    const response = await fetch(url, {
      credentials: 'same-origin',
      signal: controller.signal,
      // Only whether it answers matters here; the frame loads the page itself.
      cache: 'no-store'
    });
    if (response.ok) {
      return null;
    }
    if (response.status === 401 || response.status === 403) {
      return `The Jupyter server refused the Spark UI page (HTTP ${response.status}): log in to JupyterLab again.`;
    }
    return (
      `Nothing answers as a Spark UI on port ${port} (HTTP ${response.status}): ` +
      'the Spark session has stopped, or the kernel has restarted. Start Spark again and reload.'
    );
  } catch (reason) {
    const why = controller.signal.aborted ? 'no answer within 10 s' : String(reason);
    return `The Spark UI on port ${port} could not be reached (${why}).`;
  } finally {
    window.clearTimeout(timer);
  }
}

/** The tab's content: a message while checking or when the page is unreachable, else the frame. */
export class SparkUIView extends Panel {
  constructor(readonly port: number, readonly url: string) {
    super();
    this.addClass('jp-workbench-SparkUI');
    this._message.addClass('jp-workbench-SparkUI-message');
    this.addWidget(this._message);
    void this.reload();
  }

  /** Check the page again and show it, or say why it cannot be shown. */
  async reload(): Promise<void> {
    this._showMessage('Connecting to the Spark UI…', 'checking');
    const problem = await checkSparkUI(this.port, this.url);
    if (this.isDisposed) {
      return;
    }
    if (problem !== null) {
      this._showMessage(problem, 'error');
      return;
    }
    this._frame?.dispose();
    const frame = new IFrame({
      // The Spark UI's pages need their scripts (timelines, graphs) and its own origin's
      // resources, which are the Jupyter server's through the proxy.
      sandbox: ['allow-scripts', 'allow-same-origin']
    });
    frame.url = this.url;
    frame.addClass('jp-workbench-SparkUI-frame');
    this._frame = frame;
    this._message.hide();
    this.addWidget(frame);
  }

  private _showMessage(text: string, state: 'checking' | 'error'): void {
    this._frame?.dispose();
    this._frame = null;
    this._message.node.textContent = text;
    this._message.node.dataset.state = state;
    this._message.show();
  }

  private _message = new Widget();
  private _frame: IFrame | null = null;
}

/** Register the `workbench:open-spark-ui` command. */
export function addSparkUICommand(app: JupyterFrontEnd): void {
  const open = new Map<string, MainAreaWidget<SparkUIView>>();
  app.commands.addCommand(OPEN_SPARK_UI, {
    label: (args) => String((args as Partial<ISparkUIArgs>).title || 'Spark UI'),
    describedBy: {
      args: {
        type: 'object',
        properties: {
          port: { type: 'number', description: 'The Spark UI port on the kernel machine (0: none)' },
          path: { type: 'string', description: 'The Spark UI page, e.g. /StreamingQuery/' },
          title: { type: 'string', description: 'The tab title' }
        },
        required: ['port', 'path']
      }
    },
    execute: (raw) => {
      const args = raw as Partial<ISparkUIArgs>;
      const port = Number(args.port ?? 0);
      const path = typeof args.path === 'string' && args.path ? args.path : '/';
      const url = sparkUIUrl(port, path);
      const existing = open.get(url);
      if (existing && !existing.isDisposed) {
        app.shell.activateById(existing.id);
        void existing.content.reload();
        return existing;
      }
      const content = new SparkUIView(port, url);
      const widget = new MainAreaWidget({ content });
      widget.id = `workbench-spark-ui-${Private.nextId++}`;
      widget.title.label = args.title || 'Spark UI';
      widget.title.caption = port > 0 ? `Spark UI (port ${port}) ${path}` : 'No Spark UI';
      widget.title.closable = true;
      widget.toolbar.addItem(
        'reload',
        new ToolbarButton({
          icon: refreshIcon,
          tooltip: 'Load the Spark UI page again',
          onClick: () => void content.reload()
        })
      );
      open.set(url, widget);
      widget.disposed.connect(() => open.delete(url));
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
      return widget;
    }
  });
}

namespace Private {
  export let nextId = 0;
}
