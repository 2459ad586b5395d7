import type { FanoutInput } from '../activities/types.js';

/**
 * The input of every WebhookFanoutWorkflow run this version starts (fanout, replay, redrive): the
 * one place that says which workflow behaviours a new run gets. Old runs keep the input they were
 * started with, and the workflow reads an absent field as "decide as before".
 */
export function fanoutInput(eventId: string, deliveryIds?: string[]): FanoutInput {
  return { eventId, ...(deliveryIds === undefined ? {} : { deliveryIds }), localFirstAttempt: true };
}
