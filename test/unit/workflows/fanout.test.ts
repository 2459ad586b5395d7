import { describe, expect, it } from 'vitest';
import { DATABASE_RETRY_BUDGET } from '../../../src/activities/deliver.js';
import { DEFAULT_BACKOFF } from '../../../src/activities/deps.js';
import { deliveryActivityOptions } from '../../../src/workflows/fanout.js';

// What the workflow asks Temporal for per delivery; test/workflows/ checks Temporal honours it.
describe('deliveryActivityOptions', () => {
  it.each([
    // max_attempts, timeout_seconds -> start-to-close (request timeout + 30 s for loading and recording)
    [1, 1, 31_000],
    [5, 10, 40_000],
    [20, 60, 90_000],
  ])('max_attempts %i, timeout %i s -> %i ms start-to-close, the production backoff', (maxAttempts, timeoutSeconds, startToClose) => {
    expect(deliveryActivityOptions({ maxAttempts, timeoutSeconds }, DEFAULT_BACKOFF)).toEqual({
      startToCloseTimeout: startToClose,
      // Temporal's limit: the endpoint's attempts plus room for retries after database failures
      // (which spend none), the same budget the deliver activity counts with
      retry: { maximumAttempts: maxAttempts + DATABASE_RETRY_BUDGET, initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 600_000 },
    });
  });

  it('carries a configured backoff as is', () => {
    const options = deliveryActivityOptions({ maxAttempts: 3, timeoutSeconds: 5 }, { initialIntervalMs: 50, backoffCoefficient: 3, maximumIntervalMs: 900 });
    expect(options.retry).toEqual({ maximumAttempts: 3 + DATABASE_RETRY_BUDGET, initialInterval: 50, backoffCoefficient: 3, maximumInterval: 900 });
  });
});
