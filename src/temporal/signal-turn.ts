import type { Client } from '@temporalio/client';
import type { Wake } from '../db/ordering.js';
import { continuedDelivery } from '../domain/ordering.js';
import type { WebhookFanoutWorkflow } from '../workflows/fanout.js';
import { ORDERING_TURN_SIGNAL, WORKFLOW_TYPE } from '../workflows/names.js';
import { fanoutInput } from './fanout-input.js';

/**
 * Signals the run waiting for an ordered delivery's turn (docs/ordering.md): the worker when a
 * delivery ends, the admin API's skip, the consumer's ordering waker. A delivery its event's run
 * left to its key's chain has its continuation's id as its waiter: that run is started with the
 * signal (signal-with-start; signalled when it runs already, started again once it has closed:
 * its prepare skips a delivery that ended meanwhile). Bounded in time: with Temporal down the
 * SDK's own retries would hold the caller; past the deadline it throws, and the caller leaves the
 * wake-up to a durable path (the workflow's own signal, the waker).
 */
export async function signalTurn(client: Client, wake: Wake, opts: { timeoutMs: number; taskQueue: string }): Promise<void> {
  const continued = continuedDelivery(wake.workflowId);
  await client.connection.withDeadline(Date.now() + opts.timeoutMs, async () => {
    if (continued?.deliveryId !== wake.deliveryId) {
      await client.workflow.getHandle(wake.workflowId).signal(ORDERING_TURN_SIGNAL, wake.deliveryId);
      return;
    }
    await client.workflow.signalWithStart<typeof WebhookFanoutWorkflow, [string]>(WORKFLOW_TYPE, {
      workflowId: wake.workflowId,
      taskQueue: opts.taskQueue,
      args: [{ ...fanoutInput(continued.eventId, [wake.deliveryId]), resumes: true }],
      signal: ORDERING_TURN_SIGNAL,
      signalArgs: [wake.deliveryId],
    });
  });
}
