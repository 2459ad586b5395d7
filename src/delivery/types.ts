import type { Receipt } from '../domain/records.js';

/**
 * status class label for metrics; token: an OAuth2 endpoint's token endpoint failed (no request was
 * sent); proxy: the installation's forward proxy failed (a deferred outcome)
 */
export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'network' | 'refused' | 'blocked' | 'token' | 'proxy';

/**
 * How the installation's forward proxy (DELIVERY_PROXY_URL) failed a delivery: it could not be
 * reached (refused, reset, timed out, its name unknown), it wants other credentials (407), or it
 * answered 502/503 itself.
 */
export type ProxyFailureReason = 'unreachable' | 'auth_required' | 'proxy_error';

/**
 * The outcome of one attempt, from any destination. "permanent" is never retried (HTTP 4xx, a
 * redirect, a blocked address, an invalid request; a broker's unknown topic, refused authorization,
 * a message too large); "retryable" is (HTTP 5xx, a timeout, a connection error, an opted-in 4xx;
 * a broker throttling or unavailable).
 */
export type DeliveryOutcome =
  | {
      kind: 'success';
      /** the HTTP status (an AWS API's too); null: a broker that answers without one (Kafka, RabbitMQ, NATS) */
      status: number | null;
      /** what the endpoint answered (HTTP), or the broker's answer in a line */
      body: string;
      durationMs: number;
      statusClass: StatusClass;
      /** what the broker acknowledged with; the attempt log records it */
      receipt?: Receipt;
    }
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
    }
  | {
      /**
       * Not the endpoint's failure but the installation's: its forward proxy refused or could not
       * be reached, so the receiver was never asked. The delivery waits and tries again without
       * spending an attempt or counting towards auto-disable (activities/proxy-wait.ts).
       */
      kind: 'deferred';
      cause: 'proxy';
      reason: ProxyFailureReason;
      /** what the proxy itself answered (407, 502, 503), or null when it did not */
      status: number | null;
      /** the receiver answered nothing */
      body: null;
      /** one line, never containing a secret */
      error: string;
      retryAfterMs?: undefined;
      endpointPauseMs?: undefined;
      durationMs: number;
      statusClass: 'proxy';
    };

/** A message or target that can not be sent as configured (a missing signing secret, an invalid header): final, no request made. */
export function invalidRequest(error: string, durationMs = 0): DeliveryOutcome {
  return { kind: 'permanent', status: null, body: null, error: `invalid request: ${error}`, durationMs, statusClass: 'network' };
}
