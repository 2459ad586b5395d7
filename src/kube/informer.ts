import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.js';
import type { KubeApi, KubeObject } from './api.js';

/**
 * List and watch of one resource (in one namespace, or all) with a local cache, in the manner of
 * client-go's reflector, on @kubernetes/client-node's Watch (its HTTP streaming, auth and TLS).
 *
 * Why not makeInformer / ListWatch of the same package: tested against a real API server, it
 * re-lists correctly after 410 Gone, but after any other error (API server restarting, connection
 * refused, a failed list) it calls its error handlers and stops for good; stop() right after start
 * does not stop a watch whose request is still connecting; and a start() while a request is in
 * flight lets the stale request's completion abort the fresh one. A wrapper that restarts it on
 * errors inherits the last two. This loop has one generation per start(), so a stale request can
 * not touch a newer one:
 * - list (paginated), replace the cache, report adds, updates and deletes against the old cache;
 * - watch from the list's resourceVersion, with bookmarks and a server-side timeout of 5-10 min,
 *   carrying the resourceVersion of every event (and bookmark) to the next watch;
 * - "410 Gone" (as the watch's HTTP status or as an ERROR event in the stream): list again;
 * - any other failure: retry with exponential backoff (0.5 s doubling to 30 s), from the last
 *   resourceVersion; a successful list or event resets the backoff.
 */
export interface ResourceInformer<T extends KubeObject> {
  readonly resource: string;
  on(verb: 'add' | 'update' | 'delete', cb: (obj: T) => void): void;
  get(name: string, namespace?: string): T | undefined;
  list(namespace?: string): readonly T[];
  hasSynced(): boolean;
  /**
   * Starts, or resumes after stop() from the last resourceVersion (a too old one gives 410 Gone,
   * hence a re-list); resolves after the first successful list (rejects when stopped before it).
   */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface InformerOptions {
  kc: KubeConfig;
  api: KubeApi;
  /** collection path without query, e.g. /apis/webhookfanout.io/v1alpha1/namespaces/ns/webhookendpoints */
  path: string;
  /** a short name for logs and metrics, e.g. "webhookendpoints/ns" */
  resource: string;
  logger: Logger;
  /** called when list/watch failed and is retried */
  onRestart?: () => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

class GoneError extends Error {
  constructor() {
    super('410 Gone: the resourceVersion is too old');
  }
}

const cacheKey = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export function createInformer<T extends KubeObject>(opts: InformerOptions): ResourceInformer<T> {
  const minBackoff = opts.minBackoffMs ?? 500;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const handlers = { add: [] as ((o: T) => void)[], update: [] as ((o: T) => void)[], delete: [] as ((o: T) => void)[] };
  let cache = new Map<string, T>();
  let resourceVersion = '';
  let synced = false;
  let generation = 0;
  let running = false;
  let abortCurrent: (() => void) | undefined;
  let wakeSleep: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let syncWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let failures = 0;

  const emit = (verb: 'add' | 'update' | 'delete', obj: T) => {
    for (const cb of handlers[verb]) {
      try {
        cb(obj);
      } catch (err) {
        opts.logger.error({ err, resource: opts.resource }, 'informer handler threw');
      }
    }
  };

  function upsert(obj: T): void {
    const key = cacheKey(obj);
    const old = cache.get(key);
    cache.set(key, obj);
    if (!old) emit('add', obj);
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) emit('update', obj);
  }

  async function relist(): Promise<void> {
    const list = await opts.api.list<T>(opts.path);
    const next = new Map<string, T>();
    for (const item of list.items) next.set(cacheKey(item), item);
    const previous = cache;
    cache = new Map(previous);
    for (const [key, old] of previous) {
      if (!next.has(key)) {
        cache.delete(key);
        emit('delete', old);
      }
    }
    for (const item of list.items) upsert(item);
    resourceVersion = list.metadata.resourceVersion;
    if (!synced) {
      synced = true;
      for (const w of syncWaiters) w.resolve();
      syncWaiters = [];
    }
  }

  /** One watch request; resolves when the server ends it, rejects on failure or 410. */
  function watchOnce(gen: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const watch = new Watch(opts.kc);
      const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
      // the client-side inactivity timeout must outlast the server's own end of the watch
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = (timeoutSeconds + 30) * 1000;
      let settled = false;
      let gone = false;
      let errorEvent: Error | undefined;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        if (gone) reject(new GoneError());
        else if (errorEvent) reject(errorEvent);
        else if (err && (err as { name?: string }).name !== 'TimeoutError') reject(err instanceof Error ? err : new Error(String(err)));
        else resolve();
      };
      watch
        .watch(
          opts.path,
          { resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
          (phase: string, obj: T & { code?: number }) => {
            if (gen !== generation || settled) return;
            switch (phase) {
              case 'ADDED':
              case 'MODIFIED':
                upsert(obj);
                break;
              case 'DELETED': {
                const key = cacheKey(obj);
                const old = cache.get(key);
                cache.delete(key);
                emit('delete', old ?? obj);
                break;
              }
              case 'BOOKMARK':
                break;
              case 'ERROR':
                if (obj.code === 410) gone = true;
                else errorEvent ??= new Error(`watch ERROR event: ${JSON.stringify(obj).slice(0, 300)}`);
                return;
              default:
                return;
            }
            failures = 0;
            if (obj.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
          },
          (err: unknown) => {
            if ((err as { statusCode?: number } | null)?.statusCode === 410) gone = true;
            finish(err);
          },
        )
        .then((controller) => {
          if (settled || gen !== generation) controller.abort();
          else abortCurrent = () => controller.abort();
        })
        .catch(finish);
    });
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wakeSleep = () => {
        clearTimeout(t);
        resolve();
      };
    });

  async function run(gen: number): Promise<void> {
    while (running && gen === generation) {
      try {
        if (!resourceVersion) {
          await relist();
          failures = 0;
        }
        if (!running || gen !== generation) return;
        await watchOnce(gen);
      } catch (err) {
        if (!running || gen !== generation) return;
        if (err instanceof GoneError) {
          opts.logger.info({ resource: opts.resource }, 'watch expired (410 Gone); listing again');
          resourceVersion = '';
          continue;
        }
        const delay = Math.min(minBackoff * 2 ** failures, maxBackoff);
        failures++;
        opts.logger.warn(
          { resource: opts.resource, err: err instanceof Error ? `${err.name}: ${err.message}` : String(err), retryInMs: delay },
          'list/watch failed; retrying',
        );
        opts.onRestart?.();
        await sleep(delay);
      } finally {
        abortCurrent = undefined;
      }
    }
  }

  return {
    resource: opts.resource,
    on(verb, cb) {
      handlers[verb].push(cb);
    },
    get: (name, namespace) => cache.get(`${namespace ?? ''}/${name}`),
    list: (namespace) => [...cache.values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace),
    hasSynced: () => synced,
    async start() {
      if (!running) {
        running = true;
        const gen = ++generation;
        const previous = loop;
        loop = (async () => {
          await previous;
          await run(gen);
        })();
      }
      if (synced) return;
      await new Promise<void>((resolve, reject) => syncWaiters.push({ resolve, reject }));
    },
    async stop() {
      if (!running) return;
      running = false;
      generation++;
      abortCurrent?.();
      wakeSleep?.();
      for (const w of syncWaiters) w.reject(new Error(`informer ${opts.resource} stopped before its first list`));
      syncWaiters = [];
      // a request still connecting to an unreachable API server can not be aborted yet: do not wait for it
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loop, new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000)))]);
      clearTimeout(timer);
    },
  };
}
