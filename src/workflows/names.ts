// Names and numbers shared by the workflow code and by the processes and activities that start or
// host it. Plain constants, so non-workflow code can import them without pulling the workflow
// module in, and the workflow bundle without pulling in Node code.

/** Registered workflow type; the exported function in fanout.ts carries this exact name. */
export const WORKFLOW_TYPE = 'WebhookFanoutWorkflow';

/**
 * Temporal attempts a delivery may spend on Postgres outages on top of the endpoint's own attempts
 * (the deliver activity spends no endpoint attempt on them); with its retry delay capped at 10 s,
 * about an hour of outage.
 */
export const DATABASE_RETRY_BUDGET = 400;

/**
 * The signal that tells a run an ordered delivery's turn may have come (docs/ordering.md); its
 * argument is the delivery's id, for the history's reader. The run asks Postgres, never trusts it.
 */
export const ORDERING_TURN_SIGNAL = 'orderingTurn';
