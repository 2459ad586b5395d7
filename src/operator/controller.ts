import type { KubeConfig } from '@kubernetes/client-node';
import { describeError } from '../domain/errors.js';
import type { DefaultAllowedNamespaces } from '../config/settings.js';
import { ENABLE_ANNOTATION } from '../domain/records.js';
import type { OperatorMetrics } from '../metrics/operator-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import { createInformer, type ResourceInformer } from '../kube/informer.js';
import { isConflict, KubeApiError, type KubeApi, type KubeObject } from '../kube/api.js';
import { configMapNamesOf, secretNamesOf } from '../custom-resources/secret-refs.js';
import { createReconciler, type ReconcileResult } from './reconciler.js';
import {
  collectionPath,
  keyOf,
  NAMESPACES_PATH,
  readyCondition,
  configMapsPath,
  secretsPath,
  type ConfigMapObject,
  type InboundCredentialObject,
  type KindName,
  type SecretObject,
  type WebhookEndpointObject,
} from './kube-objects.js';
import type { OperatorStore } from './store.js';
import { WorkQueue } from '../kube/work-queue.js';
import { isDatabaseError } from '../db/db-errors.js';
import type { ReplayRunner } from '../temporal/replay-runner.js';
import { createReplayReconciler, isReplayKey, replayCollectionPath, replayKey, type WebhookReplayObject } from './replay-reconciler.js';

/**
 * The controller a leader runs: informers on both kinds and on Secrets and ConfigMaps (per watched
 * namespace, or cluster-wide) and on Namespaces (cluster-wide: their labels, for allowedEndpoints selectors),
 * which only enqueue keys; workers that reconcile the latest state of a key; a
 * periodic resync that re-enqueues every resource (repairing drift in Postgres) and garbage-collects
 * rows whose resource is gone without its finalizer having run.
 */
export interface ControllerOptions {
  kc: KubeConfig;
  api: KubeApi;
  store: OperatorStore;
  recorder: EventRecorder;
  metrics: OperatorMetrics;
  logger: Logger;
  /** undefined = every namespace */
  namespaces: string[] | undefined;
  workers: number;
  resyncPeriodMs: number;
  /** what an InboundCredential without spec.allowedEndpoints allows (TENANCY_DEFAULT_ALLOWED_NAMESPACES) */
  defaultAllowedNamespaces: DefaultAllowedNamespaces;
  /** how often Postgres is asked which endpoints are disabled; default HEALTH_POLL_MS */
  healthPollMs?: number;
  backoff?: { baseDelayMs: number; maxDelayMs: number };
  /** WebhookReplay resources are watched and run only when given (the operator's Temporal client starts the runs) */
  replays?: ReplayRunner;
}

export interface Controller {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** true once every informer listed and the first reconciles were queued */
  synced(): boolean;
  /** re-enqueues everything and collects orphan rows now (what the resync timer does) */
  resync(): Promise<void>;
  /** keys waiting or being reconciled */
  pending(): number;
  informers: {
    endpoints: ResourceInformer<WebhookEndpointObject>[];
    credentials: ResourceInformer<InboundCredentialObject>[];
    secrets: ResourceInformer<SecretObject>[];
    configMaps: ResourceInformer<ConfigMapObject>[];
    replays: ResourceInformer<WebhookReplayObject>[];
    namespaces: ResourceInformer<KubeObject>;
  };
}

/**
 * Endpoints are disabled by the workers, in Postgres, behind the operator's back: it polls for
 * them (one indexed query) rather than listening for a notification, which a dropped connection
 * would lose; a missed poll is made up by the next, and a restart or resync looks at everything.
 */
export const HEALTH_POLL_MS = 5_000;

/**
 * What an update must change to be worth a reconcile; status-only writes (ours) change none of it.
 * The enable annotation is metadata, not spec: a new value must reach the reconciler too.
 */
const signature = (o: KubeObject & { spec?: unknown }): string =>
  JSON.stringify([
    o.metadata.generation,
    o.metadata.deletionTimestamp ?? null,
    o.metadata.finalizers ?? [],
    o.spec ?? null,
    o.metadata.annotations?.[ENABLE_ANNOTATION] ?? null,
  ]);

export function createController(o: ControllerOptions): Controller {
  const { logger, metrics } = o;
  const scopes: (string | undefined)[] = o.namespaces && o.namespaces.length > 0 ? o.namespaces : [undefined];
  const queue = new WorkQueue({
    baseDelayMs: o.backoff?.baseDelayMs ?? 500,
    maxDelayMs: o.backoff?.maxDelayMs ?? 5 * 60_000,
    onDepth: (d) => metrics.queueDepth.set(d),
  });
  const enqueue = (key: string, trigger: string) => {
    if (queue.add(key)) metrics.queueAdds.inc({ trigger });
  };

  const mk = <T extends KubeObject>(path: string, resource: string) =>
    createInformer<T>({
      kc: o.kc,
      api: o.api,
      path,
      resource,
      logger,
      onRestart: () => metrics.informerRestarts.inc({ resource: resource.split('/')[0] }),
    });
  const scopeName = (ns: string | undefined) => ns ?? '*';
  const informers = {
    endpoints: scopes.map((ns) => mk<WebhookEndpointObject>(collectionPath('WebhookEndpoint', ns), `webhookendpoints/${scopeName(ns)}`)),
    credentials: scopes.map((ns) =>
      mk<InboundCredentialObject>(collectionPath('InboundCredential', ns), `inboundcredentials/${scopeName(ns)}`),
    ),
    secrets: scopes.map((ns) => mk<SecretObject>(secretsPath(ns), `secrets/${scopeName(ns)}`)),
    // endpoints' CA bundles (spec.tls.caBundleRef kind ConfigMap): read, never written
    configMaps: scopes.map((ns) => mk<ConfigMapObject>(configMapsPath(ns), `configmaps/${scopeName(ns)}`)),
    replays: o.replays ? scopes.map((ns) => mk<WebhookReplayObject>(replayCollectionPath(ns), `webhookreplays/${scopeName(ns)}`)) : [],
    namespaces: mk<KubeObject>(NAMESPACES_PATH, 'namespaces'),
  };
  const all = [
    ...informers.endpoints,
    ...informers.credentials,
    ...informers.secrets,
    ...informers.configMaps,
    informers.namespaces,
    ...informers.replays,
  ];
  const replays = () => informers.replays.flatMap((i) => i.list());

  const endpoints = () => informers.endpoints.flatMap((i) => i.list());
  const credentials = () => informers.credentials.flatMap((i) => i.list());
  const watchesNamespace = (ns: string) => scopes.includes(undefined) || scopes.includes(ns);
  const informerFor = <T extends KubeObject>(list: ResourceInformer<T>[], ns: string) =>
    list[scopes.includes(undefined) ? 0 : scopes.indexOf(ns)];

  const reconciler = createReconciler({
    api: o.api,
    store: o.store,
    cached: (kind, ns, name) =>
      kind === 'WebhookEndpoint'
        ? informerFor(informers.endpoints, ns)?.get(name, ns)
        : informerFor(informers.credentials, ns)?.get(name, ns),
    secret: (ns, name) => informerFor(informers.secrets, ns)?.get(name, ns),
    configMap: (ns, name) => informerFor(informers.configMaps, ns)?.get(name, ns),
    credentials,
    endpoints,
    namespaceLabels: (ns) => informers.namespaces.get(ns)?.metadata.labels,
    defaultAllowedNamespaces: o.defaultAllowedNamespaces,
    watchesNamespace,
    enqueue,
    recorder: o.recorder,
    metrics,
    logger,
  });

  const replayReconciler = o.replays
    ? createReplayReconciler({
        api: o.api,
        runner: o.replays,
        endpoint: (ns, name) => o.store.repos.endpoints.activeByName(ns, name),
        cached: (ns, name) => informerFor(informers.replays, ns)?.get(name, ns),
        enqueueAfter: (key, delayMs) => queue.addAfter(key, delayMs),
        recorder: o.recorder,
        logger,
      })
    : undefined;

  // ---- event handlers: they only enqueue keys
  const seen = new Map<string, string>();
  const onResource = (kind: KindName) => ({
    add: (obj: KubeObject & { spec?: unknown }) => {
      const key = keyOf(kind, obj.metadata.namespace ?? 'default', obj.metadata.name);
      seen.set(key, signature(obj));
      enqueue(key, 'event');
      if (kind === 'InboundCredential') enqueueConflicted();
    },
    update: (obj: KubeObject & { spec?: unknown }) => {
      const key = keyOf(kind, obj.metadata.namespace ?? 'default', obj.metadata.name);
      const sig = signature(obj);
      if (seen.get(key) === sig) return;
      seen.set(key, sig);
      enqueue(key, 'event');
      if (kind === 'InboundCredential') enqueueConflicted();
    },
    delete: (obj: KubeObject) => {
      const key = keyOf(kind, obj.metadata.namespace ?? 'default', obj.metadata.name);
      seen.delete(key);
      enqueue(key, 'event');
      if (kind === 'InboundCredential') enqueueConflicted();
    },
  });
  /** credentials waiting for their source (SourceConflict) get another look when any credential changes */
  const enqueueConflicted = () => {
    for (const c of credentials()) {
      if (readyCondition(c)?.reason === 'SourceConflict')
        enqueue(keyOf('InboundCredential', c.metadata.namespace ?? 'default', c.metadata.name), 'peer');
    }
  };
  const onSecret = (secret: KubeObject) => {
    const ns = secret.metadata.namespace ?? 'default';
    const name = secret.metadata.name;
    for (const e of endpoints()) {
      // any Secret its spec reads: auth (and OAuth2's secret or key), signing, tls, the destination's
      if ((e.metadata.namespace ?? 'default') === ns && secretNamesOf(e.spec).has(name))
        enqueue(keyOf('WebhookEndpoint', ns, e.metadata.name), 'secret');
    }
    for (const c of credentials()) {
      // the password, or any signing secret of the verification
      const refs = [c.spec.passwordSecretRef, ...(c.spec.verification?.secretRefs ?? [])];
      if ((c.metadata.namespace ?? 'default') === ns && refs.some((r) => r?.name === name))
        enqueue(keyOf('InboundCredential', ns, c.metadata.name), 'secret');
    }
  };
  for (const i of informers.endpoints) {
    const h = onResource('WebhookEndpoint');
    i.on('add', h.add);
    i.on('update', h.update);
    i.on('delete', h.delete);
  }
  for (const i of informers.credentials) {
    const h = onResource('InboundCredential');
    i.on('add', h.add);
    i.on('update', h.update);
    i.on('delete', h.delete);
  }
  for (const i of informers.replays) {
    // a replay's spec never changes (the CRD refuses it): its own status writes need no reconcile
    const onReplay = (obj: KubeObject) => enqueue(replayKey(obj.metadata.namespace ?? 'default', obj.metadata.name), 'event');
    i.on('add', onReplay);
  }
  for (const i of informers.secrets) {
    i.on('add', onSecret);
    i.on('update', onSecret);
    i.on('delete', onSecret);
  }
  const onConfigMap = (map: KubeObject) => {
    const ns = map.metadata.namespace ?? 'default';
    for (const e of endpoints()) {
      if ((e.metadata.namespace ?? 'default') === ns && configMapNamesOf(e.spec).has(map.metadata.name))
        enqueue(keyOf('WebhookEndpoint', ns, e.metadata.name), 'configmap');
    }
  };
  for (const i of informers.configMaps) {
    i.on('add', onConfigMap);
    i.on('update', onConfigMap);
    i.on('delete', onConfigMap);
  }
  // a namespace's labels decide whether its endpoints match a credential's selector
  const namespaceLabels = new Map<string, string>();
  const onNamespace = (n: KubeObject) => {
    const labels = JSON.stringify(Object.entries(n.metadata.labels ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)));
    if (namespaceLabels.get(n.metadata.name) === labels) return;
    const known = namespaceLabels.has(n.metadata.name);
    namespaceLabels.set(n.metadata.name, labels);
    // a namespace seen for the first time has no endpoints yet, or (at start) they are enqueued by their own add
    if (!known) return;
    for (const e of endpoints()) {
      if ((e.metadata.namespace ?? 'default') === n.metadata.name)
        enqueue(keyOf('WebhookEndpoint', n.metadata.name, e.metadata.name), 'namespace');
    }
  };
  informers.namespaces.on('add', onNamespace);
  informers.namespaces.on('update', onNamespace);
  informers.namespaces.on('delete', (n) => namespaceLabels.delete(n.metadata.name));

  // ---- workers
  async function work(): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      const kind = key.split('/')[0] ?? 'unknown';
      const end = metrics.reconcileDuration.startTimer({ kind });
      let result: ReconcileResult | 'error';
      try {
        result = replayReconciler && isReplayKey(key) ? await replayReconciler.reconcile(key) : await reconciler.reconcile(key);
        queue.forget(key);
      } catch (err) {
        result = 'error';
        const reason = errorReason(err);
        metrics.reconcileErrors.inc({ kind, reason });
        const delay = queue.addRateLimited(key);
        metrics.queueAdds.inc({ trigger: 'retry' });
        logger.warn({ key, err: describeError(err), retryInMs: delay }, 'reconcile failed; retrying with backoff');
      }
      end();
      metrics.reconciles.inc({ kind, result });
      queue.done(key);
    }
  }

  // ---- resync and garbage collection
  async function collectOrphans(): Promise<void> {
    const live = new Set([...endpoints(), ...credentials()].map((r) => r.metadata.uid));
    const mine = (resourceName: string) => watchesNamespace(resourceName.split('/')[0] ?? '');
    for (const row of await o.store.ownedActiveEndpoints()) {
      if (!live.has(row.uid) && mine(row.resourceName) && (await o.store.repos.endpoints.deactivateByResourceUid(row.uid))) {
        metrics.rowWrites.inc({ kind: 'WebhookEndpoint', action: 'deactivated' });
        logger.info({ resource: row.resourceName, uid: row.uid }, 'deactivated the endpoint row of a resource that no longer exists');
      }
    }
    for (const row of await o.store.ownedCredentials()) {
      if (!live.has(row.uid) && mine(row.resourceName) && (await o.store.repos.credentials.deleteByResourceUid(row.uid))) {
        metrics.rowWrites.inc({ kind: 'InboundCredential', action: 'deleted' });
        logger.info({ resource: row.resourceName, uid: row.uid }, 'deleted the credential row of a resource that no longer exists');
      }
    }
  }

  /**
   * Endpoints whose state in Postgres (disabled or not, their blocked keys, their OAuth2 credentials
   * refused by the token endpoint or not) differs from what their status shows.
   */
  async function pollHealth(): Promise<void> {
    const disabled = await o.store.repos.endpoints.disabledResourceUids();
    const tokenRefused = await o.store.repos.endpoints.tokenRefusedResourceUids();
    const blocked = new Map<string | null, number>();
    for (const b of await o.store.repos.ordering.blockedKeys()) blocked.set(b.resourceUid, b.blockedKeys);
    for (const e of endpoints()) {
      const blockedNow = blocked.get(e.metadata.uid);
      // an endpoint not ordered (any more) shows none; one not reconciled since it became ordered, its count
      const blockedDiffers =
        blockedNow !== e.status?.orderingBlockedKeys && (blockedNow !== undefined || e.status?.orderingBlockedKeys !== undefined);
      // refused and still shown Ready, or shown refused and no longer (another reason Not Ready stays as it is)
      const ready = readyCondition(e);
      const refusalDiffers = tokenRefused.has(e.metadata.uid) ? ready?.status === 'True' : ready?.reason === 'TokenRequestRefused';
      if (disabled.has(e.metadata.uid) !== (e.status?.state === 'DISABLED') || blockedDiffers || refusalDiffers) {
        enqueue(keyOf('WebhookEndpoint', e.metadata.namespace ?? 'default', e.metadata.name), 'health');
      }
    }
  }

  async function resync(): Promise<void> {
    for (const e of endpoints()) enqueue(keyOf('WebhookEndpoint', e.metadata.namespace ?? 'default', e.metadata.name), 'resync');
    for (const c of credentials()) enqueue(keyOf('InboundCredential', c.metadata.namespace ?? 'default', c.metadata.name), 'resync');
    for (const r of replays()) enqueue(replayKey(r.metadata.namespace ?? 'default', r.metadata.name), 'resync');
    if (all.every((i) => i.hasSynced())) await collectOrphans();
  }

  let workers: Promise<void>[] = [];
  let timer: NodeJS.Timeout | undefined;
  let healthTimer: NodeJS.Timeout | undefined;
  let isSynced = false;

  return {
    informers,
    synced: () => isSynced,
    pending: () => queue.depth + queue.busy,
    resync,
    async start() {
      await Promise.all(all.map((i) => i.start()));
      isSynced = true;
      logger.info({ namespaces: o.namespaces ?? 'all' }, 'informers synced; reconciling');
      workers = Array.from({ length: o.workers }, () => work());
      await collectOrphans().catch((err: unknown) => logger.warn({ err: describeError(err) }, 'orphan collection failed'));
      timer = setInterval(() => {
        resync().catch((err: unknown) => logger.warn({ err: describeError(err) }, 'resync failed'));
      }, o.resyncPeriodMs);
      timer.unref();
      healthTimer = setInterval(() => {
        pollHealth().catch((err: unknown) => logger.warn({ err: describeError(err) }, 'endpoint health poll failed'));
      }, o.healthPollMs ?? HEALTH_POLL_MS);
      healthTimer.unref();
    },
    async stop() {
      clearInterval(timer);
      clearInterval(healthTimer);
      await Promise.all(all.map((i) => i.stop().catch(() => {})));
      queue.shutDown();
      await Promise.all(workers);
      workers = [];
    },
  };
}

function errorReason(err: unknown): string {
  if (err instanceof KubeApiError) return isConflict(err) ? 'conflict' : 'kube_api';
  if (typeof err === 'object' && err !== null) {
    const e = err as { code?: unknown };
    if (isDatabaseError(err)) return 'postgres';
    if (typeof e.code === 'string' && /^E[A-Z]+/.test(e.code)) return 'network';
  }
  return 'other';
}
