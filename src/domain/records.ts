import type { AuthType, DeliveryStatus, EventStatus, HttpMethod } from './statuses.js';

/** Where an inbound source's external event id or type is read from. */
export interface ExtractionRule {
  /** dot-separated path into a JSON body, e.g. "data.id" */
  jsonPath?: string;
  /** request header, case-insensitive */
  header?: string;
}

export interface InboundCredential {
  id: string;
  source: string;
  username: string;
  passwordHash: string;
  eventIdRule: ExtractionRule | null;
  eventTypeRule: ExtractionRule | null;
  resourceUid: string | null;
  resourceName: string | null;
  updatedAt: Date;
}

export interface Endpoint {
  id: string;
  name: string;
  source: string;
  /** null = catch-all for every event of the source */
  eventType: string | null;
  url: string;
  method: HttpMethod;
  authType: AuthType;
  authUsername: string | null;
  /** BASIC password or BEARER token */
  authSecret: string | null;
  /** HMAC signing secret, or the whsec_ key of STANDARD_WEBHOOKS */
  signingSecret: string | null;
  /** STANDARD_WEBHOOKS only: the key being rotated out, still signed with until it is removed */
  previousSigningSecret: string | null;
  customHeaders: Record<string, string>;
  maxAttempts: number;
  timeoutSeconds: number;
  /** 4xx codes this endpoint opted in to retrying */
  retryOnStatus: number[];
  /** deliveries per second across all workers; null = no limit (docs/limits.md) */
  rateLimitPerSecond: number | null;
  /** requests in flight across all workers; null = no limit */
  maxConcurrency: number | null;
  /** not called before this (a 429/503 with Retry-After asked for it): state, not configuration */
  pausedUntil: Date | null;
  active: boolean;
  resourceUid: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookEvent {
  id: string;
  source: string;
  externalEventId: string | null;
  eventType: string | null;
  payload: Buffer;
  contentType: string | null;
  headers: Record<string, string>;
  status: EventStatus;
  workflowId: string | null;
  publishedAt: Date | null;
  receivedAt: Date;
  completedAt: Date | null;
}

export interface Delivery {
  id: string;
  eventId: string;
  endpointId: string;
  status: DeliveryStatus;
  attempts: number;
  lastResponseStatus: number | null;
  lastResponseBody: string | null;
  lastError: string | null;
  lastAttemptAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
}

/**
 * resource_uid of rows that dev mode's manifest folder owns ("manifest:Kind/ns/name"), as opposed
 * to a Kubernetes uid (the operator's) or null (rows made by hand): each owner collects only its own.
 */
export const MANIFEST_UID_PREFIX = 'manifest:';

/** Delivery defaults and bounds (docs/decisions.md). */
export const DELIVERY_LIMITS = {
  maxAttempts: { default: 5, min: 1, max: 50 },
  timeoutSeconds: { default: 10, min: 1, max: 120 },
  /** spec.rateLimit.perSecond: from one per 1000 s (0.001) to 10 000 a second */
  rateLimitPerSecond: { min: 0.001, max: 10_000 },
  /** spec.maxConcurrency */
  maxConcurrency: { min: 1, max: 1_000 },
  /** last_response_body keeps this many bytes */
  responseBodyBytes: 4096,
} as const;
