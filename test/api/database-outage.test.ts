import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';

// The admin API while Postgres is unreachable: every route that reads or writes rows answers 503
// problem+json with Retry-After (a dependency is down; retry), not 500 (a bug), and says nothing
// of the driver's error. When Postgres is back, the same requests succeed.
describe('admin API with Postgres unreachable', () => {
  let h: AdminHarness;
  let token: string;

  beforeAll(async () => {
    h = await startAdminHarness({ databaseProxy: true });
    token = await h.token('admin');
  });
  afterAll(async () => {
    await h?.close();
  });

  const id = randomUUID();
  const requests: [string, () => ReturnType<AdminHarness['get']>][] = [
    ['GET /api/events', () => h.get('/api/events', token)],
    ['GET /api/events/:id', () => h.get(`/api/events/${id}`, token)],
    ['GET /api/deliveries', () => h.get('/api/deliveries', token)],
    ['GET /api/deliveries/:id/attempts', () => h.get(`/api/deliveries/${id}/attempts`, token)],
    ['GET /api/endpoints', () => h.get('/api/endpoints', token)],
    ['GET /api/inbound-credentials', () => h.get('/api/inbound-credentials', token)],
    ['POST /api/events/:id/replay', () => h.post(`/api/events/${id}/replay`, token)],
    ['POST /api/deliveries/:id/replay', () => h.post(`/api/deliveries/${id}/replay`, token)],
  ];

  it('answers 503 problem+json with Retry-After on every route, and as before once Postgres is back', async () => {
    const before = await h.get('/api/events', token);
    expect(before.status).toBe(200);

    h.databaseProxy?.cut();
    try {
      for (const [what, send] of requests) {
        const res = await send();
        expect({ what, status: res.status }).toEqual({ what, status: 503 });
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['retry-after']).toBe('5');
        expect(res.json()).toMatchObject({ status: 503, code: 'database_unavailable', title: 'Service Unavailable' });
        expect(res.text).not.toMatch(/ECONN|terminated|select|knex|pool/i);
      }
    } finally {
      h.databaseProxy?.restore();
    }

    const after = await h.get('/api/events', token);
    expect(after.status).toBe(200);
    expect((await h.get(`/api/events/${id}`, token)).status).toBe(404);
  });
});
