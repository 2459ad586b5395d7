import { createHmac } from 'node:crypto';
import bcrypt from 'bcrypt';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointSpec } from '../../src/db/endpoints.js';
import { basic, http } from '../support/http.js';
import { startReceiver, type Receiver, type RecordedRequest } from '../support/receiver.js';
import { endpointSpec } from '../support/process-stack.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/wait.js';

const endpoint = (name: string, url: string, over: Partial<EndpointSpec> = {}): EndpointSpec =>
  endpointSpec(name, url, { timeoutSeconds: 2, ...over });

describe.each([
  { mode: 'consumer and worker apart', workerConsumesQueue: false },
  { mode: 'the worker consuming the queue, starting eagerly', workerConsumesQueue: true },
])('inbound webhook to downstream deliveries, end to end: $mode', ({ workerConsumesQueue }) => {
  let s: Stack;
  let signed: Receiver;
  let orders: Receiver;
  let flaky: Receiver;
  let other: Receiver;

  beforeAll(async () => {
    s = await startStack({ workerConsumesQueue });
    [signed, orders, flaky, other] = await Promise.all([
      startReceiver(),
      startReceiver(),
      startReceiver([{ status: 503 }, { status: 200 }]),
      startReceiver(),
    ]);
    await s.repos.credentials.upsertByResourceUid('test:shop', {
      source: 'shop',
      username: 'shop',
      passwordHash: await bcrypt.hash('shop-pass', 10),
      eventIdRule: null,
      eventTypeRule: null,
      resourceName: 'test/shop',
    });
    await s.repos.endpoints.upsertByResourceUid(
      'e1',
      endpoint('signed', `${signed.url}/all`, {
        signingType: 'HMAC',
        signingSecret: 'whsec_test',
        customHeaders: { 'X-Team': 'payments' },
      }),
    );
    await s.repos.endpoints.upsertByResourceUid(
      'e2',
      endpoint('orders', `${orders.url}/orders`, {
        eventType: 'order.created',
        authType: 'BEARER',
        authSecret: 'tok_123',
        method: 'PUT',
      }),
    );
    await s.repos.endpoints.upsertByResourceUid('e3', endpoint('flaky', `${flaky.url}/flaky`, { eventType: 'order.created' }));
    await s.repos.endpoints.upsertByResourceUid('e4', endpoint('other-type', `${other.url}/x`, { eventType: 'refund.created' }));
  });
  afterAll(async () => {
    await s?.close();
    await Promise.all([signed, orders, flaky, other].map((r) => r?.close()));
  });

  it('delivers one webhook to every matching endpoint with its auth, retries the 503, and completes the event', async () => {
    const body = '{"id":"ord_1","type":"order.created","total":12.5}';
    const res = await http(`${s.url}/api/webhooks/shop`, {
      headers: { authorization: basic('shop', 'shop-pass'), 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };

    const event = await eventually(async () => {
      const e = await s.repos.events.get(eventId);
      return e && e.status !== 'RECEIVED' ? e : undefined;
    });
    expect(event.status).toBe('COMPLETED');
    expect(event.workflowId).toBe(eventId);
    // eager start: the server handed the first workflow task to the starting process's worker
    const started = (await s.client.workflow.getHandle(eventId).fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(started?.eagerExecutionAccepted ?? false).toBe(workerConsumesQueue);

    // HMAC catch-all: the receiver recomputes the signature over the exact bytes
    expect(signed.requests).toHaveLength(1);
    const sig = signed.requests[0]!;
    expect(sig.body.toString()).toBe(body);
    expect(sig.headers['x-webhook-signature']).toBe(createHmac('sha256', 'whsec_test').update(sig.body).digest('base64'));
    expect(sig.headers['x-team']).toBe('payments');
    expect(sig.headers['content-type']).toBe('application/json');
    expect(sig.headers['x-webhook-event-id']).toBe(eventId);
    expect(sig.headers['x-webhook-source']).toBe('shop');
    expect(sig.headers['x-webhook-event-type']).toBe('order.created');
    expect(sig.headers.authorization).toBeUndefined();

    expect(orders.requests).toHaveLength(1);
    expect(orders.requests[0]!.method).toBe('PUT');
    expect(orders.requests[0]!.headers.authorization).toBe('Bearer tok_123');

    expect(flaky.requests.map((r) => r.headers['x-webhook-attempt'])).toEqual(['1', '2']);
    expect(other.requests).toHaveLength(0);

    const deliveries = await s.repos.deliveries.listByEvent(eventId);
    expect(deliveries.map((d) => d.status).sort()).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect(deliveries.map((d) => d.attempts).sort()).toEqual([1, 1, 2]);

    const metrics = await s.metrics.registry.metrics();
    // the started runs counted by how their first task reached the worker
    // (eager may fall back to the task queue when the worker has no free slot: not asserted)
    const startMode = workerConsumesQueue ? 'eager' : 'task_queue';
    expect(metrics).toMatch(new RegExp(`webhook_fanout_workflows_started_total\\{start="${startMode}"\\} [1-9]`));
    if (!workerConsumesQueue) expect(metrics).toMatch(/webhook_fanout_workflows_started_total\{start="eager"\} 0\n/);
    expect(metrics).toMatch(/webhook_fanout_delivery_attempts_total\{outcome="retryable",status_class="5xx"\} 1/);
    expect(metrics).toMatch(/webhook_fanout_event_end_to_end_seconds_count\{status="COMPLETED"\} [1-9]/);
  });

  it('STANDARD_WEBHOOKS: a receiver using the published verifier accepts the delivery, during a key rotation too', async () => {
    const oldKey = `whsec_${Buffer.from('an-old-key-of-24-bytes!!').toString('base64')}`;
    const newKey = `whsec_${Buffer.from('the-new-key-of-24-bytes!').toString('base64')}`;
    // each answers 204 only when the published verifier accepts the request with the key it holds
    const verifying = (key: string) => (_n: number, req: RecordedRequest) => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      try {
        new Webhook(key).verify(req.body, headers);
        return { status: 204 };
      } catch (err) {
        return { status: 401, body: err instanceof Error ? err.message : 'invalid' };
      }
    };
    const holdsOld = await startReceiver(verifying(oldKey));
    const holdsNew = await startReceiver(verifying(newKey));
    try {
      await s.repos.credentials.upsertByResourceUid('test:sw', {
        source: 'sw',
        username: 'sw',
        passwordHash: await bcrypt.hash('sw-pass', 4),
        eventIdRule: null,
        eventTypeRule: null,
        resourceName: 'test/sw',
      });
      for (const [uid, r] of [
        ['sw-old', holdsOld],
        ['sw-new', holdsNew],
      ] as const) {
        await s.repos.endpoints.upsertByResourceUid(
          uid,
          endpoint(uid, `${r.url}/hook`, {
            source: 'sw',
            signingType: 'STANDARD_WEBHOOKS',
            signingSecret: newKey,
            previousSigningSecret: oldKey,
          }),
        );
      }
      const res = await http(`${s.url}/api/webhooks/sw`, {
        headers: { authorization: basic('sw', 'sw-pass'), 'content-type': 'application/json' },
        body: '{"id":"sw_1","type":"order.created","note":"Zoë €"}',
      });
      expect(res.status).toBe(200);
      const { eventId } = res.json() as { eventId: string };
      const event = await eventually(async () => {
        const e = await s.repos.events.get(eventId);
        return e && e.status !== 'RECEIVED' ? e : undefined;
      });
      expect(event.status).toBe('COMPLETED');
      for (const r of [holdsOld, holdsNew]) {
        expect(r.requests).toHaveLength(1);
        expect(r.requests[0]!.headers['webhook-id']).toBe(eventId);
      }
    } finally {
      await Promise.all([holdsOld.close(), holdsNew.close()]);
    }
  });

  it('turns 20 concurrent identical webhooks into one event, one workflow, one request per endpoint', async () => {
    signed.requests.length = 0;
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        http(`${s.url}/api/webhooks/shop`, {
          headers: { authorization: basic('shop', 'shop-pass'), 'content-type': 'application/json' },
          body: '{"id":"ord_same","type":"refund.created"}',
        }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const ids = new Set(results.map((r) => (r.json() as { eventId: string }).eventId));
    expect(ids.size).toBe(1);
    const [eventId] = [...ids] as [string];
    await eventually(async () => (await s.repos.events.get(eventId))?.status === 'COMPLETED');

    // visibility is eventually consistent: wait for the run to show, then count
    const runs = await eventually(async () => {
      const found = [];
      for await (const w of s.client.workflow.list({ query: `WorkflowId = '${eventId}'` })) found.push(w);
      return found.length > 0 ? found : undefined;
    });
    expect(runs).toHaveLength(1);
    expect(signed.requests.filter((r) => r.headers['x-webhook-event-id'] === eventId)).toHaveLength(1);
    expect(other.requests.filter((r) => r.headers['x-webhook-event-id'] === eventId)).toHaveLength(1);
  });
});
