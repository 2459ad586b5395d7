import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  deliveryDatabaseUnavailable,
  deliveryDeferred,
  deliveryNotFound,
  finalDeliveryFailure,
  unrecordedDeliveryFailure,
  isDecidedFailure,
  retryableDeliveryFailure,
  toActivityFailure,
  withFailureMapping,
} from '../../../src/activities/failures.js';
import { ERROR_CODES, type ErrorCodeSpec } from '../../../src/domain/error-codes.js';
import { internal, permanent, transient } from '../../../src/domain/errors.js';

// The activity boundary of the error taxonomy: what Temporal is told for each kind of error.
describe('toActivityFailure', () => {
  it.each([
    ['permanent, listed code', permanent('event_not_found', 'event e1 not found'), 'EventNotFound', true],
    ['permanent, endpoint', permanent('endpoint_not_found', 'endpoint x not found'), 'EndpointNotFound', true],
    ['permanent, any other code', permanent('invalid_endpoint_auth', 'BASIC auth needs a username'), 'PermanentError', true],
    ['transient', transient('database_unavailable', 'Postgres is unavailable'), 'TransientError', false],
    ['internal', internal('database_error', 'unexpected state'), 'InternalError', false],
  ] as const)('%s -> %s, nonRetryable %s', (_what, err, type, nonRetryable) => {
    const f = toActivityFailure(err);
    expect(f).toBeInstanceOf(ApplicationFailure);
    expect(f).toMatchObject({ type, nonRetryable, message: err.message });
  });

  it('passes an ApplicationFailure and any other error through unchanged', () => {
    const decided = ApplicationFailure.nonRetryable('4xx', 'DeliveryPermanentFailure');
    const driver = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(toActivityFailure(decided)).toBe(decided);
    expect(toActivityFailure(driver)).toBe(driver);
  });

  it('withFailureMapping maps what the activity throws and returns what it returns', async () => {
    const ok = withFailureMapping(async (n: number) => n * 2);
    const bad = withFailureMapping(async () => {
      throw permanent('event_not_found', 'gone');
    });
    expect(await ok(21)).toBe(42);
    await expect(bad()).rejects.toMatchObject({ type: 'EventNotFound', nonRetryable: true });
  });
});

// The failures the deliver activity and its limit gate raise: each one's type (the registry's),
// whether Temporal retries it, the delay it asks for and the details the workflow reads.
describe('the delivery failures', () => {
  const answer = { responseStatus: 503, statusClass: '5xx' };
  it.each([
    [
      'rejected: a final 4xx',
      finalDeliveryFailure('delivery_rejected', 'HTTP 404', { responseStatus: 404, statusClass: '4xx' }),
      { type: 'DeliveryPermanentFailure', nonRetryable: true, message: 'HTTP 404', nextRetryDelay: undefined },
      { responseStatus: 404, statusClass: '4xx', rowSettled: true },
    ],
    [
      'rejected without a request (no answer)',
      finalDeliveryFailure('delivery_rejected', 'endpoint disabled'),
      { type: 'DeliveryPermanentFailure', nonRetryable: true, nextRetryDelay: undefined },
      { rowSettled: true },
    ],
    [
      'attempts used up',
      finalDeliveryFailure('delivery_attempts_exhausted', 'HTTP 503', answer),
      { type: 'DeliveryAttemptsExhausted', nonRetryable: true },
      { ...answer, rowSettled: true },
    ],
    [
      'an internal error on the last attempt, recorded',
      finalDeliveryFailure('delivery_internal_error', 'internal error: boom'),
      { type: 'DeliveryInternalError', nonRetryable: true },
      { rowSettled: true },
    ],
    [
      'an internal error whose attempt could not be recorded (the workflow settles the row)',
      unrecordedDeliveryFailure('delivery_internal_error', 'internal error: boom'),
      { type: 'DeliveryInternalError', nonRetryable: true },
      undefined,
    ],
    [
      'a retry after the backoff',
      retryableDeliveryFailure('delivery_attempt_failed', 'HTTP 503', answer, 4_000),
      { type: 'DeliveryRetryableFailure', nonRetryable: false, nextRetryDelay: 4_000 },
      { ...answer, retryDelayMs: 4_000 },
    ],
    [
      'an internal error that spent an attempt',
      retryableDeliveryFailure('delivery_internal_error', 'internal error: boom', { responseStatus: null, statusClass: 'internal' }, 2_000),
      { type: 'DeliveryInternalError', nonRetryable: false, nextRetryDelay: 2_000 },
      { responseStatus: null, statusClass: 'internal', retryDelayMs: 2_000 },
    ],
    [
      'a wait on the endpoint',
      deliveryDeferred('waiting 1500 ms on the endpoint (rate limit)', 1_500),
      { type: 'DeliveryDeferred', nonRetryable: false, nextRetryDelay: 1_500, category: 'BENIGN' },
      { retryDelayMs: 1_500 },
    ],
  ] as const)('%s', (_what, failure, expected, details) => {
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject(expected);
    expect(failure.details?.[0]).toEqual(details);
  });

  it.each([
    [1, 1_000],
    [2, 2_000],
    [4, 8_000],
    [5, 10_000],
    [30, 10_000],
  ])('a database outage on Temporal attempt %i: retried after %i ms, the cause described without its secrets', (attempt, delay) => {
    const cause = transient('database_unavailable', 'Postgres is unavailable', new Error('connect postgres://app:pw@db:5432 refused'));
    const failure = deliveryDatabaseUnavailable(cause, attempt);
    expect(failure).toMatchObject({ type: 'DeliveryDatabaseUnavailable', nonRetryable: false, nextRetryDelay: delay });
    expect(failure.message).toBe('database unavailable: Postgres is unavailable: connect postgres://[redacted]@db:5432 refused');
  });

  it('a missing delivery is raised as prepare raises a missing row: DeliveryNotFound, not retried', () => {
    expect(toActivityFailure(deliveryNotFound('d1'))).toMatchObject({
      type: 'DeliveryNotFound',
      nonRetryable: true,
      message: 'delivery d1 not found',
    });
  });

  it('every failure type a builder raises is a code of the registry', () => {
    const types = Object.values(ERROR_CODES).flatMap((spec: ErrorCodeSpec) => (spec.failureType ? [spec.failureType] : []));
    for (const f of [
      finalDeliveryFailure('delivery_rejected', 'm'),
      finalDeliveryFailure('delivery_attempts_exhausted', 'm'),
      retryableDeliveryFailure('delivery_attempt_failed', 'm', answer, 1),
      deliveryDatabaseUnavailable(new Error('x'), 1),
      deliveryDeferred('m', 1),
    ]) {
      expect(types).toContain(f.type);
    }
    expect(new Set(types).size).toBe(types.length);
  });

  it('isDecidedFailure: a built failure passes as it is, an AppError or an Error is still to be mapped', () => {
    expect(isDecidedFailure(finalDeliveryFailure('delivery_rejected', 'm'))).toBe(true);
    expect(isDecidedFailure(permanent('delivery_not_found', 'm'))).toBe(false);
    expect(isDecidedFailure(new Error('m'))).toBe(false);
  });
});
