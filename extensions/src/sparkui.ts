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
import { ServerConnection } from '@jupyterlab/services';
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

/** What the server's `workbench/spark-ui/<port>` check answers. */
interface ISparkUIStatus {
  port: number;
  answers: boolean;
  status: number | null;
  reason: string;
}

/**
 * Whether a Spark UI page answers: null when it does, else why not, in words.
 *
 * The Jupyter server checks it (its `workbench/spark-ui/<port>` route): asking the proxy
 * directly would make the browser log an HTTP error whenever nothing answers.
 */
export async function checkSparkUI(port: number): Promise<string | null> {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    return (
      'This session has no Spark UI: Spark has not started in this kernel, or it is a ' +
      'Spark Connect session (the Spark UI then belongs to the Connect server).'
    );
  }
  const settings = ServerConnection.makeSettings();
  // The UI's root answers at once (a redirect); a query's page can take seconds to draw.
  const url = URLExt.join(settings.baseUrl, 'workbench', 'spark-ui', String(port));
  let answer: ISparkUIStatus;
  try {
    const response = await ServerConnection.makeRequest(url, {}, settings);
    if (!response.ok) {
      return (
        `The Jupyter server could not check the Spark UI (HTTP ${response.status}): ` +
        'reinstall spark-streaming-workbench so that its server extension is enabled.'
      );
    }
    answer = (await response.json()) as ISparkUIStatus;
  } catch (reason) {
    return `The Jupyter server could not be reached to check the Spark UI (${String(reason)}).`;
  }
  if (answer.answers) {
    return null;
  }
  const what = answer.status === null ? answer.reason || 'no answer' : `HTTP ${answer.status}`;
  return (
    `Nothing answers as a Spark UI on port ${port} (${what}): the Spark session has stopped, ` +
    'or the kernel has restarted. Start Spark again and reload this tab.'
  );
}

/** The tab's content: a message while checking or when the page is unreachable, else the frame. */
export class SparkUIView extends Panel {
  constructor(
    readonly port: number,
    readonly path: string,
    readonly url: string
  ) {
    super();
    this.addClass('jp-workbench-SparkUI');
    this._message.addClass('jp-workbench-SparkUI-message');
    this.addWidget(this._message);
    void this.reload();
  }

  /** Check the page again and show it, or say why it cannot be shown. */
  async reload(): Promise<void> {
    const turn = ++this._turn;
    this._showMessage('Connecting to the Spark UI…', 'checking');
    const problem = await checkSparkUI(this.port);
    if (this.isDisposed || turn !== this._turn) {
      return; // closed, or a newer check (Reload, the stream's button again) decides
    }
    if (problem !== null) {
      this._showMessage(problem, 'error');
      return;
    }
    this._frame?.dispose();
    const frame = new IFrame();
    const node = frame.node.querySelector('iframe');
    // No sandbox. The Spark UI's pages need their scripts (timelines, graphs) and their own
    // origin, which through the proxy is the Jupyter server's: a sandbox allowing both
    // protects nothing (a script of the frame may lift it, and the browser warns so), while
    // it blocks what the UI needs as well, the confirm() of its "(kill)" links and the forms
    // they post. The frame shows the user's own Spark driver, behind the server's token.
    node?.removeAttribute('sandbox');
    node?.addEventListener('load', () => this._keepInProxy(node));
    frame.url = this.url;
    frame.addClass('jp-workbench-SparkUI-frame');
    this._frame = frame;
    this._message.hide();
    this.addWidget(frame);
  }

  /**
   * Send a frame that left the proxy back under it. Spark's redirects (its root to
   * `/jobs/`, a kill back to its list) ignore the proxy's `X-Forwarded-Context`: the
   * browser follows them to the Jupyter server's own `/jobs/`, a 404, which the frame's
   * address (same origin, so readable) tells; the same path under the proxy is Spark's.
   */
  private _keepInProxy(node: HTMLIFrameElement): void {
    let where: Location;
    try {
      where = node.contentWindow!.location;
      void where.pathname; // another origin (a link out of the Spark UI) cannot be read
    } catch {
      return;
    }
    const prefix = new URL(sparkUIUrl(this.port, '/'), window.location.href).pathname;
    const login = URLExt.join(PageConfig.getBaseUrl(), 'login'); // the server asks to log in again
    const outside = where.origin === window.location.origin && !where.pathname.startsWith(prefix);
    if (!outside || where.href.startsWith(login)) {
      return;
    }
    where.replace(prefix.replace(/\/$/, '') + where.pathname + where.search + where.hash);
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
  /** Counts the checks: only the newest one's answer is shown. */
  private _turn = 0;
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
      const content = new SparkUIView(port, path, url);
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
