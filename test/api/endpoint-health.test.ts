import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedriver, type Redriver } from '../../src/temporal/redriver.js';
import { createRedriveQueries } from '../../src/db/redrive-queries.js';
import { createLogger } from '../../src/observability/logger.js';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from '../fanout/support/harness.js';
import { eventually, sleep } from '../support/wait.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';

interface EndpointItem {
  id: string;
  state: string;
  autoDisableAfter: number;
  consecutiveFailures: number;
  disabledAt: string | null;
  heldDeliveries: number;
}

// What an operator sees and does through the admin API: the endpoint DISABLED after its failures,
// its deliveries held, and POST /api/endpoints/{id}/enable bringing every missed event, once.
describe('admin API: endpoint state and enable', () => {
  let h: AdminHarness;
  let redriver: Redriver;
  let admin: string;

  beforeAll(async () => {
    h = await startAdminHarness();
    admin = await h.token('admin');
    redriver = createRedriver({
      queries: createRedriveQueries(h.fanout.database.db),
      client: h.fanout.client,
      taskQueue: h.fanout.taskQueue,
      metrics: h.fanout.metrics,
      logger: createLogger({ level: 'silent' }),
      intervalMs: 100,
    });
    redriver.start();
  });
  afterAll(async () => {
    await redriver?.stop();
    await h?.close();
  });

  const endpointItem = async (source: string): Promise<EndpointItem> => {
    const res = await h.get(`/api/endpoints?source=${source}`, admin);
    expect(res.status).toBe(200);
    const items = (res.json() as { items: EndpointItem[] }).items;
    expect(items).toHaveLength(1);
    return items[0]!;
  };

  it('shows DISABLED after N failures; enable (replay permission, idempotent) redrives each missed event once, oldest first', async () => {
    const source = uniqueSource('enable');
    const r = await h.receiver([{ status: 500, body: 'down' }]);
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: r.url, maxAttempts: 1, autoDisableAfter: 2 });
    expect(await endpointItem(source)).toMatchObject({ state: 'ACTIVE', autoDisableAfter: 2, consecutiveFailures: 0, disabledAt: null });

    for (let i = 0; i < 2; i++) expect(await h.fanout.runFanout(await addEvent(h.fanout.repos, { source }))).toBe('FAILED');
    const disabled = await endpointItem(source);
    expect(disabled).toMatchObject({ state: 'DISABLED', consecutiveFailures: 2, heldDeliveries: 0 });
    // which endpoints are disabled: the state filter
    const listed = async (state: string) =>
      ((await h.get(`/api/endpoints?source=${source}&state=${state}`, admin)).json() as { items: EndpointItem[] }).items.map((e) => e.id);
    expect(await listed('DISABLED')).toEqual([endpointId]);
    expect(await listed('ACTIVE')).toEqual([]);
    expect((await h.get(`/api/endpoints?state=disabled`, admin)).status).toBe(400);
    expect(Date.parse(disabled.disabledAt ?? '')).toBeGreaterThan(Date.now() - 60_000);

    const missed: string[] = [];
    for (let i = 0; i < 3; i++) {
      const eventId = await addEvent(h.fanout.repos, { source });
      missed.push(eventId);
      expect(await h.fanout.runFanout(eventId)).toBe('FAILED');
    }
    const d = await deliveryOf(h.fanout.repos, missed[0]!, endpointId);
    const view = (await h.get(`/api/deliveries/${d.id}`, admin)).json() as { status: string; lastError: string };
    expect(view).toMatchObject({ status: 'FAILED', lastError: 'endpoint disabled' });
    expect(r.requests).toHaveLength(2);
    expect((await endpointItem(source)).heldDeliveries).toBe(3);

    // who may enable: the replay permission; an unknown endpoint is a problem+json 404
    expect((await h.post(`/api/endpoints/${endpointId}/enable`)).status).toBe(401);
    expect((await h.post(`/api/endpoints/${endpointId}/enable`, await h.token('reader'))).status).toBe(403);
    const unknown = await h.post('/api/endpoints/00000000-0000-4000-8000-000000000000/enable', admin);
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/application\/problem\+json/);
    expect((await endpointItem(source)).state).toBe('DISABLED');

    r.setScript([{ status: 200, body: 'back' }]);
    const enabled = await h.post(`/api/endpoints/${endpointId}/enable`, admin);
    expect(enabled.status).toBe(200);
    expect(enabled.json()).toMatchObject({
      wasDisabled: true,
      endpoint: { id: endpointId, state: 'ACTIVE', consecutiveFailures: 0, disabledAt: null },
    });

    await eventually(async () => (await endpointItem(source)).heldDeliveries === 0 && r.requests.length >= 5);
    await eventually(async () => {
      const events = await Promise.all(missed.map((e) => h.fanout.repos.events.getMeta(e)));
      return events.every((e) => e?.status === 'COMPLETED');
    });
    const again = await h.post(`/api/endpoints/${endpointId}/enable`, admin);
    expect(again.status).toBe(200);
    expect(again.json()).toMatchObject({ wasDisabled: false, endpoint: { state: 'ACTIVE' } });
    await sleep(500);
    expect(r.requests.slice(2).map((q) => q.headers['x-webhook-event-id'])).toEqual(missed);
    // the attempt log of a redriven delivery: the held FAILED, then the SUCCESS of the redrive
    const attempts = (await h.get(`/api/deliveries/${d.id}/attempts`, admin)).json() as {
      items: { outcome: string; error: string | null; durationMs: number | null }[];
    };
    expect(attempts.items.map((a) => [a.outcome, a.error])).toEqual([
      ['FAILED', 'endpoint disabled'],
      ['SUCCESS', null],
    ]);
    expect(attempts.items[0]!.durationMs).toBeNull();
  });
});
