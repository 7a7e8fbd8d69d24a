/**
 * The streams of one notebook's kernel, kept up to date over the `workbench.streams` comm.
 *
 * One model per open notebook. On kernel connect it opens a comm to the kernel's
 * `workbench.streams` target; a kernel without the workbench closes it at once, which the
 * model reports as "not loaded". A kernel that loads the workbench later says so with a comm
 * message to `LOADED_COMM_ID` (no comm of the page), and the model opens its comm then.
 * A restart, a dead kernel or
 * a lost connection empties the model and says why; after a restart or a kernel death,
 * `lostNote` keeps saying what happened to the streams until the new kernel reports some.
 * A kernel that does not answer for a while after the page connects is running a cell
 * (state `waiting`): it reads the page's messages once the cell ends.
 *
 * The model's comms carry its page name (`PageNames`), the same after a reload of the
 * browser tab, so the kernel keeps one reader per page; a page that goes closes its comm on
 * `pagehide`, and the next page of the tab closes it again should that close have been lost.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage as KM } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import { COMM_TARGET, IStreamInfo, LOADED_COMM_ID, OpenMessage, PageMessage, parseKernelMessage } from '../protocol';
import { IKeptComm, keepComm, takeKeptComm } from './page';

/** Where the model stands with its kernel. */
export type StreamsState =
  | 'no-kernel' // the notebook has no kernel
  | 'connecting' // the kernel is starting, or the comm is being opened
  | 'waiting' // the kernel answers nothing for now: it runs a cell, and reads the page's messages after
  | 'not-loaded' // the kernel answered, without the workbench loaded
  | 'ready' // streams are known
  | 'restarting'
  | 'dead'
  | 'disconnected'; // the page lost its connection to the server

/** How long the kernel may take to answer before the model says it waits for a running cell. */
const WAIT_NOTICE_MS = 1000;

/**
 * Send the kernel's main shell a `comm_close` for comm `commId`, with no comm object of the
 * page: one created just to close it would be counted for ever among the comms of its
 * target's kernel subshell, which then outlives the page. False if it could not be sent.
 */
function sendCommClose(kernel: Kernel.IKernelConnection, commId: string): boolean {
  try {
    const msg = KM.createMessage<KM.ICommCloseMsg<'shell'>>({
      msgType: 'comm_close',
      channel: 'shell',
      username: kernel.username,
      session: kernel.clientId,
      content: { comm_id: commId, data: {} }
    });
    kernel.sendShellMessage(msg, false, true);
    return true;
  } catch {
    return false; // the kernel connection is closed: nothing to tell the kernel
  }
}

export class KernelStreams {
  /**
   * `page` names this model's comms to the kernel, which keeps one comm per name: the same
   * name after a page reload (`PageNames`) replaces the comm the page had.
   */
  constructor(
    readonly sessionContext: ISessionContext,
    page: string = UUID.uuid4()
  ) {
    this._page = page;
    this._kept = takeKeptComm(page);
    // The page before this one (a reload) had a comm on that kernel: it has the workbench.
    this._workbenchKernel = this._kept?.kernel ?? '';
    window.addEventListener('pagehide', this._onPageHide);
    window.addEventListener('pageshow', this._onPageShow);
    sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    sessionContext.statusChanged.connect(this._onStatus, this);
    sessionContext.connectionStatusChanged.connect(this._onConnection, this);
    // Before its kernel connection goes (a closed notebook, its kernel kept running): the
    // comm's close still reaches the kernel, which then stops sending this page snapshots.
    sessionContext.disposed.connect(this.dispose, this);
    this._attach(sessionContext.session?.kernel ?? null);
  }

  /** Emitted whenever the streams, the state or the last error change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get state(): StreamsState {
    return this._state;
  }

  get streams(): readonly IStreamInfo[] {
    return this._streams;
  }

  get activeCount(): number {
    return this._streams.filter((s) => s.status === 'active').length;
  }

  /**
   * Active streams in the kernel's last snapshot, kept when the page disconnects (a closed
   * notebook); 0 once the kernel restarted, died or has no workbench.
   */
  get lastActiveCount(): number {
    return this._lastActive;
  }

  /** The id of the last kernel the model connected to ('' before any), kept when it goes. */
  get kernelId(): string {
    return this._kernelId;
  }

  get sparkUIPort(): number {
    return this._sparkUIPort;
  }

  /**
   * What happened to the streams of a kernel that restarted or died (e.g. "The kernel died
   * while 2 streams were running…"), kept until the next kernel reports streams; else ''.
   */
  get lostNote(): string {
    return this._lostNote;
  }

  /** The kernel's last complaint about a request (e.g. an unknown stream), or ''. */
  get lastError(): string {
    return this._lastError;
  }

  /**
   * Why the last Stop of stream `name` failed (Spark could not stop it: it still runs), or
   * ''; kept across snapshots until Stop is clicked again, the stream is no longer active, or
   * the kernel restarts, dies or changes.
   */
  stopError(name: string): string {
    return this._stopErrors.get(name) ?? '';
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Whether this kernel was seen with the workbench loaded (by this page, or by the page
   * before a reload) and not seen without it since: while a kernel that never had it runs a
   * cell, nothing says that it will have streams once the cell ends.
   */
  get workbenchSeen(): boolean {
    return this._workbenchKernel !== '' && this._workbenchKernel === this._kernelId;
  }

  /**
   * Ask the kernel to stop stream `name` (it stops on a thread of its own). True when the
   * kernel is busy (running a cell): it reads the request once the cell ends.
   */
  stop(name: string): boolean {
    this._stopErrors.delete(name);
    const sent = this._comm !== null && !this._comm.isDisposed;
    this._send({ kind: 'stop', name });
    // "busy" is also the moment the kernel handles any message (this one's neighbours, a
    // completion): the note may show for that moment too, and goes once the stream stops.
    return sent && this._kernel?.status === 'busy';
  }

  /**
   * Whether the page shows this kernel's streams in full (the panel is visible): while it
   * does not, the kernel sends news of streams that start, end or fail, not of each batch.
   */
  setDetail(on: boolean): void {
    if (on !== this._detail) {
      this._detail = on;
      this._send({ kind: 'detail', on });
    }
  }

  /** Ask the kernel for a fresh snapshot (or try the connection again). */
  refresh(): void {
    if (this._comm) {
      this._send({ kind: 'refresh' });
    } else {
      this._probe();
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    window.removeEventListener('pagehide', this._onPageHide);
    window.removeEventListener('pageshow', this._onPageShow);
    this._noticeWait(false);
    this._detach();
    Signal.clearData(this);
  }

  private _onKernelChanged(): void {
    this._attach(this.sessionContext.session?.kernel ?? null);
  }

  private _attach(kernel: Kernel.IKernelConnection | null): void {
    this._detach();
    this._kernel = kernel;
    this._stopErrors.clear(); // another kernel's streams
    if (kernel === null) {
      // Shut down or changed by the user: nothing was lost that they did not ask for.
      this._lostNote = '';
      this._lostRunning = 0;
      this._set('no-kernel');
      return;
    }
    this._kernelId = kernel.id;
    kernel.iopubMessage.connect(this._onIOPub, this);
    this._set('connecting');
    if (kernel.status === 'idle' || kernel.status === 'busy') {
      this._probe();
    } else {
      // A page that connects while a cell runs (a reload, the notebook opened again) hears
      // no status until the cell ends: the kernel answers its first request only then.
      this._noticeWait(true);
    }
  }

  /**
   * After `WAIT_NOTICE_MS` without an answer, say that the kernel is running a cell (busy,
   * or connected without a status yet) rather than "connecting" for as long as it runs.
   */
  private _noticeWait(on: boolean): void {
    if (this._waitTimer !== null) {
      clearTimeout(this._waitTimer);
      this._waitTimer = null;
    }
    if (!on) {
      return;
    }
    this._waitTimer = setTimeout(() => {
      this._waitTimer = null;
      const kernel = this._kernel;
      const silent =
        kernel !== null &&
        !kernel.isDisposed &&
        kernel.connectionStatus === 'connected' &&
        (kernel.status === 'busy' || kernel.status === 'unknown');
      if (silent && this._state === 'connecting' && !this._disposed) {
        this._set('waiting');
      }
    }, WAIT_NOTICE_MS);
  }

  /** The page goes (reload, closed tab): close the comm, so the kernel drops its reader. */
  private _onPageHide = (): void => {
    this._noticeWait(false);
    const comm = this._comm;
    if (comm && !comm.isDisposed && this._kernel) {
      keepComm(this._page, { kernel: this._kernel.id, comm: comm.commId });
    }
    this._closeComm();
  };

  /** Back from the browser's page cache: connect again. */
  private _onPageShow = (event: PageTransitionEvent): void => {
    if (event.persisted && this._kernel !== null && this._comm === null) {
      this._set('connecting');
      this._probe();
    }
  };

  private _detach(): void {
    const kernel = this._kernel;
    this._closeComm();
    this._kernel = null;
    if (kernel && !kernel.isDisposed) {
      kernel.iopubMessage.disconnect(this._onIOPub, this);
    }
  }

  private _onStatus(_: ISessionContext, status: Kernel.Status): void {
    switch (status) {
      case 'restarting':
      case 'autorestarting':
        // The server sends 'restarting' before the page turns it into 'autorestarting':
        // only the second tells a death from a restart the user asked for.
        this._noteLoss(status === 'autorestarting' ? 'died' : 'restarted');
        this._dropComm();
        this._set('restarting');
        break;
      case 'dead':
        this._noteLoss('died');
        this._dropComm();
        this._set('dead');
        break;
      case 'idle':
      case 'busy':
        if (this._comm === null && !this._probing && this._state !== 'not-loaded') {
          this._probe();
        } else if (status === 'busy' && this._state === 'connecting' && this._waitTimer === null) {
          this._noticeWait(true); // the open waits behind a cell that started meanwhile
        }
        break;
      default:
        break;
    }
  }

  private _onConnection(_: ISessionContext, status: Kernel.ConnectionStatus): void {
    if (status === 'disconnected') {
      this._dropComm();
      this._set('disconnected');
    } else if (status === 'connected' && this._state === 'disconnected') {
      this._set('connecting');
      this._probe();
    }
  }

  /** Open a comm to the kernel's target; a kernel without the workbench closes it. */
  private _probe(): void {
    const kernel = this._kernel;
    if (kernel === null || kernel.isDisposed || this._probing) {
      return;
    }
    this._probing = true;
    this._set(this._state === 'ready' ? 'ready' : this._state === 'waiting' ? 'waiting' : 'connecting');
    this._noticeWait(this._state !== 'ready');
    try {
      this._closeKept(kernel);
      const comm = kernel.createComm(COMM_TARGET);
      this._useComm(comm);
      const open: OpenMessage = { kind: 'refresh', page: this._page };
      comm.open(open);
      if (!this._detail) {
        this._send({ kind: 'detail', on: false });
      }
    } catch (reason) {
      // The kernel connection went away between the status change and now.
      this._probing = false;
      this._set(kernel.isDisposed ? 'no-kernel' : 'disconnected');
    }
  }

  /**
   * Close the comm this model had in the page before a reload, if it was on this kernel: a
   * plain `comm_close` message, not a comm object of this page (one created and closed at
   * once leaves JupyterLab's count of the comms on its per-target kernel subshell one too
   * high, and that subshell, a kernel thread, is then never deleted).
   */
  private _closeKept(kernel: Kernel.IKernelConnection): void {
    const kept = this._kept;
    this._kept = null;
    if (kept && kept.kernel === kernel.id && !kernel.hasComm(kept.comm)) {
      sendCommClose(kernel, kept.comm); // if it fails, the kernel drops that comm when the new one takes its place
    }
  }

  /** The kernel loaded the workbench after the page connected: open the comm now. */
  private _onIOPub(_: Kernel.IKernelConnection, msg: KM.IIOPubMessage): void {
    if (
      msg.header.msg_type === 'comm_msg' &&
      (msg as KM.ICommMsgMsg).content.comm_id === LOADED_COMM_ID &&
      this._comm === null &&
      !this._disposed
    ) {
      this._probe();
    }
  }

  private _useComm(comm: Kernel.IComm): void {
    const previous = this._comm;
    this._comm = comm;
    if (previous && previous !== comm && !previous.isDisposed) {
      previous.onClose = () => undefined;
      previous.close();
    }
    comm.onMsg = (msg: KM.ICommMsgMsg) => {
      if (this._comm === comm) {
        this._onMessage(msg.content.data);
      }
    };
    comm.onClose = () => {
      if (this._comm !== comm) {
        return;
      }
      this._comm = null;
      this._probing = false;
      this._streams = [];
      // Closed by a kernel that has no such target, or by %unload_ext workbench.
      const kernel = this._kernel;
      const alive = kernel !== null && (kernel.status === 'idle' || kernel.status === 'busy');
      this._set(alive ? 'not-loaded' : this._state);
    };
  }

  /** Say what a restart or a death did to the streams (counted before they are dropped). */
  private _noteLoss(how: 'died' | 'restarted'): void {
    if (!this.workbenchSeen) {
      return; // a kernel that never had the workbench here had no streams to lose
    }
    const running = this._state === 'ready' ? this.activeCount : this._lostRunning;
    this._lostRunning = running;
    const streams = running === 1 ? '1 stream was' : `${running} streams were`;
    if (how === 'died') {
      this._lostNote =
        (running > 0
          ? `The kernel died while ${streams} running: they are gone with it. `
          : 'The kernel died (its process ended). ') +
        'Run the notebook again to start them in the new kernel.';
    } else {
      this._lostNote =
        running > 0
          ? `The kernel was restarted while ${streams} running: they were stopped.`
          : 'The kernel was restarted: its streams are gone.';
    }
  }

  private _onMessage(data: unknown): void {
    const message = parseKernelMessage(data);
    if (message === null) {
      return;
    }
    this._probing = false;
    this._noticeWait(false);
    if (message.kind === 'error') {
      if (message.name !== undefined && this._streams.some((s) => s.name === message.name)) {
        this._stopErrors.set(message.name, message.message); // the row says so, and Stop works again
      } else {
        this._lastError = message.message;
      }
      this._changed.emit();
      return;
    }
    this._streams = message.streams;
    for (const name of this._stopErrors.keys()) { // deleting while iterating a Map is safe
      if (!message.streams.some((s) => s.name === name && s.status === 'active')) {
        this._stopErrors.delete(name); // stopped after all, or gone: a new stream of that name starts clean
      }
    }
    this._lastActive = this.activeCount;
    this._sparkUIPort = message.spark_ui_port;
    this._lastError = '';
    this._workbenchKernel = this._kernelId;
    if (message.streams.length > 0) {
      this._lostNote = '';
      this._lostRunning = 0;
    }
    this._set('ready');
  }

  private _send(message: PageMessage): void {
    const comm = this._comm;
    if (comm && !comm.isDisposed) {
      comm.send(message as unknown as Record<string, string>);
    }
  }

  /**
   * Forget the comm without closing it (the kernel is gone or restarting, or the connection
   * lost: a page back opens another, which takes the old one's place in the kernel).
   * `dispose`: let the kernel connection forget it too (else JupyterLab counts it among the
   * comms of the target's kernel subshell, which then outlives the page).
   */
  private _dropComm(dispose = true): void {
    const comm = this._comm;
    this._comm = null;
    this._probing = false;
    this._streams = [];
    if (comm && !comm.isDisposed) {
      comm.onClose = () => undefined;
      comm.onMsg = () => undefined;
      if (dispose) {
        comm.dispose();
      }
    }
  }

  private _closeComm(): void {
    const comm = this._comm;
    this._dropComm(false);
    if (comm && !comm.isDisposed && this._kernel !== null) {
      try {
        comm.close(); // over the comm's subshell: read during a running cell too
      } catch {
        // the kernel connection is already closed: nothing to tell the kernel
      }
    }
  }

  private _set(state: StreamsState): void {
    if (state !== 'ready') {
      this._streams = [];
    }
    if (state === 'restarting' || state === 'dead' || state === 'no-kernel' || state === 'not-loaded') {
      this._stopErrors.clear(); // its streams are gone (a lost connection keeps them: they still run)
    }
    if (state === 'restarting' || state === 'dead' || state === 'not-loaded') {
      this._lastActive = 0;
    }
    if (state === 'not-loaded') {
      this._workbenchKernel = ''; // the kernel (a new process after a restart) answered without it
    }
    this._state = state;
    this._changed.emit();
  }

  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  /** Names this model's comms to the kernel, which keeps one of them (the newest). */
  private readonly _page: string;
  private _waitTimer: ReturnType<typeof setTimeout> | null = null;
  private _kernelId = '';
  /** The comm of the page before a reload, closed before the first comm of this one opens. */
  private _kept: IKeptComm | null;
  private _probing = false;
  /**
   * Off until the panel shows this notebook (setDetail): a notebook in the background gets
   * news of streams that start, end or fail, not a snapshot per batch. A new comm is told
   * when it is off (the kernel's default is on).
   */
  private _detail = false;
  private _state: StreamsState = 'connecting';
  private _streams: IStreamInfo[] = [];
  private _sparkUIPort = 0;
  private _lastActive = 0;
  private _lastError = '';
  private _stopErrors = new Map<string, string>();
  private _lostNote = '';
  private _lostRunning = 0;
  /** The id of the kernel last seen with the workbench loaded ('' when none). */
  private _workbenchKernel: string;
  private _disposed = false;
  private _changed = new Signal<this, void>(this);
}
