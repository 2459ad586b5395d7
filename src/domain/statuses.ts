export const EVENT_STATUSES = ['RECEIVED', 'COMPLETED', 'PARTIAL', 'FAILED'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const DELIVERY_STATUSES = ['PENDING', 'SUCCESS', 'FAILED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const AUTH_TYPES = ['NONE', 'BASIC', 'BEARER', 'HMAC', 'STANDARD_WEBHOOKS'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

export const HTTP_METHODS = ['POST', 'PUT', 'PATCH'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/**
 * The event's final status from its deliveries' outcomes (docs/decisions.md):
 * COMPLETED when every delivery succeeded (also when none matched),
 * FAILED when every delivery failed, PARTIAL otherwise.
 */
export function eventOutcome(deliveries: readonly DeliveryStatus[]): Exclude<EventStatus, 'RECEIVED'> {
  const failed = deliveries.filter((s) => s === 'FAILED').length;
  const succeeded = deliveries.filter((s) => s === 'SUCCESS').length;
  if (failed === 0 && succeeded === deliveries.length) return 'COMPLETED';
  if (failed === deliveries.length) return 'FAILED';
  return 'PARTIAL';
}
