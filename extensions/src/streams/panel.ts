/**
 * The Streams side panel: every stream of the active notebook's kernel, live.
 *
 * Rows are kept by stream name and updated in place (the kernel sends at most two
 * snapshots a second), so a click is never lost to a redraw.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IStreamInfo } from '../protocol';
import { streamsIcon } from '../icons';
import { KernelStreams, StreamsState } from './model';
import { createSparkline, updateSparkline } from './sparkline';

/** What the panel asks of the plugin that owns it. */
export interface IStreamsPanelActions {
  /** Show the Spark UI page of `stream` (its `spark_ui` is set). */
  openSparkUI(stream: IStreamInfo): void;
  /** Activate `notebook` and its cell with id `cellId`; false when the cell is gone. */
  showCell(notebook: NotebookPanel, cellId: string): boolean;
}

const MESSAGES: Record<Exclude<StreamsState, 'ready'>, string> = {
  'no-kernel': 'This notebook has no kernel: select one to run streams.',
  connecting: 'Connecting to the kernel…',
  waiting:
    'The kernel is running a cell: its streams show here once the cell ends ' +
    '(the kernel reads the panel\u2019s request between cells).',
  'not-loaded': 'The workbench is not loaded in this kernel: run %load_ext workbench in the notebook.',
  restarting: 'The kernel is restarting: its streams are gone.',
  dead: 'The kernel has died: its streams are gone. Restart the kernel to go on.',
  disconnected: 'Lost the connection to the Jupyter server: reconnecting…'
};

/** Shown while the kernel's session has no Spark UI to open. */
export const NO_SPARK_UI =
  'No Spark UI to open: the Spark session has stopped, or it is a Spark Connect session ' +
  '(its Spark UI belongs to the Connect server, not to this kernel).';

export function formatWatermark(iso: string | null): string {
  if (!iso) {
    return 'no watermark';
  }
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `watermark ${date.toISOString().slice(11, 19)} UTC`;
}

export function formatRate(rate: number | null): string {
  return typeof rate === 'number' && Number.isFinite(rate) ? `${rate.toFixed(1)} rows/s` : '– rows/s';
}

class StreamRow {
  constructor(
    readonly name: string,
    private _actions: {
      /** Ask to stop `name`; true when the kernel is busy running a cell (it reads the request after). */
      stop: (name: string) => boolean;
      sparkUI: (stream: IStreamInfo) => void;
      select: (stream: IStreamInfo) => void;
    }
  ) {
    this.node.className = 'jp-workbench-Stream';
    this.node.dataset.stream = name;
    this.node.title = 'Click to go to the cell that started this stream';
    const head = document.createElement('div');
    head.className = 'jp-workbench-Stream-head';
    this._name.className = 'jp-workbench-Stream-name';
    this._name.textContent = name;
    this._status.className = 'jp-workbench-Stream-status';
    this._sparkUI.className = 'jp-Button jp-mod-styled jp-mod-reject jp-workbench-Stream-sparkui';
    this._sparkUI.textContent = 'Spark UI';
    this._stop.className = 'jp-Button jp-mod-styled jp-mod-warn jp-workbench-Stream-stop';
    this._stop.textContent = 'Stop';
    head.append(this._name, this._status);
    const facts = document.createElement('div');
    facts.className = 'jp-workbench-Stream-facts';
    this._batches.className = 'jp-workbench-Stream-batches';
    this._rate.className = 'jp-workbench-Stream-rate';
    this._watermark.className = 'jp-workbench-Stream-watermark';
    facts.append(this._batches, this._rate, this._watermark);
    const actions = document.createElement('div');
    actions.className = 'jp-workbench-Stream-actions';
    actions.append(this._sparkline, this._sparkUI, this._stop);
    this._note.className = 'jp-workbench-Stream-note';
    this.node.append(head, facts, actions, this._note);

    this._stop.addEventListener('click', (event) => {
      event.stopPropagation();
      this._stop.disabled = true;
      this._stop.textContent = 'Stopping…';
      if (this._noteKind === 'stop') {
        this.setNote('', '');
      }
      if (this._actions.stop(this.name)) {
        // Without kernel subshells the kernel reads the panel's messages between cells only.
        this.setNote('Stops once the running cell ends: the kernel reads Stop between cells.', 'waiting');
      }
    });
    this._sparkUI.addEventListener('click', (event) => {
      event.stopPropagation();
      if (this._stream) {
        this._actions.sparkUI(this._stream);
      }
    });
    this.node.addEventListener('click', () => {
      if (this._stream) {
        this._actions.select(this._stream);
      }
    });
  }

  /** Show `stream`'s newest state; `stopError`: why its last Stop failed ('' when it did not). */
  update(stream: IStreamInfo, stopError = ''): void {
    this._stream = stream;
    this.node.dataset.status = stream.status;
    this._status.textContent = stream.status;
    this._batches.textContent = `${stream.batches} batches`;
    this._batches.dataset.batches = String(stream.batches);
    this._rate.textContent = formatRate(stream.input_rows_per_second);
    this._watermark.textContent = formatWatermark(stream.watermark);
    this._watermark.title = stream.watermark ?? 'No watermark yet';
    updateSparkline(this._sparkline, stream.gap_seconds ?? []);
    const active = stream.status === 'active';
    // Red only while there is something to stop: a stopped or failed stream's button is a
    // plain disabled one (a disabled jp-mod-warn button still looks red and clickable).
    this._stop.classList.toggle('jp-mod-warn', active);
    if (active && stopError) {
      this._stop.disabled = false; // it still runs: Stop again tries again
      this._stop.textContent = 'Stop';
    } else if (active) {
      this._stop.disabled = this._stop.textContent === 'Stopping…';
    } else {
      this._stop.disabled = true;
      this._stop.textContent = 'Stop';
    }
    this._stop.title = active ? `Stop ${stream.name}` : `${stream.name} is ${stream.status}`;
    this._sparkUI.disabled = !stream.spark_ui || stream.spark_ui.port <= 0;
    this._sparkUI.title = this._sparkUI.disabled
      ? NO_SPARK_UI
      : 'Open this query\u2019s statistics page of the Spark UI in a tab';
    if (stream.error) {
      this.setNote(stream.error, 'error');
    } else if (active && stopError) {
      this.setNote(stopError, 'stop');
    } else if (this._noteKind === 'error' || this._noteKind === 'stop' || (this._noteKind === 'waiting' && !active)) {
      this.setNote('', '');
    }
  }

  setNote(text: string, kind: string): void {
    this._note.textContent = text;
    this._note.dataset.kind = kind;
    this._noteKind = kind;
  }

  readonly node = document.createElement('div');
  private _stream: IStreamInfo | null = null;
  private _noteKind = '';
  private _name = document.createElement('span');
  private _status = document.createElement('span');
  private _sparkUI = document.createElement('button');
  private _stop = document.createElement('button');
  private _batches = document.createElement('span');
  private _rate = document.createElement('span');
  private _watermark = document.createElement('span');
  private _sparkline = createSparkline();
  private _note = document.createElement('div');
}

export class StreamsPanel extends Widget {
  constructor(private _actions: IStreamsPanelActions) {
    super();
    this.id = 'workbench-streams';
    this.addClass('jp-workbench-StreamsPanel');
    this.title.icon = streamsIcon;
    this.title.caption = 'Streams';
    const header = document.createElement('header');
    header.className = 'jp-workbench-StreamsPanel-header';
    const title = document.createElement('h2');
    title.textContent = 'Streams';
    this._source.className = 'jp-workbench-StreamsPanel-source';
    header.append(title, this._source);
    this._message.className = 'jp-workbench-StreamsPanel-message';
    this._lost.className = 'jp-workbench-StreamsPanel-lost';
    this._closed.className = 'jp-workbench-StreamsPanel-closed';
    this._noSparkUI.className = 'jp-workbench-StreamsPanel-nosparkui';
    this._error.className = 'jp-workbench-StreamsPanel-error';
    this._list.className = 'jp-workbench-StreamsPanel-list';
    this.node.append(header, this._closed, this._lost, this._message, this._error, this._noSparkUI, this._list);
    this._renderClosed();
    this._render();
    document.addEventListener('visibilitychange', this._onVisibility);
  }

  /**
   * Whether anyone can see the panel: shown in its side bar, in a browser tab in front (a
   * tab in the background, or a minimised window, needs no snapshot per batch).
   */
  private _seen(): boolean {
    return this.isVisible && document.visibilityState !== 'hidden';
  }

  /** The browser tab went to the background, or came back: the kernel is told, the panel drawn. */
  private _onVisibility = (): void => {
    this._model?.setDetail(this._seen());
    if (this._stale && this._seen()) {
      this._render();
    }
  };

  /** Show the streams of `notebook` (null: no notebook is active). */
  setCurrent(notebook: NotebookPanel | null, model: KernelStreams | null): void {
    if (this._model) {
      this._model.changed.disconnect(this._render, this);
      if (this._model !== model && !this._model.isDisposed) {
        this._model.setDetail(false);
      }
    }
    this._notebook = notebook;
    this._model = model;
    if (model) {
      model.changed.connect(this._render, this);
      model.setDetail(this._seen());
    }
    this._clearRows();
    this._render();
  }

  /**
   * Say, whatever notebook is active, that the notebook `key` (its path) was closed while
   * its streams ran: shown until dismissed or `removeClosedNote(key)`.
   */
  addClosedNote(key: string, text: string): void {
    this._closedNotes.set(key, text);
    this._renderClosed();
  }

  removeClosedNote(key: string): void {
    if (this._closedNotes.delete(key)) {
      this._renderClosed();
    }
  }

  /** The notes of closed notebooks, each with a button that dismisses it. */
  private _renderClosed(): void {
    this._closed.textContent = '';
    for (const [key, text] of this._closedNotes) {
      const note = document.createElement('div');
      note.className = 'jp-workbench-StreamsPanel-closedNote';
      note.dataset.notebook = key;
      const words = document.createElement('span');
      words.textContent = text;
      const dismiss = document.createElement('button');
      dismiss.className = 'jp-Button jp-mod-minimal jp-workbench-StreamsPanel-dismiss';
      dismiss.textContent = '\u00D7';
      dismiss.title = 'Dismiss this note (the streams keep running)';
      dismiss.setAttribute('aria-label', 'Dismiss');
      dismiss.addEventListener('click', () => this.removeClosedNote(key));
      note.append(words, dismiss);
      this._closed.append(note);
    }
    this._closed.hidden = this._closedNotes.size === 0;
  }

  dispose(): void {
    document.removeEventListener('visibilitychange', this._onVisibility);
    if (this._model) {
      this._model.changed.disconnect(this._render, this);
    }
    super.dispose();
  }

  /** Shown (the side bar opened on it): draw what changed while it was hidden. */
  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._model?.setDetail(this._seen()); // the kernel sends the newest snapshot, then one per batch
    if (this._stale && this._seen()) {
      this._render();
    }
  }

  /** Hidden (the side bar closed or shows another panel): the kernel stops sending each batch. */
  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._model?.setDetail(false);
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._model?.setDetail(this._seen());
    if (this._stale && this._seen()) {
      this._render();
    }
  }

  private _render(): void {
    // The kernel reports every batch: a closed panel keeps the news for when it shows.
    this._stale = !this._seen();
    if (this._stale) {
      return;
    }
    const model = this._model;
    const notebook = this._notebook;
    this._source.textContent = notebook ? notebook.context.path.split('/').pop() ?? '' : '';
    this._source.title = notebook ? notebook.context.path : '';
    this.node.dataset.state = model ? model.state : 'no-notebook';
    if (!model || !notebook) {
      this._clearRows();
      this._say('No notebook is active: open one to see the streams of its kernel.');
      this._error.textContent = '';
      this._note(this._lost, '');
      this._note(this._noSparkUI, '');
      return;
    }
    this._error.textContent = model.lastError;
    this._note(this._lost, model.lostNote);
    if (model.state !== 'ready') {
      this._clearRows();
      this._say(MESSAGES[model.state]);
      this._note(this._noSparkUI, '');
      return;
    }
    const streams = model.streams;
    this._note(
      this._noSparkUI,
      streams.length > 0 && model.sparkUIPort <= 0 ? NO_SPARK_UI : ''
    );
    this._say(streams.length ? '' : 'No streams in this kernel yet: start one with %%stream.');
    const seen = new Set(streams.map((stream) => stream.name));
    for (const [name, row] of this._rows) {
      if (!seen.has(name)) {
        row.node.remove();
        this._rows.delete(name);
      }
    }
    let index = 0;
    for (const stream of streams) {
      let row = this._rows.get(stream.name);
      if (!row) {
        row = new StreamRow(stream.name, {
          stop: (name) => model.stop(name),
          sparkUI: (s) => this._actions.openSparkUI(s),
          select: (s) => this._select(s, row!)
        });
        this._rows.set(stream.name, row);
      }
      row.update(stream, model.stopError(stream.name));
      // The kernel's order, moving a row only when it is out of place: a row taken out of
      // the page between a press and its release loses the click (and its button the focus).
      const at = this._list.children[index] ?? null;
      if (at !== row.node) {
        this._list.insertBefore(row.node, at);
      }
      index += 1;
    }
  }

  private _select(stream: IStreamInfo, row: StreamRow): void {
    const notebook = this._notebook;
    if (!notebook) {
      return;
    }
    if (!stream.cell_id) {
      row.setNote(`${stream.name} was not started from a cell of this notebook.`, 'cell');
    } else if (!this._actions.showCell(notebook, stream.cell_id)) {
      row.setNote(`The cell that started ${stream.name} is no longer in this notebook.`, 'cell');
    } else if (!stream.error) {
      row.setNote('', '');
    }
  }

  private _note(node: HTMLElement, text: string): void {
    node.textContent = text;
    node.hidden = !text;
  }

  private _say(text: string): void {
    this._message.textContent = text;
    this._message.hidden = !text;
  }

  private _clearRows(): void {
    this._rows.forEach((row) => row.node.remove());
    this._rows.clear();
  }

  private _notebook: NotebookPanel | null = null;
  private _model: KernelStreams | null = null;
  private _closedNotes = new Map<string, string>();
  private _closed = document.createElement('div');
  private _stale = false;
  private _rows = new Map<string, StreamRow>();
  private _source = document.createElement('span');
  private _message = document.createElement('p');
  private _lost = document.createElement('p');
  private _noSparkUI = document.createElement('p');
  private _error = document.createElement('p');
  private _list = document.createElement('div');
}
