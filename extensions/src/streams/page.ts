/**
 * The names the page gives its Streams comms, kept by the browser tab across reloads.
 *
 * A kernel keeps one comm per name (the newest), so a page that reloads, or a notebook
 * opened again in the same tab, takes the place of the comm it had rather than leaving one
 * more reader that gets every snapshot. The tab's part of the name lives in
 * `sessionStorage` only between the page's `pagehide` and the next load, where it is taken
 * as the plugin starts (`PageNames`), not when the first notebook opens: a tab duplicated or
 * opened by the page while it lives (which copies `sessionStorage`) gets a name of its own.
 */
import { UUID } from '@lumino/coreutils';

const TAB_KEY = 'spark-streaming-workbench:tab';
const COMM_KEY = 'spark-streaming-workbench:comm:';

/** A comm the page had when it went: the kernel's id and the comm's. */
export interface IKeptComm {
  kernel: string;
  comm: string;
}

/** Keep, for the page that comes next in this tab, the comm that `name` had (at `pagehide`). */
export function keepComm(name: string, kept: IKeptComm): void {
  Private.write(JSON.stringify(kept), COMM_KEY + name);
}

/**
 * The comm that `name` had in the page before (a reload), taken out of the tab's storage:
 * the new page closes it, should the old page's close not have reached the kernel. (The
 * kernel would otherwise drop it only when the new comm takes its place.)
 */
export function takeKeptComm(name: string): IKeptComm | null {
  try {
    const kept = JSON.parse(Private.read(COMM_KEY + name) ?? 'null') as IKeptComm | null;
    return kept && typeof kept.kernel === 'string' && typeof kept.comm === 'string' ? kept : null;
  } catch {
    return null;
  }
}

let tab: string | null = null;

/** This browser tab's id: the same after a reload, another in a new or duplicated tab. */
export function tabId(): string {
  if (tab === null) {
    const kept = Private.read();
    const id = kept || UUID.uuid4();
    tab = id;
    window.addEventListener('pagehide', () => Private.write(id, TAB_KEY));
    // Back from the browser's page cache: the page lives again, and its id is its own.
    window.addEventListener('pageshow', (event) => event.persisted && Private.read(TAB_KEY));
  }
  return tab;
}

/**
 * Hands out comm names, `<tab>:<path>:<n>`: `n` is the lowest free among the names of the
 * page's live models of that notebook (two views of one notebook share its kernel).
 */
export class PageNames {
  /** Takes the tab's id now: a copy of the tab's storage made from here on does not hold it. */
  constructor() {
    this._tab = tabId();
  }

  take(path: string): string {
    let slot = 0;
    while (this._taken.has(`${path}:${slot}`)) {
      slot += 1;
    }
    const key = `${path}:${slot}`;
    this._taken.add(key);
    return `${this._tab}:${key}`;
  }

  release(name: string): void {
    this._taken.delete(name.slice(this._tab.length + 1));
  }

  private readonly _tab: string;
  private _taken = new Set<string>();
}

namespace Private {
  /** The tab's id kept by the page before (a reload), taken out of the tab's storage. */
  export function read(key = TAB_KEY): string | null {
    try {
      const kept = window.sessionStorage.getItem(key);
      window.sessionStorage.removeItem(key);
      return kept;
    } catch {
      return null; // storage refused (a privacy setting): a new id each load
    }
  }

  export function write(id: string, key = TAB_KEY): void {
    try {
      window.sessionStorage.setItem(key, id);
    } catch {
      // storage refused: the next load takes a new id
    }
  }
}
