import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { createLogger } from '../../src/observability/logger.js';
import { createInformer } from '../../src/kube/informer.js';
import { createKubeApi, type KubeApi } from '../../src/kube/api.js';
import { collectionPath, type WebhookEndpointObject } from '../../src/operator/kube-objects.js';
import { kubectl, OPERATOR_NAMESPACE, startKubeControlPlane, type KubeControlPlane } from '../support/kube.js';
import { adminKubeConfig, apply, createNamespace, customObjects, ready, settled, startTestOperator } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { createTestDatabase } from '../support/db.js';
import { createRepositories } from '../../src/db/repositories.js';
import { ownSource } from '../support/operator-scene.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('kube');

/**
 * The informer's list and watch against its own control plane (the tests break it): the watch
 * cache is off so that a resumed watch from a compacted revision gets a real "410 Gone" from etcd.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const logger = createLogger({ level: 'silent' });
let cp: KubeControlPlane;
let ns: string;

const endpoint = (name: string) =>
  `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: ${name}}\nspec: {source: s, url: "http://x.example/${name}"}\n`;

/** etcd's current revision, through its JSON gateway */
async function etcd(pathname: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await request(`${cp.etcdUrl}${pathname}`, { method: 'POST', body: JSON.stringify(body) });
  return (await res.body.json()) as Record<string, unknown>;
}
async function compactEtcd(): Promise<void> {
  const range = await etcd('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
  const revision = (range.header as { revision: string }).revision;
  await etcd('/v3/kv/compaction', { revision, physical: true });
}

function counting(api: KubeApi) {
  const calls = { lists: 0 };
  return { calls, api: { ...api, list: <T>(p: string) => (calls.lists++, api.list<T>(p)) } satisfies KubeApi };
}

beforeAll(async () => {
  cp = await startKubeControlPlane({ watchCache: false });
  await kubectl(cp, ['create', 'namespace', OPERATOR_NAMESPACE]);
  await kubectl(cp, ['apply', '-f', path.join(ROOT, 'charts/webhook-fanout/crds'), '-f', path.join(ROOT, 'deploy/rbac')]);
  await kubectl(cp, ['wait', '--for=condition=Established', 'crd/webhookendpoints.webhookfanout.io']);
  ns = await createNamespace(cp, 'inf');
});

afterAll(async () => {
  await cp?.stop();
});

describe('informer (makeInformer + restart wrapper)', () => {
  it('lists once, then resumes its watch from the last resourceVersion without listing again', async () => {
    const kc = adminKubeConfig(cp);
    const { api, calls } = counting(createKubeApi(kc));
    const inf = createInformer<WebhookEndpointObject>({ kc, api, path: collectionPath('WebhookEndpoint', ns), resource: 'whe', logger });
    const added: string[] = [];
    inf.on('add', (o) => added.push(o.metadata.name));
    await apply(cp, ns, endpoint('first'));
    await inf.start();
    expect(inf.hasSynced()).toBe(true);
    expect(inf.get('first', ns)).toBeDefined();

    // interrupt the watch, change things meanwhile, resume: the events in between arrive
    await inf.stop();
    await apply(cp, ns, endpoint('second'));
    await inf.start();
    await eventually(async () => inf.get('second', ns), { what: 'second through the resumed watch' });
    expect(calls.lists).toBe(1);
    expect(added).toEqual(['first', 'second']);
    await inf.stop();
  });

  it('after 410 Gone (its resourceVersion compacted away) lists again, reporting what was deleted meanwhile', async () => {
    const kc = adminKubeConfig(cp);
    const { api, calls } = counting(createKubeApi(kc));
    const inf = createInformer<WebhookEndpointObject>({ kc, api, path: collectionPath('WebhookEndpoint', ns), resource: 'whe', logger });
    const deleted: string[] = [];
    inf.on('delete', (o) => deleted.push(o.metadata.name));
    await inf.start();
    expect(
      inf
        .list(ns)
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['first', 'second']);

    await inf.stop();
    await kubectl(cp, ['delete', 'whe', 'first', '-n', ns]);
    await apply(cp, ns, endpoint('third'));
    await compactEtcd();
    await inf.start();
    await eventually(async () => inf.get('third', ns) !== undefined && inf.get('first', ns) === undefined, {
      what: 'the re-list after 410',
    });
    expect(calls.lists).toBe(2);
    expect(deleted).toEqual(['first']);
    await inf.stop();
  });

  it('restarts after the API server went away, and the operator reconciles what was created after it came back', async () => {
    const tdb = await createTestDatabase();
    // the endpoint's source, owned in its namespace (docs/tenancy.md): it may subscribe, so it becomes Ready
    await ownSource(createRepositories(tdb.db), 's', ns);
    const op = await startTestOperator(cp, tdb.db, { namespaces: [ns] });
    try {
      await settled(op);
      const restarts = () => op.metrics.informerRestarts.get().then((m) => m.values.reduce((s, v) => s + v.value, 0));
      await cp.restartApiServer();
      await apply(cp, ns, endpoint('after-restart'));
      const crs = customObjects(cp);
      const o = await eventually(
        async () => {
          const r = await crs.get('WebhookEndpoint', ns, 'after-restart');
          return ready(r)?.status === 'True' ? r : undefined;
        },
        { timeoutMs: 60_000, what: 'after-restart Ready' },
      );
      expect(await tdb.db('webhook_endpoint').where({ resource_uid: o.metadata.uid }).first()).toMatchObject({
        url: 'http://x.example/after-restart',
      });
      expect(await restarts()).toBeGreaterThan(0);
    } finally {
      await op.stop();
      await tdb.destroy();
    }
  });
});
