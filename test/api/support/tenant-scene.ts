import bcrypt from 'bcrypt';
import type { Db } from '../../../src/db/knex.js';
import type { Repositories } from '../../../src/db/repositories.js';
import { addEndpoint, addEvent, uniqueSource } from '../../fanout/support/harness.js';

/**
 * Two tenants' data for the admin API's scoping (docs/tenancy.md), written straight into Postgres:
 * the tests using it are about what the API shows to whom, so the namespace and denied_reason
 * columns (migration 071, which the operator and dev mode fill) are set here by SQL, and the
 * deliveries and their attempt logs are inserted as a run would have left them (FAILED, one
 * attempt each), independent of routing.
 *
 *   team-a owns source `pay`; team-b owns source `shop`.
 *   a        team-a, pay, every type
 *   aDenied  team-a, shop, type order: its source does not allow it (NotAllowedBySource), revoked
 *            after a delivery to it FAILED
 *   b        team-b, shop, every type
 *   bOnPay   team-b, pay, type order.paid: allowed across namespaces
 *
 *   payShared  (pay, order.paid)  -> a, bOnPay     seen by both
 *   payPrivate (pay, refund)      -> a             team-a only
 *   shop       (shop, order)      -> b, aDenied    seen by both (team-a through aDenied)
 *   shopOnly   (shop, shop.only)  -> b             team-b only
 */
export interface TenantScene {
  sources: { pay: string; shop: string };
  credentials: { pay: string; shop: string };
  endpoints: { a: string; aDenied: string; b: string; bOnPay: string };
  events: { payShared: string; payPrivate: string; shop: string; shopOnly: string };
  deliveries: { aShared: string; aPrivate: string; aDeniedShop: string; bOnPayShared: string; bShop: string; bShopOnly: string };
}

export const NAMESPACE_A = 'team-a';
export const NAMESPACE_B = 'team-b';

/** What each tenant sees of a scene: the ids its token must list, and nothing else. */
export function visibleTo(s: TenantScene, tenant: 'A' | 'B') {
  return tenant === 'A'
    ? {
        events: [s.events.payShared, s.events.payPrivate, s.events.shop],
        deliveries: [s.deliveries.aShared, s.deliveries.aPrivate, s.deliveries.aDeniedShop],
        endpoints: [s.endpoints.a, s.endpoints.aDenied],
        credentials: [s.credentials.pay],
      }
    : {
        events: [s.events.payShared, s.events.shop, s.events.shopOnly],
        deliveries: [s.deliveries.bOnPayShared, s.deliveries.bShop, s.deliveries.bShopOnly],
        endpoints: [s.endpoints.b, s.endpoints.bOnPay],
        credentials: [s.credentials.shop],
      };
}

/** The ids one tenant must get 404 for: the other's alone. */
export function foreignTo(s: TenantScene, tenant: 'A' | 'B') {
  return tenant === 'A'
    ? {
        events: [s.events.shopOnly],
        deliveries: [s.deliveries.bOnPayShared, s.deliveries.bShop, s.deliveries.bShopOnly],
        endpoints: [s.endpoints.b, s.endpoints.bOnPay],
      }
    : {
        events: [s.events.payPrivate],
        deliveries: [s.deliveries.aShared, s.deliveries.aPrivate, s.deliveries.aDeniedShop],
        endpoints: [s.endpoints.a, s.endpoints.aDenied],
      };
}

export async function buildTenantScene(db: Db, repos: Repositories, receiverUrl: string): Promise<TenantScene> {
  const pay = uniqueSource('pay');
  const shop = uniqueSource('shop');
  const passwordHash = await bcrypt.hash('scene-password', 4);
  const credential = async (source: string, namespace: string) => {
    const row = await repos.credentials.upsertByResourceUid(`test:${source}`, {
      source,
      username: source,
      passwordHash,
      eventIdRule: null,
      eventTypeRule: null,
      resourceName: `${namespace}/${source}`,
    });
    await db('webhook_inbound_credential').where({ id: row.id }).update({ namespace });
    return row.id;
  };
  const endpoint = async (name: string, source: string, namespace: string, eventType: string | null) => {
    const id = await addEndpoint(repos, { name, source, url: receiverUrl, eventType, maxAttempts: 1 });
    await db('webhook_endpoint').where({ id }).update({ namespace });
    return id;
  };
  const credentials = { pay: await credential(pay, NAMESPACE_A), shop: await credential(shop, NAMESPACE_B) };
  const endpoints = {
    a: await endpoint('a-payments', pay, NAMESPACE_A, null),
    aDenied: await endpoint('a-on-shop', shop, NAMESPACE_A, 'order'),
    b: await endpoint('b-shop', shop, NAMESPACE_B, null),
    bOnPay: await endpoint('b-on-pay', pay, NAMESPACE_B, 'order.paid'),
  };
  const events = {
    payShared: await addEvent(repos, { source: pay, eventType: 'order.paid', payload: '{"team":"a","card":"4242"}' }),
    payPrivate: await addEvent(repos, { source: pay, eventType: 'refund', payload: '{"team":"a","refund":"secret"}' }),
    shop: await addEvent(repos, { source: shop, eventType: 'order', payload: '{"team":"b"}' }),
    shopOnly: await addEvent(repos, { source: shop, eventType: 'shop.only', payload: '{"team":"b","private":true}' }),
  };
  const failed = async (eventId: string, endpointId: string) => {
    const [row] = (await db('webhook_delivery')
      .insert({
        event_id: eventId,
        endpoint_id: endpointId,
        status: 'FAILED',
        attempts: 1,
        last_response_status: 500,
        last_response_body: `answer of ${endpointId}`,
        last_attempt_at: db.fn.now(),
        completed_at: db.fn.now(),
      })
      .returning('id')) as Array<{ id: string }>;
    if (!row) throw new Error('no delivery inserted');
    await db('webhook_delivery_attempt').insert({
      delivery_id: row.id,
      attempt: 1,
      outcome: 'FAILED',
      started_at: db.fn.now(),
      duration_ms: 3,
      response_status: 500,
      response_body: `answer of ${endpointId}`,
    });
    return row.id;
  };
  const deliveries = {
    aShared: await failed(events.payShared, endpoints.a),
    aPrivate: await failed(events.payPrivate, endpoints.a),
    aDeniedShop: await failed(events.shop, endpoints.aDenied),
    bOnPayShared: await failed(events.payShared, endpoints.bOnPay),
    bShop: await failed(events.shop, endpoints.b),
    bShopOnly: await failed(events.shopOnly, endpoints.b),
  };
  await db('webhook_event').whereIn('id', Object.values(events)).update({ status: 'FAILED', completed_at: db.fn.now() });
  // revoked after its delivery failed: the source's credential no longer allows it
  await db('webhook_endpoint').where({ id: endpoints.aDenied }).update({ denied_reason: 'NotAllowedBySource' });
  return { sources: { pay, shop }, credentials, endpoints, events, deliveries };
}
