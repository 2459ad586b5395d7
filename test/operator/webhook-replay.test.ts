import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReplay } from '../../src/temporal/replay-starter.js';
import type { StartReplayRun } from '../../src/temporal/replay-runner.js';
import { kubectl, type KubeConnection } from '../support/kube.js';
import { apply, applyRefused, createNamespace, settled, sharedKube, startTestOperator, type TestOperator } from '../support/kube-shared.js';
import { basic, http } from '../support/http.js';
import { eventually, sleep } from '../support/wait.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';
import { webhookReplays } from '../support/webhook-replays.js';

/**
 * WebhookReplay on a real kube-apiserver, with the real runtime (ingest, consumer, worker on
 * Temporal) behind it: the deliveries an outage failed are replayed once, by applying a manifest;
 * a dry run counts and sends nothing; an operator restarted in the middle, a re-apply and a
 * re-created manifest replay nothing twice; the spec can not be changed; an endpoint of another
 * namespace is not found, one its source does not allow is refused.
 */
let conn: KubeConnection;
let stack: Stack;
let receiver: Receiver;
let ns: string;
let other: string;
let op: TestOperator;
let failing = true;

const startRun: () => StartReplayRun = () => (req) => startReplay(stack.client, { ...req, taskQueue: stack.taskQueue });
const startOperator = () => startTestOperator(conn, stack.t.db, { namespaces: [ns, other], startReplayRun: startRun() });

const config = (receiverUrl: string) => `apiVersion: v1
kind: Secret
metadata: {name: shop-inbound}
stringData: {password: shop-pass}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: shop}
spec: {source: shop, username: shop, passwordSecretRef: {name: shop-inbound, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: orders}
spec: {source: shop, url: "${receiverUrl}/orders", maxAttempts: 1}
`;

const replay = (name: string, from: Date, to: Date, extra = '') => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookReplay
metadata: {name: ${name}}
spec:
  endpointRef: {name: orders}
  window: {from: "${from.toISOString()}", to: "${to.toISOString()}"}
${extra}`;

const { get, condition, finished } = webhookReplays(() => conn);
const complete = (namespace: string, name: string, timeoutMs = 60_000) => finished(namespace, name, 'Complete', timeoutMs);

/** Requests to the endpoint for each event id. */
const deliveriesTo = (eventId: string) => receiver.requests.filter((r) => r.headers['x-webhook-event-id'] === eventId).length;

const eventIds: string[] = [];
let from: Date;
let to: Date;

beforeAll(async () => {
  [stack, receiver, conn] = await Promise.all([
    startStack(),
    startReceiver(() => (failing ? { status: 503, body: 'outage' } : { status: 200, body: 'ok' })),
    sharedKube(),
  ]);
  [ns, other] = await Promise.all([createNamespace(conn, 'replay'), createNamespace(conn, 'replay-other')]);
  op = await startOperator();
  await settled(op);
  const base = receiver.url.replace(/\/hook$/, '');
  await apply(conn, ns, config(base));
  // an endpoint of another namespace: a replay here can not name it
  await apply(
    conn,
    other,
    config(base)
      .replace(/shop-inbound/g, 'other-inbound')
      .replace(/source: shop/g, 'source: other-shop')
      .replace('name: orders', 'name: elsewhere'),
  );

  // the outage: five events whose one delivery each ends FAILED (503, one attempt)
  from = new Date(Date.now() - 1000);
  for (let i = 0; i < 5; i++) {
    const res = await eventually(
      async () => {
        const r = await http(`${stack.url}/api/webhooks/shop`, {
          headers: { authorization: basic('shop', 'shop-pass'), 'content-type': 'application/json' },
          body: JSON.stringify({ id: `outage-${i}`, type: 'order.created' }),
        });
        return r.status === 200 ? r : undefined;
      },
      { what: 'ingest accepting the credential' },
    );
    eventIds.push((res.json() as { eventId: string }).eventId);
  }
  await eventually(async () => Number((await stack.t.db('webhook_delivery').where({ status: 'FAILED' }).count('* as n'))[0]?.n) === 5, {
    timeoutMs: 60_000,
    what: 'the five deliveries FAILED',
  });
  to = new Date(Date.now() + 1000);
  failing = false;
}, 180_000);

afterAll(async () => {
  await op?.stop();
  await stack?.close();
  await receiver?.close();
});

describe('WebhookReplay', () => {
  it('a dry run counts what it would replay, sends nothing, and is Complete with reason DryRun', async () => {
    const before = receiver.requests.length;
    await apply(conn, ns, replay('dry', from, to, '  dryRun: true\n'));
    const o = await complete(ns, 'dry');
    expect(condition(o, 'Complete')?.reason).toBe('DryRun');
    expect(o.status).toMatchObject({ matched: 5, started: 0, succeeded: 0, failed: 0 });
    expect(o.status?.window).toBe(`${from.toISOString()}..${to.toISOString()}`);
    expect(receiver.requests.length).toBe(before);
  });

  it('replays the FAILED deliveries of the window once; kubectl wait --for=condition=Complete works; Events say so', async () => {
    await apply(conn, ns, replay('outage', from, to));
    await kubectl(conn, ['wait', '--for=condition=Complete', 'webhookreplay/outage', '-n', ns, '--timeout=60s']);
    const o = await get(ns, 'outage');
    expect(o?.status).toMatchObject({ matched: 5, skipped: 0, started: 5, succeeded: 5, failed: 0 });
    expect(condition(o, 'Complete')?.reason).toBe('Replayed');
    for (const id of eventIds) expect(deliveriesTo(id)).toBe(2);
    expect(Number((await stack.t.db('webhook_delivery').where({ status: 'SUCCESS' }).count('* as n'))[0]?.n)).toBe(5);
    const events = await kubectl(conn, ['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=outage', '-o', 'json']);
    const reasons = (JSON.parse(events) as { items: { reason: string }[] }).items.map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Started', 'Completed']));
    // kubectl get shows endpoint, window and counts
    const table = await kubectl(conn, ['get', 'webhookreplays', '-n', ns]);
    expect(table).toMatch(/NAME\s+ENDPOINT\s+WINDOW\s+MATCHED\s+SUCCEEDED\s+FAILED\s+AGE/);
    expect(table).toMatch(/outage\s+orders\s+\S+\.\.\S+\s+5\s+5\s+0/);
  });

  it('a re-apply, and the same manifest deleted and created again, replay nothing more', async () => {
    const before = receiver.requests.length;
    await apply(conn, ns, replay('outage', from, to));
    await kubectl(conn, ['delete', 'webhookreplay', 'outage', '-n', ns, '--wait=true']);
    await apply(conn, ns, replay('outage', from, to));
    const o = await complete(ns, 'outage');
    expect(condition(o, 'Complete')?.reason).toBe('AlreadyReplayed');
    expect(o.status).toMatchObject({ matched: 5, succeeded: 5 });
    await sleep(2_000);
    expect(receiver.requests.length).toBe(before);
  });

  it('the spec can not be changed once created; a window that ends before it begins is refused', async () => {
    const stderr = await applyRefused(conn, ns, replay('outage', from, new Date(to.getTime() + 60_000)));
    expect(stderr).toContain('spec is immutable');
    expect(await applyRefused(conn, ns, replay('backwards', to, from))).toContain('window.from must be before window.to');
  });

  it('an endpoint of another namespace, or none, is Failed with reason EndpointNotFound; nothing is sent', async () => {
    const before = receiver.requests.length;
    await apply(conn, ns, replay('elsewhere', from, to).replace('name: orders', 'name: elsewhere'));
    await apply(conn, ns, replay('missing', from, to).replace('name: orders', 'name: no-such-endpoint'));
    for (const name of ['elsewhere', 'missing']) {
      const o = await finished(ns, name, 'Failed');
      expect(condition(o, 'Failed')?.reason).toBe('EndpointNotFound');
      expect(condition(o, 'Complete')?.status).toBe('False');
    }
    expect(receiver.requests.length).toBe(before);
  });

  it('an endpoint its source does not allow is Failed with reason NotAllowedBySource, as the admin API refuses it', async () => {
    // namespace "other" subscribes to source shop, whose credential (namespace ns) allows only its own namespace
    await apply(
      conn,
      other,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: intruder}
spec: {source: shop, url: "${receiver.url}", maxAttempts: 1}
`,
    );
    await apply(conn, other, replay('intruder-replay', from, to).replace('name: orders', 'name: intruder'));
    const o = await finished(other, 'intruder-replay', 'Failed');
    expect(condition(o, 'Failed')).toMatchObject({ reason: 'NotAllowedBySource' });
    expect(condition(o, 'Failed')?.message).toContain('replays to it are refused until its source allows it');
    expect(o.status).toMatchObject({ started: 0 });
  });

  it('SUCCESS deliveries too, with the operator restarted in the middle: each is delivered once more, not twice', async () => {
    // slow answers keep the runs in flight while the operator goes away and a new one takes over
    receiver.setScript(() => ({ status: 200, body: 'ok', delayMs: 1_500 }));
    const counts = eventIds.map(deliveriesTo);
    await apply(conn, ns, replay('again', from, to, '  statuses: [SUCCESS]\n'));
    await eventually(async () => ((await get(ns, 'again'))?.status?.started ?? 0) > 0, { what: 'the replay started' });
    await op.stop();
    op = await startOperator();
    const o = await complete(ns, 'again', 90_000);
    expect(o.status).toMatchObject({ matched: 5, started: 5, succeeded: 5, failed: 0 });
    eventIds.forEach((id, i) => expect(deliveriesTo(id)).toBe(counts[i]! + 1));
  });

  it('ttlSecondsAfterFinished deletes a finished replay', async () => {
    await apply(conn, ns, replay('short-lived', from, to, '  dryRun: true\n  ttlSecondsAfterFinished: 1\n'));
    await eventually(async () => (await get(ns, 'short-lived')) === undefined, { timeoutMs: 30_000, what: 'the replay deleted' });
  });
});
