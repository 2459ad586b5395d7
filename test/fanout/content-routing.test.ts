import { readFileSync } from 'node:fs';
import { describe, expect } from 'vitest';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';
import { counterDelta, it } from './support/fixtures.js';

const invoice = readFileSync(new URL('../fixtures/payloads/stripe-invoice-paid.json', import.meta.url), 'utf8');

// spec.filter in a whole run (docs/content-routing.md): the worker as cmd/worker.ts builds it, on
// real Postgres and Temporal; endpoints without a filter are routed as before.
describe('routing by content: spec.filter', () => {
  it('an endpoint gets exactly the events its filter accepts; an evaluation error is not a match and fails nothing', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('stripe');
    const [plain, big, small, broken] = await Promise.all([receiver(), receiver(), receiver(), receiver()]);
    const plainId = await addEndpoint(h.repos, { source, url: plain.url, name: 'billing/plain' });
    const bigId = await addEndpoint(h.repos, {
      source,
      url: big.url,
      name: 'billing/big',
      filter: "event.type.startsWith('invoice.') && event.data.data.object.amount_paid >= 10000",
    });
    await addEndpoint(h.repos, { source, url: small.url, name: 'billing/small', filter: 'event.data.data.object.amount_paid < 100' });
    await addEndpoint(h.repos, { source, url: broken.url, name: 'billing/broken', filter: 'event.data.data.object.coupon.id == "x"' });
    const filtered = await counterDelta(h.metrics.filtered, { endpoint: 'billing/small' });
    const errors = await counterDelta(h.metrics.filterErrors, { endpoint: 'billing/broken' });

    const eventId = await addEvent(h.repos, { source, eventType: 'invoice.paid', payload: invoice });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(plain.requests).toHaveLength(1);
    expect(big.requests).toHaveLength(1);
    expect(big.requests[0]?.body).toBe(invoice);
    expect(small.requests).toHaveLength(0);
    expect(broken.requests).toHaveLength(0);
    const deliveries = await h.repos.deliveries.listByEvent(eventId);
    expect(deliveries.map((d) => d.endpointId).sort()).toEqual([plainId, bigId].sort());
    expect(await filtered()).toBe(1);
    expect(await errors()).toBe(1);

    // a second event the big filter refuses: only the plain endpoint
    const refund = await addEvent(h.repos, { source, eventType: 'charge.refunded', payload: invoice });
    expect(await h.runFanout(refund)).toBe('COMPLETED');
    expect(plain.requests).toHaveLength(2);
    expect(big.requests).toHaveLength(1);
  });

  it('a retried prepare does not deliver twice to a filtered endpoint (its row from the first run is found)', async ({ h, receiver }) => {
    const source = uniqueSource('stripe');
    const target = await receiver();
    const id = await addEndpoint(h.repos, { source, url: target.url, filter: "event.type == 'invoice.paid'" });
    const eventId = await addEvent(h.repos, { source, eventType: 'invoice.paid', payload: invoice });
    const accept = (_e: unknown, endpoints: readonly { id: string }[]) => endpoints as never;
    const first = await h.repos.deliveries.prepareRun(eventId, eventId, accept);
    const again = await h.repos.deliveries.prepareRun(eventId, eventId, () => {
      throw new Error('not asked again: the row is there');
    });
    expect(first?.map((r) => r.endpoint.id)).toEqual([id]);
    expect(again?.map((r) => r.delivery.id)).toEqual(first?.map((r) => r.delivery.id));
  });
});
