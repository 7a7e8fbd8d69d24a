// What a chart grid's view does for the widget that holds it (a monitor, a replay panel),
// whose other parts (status line, Stop, Pause) are plain ipywidgets drawn by the page's
// widget manager:
//
// - once its kernel is gone (restarted, died, shut down or replaced), it says so in a line
//   over the holder and disables the holder's controls, which would do nothing now; the
//   charts stay as they were. The widget manager says the kernel is going by marking its
//   models' comms dead (`comm_live_update`, on a restart); where the manager has a
//   notebook's session (JupyterLab, Notebook 7), its status says more (a death, a kernel
//   shut down or changed).
// - a monitor's Stop clicked while the kernel runs a cell waits for the cell to end (the
//   kernel reads widget messages between cells): the button says so at once and is
//   disabled; the kernel's answer redraws it as the monitor's model says.

import { IModel } from './host';

/** The widgets a grid's view speaks for (else the grid's own element). */
const HOLDERS = '.workbench-monitor, .workbench-replay-panel';
/** The monitor's Stop button: an ipywidgets Button, "danger" styled, its description "Stop". */
const STOP = 'button.mod-danger';
export const GONE_CLASS = 'workbench-kernel-gone';

/** The parts of the widget manager's session a view reads (JupyterLab's ISessionContext). */
interface ISessionLike {
  statusChanged?: { connect(slot: (sender: unknown, status: string) => void): void; disconnect(slot: (sender: unknown, status: string) => void): void };
  kernelChanged?: { connect(slot: () => void): void; disconnect(slot: () => void): void };
  session?: { kernel?: { status?: string; connectionStatus?: string } | null } | null;
}

interface IManagerLike {
  kernel?: { status?: string; connectionStatus?: string } | null;
  context?: { sessionContext?: ISessionLike };
}

function managerOf(model: IModel): IManagerLike | null {
  return ((model as unknown as { widget_manager?: IManagerLike }).widget_manager ?? null) as IManagerLike | null;
}

/** Watch the kernel of `model` for the view drawn in `el`; returns the clean-up. */
export function watchHolder(model: IModel, el: HTMLElement, charts: string): () => void {
  const manager = managerOf(model);
  const session = manager?.context?.sessionContext;
  let gone = false;

  /** The outermost holder (a replay panel's monitor is part of the panel), else the grid's element. */
  const holder = (): HTMLElement => {
    let node: HTMLElement = el;
    for (let up = el.parentElement?.closest<HTMLElement>(HOLDERS); up; up = up.parentElement?.closest<HTMLElement>(HOLDERS)) {
      node = up;
    }
    return node;
  };

  const markGone = (what: string): void => {
    const node = holder();
    let line = node.querySelector<HTMLElement>(`:scope > .${GONE_CLASS}`);
    if (!line) {
      line = document.createElement('div');
      line.className = GONE_CLASS;
      line.setAttribute('role', 'status');
      Object.assign(line.style, { color: '#d62728', margin: '2px 0', lineHeight: '20px' });
      node.prepend(line);
    }
    line.textContent = `${what}: ${node === el ? charts : 'this ' + holderName(node)} no longer updates.`;
    for (const control of node.querySelectorAll<HTMLButtonElement | HTMLInputElement>('button, input, select, textarea')) {
      control.disabled = true;
      control.title = `${what}: this does nothing now.`;
    }
    gone = true;
  };

  const onCommLive = (): void => {
    if (!gone) {
      markGone('The kernel restarted');
    }
  };
  const onStatus = (_: unknown, status: string): void => {
    if (status === 'autorestarting' || (status === 'dead' && !gone)) {
      markGone('The kernel died');
    } else if (status === 'restarting' && !gone) {
      markGone('The kernel restarted');
    }
  };
  const onKernelChanged = (): void => markGone('The notebook\u2019s kernel was shut down or changed');

  /** Stop clicked while a cell runs: say at once that it waits for the cell. */
  const onClick = (event: MouseEvent): void => {
    const button = (event.target as Element | null)?.closest?.<HTMLButtonElement>(STOP);
    if (button && !gone && !button.disabled && button.textContent?.trim() === 'Stop') {
      // Once the button's own handler has sent the click to the kernel.
      setTimeout(() => stopPending(button), 0);
    }
  };
  const stopPending = (button: HTMLButtonElement): void => {
    if (gone || button.disabled) {
      return;
    }
    const monitor = el.parentElement?.closest('.workbench-monitor');
    if (!monitor || !monitor.contains(button)) {
      return;
    }
    // The kernel's status is no sure sign (a request of the control channel, answered during
    // the cell, reports it idle): a cell of the monitor's notebook marked running ([*]) is.
    const prompts = el.closest('.jp-Notebook')?.querySelectorAll('.jp-InputArea-prompt') ?? [];
    const cellRuns = [...prompts].some(prompt => prompt.textContent?.includes('[*]'));
    const kernel = session?.session?.kernel ?? manager?.kernel;
    if (cellRuns || (kernel && (kernel.status === 'busy' || kernel.status === 'unknown'))) {
      button.disabled = true;
      button.textContent = 'Stopping when the cell ends\u2026';
      button.title = 'The kernel is running a cell: it reads Stop once the cell ends';
    }
  };

  model.on('comm_live_update', onCommLive);
  session?.statusChanged?.connect(onStatus);
  session?.kernelChanged?.connect(onKernelChanged);
  // Captured: no handler of the page on the way down to the button can keep it from us.
  document.addEventListener('click', onClick, true);
  return () => {
    model.off('comm_live_update', onCommLive);
    session?.statusChanged?.disconnect(onStatus);
    session?.kernelChanged?.disconnect(onKernelChanged);
    document.removeEventListener('click', onClick, true);
  };
}

function holderName(node: HTMLElement): string {
  return node.classList.contains('workbench-monitor') ? 'monitor' : 'panel';
}
