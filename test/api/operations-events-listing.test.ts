import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpoint } from '../fanout/support/harness.js';
import type { HttpResult } from '../support/http.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';
import { NAMESPACE_A, NAMESPACE_B } from './support/tenant-scene.js';

// What the console shows of operational events (docs/operations-events.md): it lists them through
// GET /api/events like any source's, and a tenant's token sees those delivered to its endpoints,
// which routing keeps to its own namespace's: never another tenant's.

const OPS = 'webhook-fanout';
const ids = (res: HttpResult): string[] => {
  expect(res.status, res.text).toBe(200);
  return (res.json() as { items: Array<{ id: string }> }).items.map((i) => i.id).sort();
};

describe("operational events in the admin API and the console's lists", () => {
  let h: AdminHarness;
  const event = {} as Record<'A' | 'B', string>;

  beforeAll(async () => {
    h = await startAdminHarness();
    const { repos, database } = h.fanout;
    const receiver = await h.receiver();
    for (const [tenant, ns] of [
      ['A', NAMESPACE_A],
      ['B', NAMESPACE_B],
    ] as const) {
      await addEndpoint(repos, { source: OPS, url: receiver.url, name: `${ns}/ops`, namespace: ns });
      const key = randomUUID();
      await repos.operationalEvents.record({
        type: 'endpoint.disabled',
        key,
        subject: { kind: 'WebhookEndpoint', namespace: ns, name: 'ledger', uid: null, adminApiPath: '/api/deliveries' },
      });
      const row = await database
        .db('webhook_event')
        .where({ source: OPS, external_event_id: `endpoint.disabled:${key}` })
        .first('id');
      event[tenant] = row.id as string;
      // the fanout's routing: the event's deliveries go to its namespace's subscribers only
      await repos.deliveries.prepareRun(event[tenant], event[tenant]);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a token without the namespaces claim lists them like any source', async () => {
    const all = ids(await h.get(`/api/events?source=${OPS}`, await h.token('admin')));
    expect(all).toEqual([event.A, event.B].sort());
  });

  it("a tenant lists its namespace's, and another tenant's is a 404 as an id that does not exist", async () => {
    const a = await h.token('tenantA');
    expect(ids(await h.get(`/api/events?source=${OPS}`, a))).toEqual([event.A]);
    expect((await h.get(`/api/events/${event.A}`, a)).status).toBe(200);
    expect((await h.get(`/api/events/${event.B}`, a)).status).toBe(404);
    expect(ids(await h.get(`/api/events?source=${OPS}`, await h.token('tenantB')))).toEqual([event.B]);
  });

  it("a row names the endpoint and the delivery an operational event is about (from its payload); any other source's names none", async () => {
    const { repos } = h.fanout;
    const endpointId = randomUUID();
    const deliveryId = randomUUID();
    const key = randomUUID();
    const endpoint = { id: endpointId, namespace: NAMESPACE_A, name: 'ledger', uid: null, source: 'stripe' };
    await repos.operationalEvents.record({
      type: 'endpoint.disabled',
      key,
      subject: { kind: 'WebhookEndpoint', namespace: NAMESPACE_A, name: 'ledger', uid: null, adminApiPath: '/api/deliveries' },
      data: { endpoint, disabledBy: { deliveryId, eventId: randomUUID() } },
    });
    const admin = await h.token('admin');
    const res = await h.get(`/api/events?source=${OPS}&externalId=endpoint.disabled:${key}`, admin);
    expect(res.status, res.text).toBe(200);
    const [item] = (res.json() as { items: Array<{ about: unknown }> }).items;
    expect(item?.about).toEqual({ endpoint: { id: endpointId, name: `${NAMESPACE_A}/ledger` }, deliveryId });
    // the events of the beforeAll name no endpoint in their payload: nothing to name
    const others = (await h.get(`/api/events?source=${OPS}&type=endpoint.disabled`, admin)).json() as {
      items: Array<{ id: string; about: unknown }>;
    };
    expect(others.items.filter((i) => i.id === event.A || i.id === event.B).map((i) => i.about)).toEqual([null, null]);
  });
});
