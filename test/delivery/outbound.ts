import type { OutboundRequest } from '../../src/delivery/types.js';

/** An outbound request to `url` as the worker builds one, with test defaults. */
export function outbound(url: string, overrides: Partial<OutboundRequest> = {}): OutboundRequest {
  return {
    url,
    method: 'POST',
    body: Buffer.from('{"id":"evt_1","type":"payment.succeeded"}'),
    contentType: 'application/json',
    auth: { type: 'NONE', username: null, secret: null },
    customHeaders: {},
    timeoutMs: 5_000,
    retryOnStatus: [],
    meta: {
      eventId: '0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10',
      source: 'stripe',
      eventType: 'payment.succeeded',
      deliveryId: '5d2c0f3e-1a7b-4c55-8d8e-2b9f0a6c7e31',
      attempt: 1,
    },
    ...overrides,
  };
}
