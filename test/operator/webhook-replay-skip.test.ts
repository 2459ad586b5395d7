import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSignalTurn } from '../../src/api/start-replay.js';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { kubectl, type KubeConnection } from '../support/kube.js';
import { apply, applyRefused, createNamespace, settled, sharedKube, startTestOperator, type TestOperator } from '../support/kube-shared.js';
import { basic, http } from '../support/http.js';
import { eventually, sleep } from '../support/wait.js';
import { startReceiver, type Receiver, type RecordedRequest } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';
import { webhookReplays } from '../support/webhook-replays.js';

/**
 * WebhookReplay `spec.action: Skip` on a real kube-apiserver, with the real runtime behind it
 * (ingest, consumer, worker on Temporal): a FAILED ordered delivery that holds its key is skipped
 * by applying a manifest, as `POST /api/deliveries/{id}/skip` does, and the deliveries waiting
 * behind it go, in order; a delivery that is not FAILED, not ordered, or not of the replay's
 * namespace is refused with a condition that says so, and nothing moves; the CRD refuses a Skip
 * without a delivery or with a window.
 */
let conn: KubeConnection;
let stack: Stack;
let receiver: Receiver;
let ns: string;
let other: string;
let op: TestOperator;

const config = (source: string, receiverUrl: string) => `apiVersion: v1
kind: Secret
metadata: {name: ${source}-inbound}
stringData: {password: shop-pass}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: ${source}}
spec: {source: ${source}, username: ${source}, passwordSecretRef: {name: ${source}-inbound, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: orders}
spec:
  source: ${source}
  url: "${receiverUrl}/${source}/orders"
  maxAttempts: 1
  ordering: {key: "event.data.customer"}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: plain}
spec: {source: ${source}, url: "${receiverUrl}/${source}/plain", maxAttempts: 1}
`;

const skip = (name: string, deliveryId: string, extra = '') => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookReplay
metadata: {name: ${name}}
spec:
  action: Skip
  deliveryId: "${deliveryId}"
${extra}`;

const { condition, finished } = webhookReplays(() => conn);
const seqOf = (r: RecordedRequest): number => (JSON.parse(r.body.toString('utf8')) as { seq: number }).seq;
/** The seq of each request that reached an endpoint, in the order they arrived. */
const arrived = (path: string) => receiver.requests.filter((r) => r.path === path).map(seqOf);

async function send(source: string, body: Record<string, unknown>): Promise<string> {
  const res = await eventually(
    async () => {
      const r = await http(`${stack.url}/api/webhooks/${source}`, {
        headers: { authorization: basic(source, 'shop-pass'), 'content-type': 'application/json' },
        body: JSON.stringify({ id: randomUUID(), type: 'order.updated', ...body }),
      });
      return r.status === 200 ? r : undefined;
    },
    { what: `ingest accepting ${source}'s credential` },
  );
  return (res.json() as { eventId: string }).eventId;
}

interface DeliveryRow {
  id: string;
  status: string;
  ordering_skipped: boolean;
  ordering_behind: string | null;
}
/** The delivery of an event to an endpoint of the namespace. */
const deliveryOf = async (eventId: string, namespace: string, endpoint: string): Promise<DeliveryRow | undefined> =>
  (await stack.t
    .db('webhook_delivery as d')
    .join('webhook_endpoint as e', 'e.id', 'd.endpoint_id')
    .where({ 'd.event_id': eventId, 'e.namespace': namespace, 'e.name': `${namespace}/${endpoint}` })
    .first('d.id', 'd.status', 'd.ordering_skipped', 'd.ordering_behind')) as DeliveryRow | undefined;
const settledDelivery = (eventId: string, namespace: string, endpoint: string, status: string) =>
  eventually(
    async () => {
      const d = await deliveryOf(eventId, namespace, endpoint);
      return d?.status === status ? d : undefined;
    },
    { timeoutMs: 60_000, what: `the delivery of ${eventId} to ${namespace}/${endpoint} ${status}` },
  );

// the poison event (seq 1) of customer c1 and the two behind it; the same poison in the other namespace
let poison: DeliveryRow;
let plainFailed: DeliveryRow;
let waiting: DeliveryRow;
let otherPoison: DeliveryRow;
let events: string[];

beforeAll(async () => {
  [stack, receiver, conn] = await Promise.all([
    startStack(),
    // the poison event is refused (a 4xx is final), every other one taken
    startReceiver((_n, req) =>
      (JSON.parse(req.body.toString('utf8')) as { poison?: boolean }).poison ? { status: 422 } : { status: 200 },
    ),
    sharedKube(),
  ]);
  [ns, other] = await Promise.all([createNamespace(conn, 'skip'), createNamespace(conn, 'skip-other')]);
  op = await startTestOperator(conn, stack.t.db, {
    namespaces: [ns, other],
    startReplayRun: (req) => startReplay(stack.client, { ...req, taskQueue: stack.taskQueue }),
    signalTurn: bindSignalTurn(() => Promise.resolve(stack.client), stack.taskQueue),
  });
  await settled(op);
  const base = receiver.url.replace(/\/hook$/, '');
  await apply(conn, ns, config('shop', base));
  await apply(conn, other, config('other-shop', base));

  // one at a time, each after its 200: ingest's order is the order sent
  events = [];
  for (const [seq, extra] of [
    [1, { poison: true }],
    [2, {}],
    [3, {}],
  ] as const) {
    events.push(await send('shop', { seq, customer: 'c1', ...extra }));
  }
  const otherEvent = await send('other-shop', { seq: 1, customer: 'c1', poison: true });

  poison = await settledDelivery(events[0]!, ns, 'orders', 'FAILED');
  plainFailed = await settledDelivery(events[0]!, ns, 'plain', 'FAILED');
  otherPoison = await settledDelivery(otherEvent, other, 'orders', 'FAILED');
  waiting = await eventually(
    async () => {
      const d = await deliveryOf(events[1]!, ns, 'orders');
      return d?.status === 'PENDING' && d.ordering_behind === poison.id ? d : undefined;
    },
    { timeoutMs: 60_000, what: 'seq 2 waiting behind the poison' },
  );
  expect(arrived('/shop/orders')).toEqual([1]);
}, 240_000);

afterAll(async () => {
  await op?.stop();
  await stack?.close();
  await receiver?.close();
});

describe('WebhookReplay action Skip', () => {
  it('a delivery not ordered, not FAILED, of another namespace or none is Failed with a reason that says so; nothing moves', async () => {
    await apply(conn, ns, skip('unordered', plainFailed.id));
    await apply(conn, ns, skip('pending', waiting.id));
    await apply(conn, ns, skip('elsewhere', otherPoison.id));
    await apply(conn, ns, skip('missing', randomUUID()));

    const unordered = condition(await finished(ns, 'unordered', 'Failed'), 'Failed');
    expect(unordered).toMatchObject({ reason: 'NotSkippable' });
    expect(unordered?.message).toContain(`delivery ${plainFailed.id}`);
    expect(unordered?.message).toContain('it is not ordered');

    const pending = condition(await finished(ns, 'pending', 'Failed'), 'Failed');
    expect(pending).toMatchObject({ reason: 'NotSkippable' });
    expect(pending?.message).toContain('it is PENDING: only a FAILED delivery holds its key');

    // a replay reaches only what its namespace owns: the other namespace's delivery is not found
    for (const name of ['elsewhere', 'missing']) {
      const o = await finished(ns, name, 'Failed');
      expect(condition(o, 'Failed')).toMatchObject({ reason: 'DeliveryNotFound' });
      expect(condition(o, 'Failed')?.message).toContain(`no delivery to an endpoint of namespace ${ns}`);
      expect(condition(o, 'Complete')?.status).toBe('False');
      expect(o.status?.matched).toBe(0);
    }
    const warnings = await kubectl(conn, ['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=pending', '-o', 'json']);
    expect((JSON.parse(warnings) as { items: { reason: string; type: string }[] }).items).toEqual(
      expect.arrayContaining([expect.objectContaining({ reason: 'NotSkippable', type: 'Warning' })]),
    );

    // nothing skipped: both poisons still hold their key, and nothing more reached the endpoints
    await sleep(2_000);
    expect(await deliveryOf(events[0]!, ns, 'orders')).toMatchObject({ status: 'FAILED', ordering_skipped: false });
    expect(await deliveryOf(events[1]!, ns, 'orders')).toMatchObject({ status: 'PENDING', ordering_behind: poison.id });
    const otherNow = await stack.t.db('webhook_delivery').where({ id: otherPoison.id }).first('ordering_skipped');
    expect(otherNow).toEqual({ ordering_skipped: false });
    expect(arrived('/shop/orders')).toEqual([1]);
  }, 120_000);

  it('skips the FAILED delivery that holds its key: Complete, reason Skipped; the ones behind it go, in order', async () => {
    await apply(conn, ns, skip('unblock-c1', poison.id));
    const o = await finished(ns, 'unblock-c1', 'Complete');
    const complete = condition(o, 'Complete');
    expect(complete).toMatchObject({ reason: 'Skipped' });
    expect(complete?.message).toContain(`delivery ${poison.id} of endpoint ${ns}/orders (event ${events[0]}), key "c1" skipped`);
    expect(complete?.message).toContain('it stays FAILED and no longer holds its key');
    expect(o.status).toMatchObject({ matched: 1, skipped: 1 });
    expect(o.status?.window).toBeUndefined();

    await settledDelivery(events[2]!, ns, 'orders', 'SUCCESS');
    expect(arrived('/shop/orders')).toEqual([1, 2, 3]);
    expect(await deliveryOf(events[0]!, ns, 'orders')).toMatchObject({ status: 'FAILED', ordering_skipped: true });

    const recorded = await kubectl(conn, ['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=unblock-c1', '-o', 'json']);
    expect((JSON.parse(recorded) as { items: { reason: string }[] }).items.map((e) => e.reason)).toContain('Skipped');
    const wide = await kubectl(conn, ['get', 'webhookreplays', 'unblock-c1', '-n', ns, '-o', 'wide']);
    // no endpoint (an empty cell), the delivery skipped
    expect(wide).toMatch(new RegExp(`unblock-c1\\s+Skip\\s+${poison.id}\\s`));

    // a second Skip of it (another name) has nothing left to do, and says so
    await apply(conn, ns, skip('unblock-c1-again', poison.id));
    expect(condition(await finished(ns, 'unblock-c1-again', 'Complete'), 'Complete')).toMatchObject({ reason: 'AlreadySkipped' });
  }, 120_000);

  it('the CRD refuses a Skip without deliveryId or with a window, and a deliveryId on a Replay', async () => {
    const skipWithout = skip('no-delivery', randomUUID()).replace(/ {2}deliveryId: .*\n/, '');
    expect(await applyRefused(conn, ns, skipWithout)).toContain('deliveryId is required with action Skip');
    const withWindow = skip('with-window', randomUUID(), '  window: {from: "2026-11-27T08:00:00Z", to: "2026-11-27T09:00:00Z"}\n');
    expect(await applyRefused(conn, ns, withWindow)).toContain('are not used with action Skip');
    expect(await applyRefused(conn, ns, skip('dry', randomUUID(), '  dryRun: true\n'))).toContain('are not used with action Skip');
    const replayWithDelivery = skip('replay-delivery', randomUUID()).replace('action: Skip', 'action: Replay');
    expect(await applyRefused(conn, ns, replayWithDelivery)).toContain('endpointRef and window are required with action Replay');
    expect(await applyRefused(conn, ns, skip('not-a-uuid', 'x'))).toMatch(/deliveryId/);
  });
});
