import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { ClaimedRedrive, RedriveQueries } from '../db/redrive-queries.js';
import { describeError } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { startReplay } from './replay-starter.js';

/** How often the redriver looks for enabled endpoints with held deliveries (and sets the gauge). */
export const REDRIVE_INTERVAL_MS = 2_000;
/** A claim whose run was not confirmed started this long ago is started again (same workflow id). */
const UNCONFIRMED_AFTER_MS = 30_000;
/** How long a chain waits for one redriven delivery to settle before leaving it to a later pass. */
const SETTLE_WAIT_MS = 30_000;
/** Bound on starting one run: Temporal down must not hold the redriver. */
const START_TIMEOUT_MS = 10_000;
const ENDPOINTS_PER_PASS = 16;

export interface RedriverDeps {
  queries: RedriveQueries;
  client: Client;
  taskQueue: string;
  metrics: Pick<Metrics, 'redriveStarted' | 'endpointsDisabled' | 'endpointsPaused' | 'deliveriesHeld'>;
  logger: Logger;
  /** default REDRIVE_INTERVAL_MS */
  intervalMs?: number;
  /** default UNCONFIRMED_AFTER_MS */
  unconfirmedAfterMs?: number;
}

export interface Redriver {
  start(): void;
  /** one pass now: what the timer does (tests call it to avoid waiting) */
  pass(): Promise<void>;
  /** stops the timer and waits for the chains in flight */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Re-delivers what an endpoint missed while it was disabled (docs/endpoint-health.md), through
 * the replay path: each held delivery is reopened and handed to a replay run of the
 * WebhookFanoutWorkflow, so it is delivered (and rate-limited) like any delivery. Per endpoint one
 * at a time, oldest first: a chain takes the next held delivery only once the previous one
 * settled. Restart-safe: the claim (reopen + run id) is one statement; an unconfirmed start is
 * repeated under the same id, which Temporal runs at most once. Runs in every consumer replica;
 * the claim's advisory lock keeps them from redriving one endpoint twice at once.
 */
export function createRedriver(deps: RedriverDeps): Redriver {
  const { queries, logger } = deps;
  const chains = new Map<string, Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  let passing: Promise<void> | undefined;

  async function startRun(c: ClaimedRedrive): Promise<void> {
    try {
      await deps.client.connection.withDeadline(Date.now() + START_TIMEOUT_MS, () =>
        startReplay(deps.client, { eventId: c.eventId, deliveryIds: [c.deliveryId], taskQueue: deps.taskQueue, workflowId: c.workflowId }),
      );
      deps.metrics.redriveStarted.inc();
    } catch (err) {
      // started before (by us, before a crash, or by another replica): nothing more to do
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    await queries.markStarted(c.deliveryId, c.workflowId);
    logger.info(
      { eventId: c.eventId, deliveryId: c.deliveryId, endpointId: c.endpointId, workflowId: c.workflowId },
      'held delivery redriven',
    );
  }

  async function waitSettled(deliveryId: string): Promise<boolean> {
    const deadline = Date.now() + SETTLE_WAIT_MS;
    for (let wait = 25; !stopping; wait = Math.min(wait * 2, 500)) {
      if (await queries.settled(deliveryId)) return true;
      if (Date.now() + wait > deadline) return false;
      await sleep(wait);
    }
    return false;
  }

  /** One endpoint's held deliveries, one at a time, until none is left or one takes long. */
  async function chain(endpointId: string): Promise<void> {
    while (!stopping) {
      const claimed = await queries.claimNext(endpointId, (eventId) => `${eventId}:redrive:${randomUUID()}`);
      if (!claimed) return;
      // a start that fails leaves the claim unconfirmed: a later pass starts it under the same id
      await startRun(claimed);
      if (!(await waitSettled(claimed.deliveryId))) return;
    }
  }

  async function runPass(): Promise<void> {
    for (const c of await queries.unconfirmed(deps.unconfirmedAfterMs ?? UNCONFIRMED_AFTER_MS, ENDPOINTS_PER_PASS)) {
      await startRun(c).catch((err: unknown) =>
        logger.warn(
          { deliveryId: c.deliveryId, workflowId: c.workflowId, err: describeError(err) },
          'redrive start failed; retrying later',
        ),
      );
    }
    const health = await queries.health();
    deps.metrics.endpointsDisabled.set(health.disabled);
    deps.metrics.endpointsPaused.set(health.paused);
    deps.metrics.deliveriesHeld.set(health.held);
    for (const endpointId of await queries.endpointsToRedrive(ENDPOINTS_PER_PASS)) {
      if (chains.has(endpointId) || stopping) continue;
      const running = chain(endpointId)
        .catch((err: unknown) => logger.warn({ endpointId, err: describeError(err) }, 'redrive paused; retrying later'))
        .finally(() => chains.delete(endpointId));
      chains.set(endpointId, running);
    }
  }

  function pass(): Promise<void> {
    passing ??= runPass().finally(() => {
      passing = undefined;
    });
    return passing;
  }

  return {
    pass,
    start() {
      timer = setInterval(() => {
        pass().catch((err: unknown) => logger.warn({ err: describeError(err) }, 'redrive pass failed'));
      }, deps.intervalMs ?? REDRIVE_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      stopping = true;
      clearInterval(timer);
      await passing?.catch(() => {});
      await Promise.all(chains.values());
    },
  };
}
