import { describe, expect, it } from 'vitest';
import { backoffDelayMs, validateBackoff } from '../../../src/activities/deps.js';
import { DEFAULT_BACKOFF } from '../../../src/config/settings.js';

describe('delivery backoff', () => {
  it('defaults to the documented policy: 1 s, x2, capped at 10 min', () => {
    expect(DEFAULT_BACKOFF).toEqual({ initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 600_000 });
  });

  it.each([
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [9, 256_000],
    [10, 512_000],
    [11, 600_000],
    [30, 600_000],
    // attempt 0 (never real) is treated as the first
    [0, 1_000],
  ])('default: the delay after failed attempt %i is %i ms', (attempt, ms) => {
    expect(backoffDelayMs(DEFAULT_BACKOFF, attempt)).toBe(ms);
  });

  it.each([
    [{ initialIntervalMs: 50, backoffCoefficient: 1, maximumIntervalMs: 50 }, 5, 50],
    [{ initialIntervalMs: 100, backoffCoefficient: 3, maximumIntervalMs: 1_000 }, 3, 900],
    [{ initialIntervalMs: 100, backoffCoefficient: 3, maximumIntervalMs: 1_000 }, 4, 1_000],
  ])('%j after attempt %i: %i ms', (b, attempt, ms) => {
    expect(backoffDelayMs(b, attempt)).toBe(ms);
  });

  it.each([
    [{ initialIntervalMs: 0, backoffCoefficient: 2, maximumIntervalMs: 10 }, /initialIntervalMs must be > 0/],
    [{ initialIntervalMs: Number.NaN, backoffCoefficient: 2, maximumIntervalMs: 10 }, /initialIntervalMs must be > 0/],
    [{ initialIntervalMs: 10, backoffCoefficient: 0.5, maximumIntervalMs: 10 }, /backoffCoefficient must be >= 1/],
    [{ initialIntervalMs: 10, backoffCoefficient: 2, maximumIntervalMs: 5 }, /maximumIntervalMs must be >= /],
  ])('refuses %j at start-up', (b, message) => {
    expect(() => validateBackoff(b)).toThrow(message);
  });

  it('accepts and returns a valid policy', () => {
    expect(validateBackoff(DEFAULT_BACKOFF)).toBe(DEFAULT_BACKOFF);
  });
});
