import { ActivityFailure, proxyActivities, proxyLocalActivities, type ActivityOptions } from '@temporalio/workflow';
import type {
  BackoffSettings,
  FanoutActivities,
  FanoutInput,
  FinalEventStatus,
  PlannedDelivery,
  UnsettledDelivery,
} from '../activities/types.js';

/**
 * Bookkeeping activities (database only), run as local activities: no task-queue round trip and
 * no extra history events, which were a third of the Temporal cost of a one-endpoint fanout.
 * Retried without an attempt limit: a Postgres outage must delay an event, never lose it;
 * permanent problems are thrown as non-retryable by the activity.
 */
const { prepare, finishEvent } = proxyLocalActivities<Pick<FanoutActivities, 'prepare' | 'finishEvent'>>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Mirrors DATABASE_RETRY_BUDGET in activities/deliver.ts (workflow code can not import it). */
const DELIVER_DATABASE_RETRY_BUDGET = 400;

/** Time on top of the endpoint's request timeout for loading rows and recording the attempt. */
const DELIVER_MARGIN_MS = 30_000;

/** A delivery's activity options: its endpoint's attempts and timeout, the global backoff. Pure, unit-tested. */
export function deliveryActivityOptions(d: Pick<PlannedDelivery, 'maxAttempts' | 'timeoutSeconds'>, backoff: BackoffSettings): ActivityOptions {
  return {
    startToCloseTimeout: d.timeoutSeconds * 1000 + DELIVER_MARGIN_MS,
    retry: {
      // the activity counts the endpoint's attempts in the row and fails the delivery itself
      // after the last; Temporal's own limit leaves room for retries after database failures
      // (which spend none) and stops a delivery that crashes its worker every time
      maximumAttempts: d.maxAttempts + DELIVER_DATABASE_RETRY_BUDGET,
      initialInterval: backoff.initialIntervalMs,
      backoffCoefficient: backoff.backoffCoefficient,
      maximumInterval: backoff.maximumIntervalMs,
    },
  };
}

/** One activity handle per delivery: each endpoint has its own attempts, timeout and backoff. */
function deliverWithPolicy(d: PlannedDelivery, backoff: BackoffSettings) {
  const { deliver } = proxyActivities<Pick<FanoutActivities, 'deliver'>>(deliveryActivityOptions(d, backoff));
  return deliver({ deliveryId: d.deliveryId, maxAttempts: d.maxAttempts, priorAttempts: d.priorAttempts });
}

function reasonOf(err: unknown): string {
  if (err instanceof ActivityFailure) return err.cause?.message ?? err.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Fans one received event out to its endpoints: prepare (routing + PENDING rows), every delivery
 * concurrently, then the event's final status. With deliveryIds it replays just those deliveries.
 */
export async function WebhookFanoutWorkflow(input: FanoutInput): Promise<FinalEventStatus> {
  const plan = await prepare(input);
  const results = await Promise.allSettled(plan.deliveries.map((d) => deliverWithPolicy(d, plan.backoff)));
  // A delivery that failed normally is already FAILED in its row; finishEvent settles any other
  // (e.g. the last attempt timed out) so no row stays PENDING once its workflow is done.
  const unsettled: UnsettledDelivery[] = [];
  results.forEach((r, i) => {
    const d = plan.deliveries[i];
    if (r.status === 'rejected' && d) unsettled.push({ deliveryId: d.deliveryId, reason: reasonOf(r.reason) });
  });
  return finishEvent({ eventId: input.eventId, unsettled });
}
