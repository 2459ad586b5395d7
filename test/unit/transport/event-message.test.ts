import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeEventMessage, encodeEventMessage } from '../../../src/transport/event-message.js';

describe('event message (claim check)', () => {
  it('round-trips an event id as {"eventId": ...}', () => {
    const id = randomUUID();
    expect(encodeEventMessage(id)).toBe(`{"eventId":"${id}"}`);
    expect(decodeEventMessage(encodeEventMessage(id))).toBe(id);
  });

  it.each([
    ['no body', undefined],
    ['not JSON', 'hello'],
    ['JSON null', 'null'],
    ['an array', '["x"]'],
    ['no eventId', '{"id":"8b0c6c3e-3c57-4a4e-9f55-0d0a2b1c7e11"}'],
    ['a number', '{"eventId":42}'],
    ['not a UUID', '{"eventId":"abc"}'],
    ['an SNS envelope', JSON.stringify({ Type: 'Notification', Message: '{"eventId":"8b0c6c3e-3c57-4a4e-9f55-0d0a2b1c7e11"}' })],
  ])('rejects %s', (_what, body) => {
    expect(decodeEventMessage(body)).toBeUndefined();
  });
});
