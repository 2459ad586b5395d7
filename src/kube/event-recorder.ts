import { randomBytes } from 'node:crypto';
import type { Logger } from '../observability/logger.js';
import { rfc3339, type KubeApi, type KubeObject } from './api.js';

/**
 * Kubernetes Events (core/v1) about the custom resources, as `kubectl describe` and
 * `kubectl get events` show them. A repeat of the same reason and message for the same object
 * bumps the count of the existing Event instead of creating another, like client-go's recorder.
 * Recording never fails a reconcile: a failure to write an Event is only logged.
 */
export interface EventRecorder {
  warning(obj: KubeObject & { apiVersion: string; kind: string }, reason: string, message: string): Promise<void>;
  normal(obj: KubeObject & { apiVersion: string; kind: string }, reason: string, message: string): Promise<void>;
}

interface CoreEvent {
  metadata: { name: string; namespace: string };
  count?: number;
}

export function createEventRecorder(opts: { api: KubeApi; component: string; host: string; logger: Logger }): EventRecorder {
  const seen = new Map<string, { name: string; count: number }>();

  async function record(
    type: 'Normal' | 'Warning',
    obj: KubeObject & { apiVersion: string; kind: string },
    reason: string,
    message: string,
  ): Promise<void> {
    const ns = obj.metadata.namespace ?? 'default';
    const path = `/api/v1/namespaces/${ns}/events`;
    const key = `${obj.metadata.uid}|${type}|${reason}|${message}`;
    const now = rfc3339();
    try {
      const prev = seen.get(key);
      if (prev) {
        try {
          await opts.api.patch<CoreEvent>(`${path}/${prev.name}`, { count: prev.count + 1, lastTimestamp: now });
          prev.count++;
          return;
        } catch {
          seen.delete(key); // the Event expired (TTL) or was deleted: create a new one
        }
      }
      const name = `${obj.metadata.name}.${randomBytes(8).toString('hex')}`;
      await opts.api.create<CoreEvent>(path, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          namespace: ns,
          name: obj.metadata.name,
          uid: obj.metadata.uid,
          resourceVersion: obj.metadata.resourceVersion,
        },
        reason,
        message: message.slice(0, 1024),
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: opts.component, host: opts.host },
        reportingComponent: opts.component,
        reportingInstance: opts.host,
      });
      if (seen.size > 5000) seen.clear();
      seen.set(key, { name, count: 1 });
    } catch (err) {
      opts.logger.warn({ err: err instanceof Error ? err.message : String(err), reason }, 'could not record a Kubernetes Event');
    }
  }

  return {
    warning: (obj, reason, message) => record('Warning', obj, reason, message),
    normal: (obj, reason, message) => record('Normal', obj, reason, message),
  };
}
