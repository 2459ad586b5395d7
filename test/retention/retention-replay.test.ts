import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from '../fanout/support/harness.js';
import { startAdminHarness, type AdminHarness } from '../api/support/admin-harness.js';
import { retentionJob } from './support.js';

// The admin API over an event whose payload retention dropped: marked as such, and a replay of it
// refused with a 409 problem+json that says why, while the deliveries and attempts stay readable.

describe('admin API: events whose payload retention dropped', () => {
  let h: AdminHarness;
  let token: string;

  beforeAll(async () => {
    h = await startAdminHarness();
    token = await h.token('admin');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('shows payloadDroppedAt, refuses the replays with 409 payload_dropped, keeps the delivery FAILED and its attempts', async () => {
    const source = uniqueSource('retained');
    const down = await h.receiver([{ status: 500, body: 'down' }]);
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: down.url, maxAttempts: 1 });
    const eventId = await addEvent(h.fanout.repos, { source, payload: '{"card":"4242"}' });
    expect(await h.fanout.runFanout(eventId)).toBe('FAILED');
    const failed = await deliveryOf(h.fanout.repos, eventId, endpointId);

    // a week later, with RETENTION_PAYLOAD_MAX_AGE=1d: the rows as the clock would have aged them
    const db = h.fanout.database.db;
    await db('webhook_event')
      .where({ id: eventId })
      .update({ received_at: db.raw(`now() - interval '7 days'`), updated_at: db.raw(`now() - interval '7 days'`) });
    await db('webhook_delivery')
      .where({ event_id: eventId })
      .update({ updated_at: db.raw(`now() - interval '7 days'`) });
    const { job } = retentionJob(db, { payloadMaxAgeSeconds: 86_400 });
    expect((await job.runOnce()).payloadsDropped).toBeGreaterThanOrEqual(1);

    const event = (await h.get(`/api/events/${eventId}`, token)).json() as {
      payloadDroppedAt: string | null;
      payload: string;
      payloadSize: number;
      headers: object;
      deliveries: Array<{ id: string; status: string }>;
    };
    expect(event.payloadDroppedAt).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(event.payload).toBe('');
    expect(event.payloadSize).toBe(0);
    expect(event.headers).toEqual({});
    expect(event.deliveries).toEqual([expect.objectContaining({ id: failed.id, status: 'FAILED' })]);
    const listed = (await h.get(`/api/events?source=${source}`, token)).json() as {
      items: Array<{ id: string; payloadDroppedAt: string | null }>;
    };
    expect(listed.items).toEqual([expect.objectContaining({ id: eventId, payloadDroppedAt: event.payloadDroppedAt })]);

    for (const path of [`/api/events/${eventId}/replay`, `/api/deliveries/${failed.id}/replay`]) {
      const res = await h.post(path, token);
      expect(res.status, path).toBe(409);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({
        status: 409,
        code: 'payload_dropped',
        detail: expect.stringMatching(/payload was dropped by retention \(RETENTION_PAYLOAD_MAX_AGE\)/),
      });
    }
    // a bulk replay passes it over
    const bulk = await h.post('/api/deliveries/replay', token, { source });
    expect(bulk.json()).toMatchObject({ matched: 0, replayed: 0 });

    expect(down.requests).toHaveLength(1);
    expect((await deliveryOf(h.fanout.repos, eventId, endpointId)).status).toBe('FAILED');
    const attempts = (await h.get(`/api/deliveries/${failed.id}/attempts`, token)).json() as { items: unknown[] };
    expect(attempts.items).toHaveLength(1);
  });
});
