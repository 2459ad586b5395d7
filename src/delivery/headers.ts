import { validateHeaderName, validateHeaderValue } from 'node:http';
import { permanent } from '../domain/errors.js';
import { signBody, standardWebhooksEd25519Signature, standardWebhooksSignature } from './signature.js';
import type { OutboundRequest } from './types.js';

export const USER_AGENT = 'webhook-fanout/0.1';
export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** Headers the service sets itself; a custom header with one of these names is ignored. */
const SERVICE_HEADERS = [
  'authorization',
  'x-webhook-signature',
  'x-webhook-event-id',
  'x-webhook-source',
  'x-webhook-event-type',
  'x-webhook-delivery-id',
  'x-webhook-attempt',
  // Standard Webhooks
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  // the body is the stored bytes, so its type is the stored one
  'content-type',
];

/** Hop-by-hop and framing headers: the HTTP client owns them, a static value would corrupt the request. */
const TRANSPORT_HEADERS = [
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'upgrade',
  'te',
  'trailer',
  'expect',
];

const RESERVED = new Set([...SERVICE_HEADERS, ...TRANSPORT_HEADERS]);

/** True when a custom header of this name would be ignored (case-insensitive); the operator can warn on it. */
export function isReservedHeader(name: string): boolean {
  return RESERVED.has(name.toLowerCase());
}

/**
 * The full outbound header set of one attempt. Throws a permanent AppError for a configuration
 * that cannot produce a valid request (missing credential, invalid custom header); messages name
 * the header, never its value.
 */
export function buildHeaders(req: OutboundRequest, now: () => number = Date.now): Record<string, string> {
  // keyed by lower-case name so "X-Foo" and "x-foo" cannot both be sent
  const out = new Map<string, [string, string]>();
  const set = (name: string, value: string): void => {
    out.set(name.toLowerCase(), [name, value]);
  };

  for (const [name, raw] of Object.entries(req.customHeaders)) {
    if (isReservedHeader(name)) continue;
    const value = String(raw);
    checkHeader(name, value, 'custom header');
    set(name, value);
  }

  set('User-Agent', USER_AGENT);
  const contentType = req.contentType ?? DEFAULT_CONTENT_TYPE;
  checkHeader('Content-Type', contentType, 'stored content type');
  set('Content-Type', contentType);
  for (const [name, value] of Object.entries(req.formatHeaders ?? {})) set(name, value);

  for (const [name, value] of authHeaders(req)) set(name, value);
  for (const [name, value] of signatureHeaders(req, now)) set(name, value);

  set('X-Webhook-Event-Id', headerSafe(req.meta.eventId));
  set('X-Webhook-Source', headerSafe(req.meta.source));
  if (req.meta.eventType !== null) set('X-Webhook-Event-Type', headerSafe(req.meta.eventType));
  set('X-Webhook-Delivery-Id', headerSafe(req.meta.deliveryId));
  set('X-Webhook-Attempt', String(req.meta.attempt));
  // the attempt's span context, so a receiver that traces continues the delivery's trace; it
  // replaces a custom header of the same name
  if (req.trace) {
    set('traceparent', req.trace.traceparent);
    if (req.trace.tracestate) set('tracestate', headerSafe(req.trace.tracestate));
    else out.delete('tracestate');
  }

  return Object.fromEntries(out.values());
}

/** What tells the receiver who calls: spec.auth. */
function authHeaders(req: OutboundRequest): [string, string][] {
  const { auth } = req;
  switch (auth.type) {
    case 'NONE':
      return [];
    case 'BASIC': {
      if (auth.username === null || auth.secret === null) {
        throw permanent('invalid_endpoint_auth', 'BASIC auth needs a username and a password');
      }
      return [['Authorization', `Basic ${Buffer.from(`${auth.username}:${auth.secret}`, 'utf8').toString('base64')}`]];
    }
    case 'BEARER': {
      if (auth.secret === null || auth.secret === '') {
        throw permanent('invalid_endpoint_auth', 'BEARER auth needs a token');
      }
      const value = `Bearer ${auth.secret}`;
      checkHeader('Authorization', value, 'BEARER token');
      return [['Authorization', value]];
    }
  }
}

/** What lets the receiver verify the body: spec.signing, over the bytes sent. */
function signatureHeaders(req: OutboundRequest, now: () => number): [string, string][] {
  const signing = req.signing ?? { type: 'NONE', secret: null };
  switch (signing.type) {
    case 'NONE':
      return [];
    case 'HMAC': {
      if (signing.secret === null || signing.secret === '') {
        throw permanent('invalid_endpoint_auth', 'HMAC signing needs a signing secret');
      }
      return [['X-Webhook-Signature', signBody(req.body, signing.secret)]];
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
      const id = headerSafe(req.meta.eventId);
      const timestamp = Math.floor(now() / 1000);
      const keys = [signing.secret, ...(signing.previousSecret ? [signing.previousSecret] : [])];
      const sign = ed25519 ? standardWebhooksEd25519Signature : standardWebhooksSignature;
      return [
        ['webhook-id', id],
        ['webhook-timestamp', String(timestamp)],
        ['webhook-signature', sign(id, timestamp, req.body, keys)],
      ];
    }
  }
}

function checkHeader(name: string, value: string, what: string): void {
  try {
    validateHeaderName(name);
  } catch {
    throw permanent('invalid_header', `${what} ${JSON.stringify(name.slice(0, 64))} has an invalid name`);
  }
  try {
    validateHeaderValue(name, value);
  } catch {
    // the value may be a secret: name the header only
    throw permanent('invalid_header', `${what} ${JSON.stringify(name)} has a value with characters not allowed in a header`);
  }
}

/** Event types and ids come from third parties: percent-encode anything beyond printable ASCII so a header stays valid. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}
