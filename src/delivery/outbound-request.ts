import type { Delivery, Endpoint, WebhookEvent } from '../domain/records.js';
import { formatBody, type Payload } from './body-format.js';
import type { OutboundRequest } from './types.js';

/**
 * One attempt's request, from the rows the deliver activity loaded: the stored body shaped by the
 * endpoint's format (body-format.ts) and everything the sender and headers.ts need. Pure: the same
 * rows give the same request, so a retry or a replay sends the same CloudEvent id.
 */
export function buildOutboundRequest(
  d: Delivery,
  e: Endpoint,
  ev: WebhookEvent,
  attempt: number,
  /** what the endpoint's transform made of the payload (docs/content-routing.md); absent: the stored payload */
  transformed?: Payload,
): OutboundRequest {
  const shaped = formatBody(e.format, transformed ?? { body: ev.payload, contentType: ev.contentType }, {
    id: ev.id,
    source: ev.source,
    type: ev.eventType,
    time: ev.receivedAt,
  });
  return {
    url: e.url,
    method: e.method,
    body: shaped.body,
    contentType: shaped.contentType,
    formatHeaders: shaped.headers,
    auth: { type: e.authType, username: e.authUsername, secret: e.authSecret },
    signing: { type: e.signingType, secret: e.signingSecret, previousSecret: e.previousSigningSecret },
    customHeaders: e.customHeaders,
    timeoutMs: e.timeoutSeconds * 1000,
    retryOnStatus: e.retryOnStatus,
    meta: { eventId: ev.id, source: ev.source, eventType: ev.eventType, deliveryId: d.id, attempt },
  };
}
