import type { Message } from '../../../src/delivery/message.js';

/** A message as delivery/message.ts builds it, for the broker bindings' tables. */
export function brokerMessage(over: Partial<Message> = {}): Message {
  return {
    body: Buffer.from('{"id":"evt_1"}'),
    contentType: 'application/json',
    format: 'CloudEventsBinary',
    attributes: {
      specversion: '1.0',
      id: 'e-1',
      source: '/webhook-fanout/stripe',
      type: 'order.created',
      time: '2026-11-29T05:00:00.000Z',
    },
    formatHeaders: { 'ce-id': 'e-1' },
    headers: { 'X-Webhook-Signature': 'c2ln', 'X-Webhook-Event-Id': 'e-1' },
    deduplicationId: 'e-1',
    orderingKey: null,
    meta: { eventId: 'e-1', source: 'stripe', eventType: 'order.created', deliveryId: 'd-1', attempt: 1 },
    ...over,
  };
}
