/**
 * The status bar count of the current notebook kernel's active streams ("⏵ 2 streams").
 */
import { Widget } from '@lumino/widgets';

import { KernelStreams } from './model';

export function countLabel(active: number): string {
  return `\u23F5 ${active} ${active === 1 ? 'stream' : 'streams'}`;
}

const COUNT_TITLE = 'Active streams of this kernel: click to show the Streams panel';
/** While the kernel runs a cell and has not answered yet (a page loaded during the cell). */
const WAITING_LABEL = '\u23F5 streams after this cell';
const WAITING_TITLE = 'The kernel is running a cell: its streams show once the cell ends';

export class StreamsStatus extends Widget {
  constructor(onClick: () => void) {
    super();
    this.addClass('jp-workbench-StreamsStatus');
    this.node.title = COUNT_TITLE;
    this.node.addEventListener('click', onClick);
    this._update();
  }

  setModel(model: KernelStreams | null): void {
    this._model?.changed.disconnect(this._update, this);
    this._model = model;
    model?.changed.connect(this._update, this);
    this._update();
  }

  /**
   * Whether there is anything to show: the workbench runs in the current kernel, or the
   * kernel, seen with the workbench before, is running a cell and will say once it ends.
   */
  get relevant(): boolean {
    return this._model !== null && (this._model.state === 'ready' || this._waiting());
  }

  dispose(): void {
    this._model?.changed.disconnect(this._update, this);
    super.dispose();
  }

  private _update(): void {
    const waiting = this._waiting();
    const active = this._model?.state === 'ready' ? String(this._model.activeCount) : waiting ? 'waiting' : '0';
    // The kernel reports every batch: the status bar changes (a layout) only when the count does.
    if (this.node.dataset.active !== active) {
      this.node.textContent = waiting ? WAITING_LABEL : countLabel(Number(active));
      this.node.title = waiting ? WAITING_TITLE : COUNT_TITLE;
      this.node.dataset.active = active;
    }
    if (this.relevant !== this._relevant) {
      this._relevant = this.relevant;
      this._onUpdate?.();
    }
  }

  /** A kernel that had the workbench runs a cell: its streams show once the cell ends. */
  private _waiting(): boolean {
    return this._model !== null && this._model.state === 'waiting' && this._model.workbenchSeen;
  }

  /** Called when `relevant` changes (the plugin tells the status bar to re-check it). */
  set onUpdate(callback: (() => void) | null) {
    this._onUpdate = callback;
  }

  private _model: KernelStreams | null = null;
  private _onUpdate: (() => void) | null = null;
  private _relevant: boolean | null = null;
}
