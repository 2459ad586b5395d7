import { describe, expect, it } from 'vitest';
import { operationalAbout } from '../../../src/api/operational-about.js';

const EP = '9d1c4b7e-1f0a-4c2b-8e6d-0a1b2c3d4e5f';
const D = '0b6c4b7e-1f0a-4c2b-8e6d-0a1b2c3d4e5f';
const endpoint = { id: EP, namespace: 'payments', name: 'ledger', uid: 'u', source: 'stripe' };
const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('operationalAbout: the endpoint and delivery an operational event names (docs/operations-events.md)', () => {
  it.each<[string, Buffer | null, ReturnType<typeof operationalAbout>]>([
    [
      'delivery.failed: its endpoint and delivery',
      json({ type: 'delivery.failed', endpoint, delivery: { id: D, eventId: 'e', attempts: 5 } }),
      { endpoint: { id: EP, name: 'payments/ledger' }, deliveryId: D },
    ],
    [
      'endpoint.disabled: the delivery that disabled it',
      json({ type: 'endpoint.disabled', endpoint, disabledBy: { deliveryId: D, eventId: 'e' } }),
      { endpoint: { id: EP, name: 'payments/ledger' }, deliveryId: D },
    ],
    [
      'ordering.key_blocked: the delivery that holds the key',
      json({ type: 'ordering.key_blocked', endpoint, key: 'cus_1', deliveryId: D, eventId: 'e' }),
      { endpoint: { id: EP, name: 'payments/ledger' }, deliveryId: D },
    ],
    [
      'endpoint.enabled: the endpoint only',
      json({ type: 'endpoint.enabled', endpoint, heldDeliveries: 3 }),
      { endpoint: { id: EP, name: 'payments/ledger' }, deliveryId: null },
    ],
    [
      'an endpoint without a namespace (a row written by hand): its name alone',
      json({ type: 'endpoint.enabled', endpoint: { ...endpoint, namespace: null } }),
      { endpoint: { id: EP, name: 'ledger' }, deliveryId: null },
    ],
    ['credential.not_ready: neither', json({ type: 'credential.not_ready', credential: { name: 'stripe' } }), null],
    [
      'replay.completed: neither (its endpointId is a filter, not the subject)',
      json({ type: 'replay.completed', replay: { endpointId: EP } }),
      null,
    ],
    ["another source's event or a dropped payload", null, null],
    ['an empty payload', Buffer.alloc(0), null],
    ['not JSON', Buffer.from('<b>x</b>'), null],
    ['not UTF-8', Buffer.from([0xff, 0xfe, 0x00]), null],
    ['JSON that is not an object', json(['endpoint']), null],
    ['fields of the wrong kind are ignored', json({ endpoint: { id: 7, name: ['x'] }, deliveryId: { id: D } }), null],
  ])('%s', (_what, payload, about) => {
    expect(operationalAbout(payload)).toEqual(about);
  });
});
