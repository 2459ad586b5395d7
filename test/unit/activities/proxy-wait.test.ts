import { describe, expect, it } from 'vitest';
import { PROXY_WAIT_MAX_MS, proxyWaitMs } from '../../../src/activities/proxy-wait.js';
import { DEFAULT_BACKOFF } from '../../../src/config/settings.js';

describe('proxyWaitMs: how long a delivery waits after the forward proxy failed it', () => {
  it.each([
    // Temporal attempt, wait with the default backoff (1 s, x2, capped at 10 min) capped at a minute
    [1, 1_000],
    [2, 2_000],
    [6, 32_000],
    [7, PROXY_WAIT_MAX_MS],
    [400, PROXY_WAIT_MAX_MS],
  ])('attempt %i -> %i ms', (attempt, ms) => {
    expect(proxyWaitMs(DEFAULT_BACKOFF, attempt)).toBe(ms);
  });

  it('follows a shorter backoff cap', () => {
    expect(proxyWaitMs({ initialIntervalMs: 50, backoffCoefficient: 2, maximumIntervalMs: 500 }, 20)).toBe(500);
  });
});
