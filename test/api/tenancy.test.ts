import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_NAMESPACES_CLAIM } from '../../src/config/settings.js';
import type { HttpResult } from '../support/http.js';
import { AUDIENCE, startAdminHarness, type AdminHarness, type ClientName } from './support/admin-harness.js';
import { buildTenantScene, foreignTo, visibleTo, type TenantScene } from './support/tenant-scene.js';
import { nowSeconds, signJwt } from './support/tokens.js';

// Tokens scoped to namespaces (docs/tenancy.md, "Scoped tokens"), against the real admin API, a
// real Postgres and tokens of the real local identity provider (its tenant clients carry the
// namespaces claim). The scene (support/tenant-scene.ts) writes the namespace columns by SQL: the
// subject here is what the API shows to whom, not how the operator fills them.

interface Page {
  items: Array<{ id: string }>;
  nextCursor: string | null;
}

const ids = (res: HttpResult): string[] => {
  expect(res.status, res.text).toBe(200);
  return (res.json() as Page).items.map((i) => i.id).sort();
};

/** A 404's body with the id in its detail replaced: a foreign id and a random one must read the same. */
const notFoundShape = (res: HttpResult, id: string) => ({
  status: res.status,
  contentType: res.headers['content-type'],
  body: JSON.stringify(res.json()).replaceAll(id, '<id>'),
});

describe('admin API: tokens scoped to namespaces see and replay only their namespaces', () => {
  let h: AdminHarness;
  let scene: TenantScene;
  const tokens = {} as Record<ClientName, string>;

  beforeAll(async () => {
    h = await startAdminHarness();
    // every replay run's delivery fails again: nothing here is about delivering
    const receiver = await h.receiver([{ status: 500 }]);
    scene = await buildTenantScene(h.fanout.database.db, h.fanout.repos, receiver.url);
    for (const c of ['admin', 'tenantA', 'tenantB', 'tenantOfNothing'] as const) tokens[c] = await h.token(c);
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('lists show exactly what each token sees', () => {
    it.each<['tenantA' | 'tenantB', 'A' | 'B']>([
      ['tenantA', 'A'],
      ['tenantB', 'B'],
    ])('%s', async (client, tenant) => {
      const want = visibleTo(scene, tenant);
      const t = tokens[client];
      expect(ids(await h.get('/api/events', t))).toEqual([...want.events].sort());
      expect(ids(await h.get('/api/deliveries', t))).toEqual([...want.deliveries].sort());
      expect(ids(await h.get('/api/endpoints', t))).toEqual([...want.endpoints].sort());
      expect(ids(await h.get('/api/inbound-credentials', t))).toEqual([...want.credentials].sort());
    });

    it('a token without the claim sees everything, as before tenancy', async () => {
      const t = tokens.admin;
      expect(ids(await h.get('/api/events', t))).toEqual(Object.values(scene.events).sort());
      expect(ids(await h.get('/api/deliveries', t))).toEqual(Object.values(scene.deliveries).sort());
      expect(ids(await h.get('/api/endpoints', t))).toEqual(Object.values(scene.endpoints).sort());
      expect(ids(await h.get('/api/inbound-credentials', t))).toEqual(Object.values(scene.credentials).sort());
    });

    it('a token whose claim lists no namespace sees nothing', async () => {
      const t = tokens.tenantOfNothing;
      for (const p of ['/api/events', '/api/deliveries', '/api/endpoints', '/api/inbound-credentials'])
        expect(ids(await h.get(p, t))).toEqual([]);
    });

    it("an event both see shows each tenant only the deliveries to its own endpoints, and the source's owner none of the other's", async () => {
      const seen = async (client: ClientName) => {
        const res = await h.get(`/api/events/${scene.events.payShared}`, tokens[client]);
        expect(res.status, res.text).toBe(200);
        return (res.json() as { deliveries: Array<{ id: string }> }).deliveries.map((d) => d.id).sort();
      };
      expect(await seen('tenantA')).toEqual([scene.deliveries.aShared]);
      expect(await seen('tenantB')).toEqual([scene.deliveries.bOnPayShared]);
      expect(await seen('admin')).toEqual([scene.deliveries.aShared, scene.deliveries.bOnPayShared].sort());
    });

    it('endpoints and credentials name their namespace; the endpoint its source does not allow says why', async () => {
      const res = await h.get('/api/endpoints', tokens.tenantA);
      const items = (res.json() as { items: Array<{ id: string; namespace: string; deniedReason: string | null }> }).items;
      expect(items.find((e) => e.id === scene.endpoints.aDenied)).toMatchObject({
        namespace: 'team-a',
        deniedReason: 'NotAllowedBySource',
      });
      expect(items.find((e) => e.id === scene.endpoints.a)).toMatchObject({ namespace: 'team-a', deniedReason: null });
      const creds = (await h.get('/api/inbound-credentials', tokens.tenantB)).json() as { items: Array<{ namespace: string }> };
      expect(creds.items.map((c) => c.namespace)).toEqual(['team-b']);
    });

    it('GET /api/me says whose token it is and its namespaces (null: everything)', async () => {
      expect((await h.get('/api/me', tokens.tenantA)).json()).toMatchObject({ namespaces: ['team-a'] });
      expect((await h.get('/api/me', tokens.admin)).json()).toMatchObject({
        namespaces: null,
        permissions: ['read:webhooks', 'replay:webhooks'],
      });
    });
  });

  // every route that takes an id, with the other tenant's id: 404 exactly as an id that does not exist
  const ROUTES: Array<[string, 'GET' | 'POST', (id: string) => string, 'events' | 'deliveries' | 'endpoints']> = [
    ['an event', 'GET', (id) => `/api/events/${id}`, 'events'],
    ["an event's replay", 'POST', (id) => `/api/events/${id}/replay`, 'events'],
    ['a delivery', 'GET', (id) => `/api/deliveries/${id}`, 'deliveries'],
    ["a delivery's attempts", 'GET', (id) => `/api/deliveries/${id}/attempts`, 'deliveries'],
    ["a delivery's replay", 'POST', (id) => `/api/deliveries/${id}/replay`, 'deliveries'],
    ["a delivery's skip", 'POST', (id) => `/api/deliveries/${id}/skip`, 'deliveries'],
    ["an endpoint's enable", 'POST', (id) => `/api/endpoints/${id}/enable`, 'endpoints'],
  ];

  it('the table above names every route of the OpenAPI document that takes an id', async () => {
    const doc = (await h.get('/api/openapi.json')).json() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths)
      .filter(([path]) => path.includes('{id}'))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const tested = ROUTES.map(([, method, path]) => `${method} ${path('{id}')}`).sort();
    expect(documented.length).toBeGreaterThan(0);
    expect(tested).toEqual(documented);
  });

  describe.each<['tenantA' | 'tenantB', 'A' | 'B']>([
    ['tenantA', 'A'],
    ['tenantB', 'B'],
  ])("%s: the other tenant's ids answer as if absent", (client, tenant) => {
    it.each(ROUTES)('%s', async (_name, method, path, kind) => {
      const foreign = foreignTo(scene, tenant)[kind];
      expect(foreign.length).toBeGreaterThan(0);
      const call = (id: string) => (method === 'GET' ? h.get(path(id), tokens[client]) : h.post(path(id), tokens[client]));
      const absent = randomUUID();
      const want = notFoundShape(await call(absent), absent);
      expect(want.status).toBe(404);
      expect(want.contentType).toMatch(/^application\/problem\+json/);
      for (const id of foreign) expect(notFoundShape(await call(id), id)).toEqual(want);
    });

    it("filters naming the other tenant's event or endpoint match nothing; a bulk replay's dry run counts none", async () => {
      const foreign = foreignTo(scene, tenant);
      const t = tokens[client];
      for (const id of foreign.events) expect(ids(await h.get(`/api/deliveries?eventId=${id}`, t))).toEqual([]);
      for (const id of foreign.endpoints) {
        expect(ids(await h.get(`/api/deliveries?endpointId=${id}`, t))).toEqual([]);
        const dry = await h.post('/api/deliveries/replay', t, { endpointId: id, dryRun: true });
        expect(dry.status, dry.text).toBe(200);
        expect(dry.json()).toMatchObject({ matched: 0, replayed: 0 });
      }
    });
  });

  it('a source both tenants receive: each lists its events only through what it sees of them', async () => {
    // team-b's endpoint subscribes to team-a's source: it sees the event delivered to it, not the other
    expect(ids(await h.get(`/api/events?source=${scene.sources.pay}`, tokens.tenantB))).toEqual([scene.events.payShared]);
    expect(ids(await h.get(`/api/events?source=${scene.sources.pay}`, tokens.tenantA))).toEqual(
      [scene.events.payShared, scene.events.payPrivate].sort(),
    );
    expect(ids(await h.get(`/api/endpoints?source=${scene.sources.pay}`, tokens.tenantB))).toEqual([scene.endpoints.bOnPay]);
    expect(ids(await h.get(`/api/inbound-credentials?source=${scene.sources.pay}`, tokens.tenantB))).toEqual([]);
  });

  it('statistics count only what the token sees', async () => {
    const window = `from=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}&bucket=1h`;
    const series = async (client: ClientName) => {
      const res = await h.get(`/api/stats/timeseries?${window}`, tokens[client]);
      expect(res.status, res.text).toBe(200);
      const body = res.json() as {
        eventsBySource: Array<{ source: string; total: number }>;
        endpoints: Array<{ endpointId: string; total: { failed: number } }>;
      };
      return {
        events: Object.fromEntries(body.eventsBySource.map((s) => [s.source, s.total])),
        endpoints: body.endpoints.map((e) => e.endpointId).sort(),
      };
    };
    const { pay, shop } = scene.sources;
    expect(await series('tenantA')).toEqual({
      events: { [pay]: 2, [shop]: 1 },
      endpoints: [scene.endpoints.a, scene.endpoints.aDenied].sort(),
    });
    expect(await series('tenantB')).toEqual({
      events: { [pay]: 1, [shop]: 2 },
      endpoints: [scene.endpoints.b, scene.endpoints.bOnPay].sort(),
    });
    expect(await series('tenantOfNothing')).toEqual({ events: {}, endpoints: [] });
    const attention = async (client: ClientName) =>
      ((await h.get('/api/stats/attention', tokens[client])).json() as { failedDeliveries: number }).failedDeliveries;
    expect(await attention('tenantA')).toBe(3);
    expect(await attention('tenantB')).toBe(3);
    expect(await attention('tenantOfNothing')).toBe(0);
  });

  it('a namespaces claim that is not a list of namespace names is refused as an invalid token', async () => {
    for (const value of ['team-a', [{ ns: 'team-a' }], ['Team-A'], null]) {
      const token = signJwt(h.idpKey, {
        iss: h.idp.issuer,
        aud: AUDIENCE,
        sub: 'forged',
        exp: nowSeconds() + 300,
        permissions: ['read:webhooks'],
        [DEFAULT_NAMESPACES_CLAIM]: value,
      });
      const res = await h.get('/api/events', token);
      expect(res.status, JSON.stringify(value)).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    }
  });

  describe('an endpoint its source does not allow: 409 naming why, for those who see it', () => {
    it('replay of its delivery, by its tenant and by an unscoped token; 404 for the other tenant', async () => {
      for (const client of ['tenantA', 'admin'] as const) {
        const res = await h.post(`/api/deliveries/${scene.deliveries.aDeniedShop}/replay`, tokens[client]);
        expect(res.status, res.text).toBe(409);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.json()).toMatchObject({ code: 'endpoint_not_allowed' });
        expect((res.json() as { detail: string }).detail).toMatch(
          /endpoint a-on-shop in namespace "team-a" is not allowed by its source: NotAllowedBySource/,
        );
      }
      expect((await h.post(`/api/deliveries/${scene.deliveries.aDeniedShop}/replay`, tokens.tenantB)).status).toBe(404);
    });

    it('its enable, and a bulk replay naming it (dry run too)', async () => {
      const enable = await h.post(`/api/endpoints/${scene.endpoints.aDenied}/enable`, tokens.tenantA);
      expect(enable.status, enable.text).toBe(409);
      expect(enable.json()).toMatchObject({ code: 'endpoint_not_allowed' });
      for (const dryRun of [true, false]) {
        const res = await h.post('/api/deliveries/replay', tokens.tenantA, { endpointId: scene.endpoints.aDenied, dryRun });
        expect(res.status, res.text).toBe(409);
        expect(res.json()).toMatchObject({ code: 'endpoint_not_allowed' });
      }
    });

    it('an event whose only FAILED delivery the token sees goes there: 409; a bulk replay without filters leaves it out', async () => {
      const res = await h.post(`/api/events/${scene.events.shop}/replay`, tokens.tenantA);
      expect(res.status, res.text).toBe(409);
      expect(res.json()).toMatchObject({ code: 'endpoint_not_allowed' });
      const dry = await h.post('/api/deliveries/replay', tokens.tenantA, { dryRun: true });
      // aShared and aPrivate; not aDeniedShop
      expect(dry.json()).toMatchObject({ matched: 2 });
    });
  });

  describe('replays by a tenant reach only its own endpoints (these run for real, last)', () => {
    const statusOf = async (id: string) =>
      ((await h.fanout.database.db('webhook_delivery').where({ id }).first()) as { status: string; updated_at: Date }) ?? null;

    it("the other tenant's replay attempts left its deliveries untouched", async () => {
      for (const id of Object.values(scene.deliveries)) expect((await statusOf(id)).status).toBe('FAILED');
    });

    it("tenant B's replay of the shared event replays B's delivery only", async () => {
      const before = await statusOf(scene.deliveries.aShared);
      const res = await h.post(`/api/events/${scene.events.payShared}/replay`, tokens.tenantB);
      expect(res.status, res.text).toBe(202);
      expect((res.json() as { deliveryIds: string[] }).deliveryIds).toEqual([scene.deliveries.bOnPayShared]);
      expect(await statusOf(scene.deliveries.aShared)).toEqual(before);
    });

    it("tenant B's bulk replay without filters takes B's deliveries only", async () => {
      const untouched = [scene.deliveries.aPrivate, scene.deliveries.aDeniedShop];
      const before = await Promise.all(untouched.map(statusOf));
      const res = await h.post('/api/deliveries/replay', tokens.tenantB, {});
      expect(res.status, res.text).toBe(202);
      const replayed = (res.json() as { replays: Array<{ deliveryIds: string[] }> }).replays.flatMap((r) => r.deliveryIds);
      for (const id of replayed) expect([scene.deliveries.bShop, scene.deliveries.bShopOnly, scene.deliveries.bOnPayShared]).toContain(id);
      expect(replayed).toEqual(expect.arrayContaining([scene.deliveries.bShop, scene.deliveries.bShopOnly]));
      expect(await Promise.all(untouched.map(statusOf))).toEqual(before);
    });

    it('an unscoped replay of an event with an allowed and a refused endpoint replays the allowed one only', async () => {
      // B's bulk replay's run fails bShop again (the receiver answers 500) before this one
      await expect.poll(async () => (await statusOf(scene.deliveries.bShop)).status, { timeout: 30_000 }).toBe('FAILED');
      const res = await h.post(`/api/events/${scene.events.shop}/replay`, tokens.admin);
      expect(res.status, res.text).toBe(202);
      expect((res.json() as { deliveryIds: string[] }).deliveryIds).toEqual([scene.deliveries.bShop]);
      expect((await statusOf(scene.deliveries.aDeniedShop)).status).toBe('FAILED');
    });

    it('allowed again, its delivery replays', async () => {
      await h.fanout.database.db('webhook_endpoint').where({ id: scene.endpoints.aDenied }).update({ denied_reason: null });
      const res = await h.post(`/api/deliveries/${scene.deliveries.aDeniedShop}/replay`, tokens.tenantA);
      expect(res.status, res.text).toBe(202);
    });
  });
});
