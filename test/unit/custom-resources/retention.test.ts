import { describe, expect, it } from 'vitest';
import { retentionSeconds } from '../../../src/custom-resources/to-rows.js';
import { isAppError } from '../../../src/domain/errors.js';

describe("spec.retention -> the source's ages in seconds (what dev mode and the operator write)", () => {
  it.each([
    { retention: undefined, want: { maxAge: null, payloadMaxAge: null } },
    { retention: {}, want: { maxAge: null, payloadMaxAge: null } },
    { retention: { maxAge: '90d' }, want: { maxAge: 90 * 86_400, payloadMaxAge: null } },
    { retention: { maxAge: 'forever', payloadMaxAge: '7d' }, want: { maxAge: 0, payloadMaxAge: 7 * 86_400 } },
    { retention: { maxAge: '2d', payloadMaxAge: '36h' }, want: { maxAge: 2 * 86_400, payloadMaxAge: 36 * 3600 } },
    { retention: { maxAge: '2d', payloadMaxAge: 'forever' }, want: { maxAge: 2 * 86_400, payloadMaxAge: 0 } },
  ])('$retention', ({ retention, want }) => {
    expect(retentionSeconds(retention)).toEqual(want);
  });

  it.each([
    { retention: { maxAge: '7d', payloadMaxAge: '30d' }, message: /payloadMaxAge must be shorter than retention.maxAge/ },
    { retention: { maxAge: '36h', payloadMaxAge: '2d' }, message: /payloadMaxAge must be shorter/ },
    { retention: { maxAge: 'soon' }, message: /^retention.maxAge must be a duration such as 90d/ },
  ])('refuses $retention as a spec problem', ({ retention, message }) => {
    let thrown: unknown;
    try {
      retentionSeconds(retention);
    } catch (err) {
      thrown = err;
    }
    expect(isAppError(thrown) && thrown.code).toBe('invalid_spec');
    expect((thrown as Error).message).toMatch(message);
  });
});
