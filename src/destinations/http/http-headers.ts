import { validateHeaderName, validateHeaderValue } from 'node:http';
import { permanent } from '../../domain/errors.js';
import type { HttpTarget } from '../../delivery/destination.js';
import { headerSafe, type Message } from '../../delivery/message.js';

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
  'x-webhook-out-of-order',
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
 * The request headers of one HTTP attempt: the message's own (its format's ce-*, its signature,
 * the X-Webhook-* metadata) with what HTTP adds (custom headers, User-Agent, Content-Type,
 * Authorization for BASIC and BEARER, the trace context). Throws a permanent AppError for a
 * configuration that cannot produce a valid request (missing credential, invalid custom header);
 * messages name the header, never its value.
 */
export function buildHeaders(message: Message, target: HttpTarget): Record<string, string> {
  // keyed by lower-case name so "X-Foo" and "x-foo" cannot both be sent
  const out = new Map<string, [string, string]>();
  const set = (name: string, value: string): void => {
    out.set(name.toLowerCase(), [name, value]);
  };

  for (const [name, raw] of Object.entries(target.customHeaders)) {
    if (isReservedHeader(name)) continue;
    const value = String(raw);
    checkHeader(name, value, 'custom header');
    set(name, value);
  }

  set('User-Agent', USER_AGENT);
  const contentType = message.contentType ?? DEFAULT_CONTENT_TYPE;
  checkHeader('Content-Type', contentType, 'stored content type');
  set('Content-Type', contentType);
  for (const [name, value] of Object.entries(message.formatHeaders)) set(name, value);

  const authorization = authorizationOf(target);
  if (authorization !== undefined) set('Authorization', authorization);
  for (const [name, value] of Object.entries(message.headers)) set(name, value);
  // the attempt's span context, so a receiver that traces continues the delivery's trace; it
  // replaces a custom header of the same name
  if (message.trace) {
    set('traceparent', message.trace.traceparent);
    if (message.trace.tracestate) set('tracestate', headerSafe(message.trace.tracestate));
    else out.delete('tracestate');
  }

  return Object.fromEntries(out.values());
}

/** What tells the receiver who calls (spec.auth), HTTP's own; the signature is the message's (delivery/message.ts). */
function authorizationOf(target: HttpTarget): string | undefined {
  const { auth } = target;
  switch (auth.type) {
    case 'BASIC': {
      if (auth.username === null || auth.secret === null) {
        throw permanent('invalid_endpoint_auth', 'BASIC auth needs a username and a password');
      }
      return `Basic ${Buffer.from(`${auth.username}:${auth.secret}`, 'utf8').toString('base64')}`;
    }
    case 'BEARER': {
      if (auth.secret === null || auth.secret === '') {
        throw permanent('invalid_endpoint_auth', 'BEARER auth needs a token');
      }
      const value = `Bearer ${auth.secret}`;
      checkHeader('Authorization', value, 'BEARER token');
      return value;
    }
    case 'OAUTH2_CLIENT_CREDENTIALS':
      // the OAuth2 destination (oauth2-destination.ts) hands a BEARER target with the token it obtained
      throw permanent('invalid_endpoint_auth', 'OAuth2 client credentials need a token from the token endpoint');
    case 'NONE':
      return undefined;
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
