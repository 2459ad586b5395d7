import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { kubectl, type KubeConnection } from '../support/kube.js';
import { apply, createNamespace, settled, sharedKube, startTestOperator, type TestOperator } from '../support/kube-shared.js';
import { basic, http } from '../support/http.js';
import { eventually, sleep } from '../support/wait.js';
import { startReceiver, type Receiver, type RecordedRequest } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * Operational events (docs/operations-events.md) end to end: a real kube-apiserver and operator,
 * ingest, consumer and worker on Postgres and Temporal, real receivers. Each type is raised by
 * causing it (a receiver that fails until its endpoint is disabled, an enable by annotation, an
 * endpoint its source does not allow, a credential whose Secret is missing, a WebhookReplay that
 * ends) and delivered to the WebhookEndpoints that subscribe to the reserved source: in the
 * subject's namespace, with their filter, transform and signature, and in the platform namespace;
 * never in another tenant's.
 */
const OPS = 'webhook-fanout';
let conn: KubeConnection;
let stack: Stack;
let op: TestOperator;
let failing: Receiver;
let subscribers: Receiver;
let payments: string;
let orders: string;
let platform: string;
let source: string;

/** The operational events a subscriber's path received, parsed (the platform's are CloudEvents: their data). */
const received = (path: string): Array<{ req: RecordedRequest; data: Record<string, unknown> }> =>
  subscribers.requests
    .filter((r) => r.path === path)
    .map((r) => {
      const body = JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
      return { req: r, data: (path === '/platform' ? body.data : body) as Record<string, unknown> };
    });

const waitFor = (path: string, match: (d: Record<string, unknown>) => boolean, what: string) =>
  eventually(async () => received(path).find((r) => match(r.data)), { timeoutMs: 60_000, what });

const about = (type: string, name: string) => (d: Record<string, unknown>) =>
  d.type === type && (d.subject as { name?: string } | undefined)?.name === name;

const SLACK = `'{"text": "WebhookEndpoint " & data.subject.namespace & "/" & data.subject.name & " was disabled after " & $string(data.consecutiveFailures) & " failed deliveries in a row"}'`;

beforeAll(async () => {
  conn = await sharedKube();
  [payments, orders, platform] = await Promise.all([
    createNamespace(conn, 'payments'),
    createNamespace(conn, 'orders'),
    createNamespace(conn, 'platform'),
  ]);
  stack = await startStack({ operations: { source: OPS, platformNamespaces: [platform] } });
  // the platform's receiver fails its first request: the operational event is retried like any
  let platformFailed = false;
  [failing, subscribers] = await Promise.all([
    startReceiver([{ status: 500 }]),
    startReceiver((_n, req) => {
      if (req.path !== '/platform' || platformFailed) return { status: 200 };
      platformFailed = true;
      return { status: 503 };
    }),
  ]);
  op = await startTestOperator(conn, stack.t.db, {
    namespaces: [payments, orders, platform],
    startReplayRun: (req) => startReplay(stack.client, { ...req, taskQueue: stack.taskQueue }),
  });
  source = `shop-${payments}`;
  const hook = (path: string) => `${subscribers.origin}${path}`;
  await apply(
    conn,
    payments,
    `apiVersion: v1
kind: Secret
metadata: {name: shop-inbound}
stringData: {password: shop-pass, signing: whsec_ops}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: shop}
spec: {source: ${source}, username: shop, passwordSecretRef: {name: shop-inbound, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ledger}
spec: {source: ${source}, url: "${failing.url}", maxAttempts: 1, autoDisable: {afterConsecutiveFailures: 1}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ledger-failures}
spec:
  source: ${OPS}
  url: "${hook('/ledger-failures')}"
  filter: event.type == 'delivery.failed' && event.data.endpoint.name == 'ledger'
  auth: {type: HMAC, secretRef: {name: shop-inbound, key: signing}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: slack}
spec:
  source: ${OPS}
  eventType: endpoint.disabled
  url: "${hook('/slack')}"
  transform: {jsonata: ${SLACK}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: everything}
spec: {source: ${OPS}, url: "${hook('/payments')}"}
`,
  );
  await apply(
    conn,
    orders,
    `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: everything}
spec: {source: ${OPS}, url: "${hook('/orders')}"}
`,
  );
  await apply(
    conn,
    platform,
    `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: everything}
spec: {source: ${OPS}, url: "${hook('/platform')}", format: CloudEventsStructured}
`,
  );
  await settled(op);
}, 240_000);

afterAll(async () => {
  await op?.stop();
  await stack?.close();
  await Promise.all([failing, subscribers].map((r) => r?.close()));
});

describe('operational events, raised by the real thing and delivered like any event', () => {
  it('a failing receiver: delivery.failed through a filter, signed; endpoint.disabled through a JSONata transform; the platform gets both as CloudEvents; another tenant nothing', async () => {
    const res = await http(`${stack.url}/api/webhooks/${source}`, {
      headers: { authorization: basic('shop', 'shop-pass'), 'content-type': 'application/json' },
      body: '{"id":"inv_1","type":"invoice.paid"}',
    });
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };

    const failed = await waitFor('/ledger-failures', (d) => d.type === 'delivery.failed', 'delivery.failed at the filtered endpoint');
    expect(failed.data).toMatchObject({
      subject: { kind: 'WebhookEndpoint', namespace: payments, name: 'ledger' },
      endpoint: { namespace: payments, name: 'ledger', source },
      delivery: { eventId, source, eventType: 'invoice.paid', attempts: 1, lastStatus: 500 },
    });
    // signed over the exact bytes with the subscriber's own secret
    expect(failed.req.headers['x-webhook-signature']).toBe(createHmac('sha256', 'whsec_ops').update(failed.req.body).digest('base64'));
    expect(failed.req.headers['x-webhook-source']).toBe(OPS);
    expect(failed.req.headers['x-webhook-event-type']).toBe('delivery.failed');

    const slack = await eventually(async () => subscribers.requests.find((r) => r.path === '/slack'), {
      timeoutMs: 60_000,
      what: 'the Slack message',
    });
    expect(JSON.parse(slack.body.toString('utf8'))).toEqual({
      text: `WebhookEndpoint ${payments}/ledger was disabled after 1 failed deliveries in a row`,
    });

    const cloudEvent = await waitFor('/platform', about('endpoint.disabled', 'ledger'), 'endpoint.disabled at the platform');
    const envelope = JSON.parse(cloudEvent.req.body.toString('utf8')) as Record<string, unknown>;
    expect(envelope).toMatchObject({ specversion: '1.0', type: 'endpoint.disabled', source: `/webhook-fanout/${OPS}` });
    await waitFor('/platform', about('delivery.failed', 'ledger'), 'delivery.failed at the platform');
    // the platform's first request failed: retried, and the attempt log says so (once it is recorded)
    const outcomes = await eventually(
      async () => {
        const rows: Array<{ outcome: string; response_status: number | null }> = await stack.t
          .db('webhook_delivery_attempt as a')
          .join('webhook_delivery as d', 'd.id', 'a.delivery_id')
          .join('webhook_endpoint as ep', 'ep.id', 'd.endpoint_id')
          .where('ep.name', `${platform}/everything`)
          .select('a.outcome', 'a.response_status');
        return rows.filter((o) => o.outcome === 'SUCCESS').length >= 2 ? rows : undefined;
      },
      { timeoutMs: 30_000, what: "the platform's attempt log" },
    );
    expect(outcomes).toContainEqual({ outcome: 'RETRYING', response_status: 503 });
    await waitFor('/payments', about('endpoint.disabled', 'ledger'), 'endpoint.disabled at the catch-all of payments');

    // the filter kept endpoint.disabled away from ledger-failures; nothing reached orders
    expect(received('/ledger-failures').map((r) => r.data.type)).toEqual(['delivery.failed']);
    await sleep(2_000);
    expect(received('/orders')).toEqual([]);
    // each change once
    expect(received('/payments').filter((r) => r.data.type === 'endpoint.disabled')).toHaveLength(1);
  });

  it('enabling by the annotation raises endpoint.enabled', async () => {
    await kubectl(conn, ['annotate', '--overwrite', 'whe', 'ledger', '-n', payments, 'webhookfanout.io/enable=now']);
    const enabled = await waitFor('/payments', about('endpoint.enabled', 'ledger'), 'endpoint.enabled');
    expect(enabled.data).toMatchObject({ enabledBy: 'annotation', endpoint: { name: 'ledger', namespace: payments } });
  });

  it("an endpoint its source does not allow raises endpoint.not_allowed in the endpoint's namespace only", async () => {
    await apply(
      conn,
      orders,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: thief}
spec: {source: ${source}, url: "${subscribers.origin}/thief"}
`,
    );
    const denied = await waitFor('/orders', about('endpoint.not_allowed', 'thief'), 'endpoint.not_allowed at orders');
    expect(denied.data).toMatchObject({ reason: 'NotAllowedBySource', subject: { namespace: orders } });
    await waitFor('/platform', about('endpoint.not_allowed', 'thief'), 'endpoint.not_allowed at the platform');
    expect(received('/payments').filter((r) => r.data.type === 'endpoint.not_allowed')).toEqual([]);
  });

  it('a credential whose Secret is missing raises credential.not_ready', async () => {
    await apply(
      conn,
      payments,
      `apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: broken}
spec: {source: broken-${payments}, username: u, passwordSecretRef: {name: no-such-secret, key: password}}
`,
    );
    const notReady = await waitFor('/payments', about('credential.not_ready', 'broken'), 'credential.not_ready');
    expect(notReady.data).toMatchObject({
      reason: 'SecretNotFound',
      subject: { kind: 'InboundCredential', namespace: payments },
      credential: { source: `broken-${payments}` },
    });
  });

  it('a WebhookReplay that ends raises replay.completed', async () => {
    const now = Date.now();
    await apply(
      conn,
      payments,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookReplay
metadata: {name: count-ledger}
spec:
  endpointRef: {name: ledger}
  window: {from: "${new Date(now - 3_600_000).toISOString()}", to: "${new Date(now + 60_000).toISOString()}"}
  dryRun: true
`,
    );
    const done = await waitFor('/payments', about('replay.completed', 'count-ledger'), 'replay.completed');
    expect(done.data).toMatchObject({ subject: { kind: 'WebhookReplay', namespace: payments }, replay: { phase: 'Complete', matched: 1 } });
  });

  it('operational events are replayed like any: a WebhookReplay of the subscriber re-sends what it got', async () => {
    const disabled = received('/payments').find((r) => about('endpoint.disabled', 'ledger')(r.data));
    const eventId = String(disabled?.req.headers['x-webhook-event-id']);
    const now = Date.now();
    await apply(
      conn,
      payments,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookReplay
metadata: {name: resend-ops}
spec:
  endpointRef: {name: everything}
  window: {from: "${new Date(now - 3_600_000).toISOString()}", to: "${new Date(now).toISOString()}"}
  statuses: [SUCCESS]
`,
    );
    await eventually(
      async () => subscribers.requests.filter((r) => r.path === '/payments' && r.headers['x-webhook-event-id'] === eventId).length === 2,
      { timeoutMs: 60_000, what: 'endpoint.disabled re-sent by the replay' },
    );
    await waitFor('/payments', about('replay.completed', 'resend-ops'), 'the replay of operational events raises its own replay.completed');
  });

  it('the reserved source: an InboundCredential for it is ReservedSource, and a post to it is refused as an unknown source', async () => {
    await apply(
      conn,
      payments,
      `apiVersion: v1
kind: Secret
metadata: {name: taker}
stringData: {password: taker-pass}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: taker}
spec: {source: ${OPS}, username: taker, passwordSecretRef: {name: taker, key: password}}
`,
    );
    const reason = await eventually(
      async () => {
        const out = await kubectl(conn, [
          'get',
          'ic',
          'taker',
          '-n',
          payments,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].reason}',
        ]);
        return out === 'ReservedSource' ? out : undefined;
      },
      { timeoutMs: 30_000, what: 'Ready=False ReservedSource' },
    );
    expect(reason).toBe('ReservedSource');
    const res = await http(`${stack.url}/api/webhooks/${OPS}`, {
      headers: { authorization: basic('taker', 'taker-pass'), 'content-type': 'application/json' },
      body: '{"type":"endpoint.disabled"}',
    });
    expect(res.status).toBe(401);
    expect(await stack.t.db('webhook_inbound_credential').where({ source: OPS }).first()).toBeUndefined();
  });
});
