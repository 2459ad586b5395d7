import { describe, expect, it } from 'vitest';
import { DATABASE_RETRY_BUDGET } from '../../../src/workflows/names.js';
import { DEFAULT_BACKOFF } from '../../../src/config/settings.js';
import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import {
  deliveryActivityOptions,
  localFirstAttemptOptions,
  releasedBy,
  retryActivityOptions,
  retryDelayAfterFirstAttempt,
  rowSettledBy,
} from '../../../src/workflows/fanout.js';
import { finalDeliveryFailure, unrecordedDeliveryFailure } from '../../../src/activities/failures.js';

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

// Which failed deliveries the workflow settles itself (finishEvent, orderingRelease): only those
// whose row the activity did not write FAILED. A written one may have been reopened by a replay
// meanwhile, and settling it again would leave the replay nothing to send.
describe('rowSettledBy', () => {
  const failed = (cause: Error) =>
    new ActivityFailure('activity failed', 'deliver', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker', cause);
  it.each([
    [
      'a 4xx the activity recorded',
      failed(finalDeliveryFailure('delivery_rejected', 'HTTP 404', { responseStatus: 404, statusClass: '4xx' })),
      true,
    ],
    ['the same from a local first attempt (not wrapped)', finalDeliveryFailure('delivery_rejected', 'HTTP 404'), true],
    ['attempts used up, recorded', failed(finalDeliveryFailure('delivery_attempts_exhausted', 'HTTP 503')), true],
    ['an internal error whose attempt could not be recorded', failed(unrecordedDeliveryFailure('delivery_internal_error', 'boom')), false],
    [
      'a failure of a history recorded before the flag',
      failed(ApplicationFailure.nonRetryable('HTTP 404', 'DeliveryPermanentFailure')),
      false,
    ],
    ['a timeout of the last attempt', failed(new TimeoutFailure('timed out', undefined, TimeoutType.START_TO_CLOSE)), false],
    ['retries used up on database failures', failed(ApplicationFailure.create({ type: 'DeliveryDatabaseUnavailable' })), false],
    ['cancellation', new CancelledFailure('cancelled'), false],
  ])('%s -> %s', (_name, err, expected) => {
    expect(rowSettledBy(err)).toBe(expected);
  });
});

// Whether an ordered delivery's run skips its orderingRelease: only when its deliver activity says
// it released the key (DeliverResult.released); results of histories before it never say so.
describe('releasedBy', () => {
  it.each([
    ['released by the activity', { status: 'SUCCESS', released: true }, true],
    ['SUCCESS, the release left to the run', { status: 'SUCCESS' }, false],
    ['PENDING (deferred)', { status: 'PENDING' }, false],
    ['no result (a handed-off end)', undefined, false],
    ['not a boolean', { status: 'SUCCESS', released: 'yes' }, false],
  ])('%s -> %s', (_name, result, expected) => {
    expect(releasedBy(result)).toBe(expected);
  });
});
