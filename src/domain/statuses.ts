// An event's final status follows from its deliveries' by one rule, applied in the statement that
// writes it: db/events.ts finish (docs/decisions.md).
export const EVENT_STATUSES = ['RECEIVED', 'COMPLETED', 'PARTIAL', 'FAILED'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const DELIVERY_STATUSES = ['PENDING', 'SUCCESS', 'FAILED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** How an endpoint's receiver knows the caller (WebhookEndpoint spec.auth); OAUTH2_CLIENT_CREDENTIALS: a token from the endpoint's token endpoint. */
export const AUTH_TYPES = ['NONE', 'BASIC', 'BEARER', 'OAUTH2_CLIENT_CREDENTIALS'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

/** How an endpoint's receiver verifies the body (spec.signing); apart from AUTH_TYPES, so an endpoint can have both. */
export const SIGNING_TYPES = ['NONE', 'HMAC', 'STANDARD_WEBHOOKS', 'STANDARD_WEBHOOKS_ED25519'] as const;
export type SigningType = (typeof SIGNING_TYPES)[number];

export const HTTP_METHODS = ['POST', 'PUT', 'PATCH'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];
