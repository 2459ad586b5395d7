import { describe, expect, it } from 'vitest';
import { aboutEndpoint, operationalPayload, resourceName } from '../../../src/db/operational-events.js';

describe('operational events: what their payload names (docs/operations-events.md)', () => {
  it.each([
    { row: 'payments/ledger', namespace: 'payments', name: 'ledger' },
    // a name of its own that happens to hold a slash: only the namespace's prefix goes
    { row: 'payments/a/b', namespace: 'payments', name: 'a/b' },
    { row: 'other/ledger', namespace: 'payments', name: 'other/ledger' },
    // a row without a namespace (written by hand, before tenancy): its name as it is
    { row: 'ledger', namespace: null, name: 'ledger' },
    { row: 'payments/ledger', namespace: null, name: 'payments/ledger' },
  ])('the endpoint row $row of namespace $namespace is the resource $name', ({ row, namespace, name }) => {
    expect(resourceName(row, namespace)).toBe(name);
  });

  it('an event about an endpoint: its subject with the admin API path, and the endpoint beside it', () => {
    const endpoint = { id: 'e1', namespace: 'payments', name: 'ledger', uid: 'u1', source: 'stripe' };
    expect(aboutEndpoint(endpoint)).toEqual({
      subject: { kind: 'WebhookEndpoint', namespace: 'payments', name: 'ledger', uid: 'u1', adminApiPath: '/api/deliveries?endpointId=e1' },
      data: { endpoint },
    });
  });

  it("type, occurredAt and subject are the payload's own: data can not override them", () => {
    const subject = { kind: 'WebhookReplay' as const, namespace: 'payments', name: 'r', uid: 'u', adminApiPath: '/api/deliveries' };
    const payload = operationalPayload(
      { type: 'replay.completed', key: 'u', subject, data: { type: 'forged', subject: 'forged', replay: { phase: 'Complete' } } },
      new Date('2026-11-29T03:00:00.000Z'),
    );
    expect(payload).toEqual({ type: 'replay.completed', occurredAt: '2026-11-29T03:00:00.000Z', subject, replay: { phase: 'Complete' } });
  });
});
