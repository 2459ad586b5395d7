import type { BackoffSettings } from '../config/settings.js';
import type { Repositories } from '../db/repositories.js';
import type { Destinations } from '../delivery/destination.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { OrderingWake } from './types.js';

/** Logging the activities need; a pino logger fits, tests may pass nothing. */
export type ActivityLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface ActivityDeps {
  repos: Pick<Repositories, 'endpoints' | 'events' | 'deliveries' | 'endpointLimits' | 'ordering'>;
  /** where each endpoint's messages go: one destination per type (destinations/index.ts) */
  destinations: Pick<Destinations, 'send'>;
  metrics: Pick<
    Metrics,
    | 'deliveryAttempts'
    | 'endpointAttempts'
    | 'deliveryDuration'
    | 'eventsFinished'
    | 'eventEndToEnd'
    | 'endpointAutoDisables'
    | 'deliveryDeferrals'
    | 'deliveryProxyFailures'
    | 'deliveryTokenFailures'
    | 'deliveryLimitWait'
    | 'filtered'
    | 'filterErrors'
    | 'orderingHandoffs'
  >;
  logger?: ActivityLogger;
  /** delivery retry backoff; DEFAULT_BACKOFF when omitted */
  backoff?: BackoffSettings;
  /** clock in epoch ms, for end-to-end timing */
  now?: () => number;
  /**
   * Signals the run waiting for an ordered delivery's turn from the activity that released the
   * key (temporal/signal-turn.ts); without it, or when it fails, the workflow sends the signal
   */
  signalTurn?: (wake: OrderingWake) => Promise<void>;
  /**
   * ORDERING_HANDOFF: the activity that releases an ordered key makes the attempt of the key's
   * next delivery itself when its run waits for it (docs/ordering.md, "The handoff"); false: it
   * only signals that run, one signal per hop. Absent: on.
   */
  orderingHandoff?: boolean;
  /**
   * Whether the worker is draining (its stop() began): a handoff chain then claims no further
   * delivery, so the drain waits for the attempt in hand only, not for a chain of more (absent: never).
   */
  draining?: () => boolean;
}

/** Temporal rejects such a retry policy at schedule time; fail at start-up instead. */
export function validateBackoff(b: BackoffSettings): BackoffSettings {
  if (!(b.initialIntervalMs > 0)) throw new Error('backoff.initialIntervalMs must be > 0');
  if (!(b.backoffCoefficient >= 1)) throw new Error('backoff.backoffCoefficient must be >= 1');
  if (!(b.maximumIntervalMs >= b.initialIntervalMs)) {
    throw new Error('backoff.maximumIntervalMs must be >= backoff.initialIntervalMs');
  }
  return b;
}

/** The policy's delay after a given (1-based) failed attempt, for comparing with Retry-After. */
export function backoffDelayMs(b: BackoffSettings, attempt: number): number {
  return Math.min(b.initialIntervalMs * b.backoffCoefficient ** Math.max(0, attempt - 1), b.maximumIntervalMs);
}

export const noopLogger: ActivityLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
