import type { Delivery, Endpoint, WebhookEvent } from '../domain/records.js';
import { describeError } from '../domain/errors.js';
import type { DeliveryOutcome, OutboundRequest, Send } from './types.js';

/** The request of one attempt: the endpoint as read for this attempt (a rotated secret applies), the event's payload. */
export function outboundRequest(d: Delivery, e: Endpoint, ev: WebhookEvent, attempt: number): OutboundRequest {
  return {
    url: e.url,
    method: e.method,
    body: ev.payload,
    contentType: ev.contentType,
    auth: {
      type: e.authType,
      username: e.authUsername,
      secret: e.authSecret,
      signingSecret: e.signingSecret,
      previousSigningSecret: e.previousSigningSecret,
    },
    customHeaders: e.customHeaders,
    timeoutMs: e.timeoutSeconds * 1000,
    retryOnStatus: e.retryOnStatus,
    meta: { eventId: ev.id, source: ev.source, eventType: ev.eventType, deliveryId: d.id, attempt },
  };
}

/** The sender's contract is to return an outcome; a throw is a bug, handled as a retryable failure. */
export async function sendSafely(send: Send, req: OutboundRequest): Promise<DeliveryOutcome> {
  const started = performance.now();
  try {
    return await send(req);
  } catch (err) {
    return {
      kind: 'retryable',
      status: null,
      body: null,
      error: `sender error: ${describeError(err)}`,
      durationMs: performance.now() - started,
      statusClass: 'network',
    };
  }
}
