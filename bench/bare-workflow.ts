// Workflow bundle of the bare baseline (its worker's workflowsPath): deterministic code only.
import { proxyActivities } from '@temporalio/workflow';

export const BARE_TASK_QUEUE = 'BENCH_BARE';

export interface BarePostInput {
  url: string;
  body: string;
}

export interface BareActivities {
  post(input: BarePostInput): Promise<number>;
}

export interface BareFanoutInput {
  urls: string[];
  body: string;
}

// the timeout and retry policy the real deliver activity gets for a default endpoint
const { post } = proxyActivities<BareActivities>({
  startToCloseTimeout: '40 seconds',
  retry: { maximumAttempts: 5, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** The same shape as WebhookFanoutWorkflow minus the bookkeeping: one POST per endpoint, concurrently. */
export async function BareFanoutWorkflow(input: BareFanoutInput): Promise<number> {
  const statuses = await Promise.all(input.urls.map((url) => post({ url, body: input.body })));
  return statuses.length;
}
