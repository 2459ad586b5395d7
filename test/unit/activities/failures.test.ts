import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { toActivityFailure, withFailureMapping } from '../../../src/activities/failures.js';
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
