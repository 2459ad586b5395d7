import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeApi } from '../../src/kube/api.js';
import { createEventRecorder } from '../../src/kube/event-recorder.js';
import { createInformer, type ResourceInformer } from '../../src/kube/informer.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createOperatorMetrics } from '../../src/metrics/operator-metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { createReconciler, type Reconciler } from '../../src/operator/reconciler.js';
import {
  collectionPath,
  FINALIZER,
  keyOf,
  readyCondition,
  secretsPath,
  type InboundCredentialObject,
  type SecretObject,
  type WebhookEndpointObject,
} from '../../src/operator/kube-objects.js';
import { ownSource } from '../support/operator-scene.js';
import { createOperatorStore, type OperatorStore } from '../../src/operator/store.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { kubectl, type KubeConnection } from '../support/kube.js';
import { apply, createNamespace, customObjects, operatorKubeConfig, ready, sharedKube } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('kube');

/**
 * Reconcile-level tests in the kubebuilder style: one reconcile(key) at a time against a real
 * kube-apiserver and Postgres, with the informers as the cache it reads from, and no controller
 * loop around it. Each step asserts what the reconcile returned and what it left in the API server
 * and in Postgres. (test/operator/operator.test.ts runs the whole operator.)
 */
let conn: KubeConnection;
let tdb: TestDatabase;
let store: OperatorStore;
let ns: string;
let reconciler: Reconciler;
let endpoints: ResourceInformer<WebhookEndpointObject>;
let credentials: ResourceInformer<InboundCredentialObject>;
let secrets: ResourceInformer<SecretObject>;
const enqueued: string[] = [];

const key = (name: string) => keyOf('WebhookEndpoint', ns, name);
/** waits until the cache has seen the resource in the given state, as a watch event would */
const cacheShows = (name: string, pred: (o: WebhookEndpointObject | undefined) => boolean) =>
  eventually(async () => pred(endpoints.get(name, ns)), { what: `the cache to show ${name}` });

beforeAll(async () => {
  [conn, tdb] = await Promise.all([sharedKube(), createTestDatabase()]);
  store = createOperatorStore(tdb.db);
  ns = await createNamespace(conn, 'rec');
  const kc = operatorKubeConfig(conn);
  const api = createKubeApi(kc);
  const logger = createLogger({ level: 'silent', name: 'reconcile-test' });
  endpoints = createInformer({ kc, api, path: collectionPath('WebhookEndpoint', ns), resource: 'webhookendpoints', logger });
  credentials = createInformer({ kc, api, path: collectionPath('InboundCredential', ns), resource: 'inboundcredentials', logger });
  secrets = createInformer({ kc, api, path: secretsPath(ns), resource: 'secrets', logger });
  await Promise.all([endpoints.start(), credentials.start(), secrets.start()]);
  // the endpoints' source, owned in their namespace (docs/tenancy.md): they may subscribe
  await ownSource(store.repos, 'shop', ns);
  reconciler = createReconciler({
    api,
    store,
    cached: (kind, namespace, name) => (kind === 'WebhookEndpoint' ? endpoints.get(name, namespace) : credentials.get(name, namespace)),
    secret: (namespace, name) => secrets.get(name, namespace),
    credentials: () => credentials.list(),
    endpoints: () => endpoints.list(),
    namespaceLabels: () => undefined,
    defaultAllowedNamespaces: 'Same',
    watchesNamespace: (n) => n === ns,
    enqueue: (k) => enqueued.push(k),
    recorder: createEventRecorder({ api, component: 'reconcile-test', host: 'test', logger }),
    metrics: createOperatorMetrics(createMetrics({ defaultMetrics: false }).registry),
    logger,
  });
});

afterAll(async () => {
  await Promise.all([endpoints, credentials, secrets].map((i) => i?.stop()));
  await tdb?.destroy();
});

describe('reconcile(WebhookEndpoint key)', () => {
  it('is "gone" for a key the cache does not hold, and writes nothing', async () => {
    expect(await reconciler.reconcile(key('never-created'))).toBe('gone');
    const rows = await tdb.db('webhook_endpoint').count({ n: '*' });
    expect(Number(rows[0]?.n)).toBe(0);
  });

  it('adds the finalizer, writes the row and Ready=True; a second reconcile changes nothing', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: v1
kind: Secret
metadata: {name: tok}
stringData: {token: t0k}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: a}
spec: {source: shop, url: "http://a.internal/hook", auth: {type: BEARER, secretRef: {name: tok, key: token}}}
`,
    );
    await cacheShows('a', (o) => o !== undefined);
    await eventually(async () => secrets.get('tok', ns) !== undefined, { what: 'the Secret in the cache' });

    expect(await reconciler.reconcile(key('a'))).toBe('synced');
    const crs = customObjects(conn);
    const cr = await crs.get('WebhookEndpoint', ns, 'a');
    expect(cr?.metadata.finalizers).toEqual([FINALIZER]);
    expect(ready(cr)).toMatchObject({ status: 'True', reason: 'Synced', observedGeneration: cr?.metadata.generation });
    expect(await store.endpointByUid(cr!.metadata.uid)).toMatchObject({
      id: cr?.status?.endpointId,
      authType: 'BEARER',
      authSecret: 't0k',
    });

    // once the cache caught up with its own writes, the next reconcile is a no-op
    await cacheShows('a', (o) => o !== undefined && readyCondition(o)?.status === 'True');
    expect(await reconciler.reconcile(key('a'))).toBe('unchanged');
  });

  it('with a stale cache it fails with 409 (the controller requeues with backoff) and never writes over a newer object', async () => {
    await kubectl(conn, ['patch', 'whe', 'a', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await cacheShows('a', (o) => (o?.metadata.finalizers ?? []).length === 0);
    // freeze the cache, then change the object behind it
    await endpoints.stop();
    await kubectl(conn, ['annotate', 'whe', 'a', '-n', ns, 'touched=1']);
    await expect(reconciler.reconcile(key('a'))).rejects.toMatchObject({ statusCode: 409 });
    const after = await customObjects(conn).get('WebhookEndpoint', ns, 'a');
    expect(after?.metadata.finalizers ?? []).toEqual([]);

    // the watch resumes, the cache catches up, and the next reconcile converges
    await endpoints.start();
    await cacheShows('a', (o) => o?.metadata.resourceVersion === after?.metadata.resourceVersion);
    expect(await reconciler.reconcile(key('a'))).toMatch(/^(synced|unchanged)$/);
    expect((await customObjects(conn).get('WebhookEndpoint', ns, 'a'))?.metadata.finalizers).toEqual([FINALIZER]);
  });

  it('a missing Secret key is not_ready with the reason and nothing written', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: b}
spec: {source: shop, url: "http://b.internal/hook", auth: {type: BEARER, secretRef: {name: tok, key: nope}}}
`,
    );
    await cacheShows('b', (o) => o !== undefined);
    expect(await reconciler.reconcile(key('b'))).toBe('not_ready');
    const cr = await customObjects(conn).get('WebhookEndpoint', ns, 'b');
    expect(ready(cr)).toMatchObject({ status: 'False', reason: 'SecretKeyNotFound' });
    expect(await store.endpointByUid(cr!.metadata.uid)).toBeUndefined();
  });

  it('on deletion: deactivates the row, removes the finalizer, and the resource goes', async () => {
    const cr = await customObjects(conn).get('WebhookEndpoint', ns, 'a');
    await kubectl(conn, ['delete', 'whe', 'a', '-n', ns, '--wait=false']);
    await cacheShows('a', (o) => o?.metadata.deletionTimestamp !== undefined);
    expect(await reconciler.reconcile(key('a'))).toBe('deleted');
    expect(await store.endpointByUid(cr!.metadata.uid)).toMatchObject({ active: false });
    await eventually(async () => (await customObjects(conn).get('WebhookEndpoint', ns, 'a')) === undefined, { what: 'a gone' });
    await cacheShows('a', (o) => o === undefined);
    expect(await reconciler.reconcile(key('a'))).toBe('gone');
  });
});
