import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../support/kube.js';
import { kubectl } from '../support/kube.js';
import { apply, customObjects, ready } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { basic, http } from '../support/http.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * End to end: resources applied with kubectl configure the running service (ingest, consumer and
 * worker on Postgres, fauxqs and the Temporal dev server) through the operator, and a real webhook
 * reaches a real HTTP receiver; rotating Secrets changes what ingest accepts and what delivery
 * sends, without a restart.
 */
let conn: KubeConnection;
let stack: Stack;
let receiver: Receiver;
let ns: string;

const manifests = (receiverUrl: string, inboundPassword: string, outboundToken: string, signing: string) => `apiVersion: v1
kind: Secret
metadata: {name: acme-inbound}
stringData: {password: ${JSON.stringify(inboundPassword)}}
---
apiVersion: v1
kind: Secret
metadata: {name: orders-auth}
stringData: {token: ${JSON.stringify(outboundToken)}, signing: ${JSON.stringify(signing)}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: acme}
spec:
  source: acme
  username: acme-sender
  passwordSecretRef: {name: acme-inbound, key: password}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: orders-bearer}
spec:
  source: acme
  eventType: order.created
  url: ${receiverUrl}/bearer
  auth: {type: BEARER, secretRef: {name: orders-auth, key: token}}
  customHeaders: {X-Team: orders}
  maxAttempts: 3
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: audit-hmac}
spec:
  source: acme
  url: ${receiverUrl}/hmac
  auth: {type: HMAC, secretRef: {name: orders-auth, key: signing}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: token-and-signature}
spec:
  source: acme
  eventType: order.created
  url: ${receiverUrl}/both
  auth: {type: Bearer, secretRef: {name: orders-auth, key: token}}
  signing: {type: HMAC, secretRef: {name: orders-auth, key: signing}}
`;

let scene: OperatorScene;

beforeAll(async () => {
  [stack, receiver] = await Promise.all([startStack(), startReceiver()]);
  // on the stack's database, which the stack drops
  scene = await startOperatorScene('e2e', { database: stack.t });
  ({ conn, ns } = scene);
});

afterAll(async () => {
  await scene?.close();
  await stack?.close();
  await receiver?.close();
});

const send = (password: string, id: string, type = 'order.created') =>
  http(`${stack.url}/api/webhooks/acme`, {
    headers: { authorization: basic('acme-sender', password), 'content-type': 'application/json' },
    body: JSON.stringify({ id, type, amount: 42 }),
  });

const received = (path: string, eventId: string) =>
  receiver.requests.find((r) => r.path === path && r.headers['x-webhook-event-id'] === eventId);

describe('kubectl -> operator -> ingest -> SNS/SQS -> Temporal -> receiver', () => {
  it('routes a real webhook to the endpoints the custom resources configure', async () => {
    const base = receiver.url.replace(/\/hook$/, '');
    await apply(conn, ns, manifests(base, 'inbound-v1', 'token-v1', 'sign-v1'));
    const crs = customObjects(conn);
    for (const name of ['orders-bearer', 'audit-hmac', 'token-and-signature']) {
      await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, name))?.status === 'True', { what: `${name} Ready` });
    }
    await eventually(async () => ready(await crs.get('InboundCredential', ns, 'acme'))?.status === 'True', { what: 'acme Ready' });

    const res = await eventually(
      async () => {
        const r = await send('inbound-v1', 'evt-1');
        return r.status === 200 ? r : undefined;
      },
      { what: 'ingest accepting the credential' },
    );
    const { eventId } = res.json() as { eventId: string };

    const bearer = await eventually(async () => received('/bearer', eventId), { timeoutMs: 30_000, what: 'the BEARER delivery' });
    expect(bearer.headers.authorization).toBe('Bearer token-v1');
    expect(bearer.headers['x-team']).toBe('orders');
    expect(JSON.parse(bearer.body.toString())).toEqual({ id: 'evt-1', type: 'order.created', amount: 42 });
    const hmac = await eventually(async () => received('/hmac', eventId), { timeoutMs: 30_000, what: 'the HMAC delivery' });
    expect(hmac.headers['x-webhook-signature']).toBe(createHmac('sha256', 'sign-v1').update(hmac.body).digest('base64'));
    expect(hmac.headers.authorization).toBeUndefined();
    // spec.auth and spec.signing together: the token and the signature on one request
    const both = await eventually(async () => received('/both', eventId), { timeoutMs: 30_000, what: 'the Bearer + HMAC delivery' });
    expect(both.headers.authorization).toBe('Bearer token-v1');
    expect(both.headers['x-webhook-signature']).toBe(createHmac('sha256', 'sign-v1').update(both.body).digest('base64'));

    expect((await send('wrong', 'evt-x')).status).toBe(401);
  });

  it('rotating the Secrets changes what ingest accepts and what delivery sends, within seconds, without a restart', async () => {
    const t0 = Date.now();
    await kubectl(conn, [
      'create',
      'secret',
      'generic',
      'acme-inbound',
      '-n',
      ns,
      '--from-literal=password=inbound-v2',
      '--dry-run=client',
      '-o',
      'yaml',
    ]).then((yaml) => apply(conn, ns, yaml));
    await kubectl(conn, [
      'patch',
      'secret',
      'orders-auth',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"stringData":{"token":"token-v2","signing":"sign-v2"}}',
    ]);

    // ingest re-reads credential rows every 2 s: the old password stops working, the new one works
    const res = await eventually(
      async () => {
        const r = await send('inbound-v2', 'evt-2');
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 15_000, what: 'the new inbound password accepted' },
    );
    await eventually(async () => (await send('inbound-v1', 'evt-old')).status === 401, {
      timeoutMs: 15_000,
      what: 'the old password refused',
    });
    expect(Date.now() - t0).toBeLessThan(10_000);

    const { eventId } = res.json() as { eventId: string };
    const bearer = await eventually(async () => received('/bearer', eventId), {
      timeoutMs: 30_000,
      what: 'the BEARER delivery after rotation',
    });
    expect(bearer.headers.authorization).toBe('Bearer token-v2');
    const hmac = await eventually(async () => received('/hmac', eventId), { timeoutMs: 30_000, what: 'the HMAC delivery after rotation' });
    expect(hmac.headers['x-webhook-signature']).toBe(createHmac('sha256', 'sign-v2').update(hmac.body).digest('base64'));
    const both = await eventually(async () => received('/both', eventId), {
      timeoutMs: 30_000,
      what: 'the Bearer + HMAC delivery after rotation',
    });
    expect(both.headers.authorization).toBe('Bearer token-v2');
    expect(both.headers['x-webhook-signature']).toBe(createHmac('sha256', 'sign-v2').update(both.body).digest('base64'));
  });

  it('a deleted WebhookEndpoint receives nothing more; its past deliveries keep their endpoint row', async () => {
    await kubectl(conn, ['delete', 'whe', 'orders-bearer', '-n', ns, '--wait=true']);
    const res = await send('inbound-v2', 'evt-3');
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };
    await eventually(async () => received('/hmac', eventId), { timeoutMs: 30_000, what: 'the HMAC delivery' });
    const event = await eventually(
      async () => {
        const e = await stack.repos.events.get(eventId);
        return e && e.status !== 'RECEIVED' ? e : undefined;
      },
      { timeoutMs: 30_000, what: 'the event finished' },
    );
    expect(event.status).toBe('COMPLETED');
    expect(received('/bearer', eventId)).toBeUndefined();
    const deliveries = await stack.t
      .db('webhook_delivery')
      .join('webhook_endpoint', 'webhook_endpoint.id', 'webhook_delivery.endpoint_id')
      .select('webhook_endpoint.name', 'webhook_endpoint.active');
    expect(deliveries).toEqual(expect.arrayContaining([{ name: `${ns}/orders-bearer`, active: false }]));
  });
});
