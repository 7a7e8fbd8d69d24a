/**
 * The messages of the `workbench.streams` comm between a kernel and the page.
 *
 * Kernel to page: a snapshot of every stream, sent only when something changed and at most
 * twice a second. Page to kernel: stop one stream, ask for a fresh snapshot, or say whether
 * the panel is shown (a page that does not show it needs no snapshot per batch).
 */

/** The comm target the kernel registers; the page opens its comm to it. */
export const COMM_TARGET = 'workbench.streams';

/**
 * The comm id of the kernel's "the workbench is loaded" message: a comm message to a comm
 * no page opened, which front ends built on @jupyterlab/services drop silently (a comm the
 * kernel opened would make a page without the extension log "Exception opening new comm").
 * The Streams panel opens its comm when it sees it.
 */
export const LOADED_COMM_ID = 'workbench.streams.loaded';

/** Where a stream's page of the Spark UI is (through the Jupyter server's proxy). */
export interface ISparkUILink {
  port: number;
  path: string;
}

/** One stream of the kernel, as the panel shows it. */
export interface IStreamInfo {
  name: string;
  id: string;
  run_id: string;
  status: 'active' | 'stopped' | 'failed' | string;
  batches: number;
  last_batch_id: number | null;
  /** ISO 8601 (UTC), or null before the stream has a watermark. */
  watermark: string | null;
  input_rows_per_second: number | null;
  /** Newest event time minus watermark, in seconds, for the last (up to) 30 batches. */
  gap_seconds: (number | null)[];
  error: string | null;
  sink: string;
  /** The id of the notebook cell that started the stream, when known. */
  cell_id: string | null;
  spark_ui: ISparkUILink | null;
}

/** Kernel to page: every stream of the kernel. */
export interface IStreamsMessage {
  kind: 'streams';
  streams: IStreamInfo[];
  /** The Spark UI's port; 0 when there is none (Spark not started, or Spark Connect). */
  spark_ui_port: number;
}

/** Kernel to page: a request could not be done (e.g. stopping an unknown stream). */
export interface IErrorMessage {
  kind: 'error';
  message: string;
  /** The stream the request was about (a Stop that failed), when there is one. */
  name?: string;
}

export type KernelMessage = IStreamsMessage | IErrorMessage;

/**
 * Page to kernel. `detail` says whether the page shows the panel: while it does not, the
 * kernel sends a snapshot only when a stream starts, ends or fails (not one per batch), and
 * a fresh one as soon as it does again.
 */
export type PageMessage =
  | { kind: 'stop'; name: string }
  | { kind: 'refresh' }
  | { kind: 'detail'; on: boolean };

/**
 * The comm's open message: a refresh naming the page's model. A page back from a lost
 * connection opens a new comm (the old one never reached the kernel as closed): the kernel
 * closes that page's earlier comm, so each page has one.
 */
export type OpenMessage = { kind: 'refresh'; page: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Check a comm message's data; null when it is not a message of this protocol.
 */
export function parseKernelMessage(data: unknown): KernelMessage | null {
  if (!isObject(data)) {
    return null;
  }
  if (data.kind === 'error' && typeof data.message === 'string') {
    return typeof data.name === 'string'
      ? { kind: 'error', message: data.message, name: data.name }
      : { kind: 'error', message: data.message };
  }
  if (data.kind !== 'streams' || !Array.isArray(data.streams)) {
    return null;
  }
  const streams = data.streams.filter(
    (s: unknown): s is IStreamInfo =>
      isObject(s) && typeof s.name === 'string' && typeof s.status === 'string'
  );
  const port = typeof data.spark_ui_port === 'number' ? data.spark_ui_port : 0;
  return { kind: 'streams', streams, spark_ui_port: port };
}
