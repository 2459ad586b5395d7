import type { AuthType, HttpMethod, SigningType } from '../domain/statuses.js';
import type { TraceCarrier } from '../observability/spans.js';

/** Everything one outbound attempt needs; built by the deliver activity from the rows it loads. */
export interface OutboundRequest {
  url: string;
  method: HttpMethod;
  /** the bytes sent, exactly (the stored body, or its CloudEvent: body-format.ts); signatures are over these */
  body: Buffer;
  /** the body's Content-Type: the inbound request's, or the format's */
  contentType: string | null;
  /** the format's own headers (binary mode's ce-*); they win over custom headers of the same name */
  formatHeaders?: Record<string, string>;
  /** how the receiver knows the caller */
  auth: {
    type: AuthType;
    username: string | null;
    /** BASIC password or BEARER token */
    secret: string | null;
  };
  /** how the receiver verifies the body; absent: no signature */
  signing?: {
    type: SigningType;
    /** HMAC signing secret, or the whsec_ key of STANDARD_WEBHOOKS */
    secret: string | null;
    /** STANDARD_WEBHOOKS: the previous key during a rotation (its signature is sent too) */
    previousSecret?: string | null;
  };
  customHeaders: Record<string, string>;
  timeoutMs: number;
  /** 4xx codes the endpoint opted in to retrying */
  retryOnStatus: readonly number[];
  meta: {
    eventId: string;
    source: string;
    eventType: string | null;
    deliveryId: string;
    attempt: number;
  };
  /** the attempt's W3C trace context, sent as traceparent / tracestate (docs/tracing.md); absent: none */
  trace?: TraceCarrier | undefined;
}

/** status class label for metrics */
export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'network' | 'refused' | 'blocked';

/**
 * The outcome of one attempt. "permanent" is never retried (4xx, redirect, blocked address,
 * invalid request); "retryable" is (5xx, timeout, connection error, opted-in 4xx).
 */
export type DeliveryOutcome =
  | { kind: 'success'; status: number; body: string; durationMs: number; statusClass: StatusClass }
  | {
      kind: 'permanent' | 'retryable';
      status: number | null;
      body: string | null;
      /** one line, never containing a secret */
      error: string;
      /** from Retry-After on an opted-in 4xx or a 5xx/429 */
      retryAfterMs?: number;
      /** from Retry-After on a 429 or 503, retried or not: how long every delivery to the endpoint waits */
      endpointPauseMs?: number;
      durationMs: number;
      statusClass: StatusClass;
    };

export type Send = (req: OutboundRequest) => Promise<DeliveryOutcome>;
