import { HttpMethod, RequestContext, type KubeConfig } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { AppError } from '../domain/errors.js';

/**
 * A thin JSON client for the few API calls the operator makes, on the KubeConfig's cluster, TLS
 * and credentials (the same ones @kubernetes/client-node's Watch uses). Objects stay the API
 * server's JSON, exactly as watch events deliver them, so the informer cache, the reconcilers and
 * the writes all see one shape (no Date vs string timestamps, MicroTime written as the API wants).
 * An answer >= 400 is a KubeApiError of the taxonomy: transient when a retry may succeed
 * (kube_api_unavailable), else internal (kube_api_refused: RBAC, a request the server rejects).
 */
export class KubeApiError extends AppError {
  constructor(
    readonly statusCode: number,
    readonly reason: string,
    message: string,
  ) {
    super(isRetryableStatus(statusCode) ? 'kube_api_unavailable' : 'kube_api_refused', message);
    this.name = 'KubeApiError';
  }
}

/** A conflict (a newer resourceVersion), throttling, a timeout or a server error: worth a retry. */
function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

export const isNotFound = (err: unknown): boolean => err instanceof KubeApiError && err.statusCode === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubeApiError && err.statusCode === 409;
export const isAlreadyExists = (err: unknown): boolean =>
  err instanceof KubeApiError && err.statusCode === 409 && err.reason === 'AlreadyExists';

export interface ObjectMetaJson {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMetaJson;
}

export interface KubeList<T> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

export type PatchType = 'application/merge-patch+json' | 'application/json-patch+json';

export interface KubeApi {
  get<T>(path: string): Promise<T>;
  list<T>(path: string): Promise<KubeList<T>>;
  create<T>(path: string, body: unknown): Promise<T>;
  replace<T>(path: string, body: unknown): Promise<T>;
  patch<T>(path: string, body: unknown, type?: PatchType): Promise<T>;
  delete(path: string): Promise<void>;
}

export function createKubeApi(kc: KubeConfig, opts: { timeoutMs?: number; userAgent?: string } = {}): KubeApi {
  const timeoutMs = opts.timeoutMs ?? 15_000;

  async function call<T>(method: HttpMethod, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const url = `${cluster.server.replace(/\/$/, '')}${path}`;
    const ctx = new RequestContext(url, method);
    await kc.applySecurityAuthentication(ctx);
    const headers: Record<string, string> = { ...ctx.getHeaders(), accept: 'application/json' };
    if (opts.userAgent) headers['user-agent'] = opts.userAgent;
    if (body !== undefined) headers['content-type'] = contentType;
    const res = await fetch(url, {
      method,
      headers,
      dispatcher: ctx.getDispatcher(),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status >= 400) {
      let reason = '';
      let message = `${method} ${path}: HTTP ${res.status}`;
      try {
        const status = JSON.parse(text) as { reason?: string; message?: string };
        reason = status.reason ?? '';
        if (status.message) message = `${method} ${path}: ${status.message}`;
      } catch {
        // not a Status object
      }
      throw new KubeApiError(res.status, reason, message);
    }
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  return {
    get: (path) => call(HttpMethod.GET, path),
    async list<T>(path: string): Promise<KubeList<T>> {
      // paginated, so a large namespace never arrives as one huge response
      const items: T[] = [];
      let cont: string | undefined;
      let resourceVersion: string;
      do {
        const sep = path.includes('?') ? '&' : '?';
        const page: KubeList<T> = await call(
          HttpMethod.GET,
          `${path}${sep}limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
        );
        items.push(...(page.items ?? []));
        resourceVersion = page.metadata.resourceVersion;
        cont = page.metadata.continue || undefined;
      } while (cont);
      return { metadata: { resourceVersion }, items };
    },
    create: (path, body) => call(HttpMethod.POST, path, body),
    replace: (path, body) => call(HttpMethod.PUT, path, body),
    patch: (path, body, type = 'application/merge-patch+json') => call(HttpMethod.PATCH, path, body, type),
    async delete(path) {
      await call(HttpMethod.DELETE, path);
    },
  };
}

/** RFC 3339 with microseconds, as metav1.MicroTime wants it (Lease renewTime, Event eventTime). */
export function microTime(d: Date = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** RFC 3339 to the second, as metav1.Time is written. */
export function rfc3339(d: Date = new Date()): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
