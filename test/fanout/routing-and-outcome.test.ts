import { describe, expect } from 'vitest';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from './support/harness.js';
import { counterDelta, it } from './support/fixtures.js';

describe('routing and event outcome', () => {
  it('fans out to the union of active matches: specific type and catch-all fire; other types, sources and inactive do not', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource();
    const [specific, catchAll, otherType, inactive, otherSource] = await Promise.all([
      receiver(),
      receiver(),
      receiver(),
      receiver(),
      receiver(),
    ]);
    const specificId = await addEndpoint(h.repos, { source, eventType: 'invoice.paid', url: specific.url });
    const catchAllId = await addEndpoint(h.repos, { source, eventType: null, url: catchAll.url });
    await addEndpoint(h.repos, { source, eventType: 'invoice.voided', url: otherType.url });
    await addEndpoint(h.repos, { source, eventType: null, url: inactive.url, active: false });
    await addEndpoint(h.repos, { source: uniqueSource('other'), eventType: null, url: otherSource.url });
    const eventId = await addEvent(h.repos, { source, eventType: 'invoice.paid' });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(specific.requests).toHaveLength(1);
    expect(catchAll.requests).toHaveLength(1);
    expect(otherType.requests).toHaveLength(0);
    expect(inactive.requests).toHaveLength(0);
    expect(otherSource.requests).toHaveLength(0);
    const deliveries = await h.repos.deliveries.listByEvent(eventId);
    expect(deliveries.map((d) => d.endpointId).sort()).toEqual([specificId, catchAllId].sort());
    expect(deliveries.every((d) => d.status === 'SUCCESS')).toBe(true);
  });

  it('a specific-type endpoint only receives its type; catch-all receives every type and untyped events', async ({ h, receiver }) => {
    const source = uniqueSource();
    const specific = await receiver();
    const catchAll = await receiver();
    await addEndpoint(h.repos, { source, eventType: 'a', url: specific.url });
    await addEndpoint(h.repos, { source, eventType: null, url: catchAll.url });

    await h.runFanout(await addEvent(h.repos, { source, eventType: 'b' }));
    await h.runFanout(await addEvent(h.repos, { source, eventType: null }));
    await h.runFanout(await addEvent(h.repos, { source, eventType: 'a' }));

    expect(specific.requests.map((q) => q.headers['x-webhook-event-type'])).toEqual(['a']);
    expect(catchAll.requests).toHaveLength(3);
  });

  it('COMPLETED when no endpoint matches (no deliveries)', async ({ h }) => {
    const eventId = await addEvent(h.repos, { source: uniqueSource('lonely'), eventType: 'x' });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    expect(await h.repos.deliveries.listByEvent(eventId)).toEqual([]);
    expect((await h.repos.events.get(eventId))?.status).toBe('COMPLETED');
  });

  it('PARTIAL when some deliveries succeed and some fail', async ({ h, receiver }) => {
    const source = uniqueSource();
    const ok = await receiver([{ status: 200 }]);
    const bad = await receiver([{ status: 404, body: 'no such hook' }]);
    const okId = await addEndpoint(h.repos, { source, url: ok.url });
    const badId = await addEndpoint(h.repos, { source, url: bad.url });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('PARTIAL');

    expect((await deliveryOf(h.repos, eventId, okId)).status).toBe('SUCCESS');
    expect((await deliveryOf(h.repos, eventId, badId)).status).toBe('FAILED');
    expect((await h.repos.events.get(eventId))?.status).toBe('PARTIAL');
  });

  it('FAILED when every delivery fails', async ({ h, receiver }) => {
    const source = uniqueSource();
    const a = await receiver([{ status: 400 }]);
    const b = await receiver([{ status: 500 }]);
    await addEndpoint(h.repos, { source, url: a.url });
    await addEndpoint(h.repos, { source, url: b.url, maxAttempts: 2 });
    const eventId = await addEvent(h.repos, { source });
    const failedEvents = await counterDelta(h.metrics.eventsFinished, { status: 'FAILED' });

    expect(await h.runFanout(eventId)).toBe('FAILED');
    expect((await h.repos.events.get(eventId))?.status).toBe('FAILED');
    expect(a.requests).toHaveLength(1);
    expect(b.requests).toHaveLength(2);

    expect(await failedEvents()).toBe(1);
  });
});
