import { describe, expect, it } from 'vitest';
import { createAttemptHandoff } from '../../../src/activities/attempt-handoff.js';
import type { PreparedRow } from '../../../src/db/deliveries.js';

/** A prepared row with only what the handoff looks at (the delivery's id, the payload's size). */
const row = (id: string, payloadBytes = 10): PreparedRow =>
  ({ delivery: { id }, endpoint: {}, event: { payload: Buffer.alloc(payloadBytes) } }) as unknown as PreparedRow;

describe('the attempt handoff (prepare -> the first attempt on the same worker)', () => {
  it('hands each row over once', () => {
    const h = createAttemptHandoff();
    const r = row('a');
    h.put([r, row('b')]);
    expect(h.take('a')).toBe(r);
    expect(h.take('a')).toBeUndefined();
    expect(h.take('b')?.delivery.id).toBe('b');
    expect(h.take('unknown')).toBeUndefined();
  });

  it.each([
    { after: 9_999, handed: true },
    { after: 10_000, handed: false },
    { after: 60_000, handed: false },
  ])('an entry taken $after ms after it was put: handed over $handed (ttl 10 s)', ({ after, handed }) => {
    let now = 1_000;
    const h = createAttemptHandoff({ ttlMs: 10_000, now: () => now });
    h.put([row('a')]);
    now += after;
    expect(h.take('a') !== undefined).toBe(handed);
  });

  it('holds at most maxEntries: the oldest go first', () => {
    const h = createAttemptHandoff({ maxEntries: 2 });
    h.put([row('a'), row('b'), row('c')]);
    expect([h.take('a'), h.take('b'), h.take('c')].map((r) => r?.delivery.id)).toEqual([undefined, 'b', 'c']);
  });

  it('does not hold a payload above maxPayloadBytes: that attempt loads it', () => {
    const h = createAttemptHandoff({ maxPayloadBytes: 100 });
    h.put([row('small', 100), row('large', 101)]);
    expect(h.take('small')).toBeDefined();
    expect(h.take('large')).toBeUndefined();
  });
});
