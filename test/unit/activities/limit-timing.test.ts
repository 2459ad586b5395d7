import { describe, expect, it } from 'vitest';
import {
  EARLY_RETURN_MS,
  IN_PROCESS_WAIT_MS,
  MAX_IN_PROCESS_WAITERS,
  MAX_WAIT_MS,
  leaseMs,
  limitsOf,
  pauseRequestedMs,
  pauseWaitMs,
  planWait,
  waitDelayMs,
} from '../../../src/activities/limit-timing.js';
import type { DeliveryOutcome } from '../../../src/delivery/types.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('endpoint limits: which endpoints pay for the gate', () => {
  it.each([
    [null, null, null],
    [5, null, { perSecond: 5, maxConcurrency: null }],
    [null, 3, { perSecond: null, maxConcurrency: 3 }],
    [0.5, 2, { perSecond: 0.5, maxConcurrency: 2 }],
  ])('rate %j, concurrency %j -> %j', (rateLimitPerSecond, maxConcurrency, expected) => {
    expect(limitsOf({ rateLimitPerSecond, maxConcurrency })).toEqual(expected);
  });

  // docs/limits.md: a slot is a lease that expires timeoutSeconds + 5 s after it was taken
  it.each([
    [1, 6_000],
    [10, 15_000],
    [30, 35_000],
  ])('a request of %i s holds its slot for %i ms at most, so a dead worker gives it back', (timeoutSeconds, lease) => {
    expect(leaseMs({ timeoutSeconds })).toBe(lease);
  });
});

describe('endpoint limits: a wait as a retry delay', () => {
  it.each([
    [0, 1],
    [-5, 1],
    [0.2, 1],
    [199.2, 200],
    [60_000, 60_000],
    [MAX_WAIT_MS + 1, MAX_WAIT_MS],
    [Number.POSITIVE_INFINITY, MAX_WAIT_MS],
    [Number.NaN, MAX_WAIT_MS],
  ])('%d ms -> %d ms', (wait, delay) => {
    expect(waitDelayMs(wait)).toBe(delay);
  });

  it.each([
    ['an hour', 3_600_000],
    ['a day', 86_400_000],
  ])('%s is waited 10 minutes at a time (one Temporal attempt per 10 min)', (_what, wait) => {
    expect(waitDelayMs(wait)).toBe(600_000);
  });
});

describe('endpoint limits: where a wait is spent', () => {
  it.each([
    // wait, already slept this attempt, waiters in this worker -> plan
    [150, 0, 0, { where: 'sleep', ms: 150 }],
    [0.4, 0, 0, { where: 'sleep', ms: 1 }],
    [IN_PROCESS_WAIT_MS, 0, 0, { where: 'sleep', ms: IN_PROCESS_WAIT_MS }],
    // the attempt's in-process budget is spent: to Temporal
    [300, IN_PROCESS_WAIT_MS - 200, 0, { where: 'temporal', delayMs: 300 }],
    // too many waiters in this worker already: to Temporal however short
    [150, 0, MAX_IN_PROCESS_WAITERS, { where: 'temporal', delayMs: 150 }],
    // a long wait comes back early, to sleep the rest just before its turn
    [5_000, 0, 0, { where: 'temporal', delayMs: 5_000 - EARLY_RETURN_MS }],
    [IN_PROCESS_WAIT_MS + 1, 0, 0, { where: 'temporal', delayMs: IN_PROCESS_WAIT_MS + 1 - EARLY_RETURN_MS }],
  ] as const)('%d ms (slept %d, %d waiters) -> %j', (wait, slept, waiters, plan) => {
    expect(planWait(wait, slept, waiters)).toEqual(plan);
  });

  it.each([IN_PROCESS_WAIT_MS + 1, 5_000, 60_000])(
    'a wait of %i ms comes back early through Temporal, then sleeps the rest in-process, never at once',
    (wait) => {
      const first = planWait(wait, 0, 0);
      if (first.where !== 'temporal') throw new Error(`expected a wait through Temporal, got ${JSON.stringify(first)}`);
      const rest = wait - first.delayMs;
      expect(first.delayMs).toBeGreaterThan(0);
      expect(rest).toBeGreaterThan(0);
      expect(planWait(rest, 0, 0)).toEqual({ where: 'sleep', ms: rest });
    },
  );
});

describe('endpoint limits: Retry-After pauses', () => {
  const answer = (status: number, endpointPauseMs?: number, kind: 'permanent' | 'retryable' = 'retryable'): DeliveryOutcome => ({
    kind,
    status,
    body: '',
    error: `HTTP ${status}`,
    durationMs: 3,
    statusClass: status >= 500 ? '5xx' : '4xx',
    ...(endpointPauseMs === undefined ? {} : { endpointPauseMs }),
  });

  it.each([
    ['a 503 asking for 30 s', answer(503, 30_000), 600_000, 30_000],
    ['a refused 429 asking for 7 s (this delivery FAILS, the others wait)', answer(429, 7_000, 'permanent'), 600_000, 7_000],
    ['an hour, capped at the backoff maximum', answer(503, 3_600_000), 600_000, 600_000],
    ['no Retry-After', answer(503), 600_000, undefined],
    ['Retry-After: 0', answer(503, 0), 600_000, undefined],
  ])('%s -> %s', (_what, outcome, cap, expected) => {
    expect(pauseRequestedMs(outcome, cap)).toBe(expected);
  });

  it('a success never pauses', () => {
    expect(pauseRequestedMs({ kind: 'success', status: 200, body: '', durationMs: 1, statusClass: '2xx' }, 600_000)).toBeUndefined();
  });

  it.each([
    ['no pause', null, 0.5, 0],
    ['a pause that has ended', new Date(NOW - 1), 0.5, 0],
    ['ending now', new Date(NOW), 0.5, 0],
    // 3 s left; spread by up to 10 % of it (300 ms)
    ['3 s left, the earliest restart', new Date(NOW + 3_000), 0, 3_000],
    ['3 s left, half the spread', new Date(NOW + 3_000), 0.5, 3_150],
    // 60 s left: the spread is capped at 1 s
    ['60 s left, the latest restart', new Date(NOW + 60_000), 0.999, 60_999],
    ['an hour left: one wait of at most 10 min', new Date(NOW + 3_600_000), 0.5, MAX_WAIT_MS],
  ])('%s', (_what, pausedUntil, random, expected) => {
    expect(pauseWaitMs(pausedUntil, NOW, () => random)).toBe(expected);
  });
});
