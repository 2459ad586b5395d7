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
 * How an OAuth2 endpoint's token endpoint failed a delivery before any request to the receiver:
 * it could not be reached or did not answer in time, or answered 5xx/408/429 or no usable token
 * (unavailable); or it said our client credentials are wrong (refused: invalid_client,
 * unauthorized_client, HTTP 401), which a person fixes in the Secret.
 */
export type TokenWaitReason = 'unavailable' | 'refused';

/** What a deferred outcome carries besides its cause. */
interface DeferredAnswer {
  kind: 'deferred';
  /** what the proxy itself answered (407, 502, 503) or the token endpoint's status, or null when nothing answered */
  status: number | null;
  /** the receiver answered nothing */
  body: null;
  /** one line, never containing a secret */
  error: string;
  retryAfterMs?: undefined;
  endpointPauseMs?: undefined;
  durationMs: number;
}

/**
 * What an OAuth2 endpoint's token endpoint said in an attempt that asked it (a kept token asks
 * nothing: absent), when that is not a wait (activities/token-wait.ts): `token`, it granted one (a
 * refusal or an unavailability on the endpoint's row is over); `answered`, it or the address policy
 * refused the request itself (invalid_scope, a blocked address...: the delivery fails on that, and
 * the row must not keep saying the token endpoint is unavailable).
 */
export type TokenAnswer = 'token' | 'answered';

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
      tokenAnswer?: TokenAnswer;
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
      tokenAnswer?: TokenAnswer;
    }
  | (DeferredAnswer & {
      /**
       * Not the endpoint's failure but the installation's: its forward proxy refused or could not
       * be reached, so the receiver was never asked. The delivery waits and tries again without
       * spending an attempt or counting towards auto-disable (activities/proxy-wait.ts).
       */
      cause: 'proxy';
      reason: ProxyFailureReason;
      statusClass: 'proxy';
    })
  | (DeferredAnswer & {
      /**
       * The endpoint's token endpoint (OAuth2 client credentials) failed, so the receiver was
       * never asked: the delivery waits as for the proxy, no attempt spent (activities/token-wait.ts).
       */
      cause: 'token';
      reason: TokenWaitReason;
      statusClass: 'token';
    });

/** A message or target that can not be sent as configured (a missing signing secret, an invalid header): final, no request made. */
export function invalidRequest(error: string, durationMs = 0): DeliveryOutcome {
  return { kind: 'permanent', status: null, body: null, error: `invalid request: ${error}`, durationMs, statusClass: 'network' };
}
