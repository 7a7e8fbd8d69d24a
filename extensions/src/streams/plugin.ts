/**
 * The Streams side panel and the status bar count, following the active notebook.
 */
import { ILabShell, ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Signal } from '@lumino/signaling';

import { IStreamInfo } from '../protocol';
import { OPEN_SPARK_UI } from '../sparkui';
import { KernelStreams } from './model';
import { PageNames } from './page';
import { StreamsPanel } from './panel';
import { StreamsStatus } from './statusbar';

export const PLUGIN_ID = 'spark-streaming-workbench:streams';
export const SHOW_STREAMS = 'workbench:show-streams';

type Side = 'left' | 'right';

function activateCell(notebook: NotebookPanel, cellId: string): boolean {
  const index = notebook.content.widgets.findIndex((cell) => cell.model.id === cellId);
  if (index < 0) {
    return false;
  }
  const content = notebook.content;
  content.activeCellIndex = index;
  content.deselectAll();
  void content.scrollToCell(content.widgets[index], 'center');
  return true;
}

export const streamsPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'The Streams panel and status bar count of the active notebook kernel.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IStatusBar, ISettingRegistry, ILabShell, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    statusBar: IStatusBar | null,
    settingRegistry: ISettingRegistry | null,
    labShell: ILabShell | null,
    restorer: ILayoutRestorer | null
  ) => {
    const models = new Map<NotebookPanel, KernelStreams>();
    const names = new PageNames();
    /** Notebooks closed while their streams ran (path -> their kernel's id), as the panel says. */
    const closed = new Map<string, string>();
    const panel = new StreamsPanel({
      openSparkUI: (stream: IStreamInfo) => {
        if (stream.spark_ui) {
          void app.commands.execute(OPEN_SPARK_UI, {
            port: stream.spark_ui.port,
            path: stream.spark_ui.path,
            title: `${stream.name}: Spark UI`
          });
        }
      },
      showCell: (notebook, cellId) => {
        const found = activateCell(notebook, cellId);
        if (found) {
          app.shell.activateById(notebook.id);
        }
        return found;
      }
    });
    let side: Side = 'right';
    const place = (): void => {
      app.shell.add(panel, side, { rank: 900, type: 'Streams' });
    };
    place();
    // The shell shows the panel again after a reload when it was showing before.
    restorer?.add(panel, 'workbench-streams');
    const forgetClosed = (path: string): void => {
      closed.delete(path);
      panel.removeClosedNote(path);
    };

    app.commands.addCommand(SHOW_STREAMS, {
      label: 'Show Streams',
      caption: 'Show the streams of the active notebook kernel',
      execute: () => app.shell.activateById(panel.id)
    });

    const status = new StreamsStatus(() => void app.commands.execute(SHOW_STREAMS));
    const relevanceChanged = new Signal<StreamsStatus, void>(status);
    status.onUpdate = () => relevanceChanged.emit();
    if (statusBar) {
      statusBar.registerStatusItem('spark-streaming-workbench:status', {
        item: status,
        align: 'left',
        rank: 900,
        isActive: () => status.relevant,
        activeStateChanged: relevanceChanged
      });
    }

    const modelOf = (notebook: NotebookPanel): KernelStreams => {
      let model = models.get(notebook);
      if (!model) {
        const name = names.take(notebook.context.path);
        model = new KernelStreams(notebook.sessionContext, name);
        models.set(notebook, model);
        forgetClosed(notebook.context.path); // open again: the panel shows its streams
        const created = model;
        notebook.disposed.connect(() => {
          const active = created.lastActiveCount;
          const path = notebook.context.path;
          // One of two views of the notebook (File > New View) closed: the other still shows it.
          const otherView = [...models.keys()].some(
            (other) => other !== notebook && !other.isDisposed && other.context === notebook.context
          );
          if (active > 0 && !otherView) {
            if (created.kernelId) {
              closed.set(path, created.kernelId);
            }
            panel.addClosedNote(
              path,
              `${path} was closed while ${active} ` +
                `${active === 1 ? 'stream was' : 'streams were'} running; they keep running in its ` +
                'kernel unless it was shut down. Open the notebook again to see or stop them.'
            );
          }
          models.delete(notebook);
          names.release(name);
          created.dispose();
        });
      }
      return model;
    };

    tracker.widgetAdded.connect((_, notebook) => void modelOf(notebook));
    tracker.forEach((notebook) => void modelOf(notebook));
    // A closed notebook's kernel shut down (the running kernels are polled): its streams are gone.
    const kernels = app.serviceManager.kernels;
    kernels.runningChanged.connect(() => {
      const running = new Set(Array.from(kernels.running(), (kernel) => kernel.id));
      for (const [path, kernel] of closed) {
        if (!running.has(kernel)) {
          forgetClosed(path);
        }
      }
    });
    const follow = (): void => {
      const notebook = tracker.currentWidget;
      const model = notebook && !notebook.isDisposed ? modelOf(notebook) : null;
      panel.setCurrent(notebook, model);
      status.setModel(model);
    };
    tracker.currentChanged.connect(follow);
    follow();

    if (settingRegistry) {
      const apply = (settings: ISettingRegistry.ISettings): void => {
        const wanted = settings.get('side').composite === 'left' ? 'left' : 'right';
        if (wanted !== side) {
          side = wanted;
          if (labShell) {
            place();
          }
        }
      };
      void settingRegistry
        .load(PLUGIN_ID)
        .then((settings) => {
          apply(settings);
          settings.changed.connect(apply);
        })
        .catch((reason: unknown) => {
          // Not fatal: the panel stays on its default side.
          console.warn('Streams panel settings could not be loaded', reason);
        });
    }
  }
};
