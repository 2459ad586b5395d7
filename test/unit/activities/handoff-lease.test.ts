import { describe, expect, it } from 'vitest';
import { HANDOFF_MAX_LEASE_MS, handoffLeaseMs } from '../../../src/activities/ordering.js';

// A handed-off attempt's lease: the endpoint's timeout plus the margin, and none (no handoff) when
// that would let a worker lost mid-handoff hold the key past issue 41's 30 s with the waker's pass.
describe('handoffLeaseMs', () => {
  const cases: Array<[timeoutSeconds: number, lease: number | undefined]> = [
    [1, 11_000],
    [10, 20_000],
    [15, 25_000],
    [16, undefined],
    [120, undefined],
  ];
  for (const [timeoutSeconds, lease] of cases) {
    it(`a ${timeoutSeconds} s timeout: ${lease === undefined ? 'not handed off' : `${lease} ms`}`, () => {
      expect(handoffLeaseMs(timeoutSeconds)).toBe(lease);
    });
  }
  it('leaves the waker its 5 s pass within 30 s', () => {
    expect(HANDOFF_MAX_LEASE_MS + 5_000).toBeLessThanOrEqual(30_000);
  });
});
