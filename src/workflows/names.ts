// Names shared by the workflow code and by the processes that start or host it. Plain constants,
// so non-workflow code can import them without pulling the workflow module in.

/** Task queue the fanout worker polls and the consumer starts workflows on. */
export const TASK_QUEUE = 'WEBHOOKS';

/** Registered workflow type; the exported function in fanout.ts carries this exact name. */
export const WORKFLOW_TYPE = 'WebhookFanoutWorkflow';
