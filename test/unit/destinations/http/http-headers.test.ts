import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/domain/errors.js';
import { isReservedHeader, USER_AGENT } from '../../../../src/destinations/http/http-headers.js';
import { signBody } from '../../../../src/delivery/signature.js';
// the message's headers (delivery/message.ts) and HTTP's own (http-headers.ts), as one request sends them
import { headersOf as buildHeaders, type OutboundRequest } from '../../../delivery/outbound.js';

const request = (over: Partial<OutboundRequest> = {}): OutboundRequest => ({
  url: 'http://127.0.0.1:1/hook',
  method: 'POST',
  body: Buffer.from('{"a":1}'),
  contentType: 'application/json',
  auth: { type: 'NONE', username: null, secret: null },
  customHeaders: {},
  timeoutMs: 5_000,
  retryOnStatus: [],
  meta: { eventId: 'evt-1', source: 'stripe', eventType: 'invoice.paid', deliveryId: 'del-1', attempt: 3 },
  ...over,
});
const auth = (a: Partial<OutboundRequest['auth']>): OutboundRequest['auth'] => ({
  type: 'NONE',
  username: null,
  secret: null,
  ...a,
});
const signing = (type: NonNullable<OutboundRequest['signing']>['type'], secret: string | null): OutboundRequest['signing'] => ({
  type,
  secret,
});

describe('signBody', () => {
  it.each([
    ['{"a":1}', 'secret'],
    ['', 'k'],
    ['\u00e9\u00e8 bytes', 'another secret'],
  ])('%j with %j is base64 HMAC-SHA256 of the raw bytes', (body, secret) => {
    const bytes = Buffer.from(body, 'utf8');
    expect(signBody(bytes, secret)).toBe(createHmac('sha256', secret).update(bytes).digest('base64'));
  });

  it('matches a known vector', () => {
    // RFC 4231-style check computed independently: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog")
    expect(signBody(Buffer.from('The quick brown fox jumps over the lazy dog'), 'key')).toBe(
      Buffer.from('f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8', 'hex').toString('base64'),
    );
  });
});

describe('buildHeaders', () => {
  it('sets the service headers of an attempt', () => {
    expect(buildHeaders(request())).toEqual({
      'User-Agent': USER_AGENT,
      'Content-Type': 'application/json',
      'X-Webhook-Event-Id': 'evt-1',
      'X-Webhook-Source': 'stripe',
      'X-Webhook-Event-Type': 'invoice.paid',
      'X-Webhook-Delivery-Id': 'del-1',
      'X-Webhook-Attempt': '3',
    });
  });

  it.each<[string, Partial<OutboundRequest>, Record<string, string | undefined>]>([
    [
      'no event type: no X-Webhook-Event-Type',
      { meta: { eventId: 'e', source: 's', eventType: null, deliveryId: 'd', attempt: 1 } },
      { 'X-Webhook-Event-Type': undefined },
    ],
    ['no stored content type: octet-stream', { contentType: null }, { 'Content-Type': 'application/octet-stream' }],
    [
      'non-ASCII event type is percent-encoded',
      { meta: { eventId: 'e', source: 's', eventType: 'café.créé', deliveryId: 'd', attempt: 1 } },
      { 'X-Webhook-Event-Type': 'caf%C3%A9.cr%C3%A9%C3%A9' },
    ],
    [
      'BASIC',
      { auth: auth({ type: 'BASIC', username: 'u', secret: 'p:w' }) },
      { Authorization: `Basic ${Buffer.from('u:p:w').toString('base64')}` },
    ],
    ['BEARER', { auth: auth({ type: 'BEARER', secret: 'tok' }) }, { Authorization: 'Bearer tok' }],
    [
      'HMAC',
      { signing: signing('HMAC', 'sig') },
      { 'X-Webhook-Signature': createHmac('sha256', 'sig').update('{"a":1}').digest('base64'), Authorization: undefined },
    ],
    [
      'BEARER and HMAC: both, apart',
      { auth: auth({ type: 'BEARER', secret: 'tok' }), signing: signing('HMAC', 'sig') },
      { 'X-Webhook-Signature': createHmac('sha256', 'sig').update('{"a":1}').digest('base64'), Authorization: 'Bearer tok' },
    ],
    [
      'BASIC and STANDARD_WEBHOOKS: both, apart',
      {
        auth: auth({ type: 'BASIC', username: 'u', secret: 'p' }),
        signing: signing('STANDARD_WEBHOOKS', `whsec_${Buffer.alloc(24, 1).toString('base64')}`),
      },
      { Authorization: `Basic ${Buffer.from('u:p').toString('base64')}`, 'webhook-id': 'evt-1' },
    ],
    ['custom headers are kept', { customHeaders: { 'X-Tenant': 'acme', 'x-trace': '1' } }, { 'X-Tenant': 'acme', 'x-trace': '1' }],
    [
      'a custom header cannot override the service headers',
      {
        customHeaders: { authorization: 'x', 'Content-Type': 'text/plain', 'x-webhook-attempt': '99', Host: 'evil', 'Content-Length': '1' },
      },
      {
        'Content-Type': 'application/json',
        'X-Webhook-Attempt': '3',
        authorization: undefined,
        Host: undefined,
        'Content-Length': undefined,
      },
    ],
    [
      'a custom User-Agent is replaced (one header per name)',
      { customHeaders: { 'user-agent': 'mine' } },
      { 'User-Agent': USER_AGENT, 'user-agent': undefined },
    ],
  ])('%s', (_what, over, expected) => {
    const headers = buildHeaders(request(over));
    for (const [name, value] of Object.entries(expected)) {
      if (value === undefined) expect(headers).not.toHaveProperty([name]);
      else expect(headers).toHaveProperty([name], value);
    }
  });

  it.each<[string, Partial<OutboundRequest>, string, RegExp]>([
    ['BASIC without password', { auth: auth({ type: 'BASIC', username: 'u' }) }, 'invalid_endpoint_auth', /BASIC auth needs/],
    ['BASIC without username', { auth: auth({ type: 'BASIC', secret: 'p' }) }, 'invalid_endpoint_auth', /BASIC auth needs/],
    ['BEARER without token', { auth: auth({ type: 'BEARER', secret: '' }) }, 'invalid_endpoint_auth', /BEARER auth needs a token/],
    [
      'BEARER token with a newline',
      { auth: auth({ type: 'BEARER', secret: 'to\nken' }) },
      'invalid_header',
      /BEARER token "Authorization"/,
    ],
    ['HMAC without secret', { signing: signing('HMAC', null) }, 'invalid_endpoint_auth', /HMAC signing needs a signing secret/],
    [
      'custom header with a bad name',
      { customHeaders: { 'bad name': 'v' } },
      'invalid_header',
      /custom header "bad name" has an invalid name/,
    ],
    [
      'custom header with a bad value',
      { customHeaders: { 'X-Secret': 'hunter2\r\nInjected: 1' } },
      'invalid_header',
      /custom header "X-Secret" has a value with characters not allowed/,
    ],
    ['stored content type with a newline', { contentType: 'text/plain\nX: y' }, 'invalid_header', /stored content type/],
  ])('%s: a permanent %s, the value never in the message', (_what, over, code, message) => {
    let thrown: unknown;
    try {
      buildHeaders(request(over));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ kind: 'permanent', code });
    expect((thrown as Error).message).toMatch(message);
    expect((thrown as Error).message).not.toMatch(/hunter2|to\nken/);
  });

  it.each([
    ['Authorization', true],
    ['CONTENT-LENGTH', true],
    ['x-webhook-signature', true],
    ['Transfer-Encoding', true],
    ['X-Tenant', false],
    ['User-Agent', false],
  ])('isReservedHeader(%s) = %s', (name, reserved) => {
    expect(isReservedHeader(name)).toBe(reserved);
  });
});
