/**
 * The status bar count of the current notebook kernel's active streams ("⏵ 2 streams").
 */
import { Widget } from '@lumino/widgets';

import { KernelStreams } from './model';

export function countLabel(active: number): string {
  return `\u23F5 ${active} ${active === 1 ? 'stream' : 'streams'}`;
}

export class StreamsStatus extends Widget {
  constructor(onClick: () => void) {
    super();
    this.addClass('jp-workbench-StreamsStatus');
    this.node.title = 'Active streams of this kernel: click to show the Streams panel';
    this.node.addEventListener('click', onClick);
    this._update();
  }

  setModel(model: KernelStreams | null): void {
    this._model?.changed.disconnect(this._update, this);
    this._model = model;
    model?.changed.connect(this._update, this);
    this._update();
  }

  /** Whether there is anything to show: the workbench runs in the current kernel. */
  get relevant(): boolean {
    return this._model !== null && this._model.state === 'ready';
  }

  dispose(): void {
    this._model?.changed.disconnect(this._update, this);
    super.dispose();
  }

  private _update(): void {
    const active = this._model?.state === 'ready' ? this._model.activeCount : 0;
    // The kernel reports every batch: the status bar changes (a layout) only when the count does.
    if (this.node.dataset.active !== String(active)) {
      this.node.textContent = countLabel(active);
      this.node.dataset.active = String(active);
    }
    if (this.relevant !== this._relevant) {
      this._relevant = this.relevant;
      this._onUpdate?.();
    }
  }

  /** Called when `relevant` changes (the plugin tells the status bar to re-check it). */
  set onUpdate(callback: (() => void) | null) {
    this._onUpdate = callback;
  }

  private _model: KernelStreams | null = null;
  private _onUpdate: (() => void) | null = null;
  private _relevant: boolean | null = null;
}
