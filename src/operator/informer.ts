import { ADD, DELETE, ERROR, UPDATE, makeInformer, type Informer, type KubeConfig, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { KubeApi, KubeObject } from './kube-api.js';

/**
 * List and watch of one resource (in one namespace, or all), with a local cache, on
 * @kubernetes/client-node's makeInformer (ListWatch). What ListWatch does by itself, verified in
 * test/operator/informer.test.ts: it lists, then watches from the list's resourceVersion; it
 * carries the resourceVersion of every event to the next watch; it re-lists on 410 Gone (either
 * as the watch's HTTP status or as an ERROR event in the stream) and reports objects deleted in
 * between as deletes; it reconnects after its client-side inactivity timeout.
 * What it does not do, and this wrapper adds: after any other error (connection refused, a 5xx,
 * a failed list) ListWatch calls its error handlers and stops for good. Here it is restarted
 * with an exponential backoff, resuming from its last resourceVersion (a too old one gives 410,
 * hence a re-list). hasSynced() tells when the first list arrived.
 */
export interface ResourceInformer<T extends KubeObject> {
  readonly resource: string;
  on(verb: 'add' | 'update' | 'delete', cb: (obj: T) => void): void;
  get(name: string, namespace?: string): T | undefined;
  list(namespace?: string): readonly T[];
  hasSynced(): boolean;
  /** resolves after the first successful list (rejects only when stopped before that) */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** the underlying ListWatch, for tests that interrupt and resume it */
  readonly listWatch: Informer<T> & ObjectCache<T>;
}

export interface InformerOptions {
  kc: KubeConfig;
  api: KubeApi;
  /** collection path without query, e.g. /apis/webhookfanout.io/v1alpha1/namespaces/ns/webhookendpoints */
  path: string;
  /** a short name for logs and metrics, e.g. "webhookendpoints/ns" */
  resource: string;
  logger: Logger;
  onRestart?: () => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

export function createInformer<T extends KubeObject>(opts: InformerOptions): ResourceInformer<T> {
  const minBackoff = opts.minBackoffMs ?? 500;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  let synced = false;
  let stopped = false;
  let failures = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let healthyTimer: NodeJS.Timeout | undefined;
  let resolveSynced: () => void = () => {};
  let rejectSynced: (err: Error) => void = () => {};
  const syncedPromise = new Promise<void>((resolve, reject) => {
    resolveSynced = resolve;
    rejectSynced = reject;
  });
  syncedPromise.catch(() => {});

  const listFn = async () => {
    const list = await opts.api.list<T>(opts.path);
    failures = 0;
    if (!synced) {
      synced = true;
      resolveSynced();
    }
    return list;
  };
  const lw = makeInformer<T>(opts.kc, opts.path, listFn);

  lw.on(ERROR, (err?: unknown) => {
    if (stopped) return;
    const delay = Math.min(minBackoff * 2 ** failures, maxBackoff);
    failures++;
    clearTimeout(healthyTimer);
    opts.logger.warn({ resource: opts.resource, err: describe(err), retryInMs: delay }, 'list/watch failed; restarting');
    opts.onRestart?.();
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopped) return;
      void lw.start();
      // a restart that stays quiet for a while counts as healthy again
      healthyTimer = setTimeout(() => (failures = 0), 10_000);
      healthyTimer.unref();
    }, delay);
  });
  // any event proves the watch works
  const healthy = () => (failures = 0);
  lw.on(ADD, healthy);
  lw.on(UPDATE, healthy);
  lw.on(DELETE, healthy);

  return {
    resource: opts.resource,
    listWatch: lw,
    on(verb, cb) {
      lw.on(verb === 'add' ? ADD : verb === 'update' ? UPDATE : DELETE, cb);
    },
    get: (name, namespace) => lw.get(name, namespace),
    list: (namespace) => lw.list(namespace),
    hasSynced: () => synced,
    async start() {
      stopped = false;
      void lw.start();
      await syncedPromise;
    },
    async stop() {
      stopped = true;
      clearTimeout(restartTimer);
      clearTimeout(healthyTimer);
      if (!synced) rejectSynced(new Error(`informer ${opts.resource} stopped before its first list`));
      await lw.stop();
    },
  };
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  if (typeof err === 'object' && err !== null) return JSON.stringify(err).slice(0, 300);
  return String(err);
}
