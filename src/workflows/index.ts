// Entry point of the workflow bundle (Worker workflowsPath): deterministic workflow code only.
export { WebhookFanoutWorkflow } from './fanout.js';
