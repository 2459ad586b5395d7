import { randomUUID } from 'node:crypto';
import { WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { WebhookFanoutWorkflow } from '../workflows/fanout.js';
import { TASK_QUEUE } from '../config/settings.js';
import { WORKFLOW_TYPE } from '../workflows/names.js';
import { fanoutInput } from './fanout-input.js';

export interface ReplayRequest {
  eventId: string;
  /** deliveries already reopened to PENDING (deliveries.reopenFailed) */
  deliveryIds: string[];
  /** default WEBHOOKS */
  taskQueue?: string;
  /**
   * The run's id when the caller chose and recorded it (the redrive on enable): starting it again
   * is refused with WorkflowExecutionAlreadyStartedError, even after the run closed. Default: a new
   * `<eventId>:replay:<uuid>`.
   */
  workflowId?: string;
}

export interface ReplayStarted {
  workflowId: string;
  runId: string;
}

/**
 * Re-delivers reopened deliveries with a run of its own: the event's fanout id (= event id) is
 * taken for good, so each replay gets a fresh, unique workflow id.
 */
export async function startReplay(client: Client, req: ReplayRequest): Promise<ReplayStarted> {
  const workflowId = req.workflowId ?? `${req.eventId}:replay:${randomUUID()}`;
  const handle = await client.workflow.start<typeof WebhookFanoutWorkflow>(WORKFLOW_TYPE, {
    taskQueue: req.taskQueue ?? TASK_QUEUE,
    workflowId,
    args: [fanoutInput(req.eventId, req.deliveryIds)],
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
  });
  return { workflowId, runId: handle.firstExecutionRunId };
}
