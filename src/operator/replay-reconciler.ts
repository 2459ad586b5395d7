import { API_GROUP, API_VERSION, type WebhookReplaySpec } from '../custom-resources/specs.js';
import type { ReplayProgress, ReplayRecord } from '../db/replay-runs.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import { isNotFound, rfc3339, type KubeApi, type KubeObject } from '../kube/api.js';
import type { Logger } from '../observability/logger.js';
import type { ReplayRunner, ReplayState, ReplayTarget } from '../temporal/replay-runner.js';
import type { Condition } from './kube-objects.js';

/**
 * The WebhookReplay reconcile (docs/operator.md, WebhookReplay): each call is one step of the
 * replay, or action Skip's one skip (temporal/replay-runner.ts, which keeps it in Postgres by the
 * resource's uid), then the status says where it is: Complete / Failed conditions as a Job's, and
 * the counts. While it runs the key comes back every PROGRESS_POLL_MS; a finished one with
 * ttlSecondsAfterFinished is deleted when that has passed. Nothing here holds the resource (no
 * finalizer): deleting it stops the status, not the runs already started.
 */
export const REPLAY_KIND = 'WebhookReplay';
const PLURAL = 'webhookreplays';
export const PROGRESS_POLL_MS = 2_000;

export interface WebhookReplayObject extends KubeObject {
  apiVersion: string;
  kind: typeof REPLAY_KIND;
  spec: WebhookReplaySpec;
  status?: ReplayStatus;
}

export interface ReplayStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  window?: string;
  matched?: number;
  skipped?: number;
  started?: number;
  succeeded?: number;
  failed?: number;
  startTime?: string;
  completionTime?: string;
}

export const replayCollectionPath = (namespace?: string): string =>
  namespace === undefined
    ? `/apis/${API_GROUP}/${API_VERSION}/${PLURAL}`
    : `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace}/${PLURAL}`;
const replayPath = (namespace: string, name: string): string => `${replayCollectionPath(namespace)}/${encodeURIComponent(name)}`;

export const replayKey = (namespace: string, name: string): string => `${REPLAY_KIND}/${namespace}/${name}`;
export const isReplayKey = (key: string): boolean => key.startsWith(`${REPLAY_KIND}/`);

export interface ReplayReconcilerDeps {
  api: KubeApi;
  runner: ReplayRunner;
  /** the endpoint row of the WebhookEndpoint `name` in `namespace`, if there is an active one */
  endpoint(namespace: string, name: string): Promise<ReplayTarget | undefined>;
  cached(namespace: string, name: string): WebhookReplayObject | undefined;
  enqueueAfter(key: string, delayMs: number): void;
  recorder: EventRecorder;
  logger: Logger;
  now?: () => Date;
}

/** How long a new replay waits for its endpoint to be reconciled before it ends EndpointNotFound. */
export const REPLAY_ENDPOINT_WAIT_MS = 10_000;

type ReplayResult = 'synced' | 'unchanged' | 'not_ready' | 'deleted' | 'gone';

function conditionsFor(
  r: ReplayRecord,
  p: ReplayProgress | undefined,
): { type: string; status: 'True' | 'False'; reason: string; message: string }[] {
  if (r.phase === 'Failed') {
    return [
      { type: 'Failed', status: 'True', reason: r.reason, message: r.message },
      { type: 'Complete', status: 'False', reason: r.reason, message: r.message },
    ];
  }
  if (r.phase === 'Running') {
    const started = p?.started ?? 0;
    return [
      {
        type: 'Complete',
        status: 'False',
        reason: 'Running',
        message: `${started} of ${r.matched - (p?.skipped ?? r.skipped)} deliveries handed to replay runs; ${(p?.succeeded ?? 0) + (p?.failed ?? 0)} settled`,
      },
    ];
  }
  // AlreadyReplayed and a Skip's reasons say it all in their message
  const message =
    r.reason === 'DryRun'
      ? `dry run: ${r.matched - r.skipped} deliveries would be replayed (${r.skipped} skipped: payload dropped by retention); nothing was sent`
      : r.reason === 'Replayed'
        ? `${r.started} replayed: ${r.succeeded} succeeded, ${r.failed} failed; ${r.skipped} skipped`
        : r.message;
  return [{ type: 'Complete', status: 'True', reason: r.reason, message }];
}

export function createReplayReconciler(deps: ReplayReconcilerDeps) {
  const { api, logger } = deps;
  const now = deps.now ?? (() => new Date());

  function desired(obj: WebhookReplayObject, r: ReplayRecord, p: ReplayProgress | undefined): ReplayStatus {
    const previous = obj.status?.conditions ?? [];
    const conditions: Condition[] = conditionsFor(r, p).map((c) => {
      const before = previous.find((x) => x.type === c.type);
      return {
        ...c,
        message: c.message.slice(0, 32_768),
        observedGeneration: r.generation,
        lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : rfc3339(now()),
      };
    });
    const running = r.phase === 'Running';
    return {
      observedGeneration: r.generation,
      conditions,
      ...(obj.spec.window ? { window: `${obj.spec.window.from}..${obj.spec.window.to}` } : {}),
      matched: r.matched,
      skipped: running ? (p?.skipped ?? r.skipped) : r.skipped,
      started: running ? (p?.started ?? 0) : r.started,
      succeeded: running ? (p?.succeeded ?? 0) : r.succeeded,
      failed: running ? (p?.failed ?? 0) : r.failed,
      startTime: rfc3339(r.createdAt),
      ...(r.finishedAt ? { completionTime: rfc3339(r.finishedAt) } : {}),
    };
  }

  const comparable = (s: ReplayStatus | undefined) =>
    JSON.stringify({
      ...s,
      conditions: (s?.conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c).sort((a, b) => (a.type < b.type ? -1 : 1)),
    });

  async function reconcile(key: string): Promise<ReplayResult> {
    const [, namespace = 'default', ...rest] = key.split('/');
    const name = rest.join('/');
    const obj = deps.cached(namespace, name);
    if (!obj || obj.metadata.deletionTimestamp) return 'gone';
    const spec = obj.spec;
    const identity = { uid: obj.metadata.uid, generation: obj.metadata.generation ?? 1, namespace, name, spec };
    let state: ReplayState;
    if (spec.action === 'Skip' && spec.deliveryId !== undefined) {
      state = await deps.runner.skip({ ...identity, deliveryId: spec.deliveryId });
    } else {
      // the CRD requires both for a Replay (REPLAY_RULES)
      const { endpointRef, window } = spec;
      if (!endpointRef || !window) return 'not_ready';
      const endpoint = await deps.endpoint(namespace, endpointRef.name);
      // an endpoint applied together with the replay (one kubectl apply, a GitOps sync) may not be
      // reconciled yet: it is waited for a little before the replay ends EndpointNotFound
      const age = now().getTime() - Date.parse(obj.metadata.creationTimestamp ?? '');
      if (endpoint === undefined && (obj.status?.conditions ?? []).length === 0 && age < REPLAY_ENDPOINT_WAIT_MS) {
        deps.enqueueAfter(key, 1_000);
        return 'not_ready';
      }
      state = await deps.runner.step({
        ...identity,
        endpoint,
        endpointRef: `endpointRef ${endpointRef.name}`,
        criteria: {
          from: new Date(window.from),
          to: new Date(window.to),
          statuses: spec.statuses ?? ['FAILED'],
          eventTypes: spec.eventTypes ?? [],
        },
        dryRun: spec.dryRun ?? false,
      });
    }
    const { record, progress } = state;
    const status = desired(obj, record, progress);
    const changed = comparable(obj.status) !== comparable(status);
    if (changed) await api.patch(`${replayPath(namespace, name)}/status`, { status });

    if (state.began && !record.dryRun) {
      await deps.recorder.normal(obj, 'Started', `replaying ${record.matched - record.skipped} deliveries (${record.skipped} skipped)`);
    }
    if (state.finished) {
      const [first] = conditionsFor(record, progress);
      if (record.phase === 'Failed') await deps.recorder.warning(obj, record.reason, record.message);
      else await deps.recorder.normal(obj, record.reason === 'Replayed' ? 'Completed' : record.reason, first?.message ?? '');
    }

    if (record.phase === 'Running') {
      deps.enqueueAfter(key, PROGRESS_POLL_MS);
      return changed ? 'synced' : 'unchanged';
    }
    const ttl = spec.ttlSecondsAfterFinished;
    if (ttl !== undefined && record.finishedAt) {
      const remaining = record.finishedAt.getTime() + ttl * 1000 - now().getTime();
      if (remaining <= 0) {
        try {
          await api.delete(replayPath(namespace, name));
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        logger.info({ key, ttlSecondsAfterFinished: ttl }, 'finished replay deleted (ttlSecondsAfterFinished)');
        return 'deleted';
      }
      deps.enqueueAfter(key, remaining);
    }
    if (record.phase === 'Failed') return 'not_ready';
    return changed ? 'synced' : 'unchanged';
  }

  return { reconcile };
}
