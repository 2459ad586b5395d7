import type { EndpointLimits } from '../db/endpoint-limits.js';
import type { DeliveryOutcome } from '../delivery/types.js';
import type { Endpoint } from '../domain/records.js';

// The pure arithmetic of per-endpoint limits on the worker's side (docs/limits.md); what must hold
// across workers (turns, spacing, leases) is decided in Postgres, migration 056.

/**
 * A concurrency lease outlives its request by this much before it counts as abandoned: a worker
 * SIGKILLed mid-request gives its slot back at most timeoutSeconds + this after it took it.
 */
export const LEASE_MARGIN_MS = 5_000;

/**
 * The longest one wait handed to Temporal; a longer one (a deep queue) comes back, finds its turn
 * still ahead and waits again. Each wait is one Temporal attempt of the activity's budget.
 */
export const MAX_WAIT_MS = 10 * 60_000;

/**
 * Temporal fired retries up to about a second after the delay asked for (seen with the dev server
 * under load: 30 deliveries at 5/s took 15 s instead of 6), which lets turns pass unused and
 * halves the throughput a limit allows. So a wait this short is slept inside the activity instead (at most this long in
 * total per attempt), and a longer one is handed to Temporal this much early, to come back just
 * before its turn and sleep the rest.
 */
export const IN_PROCESS_WAIT_MS = 1_000;
export const EARLY_RETURN_MS = 500;

/** In-process waits a worker holds at once; past this, waits go back to Temporal however short. */
export const MAX_IN_PROCESS_WAITERS = 16;

/** A pause ends for everyone at the same instant; this spreads the restart by up to 10 %, at most 1 s. */
const PAUSE_SPREAD = { fraction: 0.1, maxMs: 1_000 } as const;

/** The limits an endpoint declares, or null when it has none: then the gate costs nothing. */
export function limitsOf(e: Pick<Endpoint, 'rateLimitPerSecond' | 'maxConcurrency'>): EndpointLimits | null {
  if (e.rateLimitPerSecond === null && e.maxConcurrency === null) return null;
  return { perSecond: e.rateLimitPerSecond, maxConcurrency: e.maxConcurrency };
}

/** How long an admitted request may hold its concurrency slot. */
export function leaseMs(e: Pick<Endpoint, 'timeoutSeconds'>): number {
  return e.timeoutSeconds * 1000 + LEASE_MARGIN_MS;
}

/** A wait as Temporal's next retry delay: at least 1 ms, at most MAX_WAIT_MS. */
export function waitDelayMs(waitMs: number): number {
  if (!Number.isFinite(waitMs)) return MAX_WAIT_MS;
  return Math.min(Math.max(Math.ceil(waitMs), 1), MAX_WAIT_MS);
}

/**
 * Where a limit wait is spent: slept in the activity when short and the attempt's in-process
 * budget (IN_PROCESS_WAIT_MS) and the worker's waiter count allow it, else handed to Temporal
 * EARLY_RETURN_MS ahead of the turn.
 */
export function planWait(
  waitMs: number,
  sleptMs: number,
  waitersNow: number,
): { where: 'sleep'; ms: number } | { where: 'temporal'; delayMs: number } {
  if (waitMs <= IN_PROCESS_WAIT_MS - sleptMs && waitersNow < MAX_IN_PROCESS_WAITERS)
    return { where: 'sleep', ms: Math.max(1, Math.ceil(waitMs)) };
  return { where: 'temporal', delayMs: waitDelayMs(waitMs > IN_PROCESS_WAIT_MS ? waitMs - EARLY_RETURN_MS : waitMs) };
}

/**
 * How long to wait for a pause (Retry-After) to end, 0 when there is none. random() in [0, 1)
 * spreads the restart of the deliveries it held back.
 */
export function pauseWaitMs(pausedUntil: Date | null, now: number, random: () => number): number {
  if (pausedUntil === null) return 0;
  const left = pausedUntil.getTime() - now;
  if (left <= 0) return 0;
  return waitDelayMs(left + random() * Math.min(left * PAUSE_SPREAD.fraction, PAUSE_SPREAD.maxMs));
}

/**
 * The pause an answer asks of every delivery to its endpoint (a 429 or 503 with Retry-After, see
 * destinations/http/classify.ts), capped like a retry delay at the backoff's maximum, so an endpoint can
 * not park its deliveries for an hour. Undefined: no pause.
 */
export function pauseRequestedMs(outcome: DeliveryOutcome, capMs: number): number | undefined {
  if (outcome.kind === 'success' || outcome.kind === 'deferred') return undefined;
  if (outcome.endpointPauseMs === undefined || outcome.endpointPauseMs <= 0) return undefined;
  return Math.min(outcome.endpointPauseMs, capMs);
}
