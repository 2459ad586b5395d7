import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpoint, addEvent, uniqueSource } from '../fanout/support/harness.js';
import { startAdminHarness, type AdminHarness, type ClientName } from './support/admin-harness.js';

// GET /api/events/{id}'s endpointsWithoutDelivery (docs/content-routing.md): the endpoints of the
// event's (source, type) that got no delivery, and why as far as is known, after a real fanout by
// the worker (filters evaluated by prepare) on real Postgres and Temporal; and, per token, only
// the endpoints of its namespaces (docs/tenancy.md).

interface WithoutDelivery {
  endpointId: string;
  name: string;
  namespace: string | null;
  eventType: string | null;
  filter: string | null;
  reason: string;
}
interface EventDetail {
  deliveries: Array<{ endpointId: string }>;
  endpointsWithoutDelivery: WithoutDelivery[];
  endpointsWithoutDeliveryOmitted: number;
}

const BIG = 'event.data.amount >= 100';
const SMALL = 'event.data.amount < 100';
const B_SECRET_FILTER = "event.data.amount >= 100 && event.headers['x-team'] == 'team-b-private'";

describe("admin API: an event's endpoints without a delivery, and why", () => {
  let h: AdminHarness;
  const tokens = {} as Record<ClientName, string>;
  const source = uniqueSource('orders');
  const ids = {} as Record<
    'aPlain' | 'aBig' | 'aDenied' | 'aWasDenied' | 'aLate' | 'aOtherType' | 'aRemoved' | 'bSmall' | 'bBig' | 'legacy',
    string
  >;
  let eventId = '';

  const endpoint = async (
    name: string,
    namespace: string | null,
    opts: { filter?: string; eventType?: string; active?: boolean; url: string },
  ): Promise<string> => {
    const id = await addEndpoint(h.fanout.repos, {
      source,
      name,
      url: opts.url,
      maxAttempts: 1,
      filter: opts.filter ?? null,
      eventType: opts.eventType ?? null,
      active: opts.active ?? true,
    });
    await h.fanout.database.db('webhook_endpoint').where({ id }).update({ namespace });
    return id;
  };
  const setDenied = (id: string, denied: 'NotAllowedBySource' | null) =>
    h.fanout.database.db('webhook_endpoint').where({ id }).update({ denied_reason: denied });

  const detail = async (id: string, client: ClientName) => {
    const res = await h.get(`/api/events/${id}`, tokens[client]);
    expect(res.status, res.text).toBe(200);
    return { body: res.json() as EventDetail, text: res.text };
  };
  const summary = (d: EventDetail) => d.endpointsWithoutDelivery.map((e) => [e.name, e.reason, e.filter]);

  beforeAll(async () => {
    h = await startAdminHarness();
    for (const c of ['admin', 'tenantA', 'tenantB', 'tenantOfNothing'] as const) tokens[c] = await h.token(c);
    const url = (await h.receiver()).url;
    ids.aPlain = await endpoint('team-a/plain', 'team-a', { url });
    ids.aBig = await endpoint('team-a/big', 'team-a', { url, filter: BIG });
    ids.aDenied = await endpoint('team-a/denied', 'team-a', { url, filter: SMALL });
    ids.aWasDenied = await endpoint('team-a/was-denied', 'team-a', { url });
    ids.aOtherType = await endpoint('team-a/other-type', 'team-a', { url, eventType: 'order.refunded' });
    ids.aRemoved = await endpoint('team-a/removed', 'team-a', { url, filter: BIG, active: false });
    ids.bSmall = await endpoint('team-b/small', 'team-b', { url, filter: SMALL });
    ids.bBig = await endpoint('team-b/big', 'team-b', { url, filter: B_SECRET_FILTER });
    // a row written before tenancy: no namespace, so no tenant sees it
    ids.legacy = await endpoint('legacy', null, { url, filter: BIG });
    await setDenied(ids.aDenied, 'NotAllowedBySource');
    await setDenied(ids.aWasDenied, 'NotAllowedBySource');

    eventId = await addEvent(h.fanout.repos, { source, eventType: 'order.created', payload: JSON.stringify({ amount: 5 }) });
    expect(await h.fanout.runFanout(eventId)).toBe('COMPLETED');
    // after the event: one created, one allowed again
    ids.aLate = await endpoint('team-a/late', 'team-a', { url, filter: SMALL });
    await setDenied(ids.aWasDenied, null);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a token without the namespaces claim: every endpoint of the source and type without a delivery, by name, each with why', async () => {
    const { body } = await detail(eventId, 'admin');
    expect(body.deliveries.map((d) => d.endpointId).sort()).toEqual([ids.aPlain, ids.bSmall].sort());
    // not listed: the other type's endpoint and the removed one
    expect(summary(body)).toEqual([
      ['legacy', 'FILTER_NOT_MATCHED', BIG],
      ['team-a/big', 'FILTER_NOT_MATCHED', BIG],
      ['team-a/denied', 'NOT_ALLOWED_BY_SOURCE', SMALL],
      // its filter would have matched, but it did not exist yet: no claim about the filter
      ['team-a/late', 'CREATED_AFTER_EVENT', SMALL],
      // no filter and allowed now: it was not allowed then, which its row no longer says
      ['team-a/was-denied', 'NO_DELIVERY', null],
      ['team-b/big', 'FILTER_NOT_MATCHED', B_SECRET_FILTER],
    ]);
    expect(body.endpointsWithoutDelivery.find((e) => e.name === 'team-a/big')).toEqual({
      endpointId: ids.aBig,
      name: 'team-a/big',
      namespace: 'team-a',
      eventType: null,
      filter: BIG,
      reason: 'FILTER_NOT_MATCHED',
    });
    expect(body.endpointsWithoutDeliveryOmitted).toBe(0);
  });

  it("a namespace-scoped token lists its own namespace's endpoints only, never another tenant's name or filter", async () => {
    const a = await detail(eventId, 'tenantA');
    expect(a.body.deliveries.map((d) => d.endpointId)).toEqual([ids.aPlain]);
    expect(summary(a.body)).toEqual([
      ['team-a/big', 'FILTER_NOT_MATCHED', BIG],
      ['team-a/denied', 'NOT_ALLOWED_BY_SOURCE', SMALL],
      ['team-a/late', 'CREATED_AFTER_EVENT', SMALL],
      ['team-a/was-denied', 'NO_DELIVERY', null],
    ]);
    expect(a.text).not.toContain('team-b');
    expect(a.text).not.toContain('legacy');
    expect(a.text).not.toContain(ids.bBig);

    const b = await detail(eventId, 'tenantB');
    expect(b.body.deliveries.map((d) => d.endpointId)).toEqual([ids.bSmall]);
    expect(summary(b.body)).toEqual([['team-b/big', 'FILTER_NOT_MATCHED', B_SECRET_FILTER]]);
    expect(b.text).not.toContain('team-a');
    expect(b.text).not.toContain('legacy');
    for (const id of [ids.aBig, ids.aDenied, ids.aLate, ids.aWasDenied, ids.legacy]) expect(b.text).not.toContain(id);
    expect(b.body.endpointsWithoutDeliveryOmitted).toBe(0);

    // a tenant that sees none of it: the event itself is not found
    expect((await h.get(`/api/events/${eventId}`, tokens.tenantOfNothing)).status).toBe(404);
  });

  it('an event whose fan-out has not routed it claims nothing about filters: every endpoint of its source and type is FANOUT_IN_PROGRESS', async () => {
    const pending = await addEvent(h.fanout.repos, { source, eventType: 'order.created', payload: JSON.stringify({ amount: 5 }) });
    const { body } = await detail(pending, 'admin');
    expect(body.deliveries).toEqual([]);
    expect(body.endpointsWithoutDelivery.map((e) => e.name)).toEqual([
      'legacy',
      'team-a/big',
      'team-a/denied',
      'team-a/late',
      'team-a/plain',
      'team-a/was-denied',
      'team-b/big',
      'team-b/small',
    ]);
    expect(new Set(body.endpointsWithoutDelivery.map((e) => e.reason))).toEqual(new Set(['FANOUT_IN_PROGRESS']));
  });

  it("whether the fan-out routed the event is read from the token's own deliveries: a tenant learns nothing of another's attempts", async () => {
    const pending = await addEvent(h.fanout.repos, { source, eventType: 'order.created', payload: JSON.stringify({ amount: 5 }) });
    // team-b's delivery has had an attempt, team-a's not yet; the event is still RECEIVED
    await h.fanout.database.db('webhook_delivery').insert([
      { event_id: pending, endpoint_id: ids.bSmall, attempts: 1 },
      { event_id: pending, endpoint_id: ids.aPlain, attempts: 0 },
    ]);
    const reasonOf = (d: EventDetail, name: string) => d.endpointsWithoutDelivery.find((e) => e.name === name)?.reason;
    expect(reasonOf((await detail(pending, 'admin')).body, 'team-a/big')).toBe('FILTER_NOT_MATCHED');
    const a = await detail(pending, 'tenantA');
    expect(new Set(a.body.endpointsWithoutDelivery.map((e) => e.reason))).toEqual(new Set(['FANOUT_IN_PROGRESS']));
    // once one of its own deliveries has an attempt, the tenant is told why
    await h.fanout.database.db('webhook_delivery').where({ event_id: pending, endpoint_id: ids.aPlain }).update({ attempts: 1 });
    expect(reasonOf((await detail(pending, 'tenantA')).body, 'team-a/big')).toBe('FILTER_NOT_MATCHED');
  });

  it('lists at most 100, by name, and counts the rest', async () => {
    const many = uniqueSource('many');
    const url = (await h.receiver()).url;
    for (let i = 0; i < 103; i++) {
      await addEndpoint(h.fanout.repos, { source: many, name: `many/${String(i).padStart(3, '0')}`, url, filter: BIG });
    }
    const event = await addEvent(h.fanout.repos, { source: many, eventType: 'x', payload: JSON.stringify({ amount: 1 }) });
    expect(await h.fanout.runFanout(event)).toBe('COMPLETED');
    const { body } = await detail(event, 'admin');
    expect(body.endpointsWithoutDelivery).toHaveLength(100);
    expect(body.endpointsWithoutDelivery[0]?.name).toBe('many/000');
    expect(body.endpointsWithoutDelivery[99]?.name).toBe('many/099');
    expect(new Set(body.endpointsWithoutDelivery.map((e) => e.reason))).toEqual(new Set(['FILTER_NOT_MATCHED']));
    expect(body.endpointsWithoutDeliveryOmitted).toBe(3);
  });
});
