import type { EndpointLimitRepository } from '../db/endpoint-limits.js';
import type { DeliveryOutcome } from '../delivery/types.js';
import { describeError } from '../domain/errors.js';
import type { Endpoint } from '../domain/records.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ActivityLogger } from './deps.js';
import { deliveryDeferred } from './failures.js';
import { spanEvent } from '../observability/spans.js';
import { leaseMs, limitsOf, pauseRequestedMs, pauseWaitMs, planWait, waitDelayMs } from './limit-timing.js';

export type DeferReason = 'rate' | 'concurrency' | 'retry_after';

export interface LimitGateDeps {
  limits: EndpointLimitRepository;
  metrics: Pick<Metrics, 'deliveryDeferrals' | 'deliveryLimitWait'>;
  logger: ActivityLogger;
  /** the backoff cap: a Retry-After pause is never longer */
  maxPauseMs: number;
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** What an admitted request must do when it ends: give its concurrency slot back. */
export type Release = (durationMs: number) => Promise<void>;

/**
 * Per-endpoint limits around one request of the deliver activity (docs/limits.md). Over a limit,
 * or while the endpoint's Retry-After pause runs, the delivery is not tried: the activity fails
 * with a retryable DeliveryDeferred whose nextRetryDelay is the wait, like a database failure it
 * spends no endpoint attempt (the attempt number is the row's count), and nothing blocks the
 * worker's slot meanwhile. The same path serves a local or a normal activity: every bit of state
 * is in Postgres.
 */
export function createLimitGate({
  limits,
  metrics,
  logger,
  maxPauseMs,
  now = Date.now,
  random = Math.random,
  sleep = realSleep,
}: LimitGateDeps) {
  /** in-process waits of this worker right now (bounded by MAX_IN_PROCESS_WAITERS) */
  let waiters = 0;

  function counted(endpoint: Endpoint, reason: DeferReason, ms: number): void {
    metrics.deliveryDeferrals.inc({ endpoint: endpoint.name, reason });
    metrics.deliveryLimitWait.inc({ endpoint: endpoint.name, reason }, ms / 1000);
  }

  function defer(endpoint: Endpoint, reason: DeferReason, waitMs: number, log: object): never {
    const delay = waitDelayMs(waitMs);
    counted(endpoint, reason, delay);
    // on the activity's span: the attempt that follows (after the wait) is a new execution of it
    spanEvent(reason === 'retry_after' ? 'Retry-After pause' : 'endpoint limit wait', {
      'webhook.wait_reason': reason,
      'webhook.wait_ms': delay,
      'webhook.wait_where': 'temporal',
    });
    logger.debug({ ...log, reason, waitMs: delay }, 'delivery waits on its endpoint');
    throw deliveryDeferred(
      `waiting ${delay} ms on the endpoint (${reason === 'retry_after' ? 'Retry-After pause' : `${reason} limit`})`,
      delay,
    );
  }

  return {
    /**
     * Before a request: returns how to release it when admitted, or throws DeliveryDeferred. An
     * endpoint without limits and without a pause costs no round trip (the pause came with its row).
     * `waits: false`: no wait in this process either, a limit defers at once (an ordered key's
     * handoff, which gives the delivery back to its own run instead: docs/ordering.md).
     */
    async enter(endpoint: Endpoint, deliveryId: string, log: object, waits = true): Promise<Release | undefined> {
      const paused = pauseWaitMs(endpoint.pausedUntil, now(), random);
      if (paused > 0) defer(endpoint, 'retry_after', paused, log);
      const declared = limitsOf(endpoint);
      if (declared === null) return undefined;
      for (let slept = 0; ;) {
        const admission = await limits.admit(endpoint.id, deliveryId, declared, leaseMs(endpoint));
        if (admission.admitted) break;
        const plan = planWait(admission.waitMs, slept, waiters);
        if (plan.where === 'temporal') defer(endpoint, admission.reason, plan.delayMs, log);
        if (!waits) defer(endpoint, admission.reason, plan.ms, log);
        counted(endpoint, admission.reason, plan.ms);
        spanEvent('endpoint limit wait', {
          'webhook.wait_reason': admission.reason,
          'webhook.wait_ms': plan.ms,
          'webhook.wait_where': 'worker',
        });
        waiters++;
        try {
          await sleep(plan.ms);
        } finally {
          waiters--;
        }
        slept += plan.ms;
      }
      if (declared.maxConcurrency === null) return undefined;
      // the rate turn is spent when admitted; only a concurrency slot is held until the end
      return async (durationMs) => {
        try {
          await limits.release(endpoint.id, deliveryId, durationMs);
        } catch (err) {
          // the lease expires by itself (timeout + LEASE_MARGIN_MS); until then the slot stays taken
          logger.warn({ ...log, err: describeError(err) }, 'could not give back the concurrency slot; it frees when its lease expires');
        }
      };
    },

    /** After an answer: a 429/503 with Retry-After pauses every delivery to the endpoint. */
    async afterAnswer(endpoint: Endpoint, outcome: DeliveryOutcome, log: object): Promise<void> {
      const pauseMs = pauseRequestedMs(outcome, maxPauseMs);
      if (pauseMs === undefined) return;
      try {
        await limits.pause(endpoint.id, pauseMs);
        spanEvent('Retry-After pause requested', { 'webhook.pause_ms': pauseMs });
        logger.info({ ...log, pauseMs }, 'endpoint asked for a pause (Retry-After): its deliveries wait');
      } catch (err) {
        // the delivery that got the answer still waits for its own retry; the others may not
        logger.warn({ ...log, err: describeError(err) }, 'could not record the endpoint pause');
      }
    },
  };
}
