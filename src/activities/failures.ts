import { ApplicationFailure } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { ERROR_CODES, type ErrorCode, type ErrorCodeSpec } from '../domain/error-codes.js';
import { describeError, isAppError, permanent, type AppError } from '../domain/errors.js';
import type { DeliverFailureDetails } from './types.js';

/**
 * The activity boundary of the error taxonomy, and the only place an activity's ApplicationFailure
 * is built: the workflow, the tests and an operator reading a history see the failure types of the
 * error-code registry (domain/error-codes.ts: a code's failureType, else its kind's).
 */

const TYPE_OF_KIND = { permanent: 'PermanentError', transient: 'TransientError', internal: 'InternalError' } as const;

/** The failure type Temporal is told for a code. */
export function failureTypeOf(code: ErrorCode): string {
  const spec: ErrorCodeSpec = ERROR_CODES[code];
  return spec.failureType ?? TYPE_OF_KIND[spec.kind];
}

/**
 * The rule for AppErrors: permanent -> non-retryable (retrying the same input can not help),
 * transient -> retryable under the activity's policy, internal -> retryable too (a bug that a
 * deploy may fix while Temporal keeps the work; it is logged where it is thrown). An
 * ApplicationFailure is already a decision and passes as it is, and so does any other error, which
 * Temporal retries (a driver error is a dependency failing until we know better).
 */
export function toActivityFailure(err: unknown): unknown {
  if (!isAppError(err)) return err;
  return ApplicationFailure.create({
    message: err.message,
    type: failureTypeOf(err.code),
    nonRetryable: err.kind === 'permanent',
    cause: err,
  });
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

/** A failure built below: a decision of the activity, which passes every later catch as it is. */
export const isDecidedFailure = (err: unknown): boolean => err instanceof ApplicationFailure;

/** A delivery's row or the activity's event is gone: raised as prepare raises it, non-retryable. */
export const deliveryNotFound = (deliveryId: string): AppError => permanent('delivery_not_found', `delivery ${deliveryId} not found`);

/** The codes of a delivery ending FAILED: its row says so, Temporal does not retry. */
export type FinalDeliveryCode = 'delivery_rejected' | 'delivery_attempts_exhausted' | 'delivery_internal_error';

/**
 * A delivery that ended FAILED, its row written so: non-retryable, with the endpoint's answer when
 * there was one, and `rowSettled` in its details, so the workflow does not settle the row again
 * (a replay may have reopened it meanwhile: settled again, the replay would find it FAILED and
 * send nothing, and an ordered key would stay blocked).
 */
export function finalDeliveryFailure(code: FinalDeliveryCode, message: string, details?: DeliverFailureDetails): ApplicationFailure {
  return ApplicationFailure.create({
    message,
    type: failureTypeOf(code),
    nonRetryable: true,
    details: [{ ...details, rowSettled: true } satisfies Partial<DeliverFailureDetails>],
  });
}

/** A final failure whose row could not be written: non-retryable, and the workflow settles the row FAILED with the reason. */
export function unrecordedDeliveryFailure(code: 'delivery_internal_error', message: string): ApplicationFailure {
  return ApplicationFailure.create({ message, type: failureTypeOf(code), nonRetryable: true });
}

/**
 * An attempt that failed and is retried after `retryDelayMs`, which the activity decided (the
 * endpoint's attempt number, not Temporal's, sets the backoff). The delay is also in the details:
 * after a first attempt run as a local activity the workflow reads it there, as the SDK does not
 * hand nextRetryDelay to workflow code.
 */
export function retryableDeliveryFailure(
  code: 'delivery_attempt_failed' | 'delivery_internal_error',
  message: string,
  answer: Omit<DeliverFailureDetails, 'retryDelayMs'>,
  retryDelayMs: number,
): ApplicationFailure {
  return ApplicationFailure.create({
    message,
    type: failureTypeOf(code),
    nonRetryable: false,
    details: [{ ...answer, retryDelayMs } satisfies DeliverFailureDetails],
    nextRetryDelay: retryDelayMs,
  });
}

/** The longest wait between retries after a database outage (the budget: workflows/names.ts DATABASE_RETRY_BUDGET). */
export const DATABASE_RETRY_MAX_MS = 10_000;

/**
 * A transient database failure during a delivery (database_unavailable, classified in
 * db/db-errors.ts): retried by Temporal like any retryable failure, but it spends no endpoint
 * attempt, because the endpoint's attempt number is the row's count of recorded attempts, not
 * Temporal's attempt number, which sets this delay.
 */
export function deliveryDatabaseUnavailable(err: unknown, temporalAttempt: number): ApplicationFailure {
  return ApplicationFailure.create({
    message: `database unavailable: ${describeError(err)}`,
    type: failureTypeOf('delivery_database_unavailable'),
    nonRetryable: false,
    nextRetryDelay: Math.min(500 * 2 ** Math.min(temporalAttempt, 10), DATABASE_RETRY_MAX_MS),
  });
}

/**
 * A delivery that waits on its endpoint (its limits or its Retry-After pause): no request, no
 * endpoint attempt, retried after the wait. The wait is also in the details, for the workflow
 * after a local first attempt. Expected, not an error: the SDK logs a benign failure at debug
 * instead of a warning per wait, and leaves it out of its failure metrics (ours count the waits).
 */
export function deliveryDeferred(message: string, delayMs: number): ApplicationFailure {
  return ApplicationFailure.create({
    message,
    type: failureTypeOf('delivery_deferred'),
    nonRetryable: false,
    nextRetryDelay: delayMs,
    details: [{ retryDelayMs: delayMs } satisfies Partial<DeliverFailureDetails>],
    category: ApplicationFailureCategory.BENIGN,
  });
}
