import { describe, expect } from 'vitest';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from './support/harness.js';
import { counterDelta, it } from './support/fixtures.js';
import { refusedUrl } from '../support/receiver.js';

// One endpoint per test: each row of the delivery state table, end to end through a real
// workflow, the real sender and a real HTTP receiver.
describe('delivery outcomes', () => {
  it('2xx: SUCCESS after one attempt, the stored body sent byte-for-byte with the X-Webhook headers', async ({ h, receiver }) => {
    const r = await receiver([{ status: 202, body: 'accepted' }]);
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: r.url });
    const payload = '{"id":"evt_1", "type":"payment.succeeded"}';
    const eventId = await addEvent(h.repos, { source, eventType: 'payment.succeeded', payload });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'SUCCESS', attempts: 1, lastResponseStatus: 202, lastResponseBody: 'accepted', lastError: null });
    expect(r.requests).toHaveLength(1);
    const req = r.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.body.toString()).toBe(payload);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-webhook-event-id']).toBe(eventId);
    expect(req.headers['x-webhook-delivery-id']).toBe(d.id);
    expect(req.headers['x-webhook-source']).toBe(source);
    expect(req.headers['x-webhook-event-type']).toBe('payment.succeeded');
    expect(req.headers['x-webhook-attempt']).toBe('1');
    const event = await h.repos.events.get(eventId);
    expect(event).toMatchObject({ status: 'COMPLETED', workflowId: eventId });
    expect(event?.completedAt).toBeInstanceOf(Date);
  });

  it('4xx: FAILED after exactly one attempt, not retried', async ({ h, receiver }) => {
    const r = await receiver([{ status: 422, body: 'bad contract' }]);
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, maxAttempts: 5 });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('FAILED');

    expect(r.requests).toHaveLength(1);
    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'FAILED', attempts: 1, lastResponseStatus: 422, lastResponseBody: 'bad contract' });
    expect(d.lastError).toBe('HTTP 422 Unprocessable Entity, not retried');
  });

  it('5xx: retried up to max_attempts, then FAILED with the last response recorded', async ({ h, receiver }) => {
    const r = await receiver([{ status: 500, body: 'boom' }]);
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });
    const retryable5xx = await counterDelta(h.metrics.deliveryAttempts, { outcome: 'retryable', status_class: '5xx' });

    expect(await h.runFanout(eventId)).toBe('FAILED');

    expect(r.requests.map((q) => q.headers['x-webhook-attempt'])).toEqual(['1', '2', '3']);
    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'FAILED', attempts: 3, lastResponseStatus: 500, lastResponseBody: 'boom' });
    expect(d.lastError).toBe('HTTP 500 Internal Server Error');
    expect(d.completedAt).toBeInstanceOf(Date);

    expect(await retryable5xx()).toBe(3);
  });

  it('5xx then 2xx: SUCCESS with attempts=2', async ({ h, receiver }) => {
    const r = await receiver([
      { status: 503, body: 'busy' },
      { status: 200, body: 'fine' },
    ]);
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(r.requests).toHaveLength(2);
    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'SUCCESS', attempts: 2, lastResponseStatus: 200, lastResponseBody: 'fine', lastError: null });
  });

  it('timeout: retried, and succeeds once the endpoint answers in time', async ({ h, receiver }) => {
    const r = await receiver([
      { status: 200, delayMs: 2_500 },
      { status: 200, body: 'quick' },
    ]);
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, timeoutSeconds: 1, maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(r.requests).toHaveLength(2);
    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'SUCCESS', attempts: 2, lastResponseStatus: 200 });
  });

  it('timeout on every attempt: FAILED after max_attempts with no response status', async ({ h, receiver }) => {
    const r = await receiver([{ status: 200, delayMs: 2_500 }]);
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, timeoutSeconds: 1, maxAttempts: 2 });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('FAILED');

    expect(r.requests).toHaveLength(2);
    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'FAILED', attempts: 2, lastResponseStatus: null });
    expect(d.lastError).toMatch(/^timed out: .* within 1000 ms|^timed out: attempt exceeded 1000 ms$/);
  });

  it('connection refused: retried up to max_attempts, then FAILED', async ({ h }) => {
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: await refusedUrl(), maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });
    const refused = await counterDelta(h.metrics.deliveryAttempts, { outcome: 'retryable', status_class: 'refused' });

    expect(await h.runFanout(eventId)).toBe('FAILED');

    const d = await deliveryOf(h.repos, eventId, endpointId);
    expect(d).toMatchObject({ status: 'FAILED', attempts: 3, lastResponseStatus: null, lastResponseBody: null });
    expect(d.lastError).toMatch(/^connection refused: .*ECONNREFUSED/);
    expect(await refused()).toBe(3);
  });

  it('reads the endpoint fresh on every attempt: a rotated secret applies to the next retry', async ({ h, receiver }) => {
    const source = uniqueSource();
    let endpointId = '';
    const r = await receiver(async (n) => {
      if (n > 0) return { status: 200 };
      await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ auth_secret: 'rotated-token' });
      return { status: 500 };
    });
    endpointId = await addEndpoint(h.repos, { source, url: r.url, authType: 'BEARER', authSecret: 'old-token' });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(r.requests.map((q) => q.headers.authorization)).toEqual(['Bearer old-token', 'Bearer rotated-token']);
  });
});
