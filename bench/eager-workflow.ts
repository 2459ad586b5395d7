// Workflow bundle of bench/eager-start.ts: deterministic code only.
import { proxyLocalActivities } from '@temporalio/workflow';

export interface StepActivities {
  step(n: number): Promise<number>;
}

const { step } = proxyLocalActivities<StepActivities>({ startToCloseTimeout: '30 seconds' });

/** A fanout's shape without its work: `steps` local activities in a row (prepare, deliver, finish = 3). */
export async function StepsWorkflow(steps: number): Promise<number> {
  let sum = 0;
  for (let i = 0; i < steps; i++) sum += await step(i);
  return sum;
}
