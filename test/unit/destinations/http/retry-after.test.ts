import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../../../src/destinations/http/retry-after.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('parseRetryAfter', () => {
  it.each([
    // header value(s), expected ms from NOW
    [undefined, undefined],
    ['0', 0],
    ['7', 7_000],
    ['  120 ', 120_000],
    [['3', '60'], 3_000],
    [[], undefined],
    ['3600', MAX_RETRY_AFTER_MS],
    ['86400', MAX_RETRY_AFTER_MS],
    ['Sun, 01 Mar 2026 12:00:30 GMT', 30_000],
    ['Sunday, 01-Mar-26 12:01:00 GMT', 60_000],
    // a date in the past: retry at once, never a negative delay
    ['Sun, 01 Mar 2026 11:00:00 GMT', 0],
    ['Mon, 02 Mar 2026 12:00:00 GMT', MAX_RETRY_AFTER_MS],
    ['-5', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['', undefined],
  ] as const)('%j -> %s', (value, expected) => {
    expect(parseRetryAfter(typeof value === 'object' ? [...value] : value, NOW)).toBe(expected);
  });

  it('caps at one hour: the workflow backoff cap bounds the real wait', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(3_600_000);
  });
});
