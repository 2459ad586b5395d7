// Two edits of WebhookFanoutWorkflow for test/workflows/replay.test.ts: the same change (deliver
// one endpoint after the other instead of all at once), made unsafely and made with patched().
import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FanoutActivities, FanoutInput, FinishedEventStatus, PlannedDelivery } from '../../../src/activities/types.js';

const { prepare, finishEvent } = proxyLocalActivities<Pick<FanoutActivities, 'prepare' | 'finishEvent'>>({
  startToCloseTimeout: '30 seconds',
});
const deliver = (d: PlannedDelivery) =>
  proxyActivities<Pick<FanoutActivities, 'deliver'>>({
    startToCloseTimeout: d.timeoutSeconds * 1000 + 30_000,
    retry: { maximumAttempts: d.maxAttempts },
  }).deliver({ deliveryId: d.deliveryId, maxAttempts: d.maxAttempts });

async function sequentially(plan: { deliveries: PlannedDelivery[] }): Promise<void> {
  for (const d of plan.deliveries) await deliver(d).catch(() => undefined);
}

/** Breaks determinism: a history recorded with concurrent deliveries schedules them differently. */
export async function UnpatchedFanout(input: FanoutInput): Promise<FinishedEventStatus> {
  const plan = await prepare(input);
  await sequentially(plan);
  return finishEvent({ eventId: input.eventId, unsettled: [] });
}

/** The same change behind patched(): runs recorded before it keep the old, concurrent path. */
export async function PatchedFanout(input: FanoutInput): Promise<FinishedEventStatus> {
  const plan = await prepare(input);
  if (patched('sequential-deliveries')) await sequentially(plan);
  else await Promise.allSettled(plan.deliveries.map(deliver));
  return finishEvent({ eventId: input.eventId, unsettled: [] });
}
