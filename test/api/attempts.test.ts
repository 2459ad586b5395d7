import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from '../fanout/support/harness.js';
import { refusal } from '../support/db.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';

interface Attempt {
  attempt: number;
  outcome: string;
  responseStatus: number | null;
  responseBody: string | null;
  durationMs: number | null;
  error: string | null;
  startedAt: string;
  requestBody: string | null;
  requestBodyBytes: number | null;
}

// The attempt log through the admin API, after real deliveries by a Temporal worker to a real
// receiver: what an operator opens first when an endpoint misbehaves.
describe('admin API: the attempt log of a delivery', () => {
  let h: AdminHarness;
  let token: string;

  beforeAll(async () => {
    h = await startAdminHarness();
    token = await h.token('admin');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('503, 503, 200: three attempts in order, RETRYING twice then SUCCESS, with status, body, duration and start time', async () => {
    const source = uniqueSource('attempts');
    const r = await h.receiver([
      { status: 503, body: 'busy, try later' },
      { status: 503, body: 'still busy', delayMs: 30 },
      { status: 200, body: 'thanks' },
    ]);
    const endpointId = await addEndpoint(h.fanout.repos, {
      source,
      url: r.url,
      maxAttempts: 5,
      authType: 'BEARER',
      authSecret: 'tok_must_not_show',
    });
    const eventId = await addEvent(h.fanout.repos, { source });
    const t0 = Date.now();
    expect(await h.fanout.runFanout(eventId)).toBe('COMPLETED');
    const delivery = await deliveryOf(h.fanout.repos, eventId, endpointId);

    // the event view links every delivery to its log
    const event = (await h.get(`/api/events/${eventId}`, token)).json() as { deliveries: { id: string; attemptsUrl: string }[] };
    const link = event.deliveries.find((d) => d.id === delivery.id)?.attemptsUrl;
    expect(link).toBe(`/api/deliveries/${delivery.id}/attempts`);

    const res = await h.get(link!, token);
    expect(res.status).toBe(200);
    const body = res.json() as { items: Attempt[]; nextCursor: string | null };
    expect(body.nextCursor).toBeNull();
    expect(body.items.map((a) => [a.attempt, a.outcome, a.responseStatus, a.responseBody])).toEqual([
      [1, 'RETRYING', 503, 'busy, try later'],
      [2, 'RETRYING', 503, 'still busy'],
      [3, 'SUCCESS', 200, 'thanks'],
    ]);
    expect(body.items[0]!.error).toMatch(/503/);
    expect(body.items[2]!.error).toBeNull();
    expect(body.items[1]!.durationMs).toBeGreaterThanOrEqual(30);
    const starts = body.items.map((a) => Date.parse(a.startedAt));
    expect(starts[0]).toBeGreaterThanOrEqual(t0 - 1000);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    // no credential of the endpoint in the log
    expect(res.text).not.toContain('tok_must_not_show');
    expect(res.text.toLowerCase()).not.toContain('authorization');
  });

  it('a 4xx is one FAILED attempt; the log of an unknown delivery is 404; reads need a token', async () => {
    const source = uniqueSource('attempts');
    const r = await h.receiver([{ status: 404, body: 'no such hook' }]);
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: r.url, maxAttempts: 5 });
    const eventId = await addEvent(h.fanout.repos, { source });
    expect(await h.fanout.runFanout(eventId)).toBe('FAILED');
    const delivery = await deliveryOf(h.fanout.repos, eventId, endpointId);

    const items = ((await h.get(`/api/deliveries/${delivery.id}/attempts`, token)).json() as { items: Attempt[] }).items;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ attempt: 1, outcome: 'FAILED', responseStatus: 404, responseBody: 'no such hook' });

    const missing = await h.get('/api/deliveries/00000000-0000-4000-8000-000000000000/attempts', token);
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toMatch(/application\/problem\+json/);
    expect((await h.get(`/api/deliveries/${delivery.id}/attempts`)).status).toBe(401);
  });

  it('an endpoint with a transform: each attempt shows the body it sent (the first 64 KiB, and the whole size); without one, null', async () => {
    const source = uniqueSource('attempts');
    const r = await h.receiver([{ status: 503 }, { status: 200 }]);
    const plainReceiver = await h.receiver();
    const shapedId = await addEndpoint(h.fanout.repos, { source, url: r.url, maxAttempts: 3, transform: '{"kind": type, "copy": data.s}' });
    const plainId = await addEndpoint(h.fanout.repos, { source, url: plainReceiver.url });
    const long = 'é'.repeat(70_000); // two bytes each in UTF-8
    const eventId = await addEvent(h.fanout.repos, { source, eventType: 'order.created', payload: JSON.stringify({ s: long }) });
    expect(await h.fanout.runFanout(eventId)).toBe('COMPLETED');

    const sent = JSON.stringify({ kind: 'order.created', copy: long });
    expect(r.requests.map((q) => q.body.toString('utf8'))).toEqual([sent, sent]);
    const shaped = await deliveryOf(h.fanout.repos, eventId, shapedId);
    const items = ((await h.get(`/api/deliveries/${shaped.id}/attempts`, token)).json() as { items: Attempt[] }).items;
    expect(items.map((a) => [a.outcome, a.requestBody, a.requestBodyBytes])).toEqual([
      ['RETRYING', sent.slice(0, 65_536), Buffer.byteLength(sent)],
      ['SUCCESS', sent.slice(0, 65_536), Buffer.byteLength(sent)],
    ]);

    const plain = await deliveryOf(h.fanout.repos, eventId, plainId);
    const plainItems = ((await h.get(`/api/deliveries/${plain.id}/attempts`, token)).json() as { items: Attempt[] }).items;
    expect(plainItems.map((a) => [a.outcome, a.requestBody, a.requestBodyBytes])).toEqual([['SUCCESS', null, null]]);
  });

  it('the log is append-only in Postgres', async () => {
    const rows = await h.fanout.database.db('webhook_delivery_attempt').select('delivery_id', 'attempt').limit(1);
    expect(rows.length).toBe(1);
    expect(await refusal(h.fanout.database.db('webhook_delivery_attempt').where(rows[0]!).update({ outcome: 'SUCCESS' }))).toMatch(
      /^database_error: .*append-only/s,
    );
  });
});
