import { permanent } from '../domain/errors.js';
import type { Delivery, Endpoint, EndpointFormat, WebhookEvent } from '../domain/records.js';
import type { SigningType } from '../domain/statuses.js';
import type { TraceCarrier } from '../observability/spans.js';
import { cloudEventAttributes, formatBody, type Payload } from './body-format.js';
import { signBody, standardWebhooksEd25519Signature, standardWebhooksSignature } from './signature.js';

/** What the attempt is about: the event, the delivery, the attempt number. */
export interface MessageMeta {
  eventId: string;
  source: string;
  eventType: string | null;
  deliveryId: string;
  attempt: number;
  /** an ordered delivery sent again after it stopped holding its key (docs/ordering.md): X-Webhook-Out-Of-Order */
  outOfOrder?: boolean;
}

/**
 * One attempt's message, built once by the deliver activity and the same for every destination
 * (docs/destinations.md): what a destination sends, and nothing of where it goes (that is the
 * target). A destination carries `headers` and, outside structured mode, `attributes` the way its
 * binding says (HTTP headers, SQS/SNS message attributes, Kafka record headers...).
 */
export interface Message {
  /** the bytes sent, exactly (the stored body or the transform's, in the endpoint's format); the signatures are over these */
  body: Buffer;
  /** the body's media type: the inbound request's, the transform's or the format's; null: none was given */
  contentType: string | null;
  /** the endpoint's format: Raw, or a CloudEvent in binary or structured mode (body-format.ts) */
  format: EndpointFormat;
  /** the CloudEvents context attributes of the event (specversion, id, source, type, time), whatever the format */
  attributes: Record<string, string>;
  /** the HTTP binding's ce-* headers in binary mode (none otherwise): what HTTP sends; the others name `attributes` their own way */
  formatHeaders: Record<string, string>;
  /** the signature headers (X-Webhook-Signature, or webhook-id/-timestamp/-signature) and the X-Webhook-* metadata */
  headers: Record<string, string>;
  /** the event id: the same on every attempt, endpoint and replay; a broker that de-duplicates (SQS FIFO, NATS) drops a second publish */
  deduplicationId: string;
  /** the key the endpoint orders its deliveries by (partition key, MessageGroupId, routing key); null: unordered */
  orderingKey: string | null;
  meta: MessageMeta;
  /** the attempt's W3C trace context, when the endpoint propagates it (docs/tracing.md) */
  trace?: TraceCarrier | undefined;
}

/** How the receiver verifies the body (spec.signing), whatever the destination. */
export interface Signing {
  type: SigningType;
  /** HMAC signing secret, the whsec_ key of STANDARD_WEBHOOKS, or the whsk_ key of STANDARD_WEBHOOKS_ED25519 */
  secret: string | null;
  /** STANDARD_WEBHOOKS(_ED25519): the previous key during a rotation (its signature is sent too) */
  previousSecret?: string | null;
}

/** What a message is made of, before its signature and metadata headers. */
export interface MessageParts extends Payload {
  format: EndpointFormat;
  attributes: Record<string, string>;
  formatHeaders?: Record<string, string>;
  signing: Signing;
  meta: MessageMeta;
  orderingKey: string | null;
}

/**
 * The message of parts: the signature over the body and the metadata headers added. Throws a
 * permanent AppError when the endpoint's signing is configured without its key (the attempt is
 * then an invalid request, final, nothing sent); its message never contains a secret.
 */
export function composeMessage(parts: MessageParts, now: () => number = Date.now): Message {
  const headers: Record<string, string> = {};
  for (const [name, value] of signatureHeaders(parts, now)) headers[name] = value;
  headers['X-Webhook-Event-Id'] = headerSafe(parts.meta.eventId);
  headers['X-Webhook-Source'] = headerSafe(parts.meta.source);
  if (parts.meta.eventType !== null) headers['X-Webhook-Event-Type'] = headerSafe(parts.meta.eventType);
  headers['X-Webhook-Delivery-Id'] = headerSafe(parts.meta.deliveryId);
  headers['X-Webhook-Attempt'] = String(parts.meta.attempt);
  if (parts.meta.outOfOrder) headers['X-Webhook-Out-Of-Order'] = 'true';
  return {
    body: parts.body,
    contentType: parts.contentType,
    format: parts.format,
    attributes: parts.attributes,
    formatHeaders: parts.formatHeaders ?? {},
    headers,
    deduplicationId: parts.meta.eventId,
    orderingKey: parts.orderingKey,
    meta: parts.meta,
  };
}

/**
 * One attempt's message, from the rows the deliver activity loaded: the stored body (or what the
 * endpoint's transform made of it) shaped by the endpoint's format, signed. Pure but for the
 * clock of a Standard Webhooks timestamp: a retry or a replay sends the same CloudEvent id.
 */
export function messageOf(
  d: Delivery,
  e: Endpoint,
  ev: WebhookEvent,
  attempt: number,
  /** what the endpoint's transform made of the payload (docs/content-routing.md); absent: the stored payload */
  transformed?: Payload,
  now: () => number = Date.now,
): Message {
  const event = { id: ev.id, source: ev.source, type: ev.eventType, time: ev.receivedAt };
  const shaped = formatBody(e.format, transformed ?? { body: ev.payload, contentType: ev.contentType }, event);
  return composeMessage(
    {
      body: shaped.body,
      contentType: shaped.contentType,
      format: e.format,
      attributes: cloudEventAttributes(event),
      formatHeaders: shaped.headers,
      signing: { type: e.signingType, secret: e.signingSecret, previousSecret: e.previousSigningSecret },
      meta: {
        eventId: ev.id,
        source: ev.source,
        eventType: ev.eventType,
        deliveryId: d.id,
        attempt,
        ...(d.ordering?.skipped ? { outOfOrder: true } : {}),
      },
      // the key of an ordered delivery (spec.ordering.key, docs/ordering.md); none for the whole-endpoint and no-key sequences
      orderingKey: typeof d.ordering?.key === 'string' && d.ordering.key !== '' ? d.ordering.key : null,
    },
    now,
  );
}

function signatureHeaders(parts: MessageParts, now: () => number): [string, string][] {
  const { signing } = parts;
  switch (signing.type) {
    case 'HMAC': {
      if (signing.secret === null || signing.secret === '') {
        throw permanent('invalid_endpoint_auth', 'HMAC signing needs a signing secret');
      }
      return [['X-Webhook-Signature', signBody(parts.body, signing.secret)]];
    }
    case 'STANDARD_WEBHOOKS':
    case 'STANDARD_WEBHOOKS_ED25519': {
      const ed25519 = signing.type === 'STANDARD_WEBHOOKS_ED25519';
      if (signing.secret === null || signing.secret === '') {
        throw permanent('invalid_endpoint_auth', `${signing.type} signing needs a ${ed25519 ? 'whsk_ secret' : 'whsec_ signing'} key`);
      }
      // webhook-id is the event id: the same on every attempt and every endpoint, so a receiver
      // can de-duplicate on it; the timestamp is this attempt's, so a receiver's tolerance window
      // (5 minutes in the reference libraries) applies to each retry afresh. Ed25519 signs the
      // same content (v1a), which a receiver verifies with the whpk_ public key alone.
      const id = headerSafe(parts.meta.eventId);
      const timestamp = Math.floor(now() / 1000);
      const keys = [signing.secret, ...(signing.previousSecret ? [signing.previousSecret] : [])];
      const sign = ed25519 ? standardWebhooksEd25519Signature : standardWebhooksSignature;
      return [
        ['webhook-id', id],
        ['webhook-timestamp', String(timestamp)],
        ['webhook-signature', sign(id, timestamp, parts.body, keys)],
      ];
    }
    case 'NONE':
      return [];
  }
}

/** Event types and ids come from third parties: percent-encode anything beyond printable ASCII so a header stays valid. */
export function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}
