import { ApplicationFailure } from '@temporalio/activity';
import { ERROR_CODES, type ErrorCodeSpec } from '../domain/error-codes.js';
import { isAppError } from '../domain/errors.js';

/**
 * Every failure type an activity reports to Temporal, in one table: the workflow, the tests and an
 * operator reading a history see these names. Delivery outcomes have their own three (a 4xx, the
 * endpoint's attempts used up, a retry to come); everything else comes from an AppError's code (its failureType in
 * domain/error-codes.ts, else its kind's).
 */
export const DELIVERY_FAILURE = {
  permanent: 'DeliveryPermanentFailure',
  exhausted: 'DeliveryAttemptsExhausted',
  retryable: 'DeliveryRetryableFailure',
  missing: ERROR_CODES.delivery_not_found.failureType,
  /** Postgres failed: no endpoint attempt was spent, the activity is retried */
  database: 'DeliveryDatabaseUnavailable',
  /** a bug: logged with its stack, it spent an endpoint attempt; final after the last one */
  internal: 'DeliveryInternalError',
  /** the endpoint's limits or its Retry-After pause: no request, no endpoint attempt, retried after the wait */
  deferred: 'DeliveryDeferred',
} as const;

const TYPE_OF_KIND = { permanent: 'PermanentError', transient: 'TransientError', internal: 'InternalError' } as const;

/**
 * The activity boundary of the error taxonomy: permanent -> non-retryable (retrying the same input
 * can not help), transient -> retryable under the activity's policy, internal -> retryable too (a
 * bug that a deploy may fix while Temporal keeps the work; it is logged where it is thrown). An
 * ApplicationFailure is already a decision and passes as it is, and so does any other error, which
 * Temporal retries (a driver error is a dependency failing until we know better).
 */
export function toActivityFailure(err: unknown): unknown {
  if (!isAppError(err)) return err;
  const spec: ErrorCodeSpec = ERROR_CODES[err.code];
  const type = spec.failureType ?? TYPE_OF_KIND[err.kind];
  return ApplicationFailure.create({ message: err.message, type, nonRetryable: err.kind === 'permanent', cause: err });
}

/** Wraps an activity once so that whatever it throws crosses the boundary by the rule above. */
export function withFailureMapping<A extends unknown[], R>(activity: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await activity(...args);
    } catch (err) {
      throw toActivityFailure(err);
    }
  };
}
