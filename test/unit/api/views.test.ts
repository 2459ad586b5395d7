import { describe, expect, it } from 'vitest';
import { noDeliveryReason } from '../../../src/api/views.js';

const row = (o: { createdAfter?: boolean; denied?: 'NotAllowedBySource' | 'SourceNotFound' | null; filter?: string | null }) => ({
  created_after_event: o.createdAfter ?? false,
  denied_reason: o.denied ?? null,
  filter: o.filter ?? null,
});

// What the event page may claim of an endpoint of its (source, type) without a delivery: "its
// filter did not match" only when the event was routed, the endpoint existed then, is allowed and
// has a filter; otherwise what is known.
describe('why an endpoint got no delivery of an event', () => {
  it.each([
    ['a filter, existed, allowed, routed', row({ filter: 'event.data.x > 1' }), true, 'FILTER_NOT_MATCHED'],
    ['fan-out under way: nothing claimed, filter or not', row({ filter: 'event.data.x > 1' }), false, 'FANOUT_IN_PROGRESS'],
    ['fan-out under way, created after', row({ createdAfter: true }), false, 'FANOUT_IN_PROGRESS'],
    ['created after the event, with a filter', row({ filter: 'event.data.x > 1', createdAfter: true }), true, 'CREATED_AFTER_EVENT'],
    ['created after the event, no filter', row({ createdAfter: true }), true, 'CREATED_AFTER_EVENT'],
    ['not allowed by its source now, with a filter', row({ filter: 'true', denied: 'NotAllowedBySource' }), true, 'NOT_ALLOWED_BY_SOURCE'],
    ['no credential for its source', row({ denied: 'SourceNotFound' }), true, 'NOT_ALLOWED_BY_SOURCE'],
    ['no filter, existed, allowed now', row({}), true, 'NO_DELIVERY'],
  ] as const)('%s', (_name, r, routed, want) => {
    expect(noDeliveryReason(r, routed)).toBe(want);
  });
});
