import { describe, expect, it } from 'vitest';
import { DATABASE_RETRY_BUDGET } from '../../../src/workflows/names.js';
import { DEFAULT_BACKOFF } from '../../../src/config/settings.js';
import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import {
  deliveryActivityOptions,
  localFirstAttemptOptions,
  retryActivityOptions,
  retryDelayAfterFirstAttempt,
} from '../../../src/workflows/fanout.js';

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
      retry: {
        maximumAttempts: maxAttempts + DATABASE_RETRY_BUDGET,
        initialInterval: 1_000,
        backoffCoefficient: 2,
        maximumInterval: 600_000,
      },
    });
  });

  it('carries a configured backoff as is', () => {
    const options = deliveryActivityOptions(
      { maxAttempts: 3, timeoutSeconds: 5 },
      { initialIntervalMs: 50, backoffCoefficient: 3, maximumIntervalMs: 900 },
    );
    expect(options.retry).toEqual({
      maximumAttempts: 3 + DATABASE_RETRY_BUDGET,
      initialInterval: 50,
      backoffCoefficient: 3,
      maximumInterval: 900,
    });
  });
});

describe('first attempt as a local activity, then the retries as an activity', () => {
  it('the first attempt has the endpoint timeout and no retry of its own', () => {
    expect(localFirstAttemptOptions({ timeoutSeconds: 10 })).toEqual({ startToCloseTimeout: 40_000, retry: { maximumAttempts: 1 } });
  });

  it.each([
    // max_attempts -> attempts left for the activity; its first retry waits the policy's second delay
    [5, 4, 2_000],
    [1, 1, 2_000],
  ])('max_attempts %i: %i attempts left, backoff continued from %i ms', (maxAttempts, left, initial) => {
    expect(retryActivityOptions({ maxAttempts, timeoutSeconds: 10 }, DEFAULT_BACKOFF)).toEqual({
      startToCloseTimeout: 40_000,
      retry: { maximumAttempts: left + DATABASE_RETRY_BUDGET, initialInterval: initial, backoffCoefficient: 2, maximumInterval: 600_000 },
    });
  });

  it('the continued backoff respects the cap', () => {
    const options = retryActivityOptions(
      { maxAttempts: 3, timeoutSeconds: 5 },
      { initialIntervalMs: 500, backoffCoefficient: 3, maximumIntervalMs: 900 },
    );
    expect(options.retry?.initialInterval).toBe(900);
  });

  const failed = (cause: Error) =>
    new ActivityFailure('activity failed', 'deliver', '1', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'worker', cause);

  it.each([
    [
      'a 5xx with its delay (production backoff or Retry-After)',
      failed(
        ApplicationFailure.create({
          type: 'DeliveryRetryableFailure',
          details: [{ responseStatus: 503, statusClass: '5xx', retryDelayMs: 7_000 }],
        }),
      ),
      7_000,
    ],
    ['a database failure (no delay given)', failed(ApplicationFailure.create({ type: 'DeliveryDatabaseUnavailable' })), 1_000],
    ['a timeout of the attempt', failed(new TimeoutFailure('timed out', undefined, TimeoutType.START_TO_CLOSE)), 1_000],
    ['a 4xx', failed(ApplicationFailure.nonRetryable('HTTP 404', 'DeliveryPermanentFailure')), undefined],
    ['attempts used up', failed(ApplicationFailure.nonRetryable('HTTP 503', 'DeliveryAttemptsExhausted')), undefined],
    ['cancellation', new CancelledFailure('cancelled'), undefined],
  ])('%s -> retry after %s ms', (_name, err, expected) => {
    expect(retryDelayAfterFirstAttempt(err, DEFAULT_BACKOFF)).toBe(expected);
  });
});
