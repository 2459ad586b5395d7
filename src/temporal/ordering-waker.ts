import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Wake } from '../db/ordering.js';
import { continuationWorkflowId } from '../domain/ordering.js';
import type { Repositories } from '../db/repositories.js';
import { describeError } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { signalTurn } from './signal-turn.js';

/** How often the waker looks for waiting deliveries that a lost wake-up left waiting. */
export const ORDERING_WAKE_INTERVAL_MS = 5_000;
/** A delivery is woken by the waker once it has waited this long behind what no longer holds its key. */
export const ORDERING_STALLED_AFTER_SECONDS = 10;
const PER_PASS = 200;
/** Bound on one signal: Temporal down must not hold the waker. */
const SIGNAL_TIMEOUT_MS = 5_000;

export interface OrderingWakerDeps {
  repos: Pick<Repositories, 'ordering'>;
  client: Client;
  /** where a continuation it starts runs (a delivery left to its key's chain: signal-turn.ts) */
  taskQueue: string;
  /** the gauge of blocked keys, set by each pass */
  metrics: Pick<Metrics, 'orderingBlockedKeys'>;
  logger: Logger;
  intervalMs?: number;
  stalledAfterSeconds?: number;
}

export interface OrderingWaker {
  start(): void;
  /** one pass now: what the timer does (tests call it) */
  pass(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The backstop of ordered delivery (docs/ordering.md): a run waiting for its turn is woken by the
 * signal the delivery before it sends when it ends. What could leave it waiting (a run terminated
 * by hand; a skip whose signal was not sent because Temporal was down; a delivery that came
 * between two others after the later one began to wait; an endpoint revoked, removed or no longer
 * ordered, whose waiting deliveries must end) is found here, in Postgres, and signalled: a key is
 * not stalled longer than the interval plus the stalled age (15 s by default). Runs in every
 * consumer replica; rows are claimed with SKIP LOCKED and their waiting time starts again, so two
 * replicas do not signal the same run in one pass. Each pass also sets the gauge of blocked keys
 * (webhook_fanout_ordering_blocked_keys; every replica reports the same).
 */
export function createOrderingWaker(deps: OrderingWakerDeps): OrderingWaker {
  const intervalMs = deps.intervalMs ?? ORDERING_WAKE_INTERVAL_MS;
  const after = deps.stalledAfterSeconds ?? ORDERING_STALLED_AFTER_SECONDS;
  let timer: NodeJS.Timeout | undefined;
  let passing: Promise<number> | undefined;

  /** Each pass counts the blocked keys of every ordered endpoint: a series each, set at once (a scrape sees one pass's counts). */
  async function countBlocked(): Promise<void> {
    const counts = await deps.repos.ordering.blockedKeys();
    deps.metrics.orderingBlockedKeys.reset();
    for (const c of counts) deps.metrics.orderingBlockedKeys.set({ endpoint: c.name }, c.blockedKeys);
  }

  /**
   * The run waiting for the delivery has closed (terminated by hand: a run of ours closes only once
   * its delivery is settled or its wait cleared): nothing would ever deliver the delivery, release
   * what a handoff ended for it, or clear its lapsed claim (which keeps it from a replay). Its
   * continuation takes it (signal-with-start), as for a delivery left to its key's chain. A
   * continuation's own id is started again by its signal, so it never comes here.
   */
  async function toContinuation(w: Wake & { eventId: string }): Promise<boolean> {
    const continuation = continuationWorkflowId(w.eventId, w.deliveryId);
    if (w.workflowId === continuation || !(await deps.repos.ordering.toContinuation(w.deliveryId, w.workflowId, continuation)))
      return false;
    deps.logger.info(
      { workflowId: w.workflowId, deliveryId: w.deliveryId, continuation },
      'ordering waker: the run waiting for a delivery has closed; its continuation takes the delivery',
    );
    await signalTurn(
      deps.client,
      { workflowId: continuation, deliveryId: w.deliveryId },
      { timeoutMs: SIGNAL_TIMEOUT_MS, taskQueue: deps.taskQueue },
    );
    return true;
  }

  async function pass(): Promise<number> {
    const stalled = await deps.repos.ordering.stalled(after, PER_PASS);
    let woken = 0;
    for (const w of stalled) {
      try {
        await signalTurn(deps.client, w, { timeoutMs: SIGNAL_TIMEOUT_MS, taskQueue: deps.taskQueue });
        woken++;
      } catch (err) {
        // a continuation not started (Temporal down) is found again by a later pass, or woken by a release
        if (err instanceof WorkflowNotFoundError && (await toContinuation(w).catch(() => false))) {
          woken++;
          continue;
        }
        deps.logger.debug(
          { workflowId: w.workflowId, deliveryId: w.deliveryId, err: describeError(err) },
          'ordering waker: signal not sent',
        );
      }
    }
    if (woken > 0) deps.logger.info({ woken }, 'ordering waker: woke waiting deliveries whose wake-up was lost');
    await countBlocked().catch((err: unknown) => {
      deps.logger.warn({ err: describeError(err) }, 'ordering waker: blocked keys not counted; the next pass counts them');
    });
    return woken;
  }

  const tick = () => {
    passing = pass()
      .catch((err: unknown) => {
        deps.logger.warn({ err: describeError(err) }, 'ordering waker pass failed; the next one retries');
        return 0;
      })
      .finally(() => {
        passing = undefined;
        if (timer !== undefined) timer = setTimeout(tick, intervalMs);
      });
  };

  return {
    start() {
      timer = setTimeout(tick, intervalMs);
    },
    pass,
    async stop() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await passing;
    },
  };
}
